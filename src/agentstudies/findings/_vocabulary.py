"""The verdict and basis vocabulary of findings, and the two interval rules that map a
confidence interval onto it (:func:`judge`, :func:`judge_equivalence`), with
:func:`can_contradict` (whether a directional claim about a quantity of a given domain can
be false).

Sources: the interval rule reads a two-sided confidence interval as a test at level
``1 - level``; the equivalence rule is the interval form of two one-sided tests
(Schuirmann, 1987).
"""

from __future__ import annotations

import math
from typing import Sequence

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


def _level_words(level: float) -> str:
    pct = 100 * level
    return f"{pct:.0f}%" if abs(pct - round(pct)) < 1e-9 else f"{pct:g}%"


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
