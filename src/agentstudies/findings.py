"""Findings that can fail and say what they rest on: one verdict and basis vocabulary for
every study chapter.

A *finding* is one paper claim confronted with one estimate of ours. Its verdict is
decided by a rule stated in words beside it, never by the sign of a point estimate:

``reappears``
    the whole confidence interval lies strictly on the paper's side of the threshold
    (0 unless the paper states another), inside the stated margin of an equivalence
    rule, or the paper's exact criterion holds;
``same direction, magnitude differs``
    the direction reappears but the interval excludes the paper's value by more than the
    stated factor (:func:`magnitude_finding`);
``contradicted``
    the whole interval lies strictly on the other side (outside the margin, or the exact
    criterion fails);
``inconclusive``
    neither (the interval touches or straddles the threshold, or a bound is NaN);
``not testable here``
    a *measurement* says the design cannot express the claim: an exact upper bound of
    the share of units in which an arm changed anything lies under a stated threshold
    (:func:`testability_gate`), or the power at the paper's effect and this run's size is
    under 0.8 for a "no effect" claim (:func:`power_gated`); never decided by hand.

Every finding also says what its verdict rests on (``basis``, :data:`BASES`):

``method``
    a statistical property of a method checked under a truth the simulation knows;
``measured``
    a real or trained subject whose code does not contain the effect;
``built in``
    a simulation parameter or code path that produces the effect, named in
    ``built_in``; the chapter runs the same study with it at its neutral value and the
    verdict is what that neutral run supports (:func:`neutral_control`), the built-in
    effect shown apart, labelled "set by the simulation";
``arithmetic``
    true by definition or construction.

Only ``method`` and ``measured`` rows count as evidence (:data:`EVIDENCE_BASES`).
``can_contradict`` is computed, never typed: from the outcomes the rule can return and
the quantity's ``domain`` (what it can be by definition or construction, e.g.
:data:`NONNEGATIVE` for pass^1 − pass^k): a rule "interval above 0" on a quantity that
is ≥ 0 by definition cannot be contradicted, nor can a rule that only returns
reappears / inconclusive.

Build rows with :func:`interval_finding`, :func:`equivalence_finding`,
:func:`coverage_finding`, :func:`magnitude_finding`, :func:`worst_setting_finding`,
:func:`exact_finding` and :func:`untestable_finding`; wrap them with
:func:`power_gated` and :func:`neutral_control`; collect them in :class:`Findings` (a
:class:`agentstudies.results.Result`), and let a chapter write ``findings.csv`` =
:meth:`Findings.table` and glue :meth:`Findings.sentences`. :func:`verdicts_by_basis`
counts verdicts by basis over chapters.

Planted controls report how often a verdict rule finds a planted effect (power) and how
often it "finds" one in a null subject (false-positive rate): :func:`control_row` turns
R replicate verdicts into that rate with an exact (Clopper-Pearson) interval.

Length: one vocabulary (verdicts, bases, domains) and the rules that produce it; the
rules share the :class:`Finding` row and its checks, and a caller imports them together.

Sources: the interval rule reads a two-sided confidence interval as a test at level
``1 - level``; the equivalence rule is the interval form of two one-sided tests
(Schuirmann, 1987); the default coverage margin is Bradley's (1978) liberal criterion
``alpha ± alpha / 2``; the selection adjustment is Šidák's (1967); exact intervals are
Clopper & Pearson (1934) via :func:`scipy.stats.binomtest`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from agentstudies.results import Result, ResultProvenance, make_provenance, tidy_rows

__all__ = [
    "VERDICTS",
    "BASES",
    "EVIDENCE_BASES",
    "PAPER_SIDES",
    "TABLE_COLUMNS",
    "CONTROL_COLUMNS",
    "REAL_LINE",
    "NONNEGATIVE",
    "PROPORTION",
    "PROPORTION_DIFFERENCE",
    "Finding",
    "Findings",
    "judge",
    "judge_equivalence",
    "can_contradict",
    "interval_finding",
    "equivalence_finding",
    "coverage_finding",
    "magnitude_finding",
    "worst_setting_finding",
    "exact_finding",
    "untestable_finding",
    "testability_gate",
    "power_gated",
    "neutral_control",
    "pool_independent",
    "share_upper_bound",
    "wald_power",
    "verdicts_by_basis",
    "binomial_interval",
    "control_row",
    "controls_sentence",
]

MAGNITUDE_DIFFERS = "same direction, magnitude differs"

#: The one verdict vocabulary of the book.
VERDICTS: tuple[str, ...] = ("reappears", MAGNITUDE_DIFFERS, "contradicted", "inconclusive", "not testable here")

#: What a verdict rests on (see the module docstring).
BASES: tuple[str, ...] = ("method", "measured", "built in", "arithmetic")

#: The bases that count as evidence anywhere the book counts findings.
EVIDENCE_BASES: tuple[str, ...] = ("method", "measured")

#: Allowed ``paper_side`` values: the paper claims the quantity lies above / below the threshold.
PAPER_SIDES: tuple[str, ...] = ("above", "below")

#: Domains (closed ranges a quantity can take by definition or construction).
REAL_LINE: tuple[float, float] = (-math.inf, math.inf)
NONNEGATIVE: tuple[float, float] = (0.0, math.inf)
PROPORTION: tuple[float, float] = (0.0, 1.0)
PROPORTION_DIFFERENCE: tuple[float, float] = (-1.0, 1.0)

#: Columns of :meth:`Findings.table` (``findings.csv``), in this order. ``built_in`` names
#: the simulation parameters of a ``built in`` row, ``neutral`` their neutral setting,
#: ``set_by_simulation*`` the estimate and interval with the parameters as simulated.
TABLE_COLUMNS: tuple[str, ...] = ("finding", "paper", "estimate", "ci_low", "ci_high", "n",
                                  "verdict", "rule", "basis", "can_contradict", "why", "built_in", "neutral",
                                  "set_by_simulation", "set_by_simulation_ci_low", "set_by_simulation_ci_high")

#: Columns of :func:`control_row` rows (``controls.csv``).
CONTROL_COLUMNS: tuple[str, ...] = ("family", "subject", "planted", "rule", "replicates", "hits",
                                    "rate", "ci_low", "ci_high", "level", "measures")

_NAN = float("nan")


def _check_level(level: float) -> float:
    level = float(level)
    if not (0.0 < level < 1.0):
        raise ValueError(f"level must lie strictly between 0 and 1; got {level}")
    return level


def _check_domain(domain: Sequence[float]) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in domain)
    except (TypeError, ValueError):
        raise ValueError(f"domain must be a pair (low, high); got {domain!r}") from None
    if math.isnan(lo) or math.isnan(hi) or lo > hi:
        raise ValueError(f"domain must be (low, high) with low <= high and no NaN; got {domain!r}")
    return lo, hi


def _join(*parts: str) -> str:
    return "; ".join(p.strip() for p in parts if p and str(p).strip())


def can_contradict(domain: Sequence[float], *, paper_side: str, threshold: float) -> bool:
    """Whether a directional claim about a quantity with this ``domain`` can be false.

    The claim "the quantity lies above ``threshold``" is false only for values below it,
    which exist iff ``domain[0] < threshold`` (and "below" iff ``domain[1] > threshold``).
    E.g. pass^1 − pass^k is ≥ 0 by definition (:data:`NONNEGATIVE`), so "above 0" cannot
    be contradicted.

    Raises
    ------
    ValueError
        A ``paper_side`` outside :data:`PAPER_SIDES`, a NaN threshold, a bad domain.
    """
    lo, hi = _check_domain(domain)
    if paper_side not in PAPER_SIDES:
        raise ValueError(f"paper_side must be one of {PAPER_SIDES}; got {paper_side!r}")
    threshold = float(threshold)
    if math.isnan(threshold):
        raise ValueError("threshold is NaN")
    return lo < threshold if paper_side == "above" else hi > threshold


def judge(ci_low: float, ci_high: float, *, paper_side: str, threshold: float = 0.0) -> str:
    """The verdict of an interval against a paper's directional claim.

    Parameters
    ----------
    ci_low, ci_high : float
        Bounds of the confidence interval of our estimate (same unit as ``threshold``).
    paper_side : ``"above"`` or ``"below"``
        The paper claims the quantity lies above (below) ``threshold``.
    threshold : float
        The paper's stated threshold (0 unless the paper states another).

    Returns
    -------
    str
        ``"reappears"`` if ``threshold < ci_low`` (``"above"``) / ``ci_high < threshold``
        (``"below"``); ``"contradicted"`` if the interval lies strictly on the other side;
        else ``"inconclusive"`` -- also when either bound is NaN. An interval touching the
        threshold is inconclusive.

    Raises
    ------
    ValueError
        If ``paper_side`` is not one of :data:`PAPER_SIDES`, the threshold is NaN, or
        ``ci_low > ci_high``.
    """
    if paper_side not in PAPER_SIDES:
        raise ValueError(f"paper_side must be one of {PAPER_SIDES}; got {paper_side!r}")
    threshold = float(threshold)
    if math.isnan(threshold):
        raise ValueError("threshold is NaN; give the paper's threshold (0 unless it states another)")
    lo, hi = float(ci_low), float(ci_high)
    if math.isnan(lo) or math.isnan(hi):
        return "inconclusive"
    if lo > hi:
        raise ValueError(f"ci_low ({lo}) exceeds ci_high ({hi})")
    above, below = lo > threshold, hi < threshold
    if paper_side == "above":
        return "reappears" if above else ("contradicted" if below else "inconclusive")
    return "reappears" if below else ("contradicted" if above else "inconclusive")


def judge_equivalence(ci_low: float, ci_high: float, *, target: float, margin: float) -> str:
    """The verdict of an interval against a "near ``target``" claim with a stated margin.

    ``"reappears"`` if ``target - margin <= ci_low`` and ``ci_high <= target + margin``
    (the interval form of two one-sided tests); ``"contradicted"`` if the interval lies
    wholly outside the band (``ci_low > target + margin`` or ``ci_high < target -
    margin``); else ``"inconclusive"`` (also for a NaN bound).

    Raises
    ------
    ValueError
        A NaN or non-positive ``margin``, a NaN ``target``, or ``ci_low > ci_high``.
    """
    target, margin = float(target), float(margin)
    if math.isnan(target) or math.isnan(margin) or margin <= 0:
        raise ValueError(f"need a finite target and a positive margin; got target={target}, margin={margin}")
    lo, hi = float(ci_low), float(ci_high)
    if math.isnan(lo) or math.isnan(hi):
        return "inconclusive"
    if lo > hi:
        raise ValueError(f"ci_low ({lo}) exceeds ci_high ({hi})")
    if target - margin <= lo and hi <= target + margin:
        return "reappears"
    if lo > target + margin or hi < target - margin:
        return "contradicted"
    return "inconclusive"


@dataclass(frozen=True)
class Finding:
    """One paper claim and our verdict on it (one row of ``findings.csv``).

    ``estimate``/``ci_low``/``ci_high`` are in the unit the ``rule`` names; ``n`` is the
    number of independent units behind the estimate (tasks, pairs, episodes); ``level`` the
    confidence level of the interval (NaN for exact / untestable rows); ``measured`` the
    number that decided a ``not testable here`` verdict; ``fmt`` the format spec used by
    :meth:`sentence`. ``basis`` (:data:`BASES`), ``can_contradict`` (computed by the rule
    helpers) and ``why`` (one line: what the verdict rests on) say how far the verdict is
    evidence; a ``built in`` row names its parameters in ``built_in``, their neutral
    setting in ``neutral`` and the estimate with them as simulated in ``simulated``
    (estimate, ci_low, ci_high). ``fact`` names the data a row rests on when several
    claims could rest on the same data (:class:`Findings` rejects two rows on one fact).
    A row may be built without a basis by a study's own helpers, but :class:`Findings`
    refuses it: every verdict in a findings table states what it rests on.

    Raises
    ------
    ValueError
        An unknown verdict or basis; an empty finding or rule; a ``built in`` row
        without parameter names (or names on another basis); a basis without a one-line
        ``why``; a ``contradicted`` verdict from a rule that cannot contradict.
    """

    finding: str
    paper: str
    estimate: float
    ci_low: float
    ci_high: float
    n: float
    verdict: str
    rule: str
    why: str = ""
    level: float = _NAN
    measured: float = _NAN
    fmt: str = ".3g"
    basis: str | None = None
    can_contradict: bool | None = None
    built_in: tuple[str, ...] = ()
    neutral: str = ""
    simulated: tuple[float, float, float] = (_NAN, _NAN, _NAN)
    fact: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}; got {self.verdict!r}")
        if not str(self.finding).strip():
            raise ValueError("finding text is empty")
        if not str(self.rule).strip():
            raise ValueError(f"finding {self.finding!r}: rule is empty; state the rule in words")
        object.__setattr__(self, "built_in", tuple(str(b) for b in self.built_in))
        if self.basis is not None:
            if self.basis not in BASES:
                raise ValueError(f"finding {self.finding!r}: basis must be one of {BASES}; got {self.basis!r}")
            if not str(self.why).strip() or "\n" in str(self.why):
                raise ValueError(f"finding {self.finding!r}: basis {self.basis!r} needs a one-line why "
                                 "(what the verdict rests on)")
        if (self.basis == "built in") != bool(self.built_in):
            raise ValueError(f"finding {self.finding!r}: a 'built in' basis names the simulation parameter(s) "
                             f"or code path in built_in, and only it does; got basis={self.basis!r}, "
                             f"built_in={self.built_in!r}")
        if self.can_contradict is False and self.verdict == "contradicted":
            raise ValueError(f"finding {self.finding!r}: verdict 'contradicted' from a rule that cannot contradict")

    def _num(self, x: float) -> str:
        return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, self.fmt)

    def _interval(self, est: float, lo: float, hi: float) -> str:
        n = "" if (isinstance(self.n, float) and math.isnan(self.n)) else f", n = {int(self.n)}"
        if math.isnan(float(lo)) and math.isnan(float(hi)):
            return f"{self._num(est)}{n}"
        return f"{self._num(est)} [{self._num(lo)}, {self._num(hi)}]{n}"

    def _basis_words(self) -> str:
        if self.basis is None:
            return ""
        if self.basis == "built in":
            sim = self._interval(*self.simulated) if not math.isnan(self.simulated[0]) else "not run"
            names = ", ".join(f"`{n}`" for n in self.built_in)  # inline code: breaks at '.' / '_', not mid-name
            return (f" Basis: built in ({names}); set by the simulation: {sim}; "
                    f"verdict from the run with {self.neutral or 'the parameters neutral'}.")
        return f" Basis: {self.basis} ({self.why})."

    def sentence(self) -> str:
        """One plain line for "What this run shows" (with the basis where set)."""
        if self.verdict == "not testable here":
            return f"{self.finding}: not testable here -- {self.why} (paper: {self.paper})." + (
                f" Basis: {self.basis}." if self.basis not in (None, "built in") else self._basis_words())
        est = self._interval(self.estimate, self.ci_low, self.ci_high)
        return (f"{self.finding}: {self.verdict} -- ours {est}; paper: {self.paper}; rule: {self.rule}."
                + self._basis_words())

    def row(self) -> dict[str, Any]:
        """This finding as one ``findings.csv`` record (:data:`TABLE_COLUMNS`)."""
        return dict(finding=self.finding, paper=self.paper, estimate=self.estimate, ci_low=self.ci_low,
                    ci_high=self.ci_high, n=self.n, verdict=self.verdict, rule=self.rule,
                    basis=self.basis or "", can_contradict=self.can_contradict, why=self.why,
                    built_in="; ".join(self.built_in), neutral=self.neutral, set_by_simulation=self.simulated[0],
                    set_by_simulation_ci_low=self.simulated[1], set_by_simulation_ci_high=self.simulated[2])


def _level_words(level: float) -> str:
    pct = 100 * level
    return f"{pct:.0f}%" if abs(pct - round(pct)) < 1e-9 else f"{pct:g}%"


def _basis_kw(basis: str | None, why: str, built_in: Sequence[str], neutral: str = "") -> dict[str, Any]:
    return dict(basis=basis, built_in=tuple(built_in), neutral=neutral, why=why)


def interval_finding(finding: str, paper: str, estimate: float, ci_low: float, ci_high: float, n: float, *,
                     paper_side: str, threshold: float = 0.0, level: float = 0.95,
                     quantity: str | None = None, fmt: str = ".3g", domain: Sequence[float] = REAL_LINE,
                     basis: str | None = None, why: str = "", built_in: Sequence[str] = (),
                     fact: str = "") -> Finding:
    """A finding judged by its interval (:func:`judge`).

    Parameters
    ----------
    finding : the claim in words (e.g. "RL arrives more often than SFT").
    paper : the paper's value or direction, as text (e.g. "+8.1 pp (Table 2)").
    estimate, ci_low, ci_high : our point estimate and its ``level`` interval.
    n : independent units behind the estimate.
    paper_side, threshold : see :func:`judge`.
    level : confidence level of ``[ci_low, ci_high]``; written into the rule.
    quantity : short name of the quantity for the rule text (default: the finding).
    domain : ``(low, high)`` the quantity can take by definition or construction
        (:data:`NONNEGATIVE`, :data:`PROPORTION`, ...); decides ``can_contradict``
        (:func:`can_contradict`).
    basis, why, built_in : what the verdict rests on (see :class:`Finding`).
    fact : the data the row rests on, when another row could rest on the same.

    Raises
    ------
    ValueError
        As :func:`judge` and :class:`Finding`; also for a ``level`` outside (0, 1).
    """
    level = _check_level(level)
    verdict = judge(ci_low, ci_high, paper_side=paper_side, threshold=threshold)
    cc = can_contradict(domain, paper_side=paper_side, threshold=threshold)
    note = ""
    if verdict == "contradicted" and not cc:
        verdict, note = "inconclusive", ("the interval lies outside the quantity's domain, so it says nothing "
                                         "against the claim")
    q = quantity or finding
    rule = f"{_level_words(level)} CI of {q} {paper_side} {threshold:g}"
    if math.isnan(float(ci_low)) or math.isnan(float(ci_high)):
        note = "the interval is undefined (it has no finite bound), so the rule cannot decide"
    return Finding(finding, str(paper), float(estimate), float(ci_low), float(ci_high), float(n), verdict,
                   rule, level=level, fmt=fmt, can_contradict=cc, fact=fact,
                   **_basis_kw(basis, _join(why, note), built_in))


def equivalence_finding(finding: str, paper: str, estimate: float, ci_low: float, ci_high: float, n: float, *,
                        target: float, margin: float, level: float = 0.95, quantity: str | None = None,
                        margin_source: str = "", fmt: str = ".3g", domain: Sequence[float] = REAL_LINE,
                        basis: str | None = None, why: str = "", built_in: Sequence[str] = (),
                        fact: str = "") -> Finding:
    """A "near ``target``" claim judged by :func:`judge_equivalence` with a stated margin.

    Parameters
    ----------
    target, margin : the band ``[target - margin, target + margin]`` that counts as "near"
        (same unit as the estimate); ``margin_source`` says where the margin comes from.
    domain : what the quantity can be (:func:`can_contradict`): the claim can be
        contradicted only if the domain reaches outside the band.
    Other parameters as :func:`interval_finding`.

    Raises
    ------
    ValueError
        As :func:`judge_equivalence` and :class:`Finding`; a ``level`` outside (0, 1).
    """
    level = _check_level(level)
    verdict = judge_equivalence(ci_low, ci_high, target=target, margin=margin)
    dlo, dhi = _check_domain(domain)
    cc = dlo < target - margin or dhi > target + margin
    note = ""
    if verdict == "contradicted" and not cc:
        verdict, note = "inconclusive", "the interval lies outside the quantity's domain"
    if math.isnan(float(ci_low)) or math.isnan(float(ci_high)):
        note = "the interval is undefined (it has no finite bound), so the rule cannot decide"
    src = f" ({margin_source})" if margin_source else ""
    rule = f"{_level_words(level)} CI of {quantity or finding} within {target:g} ± {margin:g}{src}"
    return Finding(finding, str(paper), float(estimate), float(ci_low), float(ci_high), float(n), verdict, rule,
                   level=level, fmt=fmt, can_contradict=cc, fact=fact, **_basis_kw(basis, _join(why, note), built_in))


def coverage_finding(finding: str, paper: str, hits: int, n: int, *, nominal: float, margin: float | None = None,
                     level: float = 0.95, quantity: str = "coverage (exact)", fmt: str = ".4f",
                     basis: str | None = None, why: str = "", built_in: Sequence[str] = (),
                     fact: str = "") -> Finding:
    """A "coverage near the nominal ``1 - alpha``" claim: the exact (Clopper-Pearson) interval
    of ``hits / n`` within ``nominal ± margin`` (:func:`equivalence_finding`).

    ``hits`` are trials whose interval covered the truth, out of ``n`` independent trials
    (pool cells with :func:`pool_independent`). The default margin is Bradley's (1978)
    liberal criterion, ``alpha / 2`` with ``alpha = 1 - nominal`` (0.025 at 95 %).

    Raises
    ------
    ValueError
        As :func:`binomial_interval`; a ``nominal`` outside (0, 1); a non-positive margin.
    """
    nominal = float(nominal)
    if not (0.0 < nominal < 1.0):
        raise ValueError(f"nominal coverage must lie strictly between 0 and 1; got {nominal}")
    source = ""
    if margin is None:
        margin, source = (1.0 - nominal) / 2.0, "Bradley's liberal criterion, alpha ± alpha/2"
    rate, lo, hi = binomial_interval(hits, n, level=level)
    return equivalence_finding(finding, paper, rate, lo, hi, n, target=nominal, margin=margin, level=level,
                               quantity=quantity, margin_source=source, fmt=fmt, domain=PROPORTION, basis=basis,
                               why=why, built_in=built_in, fact=fact)


def magnitude_finding(finding: str, paper: str, estimate: float, ci_low: float, ci_high: float, n: float, *,
                      paper_value: float, paper_side: str, threshold: float = 0.0, factor: float = 2.0,
                      level: float = 0.95, quantity: str | None = None, fmt: str = ".3g",
                      domain: Sequence[float] = REAL_LINE, basis: str | None = None, why: str = "",
                      built_in: Sequence[str] = (), fact: str = "") -> Finding:
    """A directional claim with a paper value: the direction by :func:`judge`, then the size.

    When the direction reappears, the interval must meet the band of effects within
    ``factor`` of the paper's (distances from ``threshold`` between ``|paper_value -
    threshold| / factor`` and ``|paper_value - threshold| * factor``); an interval wholly
    outside the band gives ``"same direction, magnitude differs"``.

    Raises
    ------
    ValueError
        A ``paper_value`` not strictly on ``paper_side`` of ``threshold``, a ``factor`` <= 1,
        or as :func:`interval_finding`.
    """
    level = _check_level(level)
    p, t, factor = float(paper_value), float(threshold), float(factor)
    if math.isnan(p) or not ((p > t) if paper_side == "above" else (p < t)):
        raise ValueError(f"finding {finding!r}: paper_value {p} must lie strictly {paper_side} the threshold {t}")
    if not factor > 1.0:
        raise ValueError(f"factor must exceed 1; got {factor}")
    verdict = judge(ci_low, ci_high, paper_side=paper_side, threshold=t)
    cc = can_contradict(domain, paper_side=paper_side, threshold=t)
    a, b = sorted((t + (p - t) / factor, t + (p - t) * factor))
    if verdict == "reappears" and (float(ci_high) < a or float(ci_low) > b):
        verdict = MAGNITUDE_DIFFERS
    note = ""
    if verdict == "contradicted" and not cc:
        verdict, note = "inconclusive", "the interval lies outside the quantity's domain"
    rule = (f"{_level_words(level)} CI of {quantity or finding} {paper_side} {t:g}; the size agrees when it meets "
            f"[{a:{fmt}}, {b:{fmt}}] (paper {p:{fmt}} within a factor of {factor:g})")
    return Finding(finding, str(paper), float(estimate), float(ci_low), float(ci_high), float(n), verdict, rule,
                   level=level, fmt=fmt, can_contradict=cc, fact=fact, **_basis_kw(basis, _join(why, note), built_in))


def worst_setting_finding(finding: str, paper: str, hits: Sequence[int], n: Sequence[int], settings: Sequence[str], *,
                          threshold: float, paper_side: str = "below", level: float = 0.95,
                          quantity: str = "rate", fmt: str = ".4f", basis: str | None = None, why: str = "",
                          built_in: Sequence[str] = (), fact: str = "") -> Finding:
    """"In some setting the rate lies ``paper_side`` ``threshold``", judged over K settings
    with the selection adjusted (Šidák): each setting's exact interval at level
    ``level ** (1 / K)``; ``reappears`` if one lies wholly on the paper's side,
    ``contradicted`` if every one lies wholly on the other side, else ``inconclusive``.
    The row shows the most extreme setting (lowest upper bound for ``"below"``).

    With every setting exactly at ``threshold`` the chance of ``reappears`` is at most
    ``(1 - level) / 2`` whatever K, where the unadjusted minimum of K settings would say
    ``reappears`` about K times as often.

    Raises
    ------
    ValueError
        Lengths that differ or are 0; counts as :func:`binomial_interval`; a bad side.
    """
    if paper_side not in PAPER_SIDES:
        raise ValueError(f"paper_side must be one of {PAPER_SIDES}; got {paper_side!r}")
    k_all, n_all, names = list(hits), list(n), [str(s) for s in settings]
    if not names or not (len(k_all) == len(n_all) == len(names)):
        raise ValueError(f"need one hits and one n per setting; got {len(k_all)}, {len(n_all)}, {len(names)}")
    level = _check_level(level)
    k_level = level ** (1.0 / len(names))
    ivs = [binomial_interval(k, m, level=k_level) for k, m in zip(k_all, n_all)]
    t = float(threshold)
    if paper_side == "below":
        j = int(np.argmin([iv[2] for iv in ivs]))
        on_side, other = [iv[2] < t for iv in ivs], [iv[1] > t for iv in ivs]
    else:
        j = int(np.argmax([iv[1] for iv in ivs]))
        on_side, other = [iv[1] > t for iv in ivs], [iv[2] < t for iv in ivs]
    verdict = "reappears" if any(on_side) else ("contradicted" if all(other) else "inconclusive")
    rate, lo, hi = ivs[j]
    rule = (f"exact {_level_words(k_level)} CI (Šidák for {len(names)} settings, familywise "
            f"{_level_words(level)}) of the {quantity} in some setting {paper_side} {t:g}; contradicted when every "
            f"setting lies on the other side (shown: {names[j]})")
    cc = can_contradict(PROPORTION, paper_side=paper_side, threshold=t)
    return Finding(finding, str(paper), rate, lo, hi, float(n_all[j]), verdict, rule, level=k_level, fmt=fmt,
                   can_contradict=cc, fact=fact, **_basis_kw(basis, why, built_in))


_CRITERIA = ("==", "<=", ">=", "<", ">")


def _criterion_can_fail(criterion: tuple[str, float], domain: Sequence[float]) -> bool:
    op, v = criterion
    lo, hi = _check_domain(domain)
    v = float(v)
    return {"==": not (lo == hi == v), "<=": hi > v, "<": hi >= v, ">=": lo < v, ">": lo <= v}[op]


def _criterion_holds(criterion: tuple[str, float], x: float) -> bool:
    op, v = criterion
    return {"==": x == v, "<=": x <= v, "<": x < v, ">=": x >= v, ">": x > v}[op]


def exact_finding(finding: str, paper: str, estimate: float, n: float, *, rule: str, holds: bool | None = None,
                  fmt: str = ".3g", otherwise: str = "contradicted", criterion: tuple[str, float] | None = None,
                  domain: Sequence[float] = REAL_LINE, basis: str | None = None, why: str = "",
                  built_in: Sequence[str] = (), fact: str = "") -> Finding:
    """A finding judged by the paper's exact criterion (e.g. 0 clean triggers when the paper
    reports 0): ``reappears`` if it holds else ``otherwise``.

    ``otherwise="inconclusive"`` for a criterion whose failure is no evidence against the
    paper (e.g. p >= 0.05 of a significance test, or no rescue seen in a small cohort);
    the default ``"contradicted"`` for one whose failure is (e.g. a clean harm where the
    paper reports none). ``criterion = (op, value)`` with ``op`` in ``==, <=, >=, <, >``
    states the criterion on ``estimate`` (then ``holds`` may be left out, and must agree if
    given); with ``domain`` it decides ``can_contradict``: a criterion no value of the
    domain fails (e.g. "0 cheating in round 1" when round 1 is honest by construction,
    domain ``(0, 0)``) cannot be contradicted, nor can a rule with
    ``otherwise="inconclusive"``.

    Raises
    ------
    ValueError
        If ``holds`` is not a bool (a NaN or array must be decided by the caller) and no
        criterion decides it, or disagrees with the criterion; ``rule`` is empty; an
        unknown ``op``; or ``otherwise`` is not "contradicted" / "inconclusive".
    """
    if otherwise not in ("contradicted", "inconclusive"):
        raise ValueError(f"otherwise={otherwise!r}: expected 'contradicted' or 'inconclusive'")
    if criterion is not None:
        if len(criterion) != 2 or criterion[0] not in _CRITERIA:
            raise ValueError(f"finding {finding!r}: criterion must be (op, value) with op in {_CRITERIA}; "
                             f"got {criterion!r}")
        by_criterion = _criterion_holds(criterion, float(estimate))
        if holds is not None and bool(holds) != by_criterion:
            raise ValueError(f"finding {finding!r}: holds={holds!r} disagrees with criterion {criterion!r} "
                             f"on estimate {estimate!r}")
        holds = by_criterion
    if not isinstance(holds, (bool, np.bool_)):
        raise ValueError(f"finding {finding!r}: holds must be a bool; got {holds!r}")
    cc = otherwise == "contradicted" and (criterion is None or _criterion_can_fail(criterion, domain))
    verdict = "reappears" if bool(holds) else (otherwise if cc else "inconclusive")
    return Finding(finding, str(paper), float(estimate), _NAN, _NAN, float(n), verdict, rule, fmt=fmt,
                   can_contradict=cc, fact=fact, **_basis_kw(basis, why or "the paper's exact criterion", built_in))


def untestable_finding(finding: str, paper: str, *, why: str, measured: float, rule: str | None = None,
                       basis: str | None = None, built_in: Sequence[str] = (), fact: str = "") -> Finding:
    """A finding the design cannot express, decided by a measurement (its rule cannot
    contradict: ``can_contradict`` is False).

    Parameters
    ----------
    why : one sentence naming the measurement (e.g. "the content-ablated arm changed the
        agent's next action in 0 of 480 forks").
    measured : the number that decided it (e.g. 0.0).

    Raises
    ------
    ValueError
        If ``why`` is empty or ``measured`` is NaN (no measurement, no verdict).
    """
    if not str(why).strip():
        raise ValueError(f"finding {finding!r}: say why it is not testable (the measurement)")
    if measured is None or math.isnan(float(measured)):
        raise ValueError(f"finding {finding!r}: 'not testable here' needs the measured number; got {measured!r}")
    return Finding(finding, str(paper), _NAN, _NAN, _NAN, _NAN, "not testable here",
                   rule or "an arm that changed nothing cannot support the claim", measured=float(measured),
                   can_contradict=False, fact=fact, **_basis_kw(basis, str(why), built_in))


def share_upper_bound(hits: int, n: int, *, level: float = 0.95) -> tuple[float, float]:
    """The share ``hits / n`` and its exact one-sided ``level`` upper bound (Clopper-Pearson,
    :func:`scipy.stats.binomtest` with ``alternative="less"``); at ``hits = 0`` the bound is
    ``1 - (1 - level) ** (1 / n)``.

    Raises
    ------
    ValueError
        ``n < 1``, ``hits`` outside ``[0, n]``, ``level`` outside (0, 1).
    """
    level = _check_level(level)
    hits, n = int(hits), int(n)
    if n < 1 or not (0 <= hits <= n):
        raise ValueError(f"need 0 <= hits <= n with n >= 1; got hits={hits}, n={n}")
    ci = stats.binomtest(hits, n, alternative="less").proportion_ci(confidence_level=level, method="exact")
    return hits / n, float(ci.high)


def testability_gate(finding: str, paper: str, hits: int, n: int, *, threshold: float, what: str,
                     level: float = 0.95, basis: str | None = None, why: str = "", built_in: Sequence[str] = (),
                     fact: str = "") -> Finding | None:
    """A ``not testable here`` row when the design cannot express the claim, else ``None``.

    ``hits`` of ``n`` units show what the claim needs (``what``, e.g. "forks in which
    refresh changed the next action"); the claim is not testable only when the exact
    one-sided ``level`` upper bound of that share (:func:`share_upper_bound`) lies under
    ``threshold``. 0 of 6 forks (bound 0.39 at 95 %) is therefore no reason: the caller's
    own rule decides (usually ``inconclusive``).

    Raises
    ------
    ValueError
        As :func:`share_upper_bound`; a ``threshold`` outside (0, 1].
    """
    if not (0.0 < float(threshold) <= 1.0):
        raise ValueError(f"threshold must lie in (0, 1]; got {threshold}")
    share, upper = share_upper_bound(hits, n, level=level)
    if upper >= threshold:
        return None
    return untestable_finding(finding, paper, measured=share, basis=basis, built_in=built_in, fact=fact,
                              why=_join(why, f"{what}: {hits} of {n} (exact {_level_words(level)} upper bound "
                                             f"{upper:.3f}, under {threshold:g})"),
                              rule=f"not testable when the exact upper bound of the share of {what} is under "
                                   f"{threshold:g}")


def wald_power(effect: float, se: float, *, level: float = 0.95, critical: float | None = None) -> float:
    """Power of the rule "the interval ``estimate ± c se`` excludes 0 on the effect's side"
    when the estimate is normal with mean ``effect`` and standard error ``se``:
    ``Phi(|effect| / se - c)``, with ``c = Phi^{-1}((1 + level) / 2)`` (two-sided
    pointwise) unless ``critical`` gives another (e.g. a simultaneous band's critical
    value or a one-sided bound's quantile).

    Raises
    ------
    ValueError
        A NaN ``effect``, a non-positive or NaN ``se``, a ``level`` outside (0, 1), a
        non-positive ``critical``.
    """
    level = _check_level(level)
    effect, se = float(effect), float(se)
    if math.isnan(effect) or not se > 0:
        raise ValueError(f"need a finite effect and se > 0; got effect={effect}, se={se}")
    c = float(stats.norm.ppf(0.5 + level / 2)) if critical is None else float(critical)
    if not c > 0:
        raise ValueError(f"critical must be positive; got {critical}")
    return float(stats.norm.cdf(abs(effect) / se - c))


def power_gated(row: Finding, power: float, *, effect: str, min_power: float = 0.8) -> Finding:
    """A "no effect" claim with the power to see the paper's effect at this run's size.

    ``power`` is the chance the chapter's own rule, at the chapter's own size, detects the
    paper's effect (``effect`` says which, e.g. "+3.75 points"; a planted control's rate
    or :func:`wald_power`). Below ``min_power`` a ``reappears`` or ``inconclusive``
    verdict becomes ``not testable here`` (``measured`` = the power); a ``contradicted``
    one stands (an effect was found). The power is written into ``why`` either way.

    Raises
    ------
    ValueError
        A power outside [0, 1] or NaN, a ``min_power`` outside (0, 1].
    """
    power = float(power)
    if not (0.0 <= power <= 1.0):
        raise ValueError(f"power must lie in [0, 1]; got {power}")
    if not (0.0 < float(min_power) <= 1.0):
        raise ValueError(f"min_power must lie in (0, 1]; got {min_power}")
    words = f"power {power:.2f} to see {effect} at this run's size"
    if power < min_power and row.verdict != "contradicted":
        return replace(row, verdict="not testable here", measured=power,
                       why=_join(row.why, f"{words}, under {min_power:g}"))
    return replace(row, why=_join(row.why, words))


def neutral_control(neutral: Finding, simulated: Finding, *, built_in: Sequence[str], setting: str) -> Finding:
    """A ``built in`` finding: the verdict from the run with the named simulation
    parameters at their neutral value (``neutral``, the arms identical in the agent), the
    effect as simulated (``simulated``) shown apart, labelled "set by the simulation".

    Parameters
    ----------
    neutral, simulated : the same claim judged on the neutral run and on the simulated one.
    built_in : the parameter(s) or code path that produce the effect (e.g.
        ``("AgentParams.strictness",)``).
    setting : their neutral setting in words (e.g. "strictness = 0").

    Raises
    ------
    ValueError
        Rows for different claims, no parameter named, or an empty ``setting``.
    """
    if neutral.finding != simulated.finding:
        raise ValueError(f"neutral and simulated rows judge different claims: {neutral.finding!r} vs "
                         f"{simulated.finding!r}")
    names = tuple(str(b) for b in built_in)
    if not names or not str(setting).strip():
        raise ValueError(f"finding {neutral.finding!r}: name the built-in parameter(s) and their neutral setting")
    why = _join(f"the simulated effect is set by {', '.join(f'`{n}`' for n in names)}; the verdict is the run "
                "with them neutral",
                neutral.why if neutral.basis is None else "")
    return replace(neutral, basis="built in", built_in=names, neutral=str(setting), why=why,
                   simulated=(simulated.estimate, simulated.ci_low, simulated.ci_high))


def pool_independent(cells: pd.DataFrame, *, sample: str, n: str = "n_trials", rate: str | None = None,
                     hits: str | None = None) -> tuple[int, int]:
    """Pooled ``(hits, n)`` over cells that are independent samples.

    ``sample`` names the column identifying the trials a cell was computed on; two cells
    with the same value share trials (e.g. Table 4's R = 5 and R = 20 cells of one M share
    their clusters) and may not be pooled as independent. Give either ``hits`` (a count
    column) or ``rate`` (then ``rate * n`` must be a whole number).

    Raises
    ------
    KeyError
        A missing column.
    ValueError
        Cells sharing a sample, neither or both of ``hits`` / ``rate``, a rate that is not
        a whole number of trials, no trials.
    """
    if (hits is None) == (rate is None):
        raise ValueError("give exactly one of hits= (a count column) or rate= (a rate column)")
    cols = [sample, n, hits or rate]
    missing = [c for c in cols if c not in cells.columns]
    if missing:
        raise KeyError(f"cells lack column(s) {missing}; have {list(cells.columns)}")
    dup = cells[sample][cells[sample].duplicated()].tolist()
    if dup:
        raise ValueError(f"cells share trials ({sample} = {sorted(set(dup))!r} appears more than once); pool only "
                         f"independent trials, e.g. one cell per {sample}")
    m = cells[n].to_numpy(float)
    k = cells[hits].to_numpy(float) if hits else cells[rate].to_numpy(float) * m
    if not np.allclose(k, np.round(k), rtol=0, atol=1e-6 * max(1.0, float(m.max(initial=1.0)))):
        raise ValueError(f"{hits or rate} does not give a whole number of trials: {k.tolist()}")
    if m.sum() < 1:
        raise ValueError("no trials to pool")
    return int(np.round(k).sum()), int(m.sum())


def _verdict_words(c: Mapping[str, int]) -> str:
    def are(k: int) -> str:
        return "is" if k == 1 else "are"
    size = f", {c[MAGNITUDE_DIFFERS]} reappear{'s' if c[MAGNITUDE_DIFFERS] == 1 else ''} with another magnitude" \
        if c.get(MAGNITUDE_DIFFERS) else ""
    return (f"{c['reappears']} reappear{size}, {c['contradicted']} {are(c['contradicted'])} contradicted, "
            f"{c['inconclusive']} {are(c['inconclusive'])} inconclusive and {c['not testable here']} "
            f"{are(c['not testable here'])} not testable here")


@dataclass(frozen=True)
class Findings(Result):
    """The findings of one study: one :class:`Finding` per paper claim.

    ``to_frame()`` is the tidy table (estimand = the finding text; extra columns
    ``paper, verdict, rule, basis, can_contradict, why, measured``); :meth:`table` is
    ``findings.csv``; :meth:`sentences` the glued lines; :meth:`counts` the verdict counts
    (of the evidence rows with ``evidence_only=True``).

    Raises
    ------
    ValueError
        A row without a basis (every verdict says what it rests on); two rows sharing a
        finding text (each claim is judged once) or a ``fact`` (one finding per fact).
    """

    rows: tuple[Finding, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    provenance: ResultProvenance = field(default_factory=ResultProvenance)
    title: str = "findings"

    def __post_init__(self) -> None:
        rows = tuple(self.rows)
        bad = [r for r in rows if not isinstance(r, Finding)]
        if bad:
            raise ValueError(f"Findings rows must be Finding objects; got {type(bad[0]).__name__}")
        unstated = [r.finding for r in rows if r.basis is None]
        if unstated:
            raise ValueError(f"finding(s) {unstated} state no basis: say what each verdict rests on "
                             f"(basis= one of {BASES}, with a one-line why)")
        for key, what in (("finding", "each claim is judged once"), ("fact", "one finding per fact")):
            vals = [getattr(r, key) for r in rows if getattr(r, key)]
            dup = sorted({t for t in vals if vals.count(t) > 1})
            if dup:
                raise ValueError(f"duplicate {key}(s) {dup}: {what}")
        object.__setattr__(self, "rows", rows)

    @classmethod
    def build(cls, rows: Iterable[Finding], *, seed: Any = None, title: str = "findings",
              inputs: Mapping[str, Any] | None = None, **params: Any) -> "Findings":
        """Findings with ``params = {"seed": seed, **params}`` and provenance hashing
        ``inputs`` (default: the table itself)."""
        rows = tuple(rows)
        self_ = cls(rows, params={"seed": seed, **params}, title=title)
        prov_inputs = dict(inputs) if inputs else {"findings": self_.table()}
        return cls(rows, params={"seed": seed, **params}, provenance=make_provenance(seed=seed, **prov_inputs),
                   title=title)

    def table(self) -> pd.DataFrame:
        """``findings.csv``: columns exactly :data:`TABLE_COLUMNS`, one row per claim."""
        return pd.DataFrame([r.row() for r in self.rows], columns=list(TABLE_COLUMNS))

    def compact(self) -> pd.DataFrame:
        """The table a chapter displays: ``finding, verdict, basis, estimate, ci_low, ci_high,
        n``, plus ``set_by_simulation`` (and its interval) when a row is ``built in`` --
        narrow enough for the text column; ``findings.csv`` keeps every column."""
        t = self.table()
        cols = ["finding", "verdict", "basis", "estimate", "ci_low", "ci_high", "n"]
        if (t["basis"] == "built in").any():
            cols += ["set_by_simulation", "set_by_simulation_ci_low", "set_by_simulation_ci_high"]
        return t[cols]

    def _tidy(self) -> pd.DataFrame:
        recs = []
        for r in self.rows:
            has_ci = not (math.isnan(r.ci_low) or math.isnan(r.ci_high))
            recs.append(dict(paper=r.paper, verdict=r.verdict, rule=r.rule, basis=r.basis or "",
                             can_contradict=r.can_contradict, why=r.why, measured=r.measured,
                             estimand=r.finding, estimate=r.estimate, ci_low=r.ci_low, ci_high=r.ci_high,
                             side="two-sided" if has_ci else "", level=r.level if has_ci else np.nan, n=r.n))
        if not recs:
            return tidy_rows(pd.DataFrame(columns=["estimand", "estimate"]))
        return tidy_rows(recs)

    def sentences(self) -> list[str]:
        """One plain line per finding, in row order."""
        return [r.sentence() for r in self.rows]

    def evidence(self) -> tuple[Finding, ...]:
        """The rows whose basis counts as evidence (:data:`EVIDENCE_BASES`)."""
        return tuple(r for r in self.rows if r.basis in EVIDENCE_BASES)

    def counts(self, *, evidence_only: bool = False) -> dict[str, int]:
        """``{verdict: count}`` over :data:`VERDICTS` (zeros included); with
        ``evidence_only`` only the ``method`` and ``measured`` rows."""
        rows = self.evidence() if evidence_only else self.rows
        return {v: sum(r.verdict == v for r in rows) for v in VERDICTS}

    def counts_by_basis(self) -> pd.DataFrame:
        """Verdict counts by basis: index :data:`BASES` (plus "not stated" for rows without
        one), columns :data:`VERDICTS`."""
        return verdicts_by_basis({self.title: self.table()}).set_index("basis")[list(VERDICTS)]

    def counts_sentence(self) -> str:
        """E.g. "Of 12 paper findings, 7 rest on evidence (method or measured): 3 reappear, 0
        are contradicted, 3 are inconclusive and 1 is not testable here; 5 others are not
        evidence: set by the simulation (4), true by arithmetic (1).". Only ``method`` and
        ``measured`` rows are counted as evidence."""
        n = len(self.rows)
        ev = self.evidence()
        n_built = sum(r.basis == "built in" for r in self.rows)
        n_arith = sum(r.basis == "arithmetic" for r in self.rows)
        head = (f"Of {n} paper findings, {len(ev)} rest{'s' if len(ev) == 1 else ''} on evidence (method or measured)"
                + (f": {_verdict_words(self.counts(evidence_only=True))}" if ev else ""))
        others = n - len(ev)
        tail = (f"; {others} {'other is' if others == 1 else 'others are'} not evidence: set by the simulation "
                f"({n_built}), true by arithmetic ({n_arith})" if others else "")
        return head + tail + "."

    def verdict(self, finding: str) -> str:
        """The verdict of one finding (``KeyError`` naming the findings if absent)."""
        for r in self.rows:
            if r.finding == finding:
                return r.verdict
        raise KeyError(f"no finding {finding!r}; findings: {[r.finding for r in self.rows]}")


def verdicts_by_basis(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Verdict counts by basis, chapter by chapter, from ``findings.csv`` tables.

    Parameters
    ----------
    tables : ``{chapter: findings table}`` (columns ``basis`` and ``verdict``; an empty
        or missing basis counts as "not stated").

    Returns
    -------
    DataFrame with columns ``chapter, basis, evidence`` (bool: basis in
    :data:`EVIDENCE_BASES`), one column per verdict of :data:`VERDICTS`, and ``total``;
    one row per chapter and basis that occurs, bases in :data:`BASES` order.

    Raises
    ------
    KeyError
        A table without a ``verdict`` column.
    ValueError
        A verdict or basis outside the vocabulary.
    """
    order = list(BASES) + ["not stated"]
    out = []
    for chapter, t in tables.items():
        if "verdict" not in t.columns:
            raise KeyError(f"{chapter}: findings table has no 'verdict' column; have {list(t.columns)}")
        basis = (t["basis"] if "basis" in t.columns else pd.Series("", index=t.index)).fillna("").astype(str)
        basis = basis.replace("", "not stated")
        bad_v = sorted(set(t["verdict"]) - set(VERDICTS))
        bad_b = sorted(set(basis) - set(order))
        if bad_v or bad_b:
            raise ValueError(f"{chapter}: unknown verdict(s) {bad_v} / basis {bad_b}; expected {VERDICTS} / {BASES}")
        for b in order:
            sel = t["verdict"][basis == b]
            if len(sel):
                out.append(dict(chapter=chapter, basis=b, evidence=b in EVIDENCE_BASES,
                                **{v: int((sel == v).sum()) for v in VERDICTS}, total=int(len(sel))))
    return pd.DataFrame(out, columns=["chapter", "basis", "evidence", *VERDICTS, "total"])



def binomial_interval(hits: int, n: int, *, level: float = 0.95) -> tuple[float, float, float]:
    """Rate ``hits / n`` with its exact (Clopper-Pearson) ``level`` interval.

    Returns ``(rate, ci_low, ci_high)`` (all in [0, 1]).

    Raises
    ------
    ValueError
        If ``n < 1``, ``hits`` is outside ``[0, n]``, or ``level`` outside (0, 1).

    Source: Clopper & Pearson (1934), via :func:`scipy.stats.binomtest`.
    """
    level = _check_level(level)
    hits, n = int(hits), int(n)
    if n < 1:
        raise ValueError(f"need at least one replicate; got n={n}")
    if not (0 <= hits <= n):
        raise ValueError(f"hits must lie in [0, {n}]; got {hits}")
    ci = stats.binomtest(hits, n).proportion_ci(confidence_level=level, method="exact")
    return hits / n, float(ci.low), float(ci.high)


def control_row(family: str, subject: str, verdicts: Sequence[str], *, planted: bool, rule: str,
                level: float = 0.95, hit: str = "reappears") -> dict[str, Any]:
    """One row of ``controls.csv``: how often a verdict rule said ``hit`` over R replicates.

    Parameters
    ----------
    family : the finding family (e.g. "refresh rescues stale trajectories").
    subject : the subject's label; must say *planted* or *null* (checked).
    verdicts : the rule's verdict on each of the R replicates (each in :data:`VERDICTS`).
    planted : True when the effect exists by construction (rate = power), False for the
        null subject (rate = false-positive rate).
    rule : the verdict rule in words.

    Returns
    -------
    dict with :data:`CONTROL_COLUMNS` (``measures`` = "power" or "false-positive rate").

    Raises
    ------
    ValueError
        If ``verdicts`` is empty or holds a value outside :data:`VERDICTS`, or the subject
        label does not say "planted" / "null".
    """
    verdicts = list(verdicts)
    bad = sorted({v for v in verdicts if v not in VERDICTS})
    if bad:
        raise ValueError(f"unknown verdict(s) {bad}; expected {VERDICTS}")
    if not verdicts:
        raise ValueError(f"control {family!r}/{subject!r}: no replicates")
    word = "planted" if planted else "null"
    if word not in subject.lower():
        raise ValueError(f"control subject {subject!r} must be labelled {word!r}")
    hits = sum(v == hit for v in verdicts)
    rate, lo, hi = binomial_interval(hits, len(verdicts), level=level)
    return dict(family=family, subject=subject, planted=bool(planted), rule=rule, replicates=len(verdicts),
                hits=hits, rate=rate, ci_low=lo, ci_high=hi, level=level,
                measures="power" if planted else "false-positive rate")


def controls_sentence(controls) -> str:
    """One sentence per control family of a ``controls.csv`` table (rows of
    :func:`control_row`): how often the verdict rule found the effect on the *planted*
    subject (power) and on the null one (false-positive rate), with their exact intervals.

    Raises
    ------
    KeyError
        A missing column of :data:`CONTROL_COLUMNS`; IndexError if a family lacks its
        planted or its null row.
    """
    parts = []
    for fam, g in controls.groupby("family", sort=False):
        p, n = g[g["planted"]].iloc[0], g[~g["planted"]].iloc[0]
        parts.append(f"“{fam}”: found in {p['hits']} of {p['replicates']} planted replicates (power "
                     f"{p['rate']:.2f} [{p['ci_low']:.2f}, {p['ci_high']:.2f}]) and in {n['hits']} of "
                     f"{n['replicates']} null replicates (false-positive rate {n['rate']:.2f} "
                     f"[{n['ci_low']:.2f}, {n['ci_high']:.2f}]).")
    return " ".join(parts)
