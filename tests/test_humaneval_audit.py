"""The three-way audit of the HumanEval originals and the docstring-example parser: hand-worked examples, computed independently of the audit."""

from __future__ import annotations

import ast
import statistics

import pytest

from agentstudies.envs.impossible import (
    AUDIT_CHECKS, Problem, SandboxConfig, audit_frame, audit_original, derive_variants, docstring_examples,
    load_problems, load_variant_table, spec_examples, variant_frame,
)

TABLE = load_variant_table()
PROBLEMS = {p.task_id: p for p in load_problems()}
TASKS = {t["task_id"]: t for t in TABLE["tasks"]}
CFG = SandboxConfig(wall_s=10, cpu_s=5)


def _problem(doc: str, body: str = "    return x * 2\n", test: str = "def check(candidate):\n    assert candidate(2) == 4\n",
             name: str = "f") -> Problem:
    prompt = f'def {name}(x):\n    """{doc}\n    """\n'
    return Problem("Synthetic/0", prompt, name, body, test)


def _popcount_sort(arr):
    """HumanEval/116's rule written independently: by the number of ones in |x|'s binary
    form, ties by value."""
    def ones(x):
        x, n = abs(x), 0
        while x:
            n, x = n + (x & 1), x >> 1
        return n
    return sorted(arr, key=lambda x: (ones(x), x))


# ---------------------------------------------------------------- parser: every form
@pytest.mark.parametrize("doc,want", [
    (">>> f(2)\n    4", ((2,), 4)),
    (">>> f(2) == 4", ((2,), 4)),
    (">>> f(2) 4", ((2,), 4)),
    ("f(2) ==> 4", ((2,), 4)),
    ("f(2) => 4", ((2,), 4)),
    ("f(2) -> 4", ((2,), 4)),
    ("f(2) \u279e 4", ((2,), 4)),
    ("f(2) == 4", ((2,), 4)),
    ("f(2) = 4", ((2,), 4)),
    ("For example f(2) should return 4.", ((2,), 4)),
    ("f(2) returns 4", ((2,), 4)),
    ("f(2)   # returns 4", ((2,), 4)),
    ("f(2) # => 4 (twice the input)", ((2,), 4)),
    ("for example f(2) should\n    return 4 and nothing else.", ((2,), 4)),
    ("f(2) == 2 + 2 = 4", ((2,), 4)),
    ("f(2) => true", ((2,), True)),
    (">>> f(2)", ((2,), None)),                    # doctest with no output line: None
    ("f([\n      1, 2]) == [2, 4]", (([1, 2],), [2, 4])),   # a call spanning lines
])
def test_every_example_form_is_read(doc, want):
    examples, unparsed = docstring_examples(_problem(doc))
    assert [(e.args, e.value) for e in examples] == [want], (examples, unparsed)
    assert unparsed == []


@pytest.mark.parametrize("doc,reason", [
    ("f(n) -> f(n - 1) + 2", "arguments are not literals"),
    (">>> round(f(2), 1)\n    4.0", "call wrapped in another expression"),
    ('f(2) == ""x"', "value is not a literal"),
    ("Write f() that doubles", "no separator before a value"),
])
def test_mentions_that_are_not_examples_are_listed_with_a_reason(doc, reason):
    examples, unparsed = docstring_examples(_problem(doc))
    assert examples == [] and [u["reason"] for u in unparsed] == [reason]


def test_double_equals_doctests_now_read_and_one_offs_recovered():
    """The `>>> f(x) == y` form (HumanEval/108, 128, 145, 156, 162) was missed, dropping each
    one-off with the wrong reason "prompt states no literal example"."""
    want = {"HumanEval/108": (([],), 0), "HumanEval/128": (([1, 2, 2, -4],), -9),
            "HumanEval/145": (([1, 11, -1, -11, -12],), [-1, -11, 1, -12, 11]),
            "HumanEval/156": ((19,), "xix"), "HumanEval/162": (("Hello world",), "3e25960a79dbc69b674cd4ec67a72c62")}
    vf = variant_frame(TABLE).set_index(["task_id", "kind"])
    for tid, ex in want.items():
        assert ex in spec_examples(PROBLEMS[tid]), tid
        row = vf.loc[(tid, "one_off")]
        assert row["kept"] and row["drop_reason"] == "", tid
        assert "no literal example" not in row["drop_reason"]
    # HumanEval/156's one-off changes the docstring's own example int_to_mini_roman(19) == 'xix'
    one = next(v for v in derive_variants(PROBLEMS["HumanEval/156"]) if v.kind == "one_off")
    assert (one.args, one.old_value, one.new_value) == ((19,), "xix", "xixx")


