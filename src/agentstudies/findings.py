"""Findings that can fail: one verdict vocabulary for every study chapter (issue 25, item 1).

A *finding* is one paper claim confronted with one estimate of ours. Its verdict is
decided by a rule stated in words beside it, never by the sign of a point estimate:

``reappears``
    the whole confidence interval lies strictly on the paper's side of the threshold
    (0 unless the paper states another), or the paper's exact criterion holds;
``contradicted``
    the whole interval lies strictly on the other side (or the exact criterion fails);
``inconclusive``
    neither (the interval touches or straddles the threshold, or a bound is NaN);
``not testable here``
    a *measurement* says the design cannot express the claim (e.g. 0 % of forks in which
    the arm changed the agent's next action); never decided by hand.

Build rows with :func:`interval_finding`, :func:`exact_finding` and
:func:`untestable_finding`, collect them in :class:`Findings` (a
:class:`agentstudies.results.Result`), and let a chapter write ``findings.csv`` =
:meth:`Findings.table` and glue :meth:`Findings.sentences`.

Planted controls (item 3) report how often a verdict rule finds a planted effect
(power) and how often it "finds" one in a null subject (false-positive rate):
:func:`control_row` turns R replicate verdicts into that rate with an exact
(Clopper-Pearson) interval.

Source: issue 25 and its findings spec (``FINDINGS_SPEC.md``); the interval rule follows
the usual reading of a two-sided confidence interval as a test at level ``1 - level``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from agentstudies.results import Result, ResultProvenance, make_provenance, tidy_rows

__all__ = [
    "VERDICTS",
    "PAPER_SIDES",
    "TABLE_COLUMNS",
    "CONTROL_COLUMNS",
    "Finding",
    "Findings",
    "judge",
    "interval_finding",
    "exact_finding",
    "untestable_finding",
    "binomial_interval",
    "control_row",
    "controls_sentence",
]

#: The one verdict vocabulary of the book.
VERDICTS: tuple[str, ...] = ("reappears", "contradicted", "inconclusive", "not testable here")

#: Allowed ``paper_side`` values: the paper claims the quantity lies above / below the threshold.
PAPER_SIDES: tuple[str, ...] = ("above", "below")

#: Columns of :meth:`Findings.table` (``findings.csv``), in this order.
TABLE_COLUMNS: tuple[str, ...] = ("finding", "paper", "estimate", "ci_low", "ci_high", "n",
                                  "verdict", "rule", "why")

#: Columns of :func:`control_row` rows (``controls.csv``).
CONTROL_COLUMNS: tuple[str, ...] = ("family", "subject", "planted", "rule", "replicates", "hits",
                                    "rate", "ci_low", "ci_high", "level", "measures")


def _check_level(level: float) -> float:
    level = float(level)
    if not (0.0 < level < 1.0):
        raise ValueError(f"level must lie strictly between 0 and 1; got {level}")
    return level


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

    Source: issue 25, item 1 (interval rule; never a sign of a point estimate).
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


@dataclass(frozen=True)
class Finding:
    """One paper claim and our verdict on it (one row of ``findings.csv``).

    ``estimate``/``ci_low``/``ci_high`` are in the unit the ``rule`` names; ``n`` is the
    number of independent units behind the estimate (tasks, pairs, episodes); ``level`` the
    confidence level of the interval (NaN for exact / untestable rows); ``measured`` the
    number that decided a ``not testable here`` verdict; ``fmt`` the format spec used by
    :meth:`sentence`.
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
    level: float = float("nan")
    measured: float = float("nan")
    fmt: str = ".3g"

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}; got {self.verdict!r}")
        if not str(self.finding).strip():
            raise ValueError("finding text is empty")
        if not str(self.rule).strip():
            raise ValueError(f"finding {self.finding!r}: rule is empty; state the rule in words")

    def _num(self, x: float) -> str:
        return "NaN" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, self.fmt)

    def sentence(self) -> str:
        """One plain line for "What this run shows"."""
        if self.verdict == "not testable here":
            return f"{self.finding}: not testable here -- {self.why} (paper: {self.paper})."
        n = "" if (isinstance(self.n, float) and math.isnan(self.n)) else f", n = {int(self.n)}"
        if math.isnan(float(self.ci_low)) and math.isnan(float(self.ci_high)):
            est = f"{self._num(self.estimate)}{n}"
        else:
            est = f"{self._num(self.estimate)} [{self._num(self.ci_low)}, {self._num(self.ci_high)}]{n}"
        return f"{self.finding}: {self.verdict} -- ours {est}; paper: {self.paper}; rule: {self.rule}."


def _level_words(level: float) -> str:
    pct = 100 * level
    return f"{pct:.0f}%" if abs(pct - round(pct)) < 1e-9 else f"{pct:g}%"


