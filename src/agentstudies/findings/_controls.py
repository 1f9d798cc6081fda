"""Planted controls: how often a verdict rule finds a planted effect (power) and a null
one (false-positive rate) over R replicates, with exact intervals (:func:`control_row`,
:func:`controls_sentence`, :func:`binomial_interval`).

Source: Clopper & Pearson (1934), via :func:`scipy.stats.binomtest`.
"""

from __future__ import annotations

from typing import Any, Sequence

from scipy import stats

from agentstudies.findings._vocabulary import VERDICTS, _check_level


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