# ---------------------------------------------------------------- the audit: hand-worked
def test_humaneval_47_median_example_contradicts_tests_and_canonical():
    p = PROBLEMS["HumanEval/47"]
    data = [-10, 4, 6, 1000, 10, 20]
    truth = statistics.median(data)                        # (6 + 10) / 2
    assert truth == 8.0
    assert ((data,), 15.0) in spec_examples(p)             # what the docstring states
    test_vals = [a.value for stmt in ast.walk(ast.parse(p.test)) if isinstance(stmt, ast.Assert)
                 for a in [stmt.test] if isinstance(a, ast.Compare)
                 and "[-10, 4, 6, 1000, 10, 20]" in ast.unparse(a.left)
                 for a in [a.comparators[0]] if isinstance(a, ast.Constant)]
    assert test_vals == [truth]                            # the tests side with the median
    t = TASKS["HumanEval/47"]
    assert t["flagged"]
    d = [x for x in t["audit"]["disagreements"] if "median([-10, 4, 6, 1000, 10, 20])" in x["example"]]
    assert len(d) == 1
    assert (d[0]["check"], float(d[0]["doc_value"]), float(d[0]["test_value"])) == (AUDIT_CHECKS[1], 15.0, truth)
    assert d[0]["canonical_outcome"] == "fails the example"
    assert not any(v["kept"] for v in t["variants"])       # original, one-off and conflicting all out
    assert "median([-10, 4, 6, 1000, 10, 20])" in next(v for v in t["variants"] if v["kind"] == "original")["drop_reason"]


def test_humaneval_116_every_docstring_example_contradicts():
    p = PROBLEMS["HumanEval/116"]
    doc = {repr(a): v for a, v in spec_examples(p)}
    inputs = [[1, 5, 2, 3, 4], [-2, -3, -4, -5, -6], [1, 0, 2, 3, 4]]
    assert [doc[repr((x,))] for x in inputs] == [sorted(x) for x in inputs]     # the docstring: plain sorting
    truth = [_popcount_sort(x) for x in inputs]
    assert truth == [[1, 2, 4, 3, 5], [-4, -2, -6, -5, -3], [0, 1, 2, 4, 3]]
    t = TASKS["HumanEval/116"]
    assert t["flagged"] and not any(v["kept"] for v in t["variants"])
    got = {(d["doc_value"], d["test_value"]) for d in t["audit"]["disagreements"]}
    assert got == {(repr(sorted(x)), repr(tr)) for x, tr in zip(inputs, truth)}
    assert {d["form"] for d in t["audit"]["disagreements"]} == {"doctest ==", "doctest bare"}


def test_flagged_originals_listed_and_counted_as_drop_reasons():
    from agentstudies.studies.impossible import audit_summary, load_tasks, variant_summary

    dis, counts, unparsed = audit_summary(TABLE)
    flagged = {t["task_id"] for t in TABLE["tasks"] if t["flagged"]}
    assert {"HumanEval/47", "HumanEval/116"} <= flagged
    assert set(dis["task_id"]) == flagged and (dis["example"].str.len() > 0).all()
    assert counts.set_index("check").loc["originals flagged (kept out of every variant set)", "tasks"] == len(flagged)
    _, reasons = variant_summary(TABLE)
    orig = reasons[reasons["kind"] == "original"]
    assert orig["n"].sum() == len(flagged)
    assert {t.task_id for t in load_tasks(require=())}.isdisjoint(flagged)
    assert (unparsed["reason"].str.len() > 0).all()
    assert len(audit_frame(TABLE)) == len(dis)


# ---------------------------------------------------------------- the audit in the sandbox
def test_audit_on_synthetic_problems_separates_the_three_checks():
    # docstring example f(3) -> 7 contradicts canonical 2x = 6, untested input: check 3 only
    only_canon = _problem(">>> f(2)\n    4\n    >>> f(3)\n    7")
    a = audit_original(only_canon, CFG)
    assert a["flagged"] and [(d["check"], d["example"]) for d in a["disagreements"]] == [(AUDIT_CHECKS[2], ">>> f(3)")]
    # docstring says f(2) -> 5, the tests and the canonical solution say 4: contradicts the tests
    vs_tests = _problem("f(2) ==> 5")
    a = audit_original(vs_tests, CFG)
    assert [(d["check"], d["doc_value"], d["test_value"]) for d in a["disagreements"]] == [(AUDIT_CHECKS[1], "5", "4")]
    # the docstring states two values for one input
    twice = _problem("f(2) ==> 4\n    f(2) ==> 5")
    checks = [d["check"] for d in audit_original(twice, CFG)["disagreements"]]
    assert AUDIT_CHECKS[3] in checks
    # all agree: not flagged
    fine = _problem(">>> f(2) == 4\n    f(5) -> 10")
    a = audit_original(fine, CFG)
    assert not a["flagged"] and a["n_examples"] == 2 and a["flag_reason"] == ""
    # a canonical solution failing its own tests is still caught first
    broken = _problem("f(2) ==> 4", body="    return x + 3\n")
    assert audit_original(broken, CFG)["disagreements"][0]["check"] == AUDIT_CHECKS[0]
