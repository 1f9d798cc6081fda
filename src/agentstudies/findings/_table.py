"""The findings of one study as a table: :class:`Findings` (``findings.csv``, the glued
sentences, verdict counts with only ``method`` and ``measured`` rows as evidence) and
:func:`verdicts_by_basis` (counts by basis over chapters)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from agentstudies.findings._row import Finding
from agentstudies.findings._vocabulary import BASES, EVIDENCE_BASES, MAGNITUDE_DIFFERS, TABLE_COLUMNS, VERDICTS
from agentstudies.results import Result, ResultProvenance, make_provenance, tidy_rows


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
