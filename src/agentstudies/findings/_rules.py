"""The rules that turn an estimate into a :class:`~agentstudies.findings.Finding`: interval,
equivalence, coverage, magnitude, worst-setting, exact and untestable rows, each with its
computed ``can_contradict``; and :func:`pool_independent`, which pools only cells on
independent trials before a coverage rule.

Sources: the default coverage margin is Bradley's (1978) liberal criterion
``alpha ± alpha / 2``; the selection adjustment is Šidák's (1967); exact intervals are
Clopper & Pearson (1934) via :func:`scipy.stats.binomtest`.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from agentstudies.findings._controls import binomial_interval
from agentstudies.findings._row import Finding
from agentstudies.findings._vocabulary import (_NAN, MAGNITUDE_DIFFERS, PAPER_SIDES, PROPORTION, REAL_LINE,
                                               _check_domain, _check_level, _join, _level_words, can_contradict,
                                               judge, judge_equivalence)


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
