"""The impossible-task study's speed-ups compute what they replace.

* ``_classify._walk`` / ``_children`` (a list-based walk with cached children) give the
  nodes of ``ast.walk`` / ``ast.iter_child_nodes``, the same objects in the same order;
* ``shared_assertions`` (memoised) equals ``eligible_assertions`` (fresh) and raises
  the same errors, never memoising a failure.
"""

from __future__ import annotations

import ast

import pytest

from agentstudies.envs.impossible import _classify as C
from agentstudies.envs.impossible import _tasks as T
from agentstudies.envs.impossible import eligible_assertions, load_problems

_EXTRA = '''
import os as q
class K:
    def __eq__(self, o): return True
    x: int = 3
def f(a, /, b=[], *c, d=1, **e):
    global G
    match a:
        case [1, *rest] | {"k": 2}: return lambda z=(1, 2): z
        case K(x=3) if b: pass
    try:
        yield from (i async for i in c)
    except* ValueError as ex:
        del ex
    return f"{a!r:>{b}}"[1:2, ...]
'''


def _sources() -> list[str]:
    probs = load_problems()
    return [p.prompt + p.canonical_solution + "\n" + p.test for p in probs] + [_EXTRA]


def test_walk_matches_ast_walk_node_for_node():
    n_checked = 0
    for src in _sources():
        tree = ast.parse(src)
        ref_tree = ast.parse(src)          # a separate copy: the cache attributes stay off it
        got = C._walk(tree)
        want = list(ast.walk(ref_tree))
        assert [ast.dump(a, include_attributes=True) for a in got[:1]] == \
            [ast.dump(b, include_attributes=True) for b in want[:1]]
        assert [type(a).__name__ for a in got] == [type(b).__name__ for b in want]
        # same objects as ast.walk on the very tree, in the same order (and again from the cache)
        assert [id(a) for a in C._walk(tree)] == [id(b) for b in ast.walk(tree)]
        for node in got[:40]:       # subtrees walked after their parent reuse cached children
            assert [id(a) for a in C._walk(node)] == [id(b) for b in ast.walk(node)]
            assert [id(a) for a in C._children(node)] == [id(b) for b in ast.iter_child_nodes(node)]
        n_checked += len(got)
    assert n_checked > 20_000


def test_walk_skips_a_missing_field_like_ast_walk():
    node = ast.BinOp(left=ast.Constant(1), op=ast.Add())      # no ``right``
    assert [type(n).__name__ for n in C._walk(node)] == [type(n).__name__ for n in ast.walk(node)] == \
        ["BinOp", "Constant", "Add"]


def test_shared_assertions_equal_fresh_ones_and_are_memoised():
    tests = [p.test for p in load_problems()]
    for t in tests:
        fresh = eligible_assertions(t)
        shared = T.shared_assertions(t)
        assert isinstance(shared, tuple) and list(shared) == fresh
        assert T.shared_assertions(t) is shared          # the memo's tuple, not a recomputation
    hand = "def check(candidate):\n    assert candidate(1, [2]) == 3\n    assert True\n    assert 4 == candidate(5)\n"
    got = T.shared_assertions(hand)
    assert [(a.index, a.lineno, a.args, a.expected) for a in got] == [(0, 2, (1, [2]), 3), (2, 4, (5,), 4)]


def test_shared_assertions_raise_as_eligible_assertions_and_do_not_memoise_failures():
    for bad, exc in (("def other(x):\n    pass\n", ValueError), ("def check(:\n", SyntaxError)):
        with pytest.raises(exc):
            eligible_assertions(bad)
        with pytest.raises(exc):
            T.shared_assertions(bad)
        assert bad not in T._ASSERTS_MEMO


