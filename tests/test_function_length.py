"""Issue 7: no function in src/ over 60 lines of code without a reason in its docstring.

A function's length counts its non-blank, non-comment lines after the docstring. A
function longer than ``LIMIT`` must either be split into named steps or say why it is
not, in a docstring line starting with ``Length:``.
"""
import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "agentstudies"
LIMIT = 60

# Exemptions while a function is being split: (module path relative to SRC, name) ->
# why it is still long and who is splitting it. Every entry needs a reason, the list must
# shrink (an entry that is short or gone fails) and its target is empty (issue 22 item 5).
PENDING: dict[tuple[str, str], str] = {}


def _code_lines(lines, node):
    body = node.body
    start = body[0].lineno
    doc = ast.get_docstring(node, clean=False) or ""
    if doc:
        start = body[1].lineno if len(body) > 1 else node.end_lineno + 1
    code = [
        line for line in lines[start - 1: node.end_lineno]
        if line.strip() and not line.strip().startswith("#")
    ]
    return len(code), doc


def _long_functions():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        rel = path.relative_to(SRC).as_posix()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            n, doc = _code_lines(lines, node)
            reason = any(line.strip().startswith("Length:") for line in doc.splitlines())
            if n > LIMIT and not reason:
                found.append((rel, node.name, node.lineno, n))
    return found


def test_no_long_function_without_a_stated_reason():
    offenders = [
        f"{rel}:{lineno} {name} ({n} lines)"
        for rel, name, lineno, n in _long_functions()
        if (rel, name) not in PENDING
    ]
    assert not offenders, (
        f"functions over {LIMIT} lines of code: split them into named steps or give a "
        "'Length:' line in the docstring saying why not:\n" + "\n".join(offenders)
    )


def test_pending_list_names_only_long_functions():
    long = {(rel, name) for rel, name, _, _ in _long_functions()}
    stale = sorted(set(PENDING) - long)
    assert not stale, f"PENDING entries that are now short or gone, remove them: {stale}"


def test_every_pending_entry_says_why():
    vague = sorted(k for k, reason in PENDING.items() if len(reason.split()) < 4)
    assert not vague, f"PENDING entries without a reason of a few words (why still long, who splits it): {vague}"
