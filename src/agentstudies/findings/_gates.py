"""Wrappers that decide whether a finding can be judged here and what it rests on: the
testability gate (an exact upper bound of the share of units in which an arm changed
anything), the power gate for "no effect" claims (:func:`wald_power`), and the neutral
control of a ``built in`` finding.

Source: exact one-sided bounds are Clopper & Pearson (1934) via :func:`scipy.stats.binomtest`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

from scipy import stats

from agentstudies.findings._row import Finding
from agentstudies.findings._rules import untestable_finding
from agentstudies.findings._vocabulary import _check_level, _join, _level_words


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