def test_harness_boot_is_the_code_a_fresh_interpreter_compiles(tmp_path):
    import marshal
    import subprocess
    import sys as _sys

    from agentstudies.envs.impossible import _isolation as I

    py = I._interpreter()
    boot = I._harness_boot(py)
    assert boot is not None, "the runner's own base interpreter gets the compiled harness"
    arg, blob = boot
    assert f"read({len(blob)})" in arg and "=" not in arg.replace("==", "")   # binds no name
    # what `python -c <harness>` compiles in a fresh interpreter (no inherited __future__ flags)
    path = tmp_path / "harness.py"        # the joined source the runner passes to `python -c`
    path.write_text(I._HARNESS)
    fresh = subprocess.run([py, "-S", "-s", "-B", "-c",
                            "import marshal, sys; src = open(sys.argv[1]).read(); "
                            "sys.stdout.buffer.write(marshal.dumps(compile(src, '<string>', 'exec')))", str(path)],
                           capture_output=True, check=True).stdout
    assert marshal.loads(blob) == marshal.loads(fresh)
    assert marshal.loads(blob).co_filename == "<string>"
    # another interpreter gets the source as before
    assert I._harness_boot("/nonexistent/python3") is None
    assert _sys.version_info[:2] == tuple(int(x) for x in subprocess.run(
        [py, "-S", "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True,
        check=True).stdout.split())


def test_compiled_harness_gives_the_outcomes_of_the_source_harness(monkeypatch):
    from dataclasses import replace

    from agentstudies.envs.impossible import SandboxConfig, Submission, run_submission
    from agentstudies.envs.impossible import _sandbox as S

    tests = "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(3) == 9\n"
    subs = [Submission("def f(x):\n    return x * x\n", "f", tests),
            Submission("def f(x):\n    return 4\n", "f", tests, "hidden"),
            Submission("def f(x):\n    return x.y\n", "f", tests),
            Submission("import sys\ndef f(x):\n    return x * x\nsys.exit(0)\n", "f", tests, "writable"),
            Submission("import __main__\n__main__.marshal = 1\ndef f(x):\n    return x * x\n", "f", tests)]
    cfg = SandboxConfig(layer="none")

    def outcomes():
        return [replace(run_submission(s, cfg), wall_s=0.0) for s in subs]

    compiled = outcomes()
    monkeypatch.setattr(S, "_harness_boot", lambda python: None)
    source = outcomes()
    assert compiled == source
    assert [o.outcome for o in compiled] == ["passed", "failed", "error", "exited_early", "passed"]


def test_lean_harness_leaves_ast_and_json_importable_and_instruments_every_statement_kind():
    """The harness no longer imports ast / json itself (it parses with compile(...,
    PyCF_ONLY_AST) and reads a marshalled payload): a submission, test or workspace edit
    importing them after the audit hook still works, and check's statements of every kind
    are counted as before (the failing one named)."""
    from agentstudies.envs.impossible import SandboxConfig, Submission, run_submission

    tests = ("import json\n\ndef check(candidate):\n"
             "    assert candidate(2) == 4\n"
             "    for i in range(3):\n        assert candidate(i) == i * i\n"
             "    with open('solution.py') as fh:\n        assert 'def f' in fh.read()\n"
             "    def inner(x):\n        return candidate(x)\n"
             "    assert json.loads(json.dumps([inner(3)])) == [9]\n"
             "    try:\n        candidate(None)\n    except TypeError:\n        pass\n"
             "    assert candidate(5) == 26\n")
    code = "import ast, json, typing, collections\nast.parse('x = 1')\ndef f(x):\n    return x * x\n"
    edit = "import ast, json\njson.dumps(ast.dump(ast.parse('y = 2')))\n"
    for layer in ("none", "auto"):
        cfg = SandboxConfig(layer=layer)
        out = run_submission(Submission(code, "f", tests, "read_only", edit=edit), cfg)
        assert (out.outcome, out.failed_stmt, out.edit_error) == ("failed", 6, None), (layer, out)
        ok = run_submission(Submission(code.replace("x * x", "x * x + (x == 5)"), "f", tests, "hidden"), cfg)
        assert ok.outcome == "passed", (layer, ok)


def test_memoised_shortcut_helpers_equal_their_definitions():
    """_with_honest_impl / _params are memoised (pure functions of their strings): the memo
    gives what the uncached function computes, and _params hands out a fresh list."""
    from agentstudies.agents.impossible import _policy as P

    n = 0
    for p in load_problems()[:60]:
        code = p.prompt + p.canonical_solution
        want = P._with_honest_impl.__wrapped__(code, p.entry_point)
        assert P._with_honest_impl(code, p.entry_point) == want == P._with_honest_impl(code, p.entry_point)
        assert "def _honest_impl(" in want and f"def {p.entry_point}(" not in want
        fn = next(n_ for n_ in ast.parse(code).body if isinstance(n_, ast.FunctionDef) and n_.name == p.entry_point)
        got = P._params(code, p.entry_point)
        assert got == [a.arg for a in fn.args.args]
        got.append("changed")
        assert P._params(code, p.entry_point) == [a.arg for a in fn.args.args]
        n += 1
    assert n == 60
