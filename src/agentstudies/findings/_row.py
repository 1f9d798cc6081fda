"""One finding: the :class:`Finding` row (a paper claim, our estimate, its verdict and
what the verdict rests on), with its checks, sentence and ``findings.csv`` record."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from agentstudies.findings._vocabulary import _NAN, BASES, VERDICTS


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
