"""Findings of the SASST simulation chapters (issue 25 item 1): Monte-Carlo coverage and
error rates judged by exact intervals against the paper's stated targets.

:func:`calibration_findings` reads the summaries of :mod:`agentstudies.studies.sasst_calibration`
(Table 4, Table 5, Study A4). Every rate is a count of trials, so its interval is exact
(Clopper-Pearson, :func:`agentstudies.findings.binomial_interval`); the paired split vs
same-data gap has a Wald interval from the discordant pairs (the same pairs McNemar's test
uses). The targets are the paper's: nominal ``1 - alpha`` coverage and an ``alpha``
false-fragility rate (SASST, Appendix D.1).

Source: issue 25; SASST Appendix D.1 (Tables 4-5, Study A4).
"""

from __future__ import annotations

import math

import pandas as pd
from scipy import stats

__all__ = ["calibration_findings", "paired_gap_interval"]


def paired_gap_interval(split_only: int, same_only: int, n: int, *, level: float = 0.95) -> tuple[float, float, float]:
    """Paired difference of two coverage rates on the same ``n`` trials, ``(b - c) / n``
    with ``b`` = trials covered by split only, ``c`` = by same-data only, and its two-sided
    Wald ``level`` interval ``± z sqrt(b + c - (b - c)^2 / n) / n``.

    Raises ``ValueError`` for ``n < 1`` or counts outside ``[0, n]``.
    """
    b, c, n = int(split_only), int(same_only), int(n)
    if n < 1 or not (0 <= b <= n and 0 <= c <= n and b + c <= n):
        raise ValueError(f"need 0 <= split_only + same_only <= n with n >= 1; got {b}, {c}, {n}")
    d = (b - c) / n
    se = math.sqrt(max(b + c - (b - c) ** 2 / n, 0.0)) / n
    z = float(stats.norm.ppf(0.5 + level / 2))
    return d, d - z * se, d + z * se


def _paper(pa4: pd.DataFrame, M: int, col: str) -> str:
    return f"{col.replace('_', ' ')} {pa4.loc[int(M), col]:g}" if int(M) in pa4.index else "M not run in the paper"


def calibration_findings(t4: pd.DataFrame, t5: pd.DataFrame, a4: pd.DataFrame, *, alpha: float = 0.05,
                         level: float = 0.95):
    """The calibration chapter's findings (SASST Study A, Appendix D.1).

    - per rule of Table 4 (``fixed``, ``learned``), pooled over its (M, R) cells: *the
      one-sided pointwise bound covers at least at the nominal* ``1 - alpha``: exact
      interval of the pooled coverage above ``1 - alpha`` (reappears only for a
      conservative bound; contradicted when the whole interval lies below);
    - *same-data selection covers less than the split*: the pooled paired gap (split −
      same data, :func:`paired_gap_interval` over Table 5's M) above 0 (paper values read
      from ``data/paper``);
    - per M of Study A4: *false fragility stays below alpha* (exact interval of the rate
      below ``alpha``) and *familywise coverage is at least nominal* (exact interval above
      ``1 - alpha``).

    Parameters
    ----------
    t4 : :func:`sasst_calibration.summarize_table4` (``rule, coverage, n_trials``).
    t5 : :func:`sasst_calibration.summarize_table5` (``split_only, same_only, n_trials``).
    a4 : :func:`sasst_calibration.summarize_a4` (``M, familywise_coverage,
        false_fragility, n_trials``).

    Returns
    -------
    :class:`agentstudies.findings.Findings`.

    Raises
    ------
    KeyError
        A missing column.
    """
    from agentstudies.findings import Findings, binomial_interval, interval_finding
    from agentstudies.studies import paper_values

    for name, t, cols in (("t4", t4, {"rule", "coverage", "n_trials"}),
                          ("t5", t5, {"split_only", "same_only", "n_trials"}),
                          ("a4", a4, {"M", "familywise_coverage", "false_fragility", "n_trials"})):
        if not cols <= set(t.columns):
            raise KeyError(f"{name} lacks column(s) {sorted(cols - set(t.columns))}")
    nominal = 1.0 - alpha
    rows = []
    for rule, g in t4.groupby("rule", sort=True):
        g = g[g["n_trials"] > 0]
        k, n = int(round((g["coverage"] * g["n_trials"]).sum())), int(g["n_trials"].sum())
        if n == 0:
            continue
        rate, lo, hi = binomial_interval(k, n, level=level)
        rows.append(interval_finding(f"the {rule} rule's one-sided bound covers at least at the nominal level",
                                     f"Table 4: {rule} rule coverage near {nominal:g}", rate, lo, hi, n,
                                     paper_side="above", threshold=nominal, level=level,
                                     quantity=f"pooled coverage of the {rule} rule (exact)", fmt=".4f"))
    p5 = paper_values("sasst_calibration", "table5").dropna(subset=["gap"])
    p5_txt = "; ".join(f"M = {int(r.M)}: gap {r.gap:g}, one-sided lower bound {r.gap_lower_bound:g}, McNemar p "
                       f"{r.mcnemar_p:g}" for r in p5.itertuples()) or "gap not reported"
    pa4 = paper_values("sasst_calibration", "a4").set_index("M")
    b, c, n = int(t5["split_only"].sum()), int(t5["same_only"].sum()), int(t5["n_trials"].sum())
    if n > 0:
        d, lo, hi = paired_gap_interval(b, c, n, level=level)
        rows.append(interval_finding("same-data selection covers less than the split",
                                     f"Table 5: {p5_txt}",
                                     d, lo, hi, n, paper_side="above", level=level,
                                     quantity="split − same-data coverage (paired, pooled over M)", fmt=".4f"))
    for r in a4.itertuples(index=False):
        nt = int(r.n_trials)
        if nt == 0:
            continue
        rate, lo, hi = binomial_interval(int(round(r.false_fragility * nt)), nt, level=level)
        rows.append(interval_finding(f"false fragility stays below alpha (M = {int(r.M)})",
                                     f"Study A4: {_paper(pa4, r.M, 'false_fragility')}", rate, lo, hi, nt,
                                     paper_side="below", threshold=alpha, level=level,
                                     quantity="false-fragility rate (exact)", fmt=".4f"))
        rate, lo, hi = binomial_interval(int(round(r.familywise_coverage * nt)), nt, level=level)
        rows.append(interval_finding(f"familywise coverage is at least nominal (M = {int(r.M)})",
                                     f"Study A4: {_paper(pa4, r.M, 'familywise_coverage')}", rate, lo, hi, nt,
                                     paper_side="above", threshold=nominal, level=level,
                                     quantity="familywise coverage (exact)", fmt=".4f"))
    return Findings.build(rows, seed=None, title="sasst_calibration findings", alpha=alpha, level=level)
