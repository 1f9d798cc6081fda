"""Issue 7: no function in src/ over 60 lines of code without a reason in its docstring.

A function's length counts its non-blank, non-comment lines after the docstring. A
function longer than ``LIMIT`` must either be split into named steps or say why it is
not, in a docstring line starting with ``Length:``.
"""
import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "agentstudies"
LIMIT = 60

# No exemption list: a long function states its reason or is split.


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


def _long_functions(paths=None, root=SRC):
    found = []
    for path in sorted(paths if paths is not None else root.rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            n, doc = _code_lines(lines, node)
            reason = any(line.strip().startswith("Length:") for line in doc.splitlines())
            if n > LIMIT and not reason:
                found.append((rel, node.name, node.lineno, n))
    return found


def test_detector_counts_code_lines_and_honours_a_stated_reason(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(LIMIT))
    at_limit = 'def f():\n    """Doc."""\n    # a comment\n\n' + body
    over = "def g():\n" + body + "    return 1\n"
    said = 'def h():\n    """Doc.\n\n    Length: one flat list of steps.\n    """\n' + body + "    return 1\n"
    (tmp_path / "m.py").write_text(at_limit + "\n\n" + over + "\n\n" + said)
    found = _long_functions([tmp_path / "m.py"], root=tmp_path)
    assert [(rel, name, n) for rel, name, _, n in found] == [("m.py", "g", LIMIT + 1)]


def test_no_long_function_without_a_stated_reason():
    offenders = [f"{rel}:{lineno} {name} ({n} lines)" for rel, name, lineno, n in _long_functions()]
    assert not offenders, (
        f"functions over {LIMIT} lines of code: split them into named steps or give a "
        "'Length:' line in the docstring saying why not:\n" + "\n".join(offenders)
    )