def interval_finding(finding: str, paper: str, estimate: float, ci_low: float, ci_high: float, n: float, *,
                     paper_side: str, threshold: float = 0.0, level: float = 0.95,
                     quantity: str | None = None, fmt: str = ".3g") -> Finding:
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

    Raises
    ------
    ValueError
        As :func:`judge`; also for a ``level`` outside (0, 1).
    """
    level = _check_level(level)
    verdict = judge(ci_low, ci_high, paper_side=paper_side, threshold=threshold)
    q = quantity or finding
    rule = f"{_level_words(level)} CI of {q} {paper_side} {threshold:g}"
    why = ""
    if math.isnan(float(ci_low)) or math.isnan(float(ci_high)):
        why = "the interval is undefined (NaN bound), so the rule cannot decide"
    return Finding(finding, str(paper), float(estimate), float(ci_low), float(ci_high), float(n), verdict,
                   rule, why=why, level=level, fmt=fmt)


def exact_finding(finding: str, paper: str, estimate: float, n: float, *, holds: bool, rule: str,
                  fmt: str = ".3g", otherwise: str = "contradicted") -> Finding:
    """A finding judged by the paper's exact criterion (e.g. 0 clean triggers when the paper
    reports 0): ``reappears`` if ``holds`` else ``otherwise``.

    ``otherwise="inconclusive"`` for a criterion whose failure is no evidence against the
    paper (e.g. p >= 0.05 of a significance test, or no rescue seen in a small cohort);
    the default ``"contradicted"`` for one whose failure is (e.g. a clean harm where the
    paper reports none).

    Raises
    ------
    ValueError
        If ``holds`` is not a bool (a NaN or array must be decided by the caller),
        ``rule`` is empty, or ``otherwise`` is not "contradicted" / "inconclusive".
    """
    if not isinstance(holds, (bool, np.bool_)):
        raise ValueError(f"finding {finding!r}: holds must be a bool; got {holds!r}")
    if otherwise not in ("contradicted", "inconclusive"):
        raise ValueError(f"otherwise={otherwise!r}: expected 'contradicted' or 'inconclusive'")
    return Finding(finding, str(paper), float(estimate), float("nan"), float("nan"), float(n),
                   "reappears" if bool(holds) else otherwise, rule,
                   why="the paper's exact criterion", fmt=fmt)


def untestable_finding(finding: str, paper: str, *, why: str, measured: float, rule: str | None = None) -> Finding:
    """A finding the design cannot express, decided by a measurement.

    Parameters
    ----------
    why : one sentence naming the measurement (e.g. "the content-ablated arm changed the
        agent's next action in 0.0% of 480 forks").
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
    return Finding(finding, str(paper), float("nan"), float("nan"), float("nan"), float("nan"),
                   "not testable here", rule or "an arm that changed nothing cannot support the claim",
                   why=str(why), measured=float(measured))


@dataclass(frozen=True)
class Findings(Result):
    """The findings of one study: one :class:`Finding` per paper claim.

    ``to_frame()`` is the tidy table (estimand = the finding text; extra columns
    ``paper, verdict, rule, why, measured``); :meth:`table` is ``findings.csv``;
    :meth:`sentences` the glued lines; :meth:`counts` the verdict counts.

    Raises
    ------
    ValueError
        If two rows share a finding text (each claim is judged once).
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
        texts = [r.finding for r in rows]
        dup = sorted({t for t in texts if texts.count(t) > 1})
        if dup:
            raise ValueError(f"duplicate finding(s) {dup}: each claim is judged once")
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
        recs = [{c: getattr(r, c) for c in TABLE_COLUMNS} for r in self.rows]
        return pd.DataFrame(recs, columns=list(TABLE_COLUMNS))

    def _tidy(self) -> pd.DataFrame:
        recs = []
        for r in self.rows:
            has_ci = not (math.isnan(r.ci_low) or math.isnan(r.ci_high))
            recs.append(dict(paper=r.paper, verdict=r.verdict, rule=r.rule, why=r.why, measured=r.measured,
                             estimand=r.finding, estimate=r.estimate, ci_low=r.ci_low, ci_high=r.ci_high,
                             side="two-sided" if has_ci else "", level=r.level if has_ci else np.nan, n=r.n))
        if not recs:
            return tidy_rows(pd.DataFrame(columns=["estimand", "estimate"]))
        return tidy_rows(recs)

    def sentences(self) -> list[str]:
        """One plain line per finding, in row order."""
        return [r.sentence() for r in self.rows]

    def counts(self) -> dict[str, int]:
        """``{verdict: count}`` over :data:`VERDICTS` (zeros included)."""
        return {v: sum(r.verdict == v for r in self.rows) for v in VERDICTS}

    def counts_sentence(self) -> str:
        """E.g. "Of 12 paper findings, 3 reappear, 0 are contradicted, 7 are inconclusive
        and 2 are not testable here."."""
        c = self.counts()
        return (f"Of {len(self.rows)} paper findings, {c['reappears']} reappear, {c['contradicted']} "
                f"{'is' if c['contradicted'] == 1 else 'are'} contradicted, {c['inconclusive']} "
                f"{'is' if c['inconclusive'] == 1 else 'are'} inconclusive and {c['not testable here']} "
                f"{'is' if c['not testable here'] == 1 else 'are'} not testable here.")

    def verdict(self, finding: str) -> str:
        """The verdict of one finding (``KeyError`` naming the findings if absent)."""
        for r in self.rows:
            if r.finding == finding:
                return r.verdict
        raise KeyError(f"no finding {finding!r}; findings: {[r.finding for r in self.rows]}")


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
