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

The package: ``_vocabulary`` (verdicts, bases, domains, the interval rules),
``_row`` (:class:`Finding`), ``_rules`` (the row builders), ``_gates`` (testability, power,
neutral controls), ``_table`` (:class:`Findings`), ``_controls`` (planted controls).

Sources: the interval rule reads a two-sided confidence interval as a test at level
``1 - level``; the equivalence rule is the interval form of two one-sided tests
(Schuirmann, 1987); the default coverage margin is Bradley's (1978) liberal criterion
``alpha ± alpha / 2``; the selection adjustment is Šidák's (1967); exact intervals are
Clopper & Pearson (1934) via :func:`scipy.stats.binomtest`.
"""

from __future__ import annotations

from agentstudies.findings._controls import binomial_interval, control_row, controls_sentence
from agentstudies.findings._gates import neutral_control, power_gated, share_upper_bound, testability_gate, wald_power
from agentstudies.findings._row import Finding
from agentstudies.findings._rules import (coverage_finding, equivalence_finding, exact_finding, interval_finding,
                                          magnitude_finding, pool_independent, untestable_finding,
                                          worst_setting_finding)
from agentstudies.findings._table import Findings, verdicts_by_basis
from agentstudies.findings._vocabulary import (BASES, CONTROL_COLUMNS, EVIDENCE_BASES, NONNEGATIVE,
                                               PAPER_SIDES, PROPORTION, PROPORTION_DIFFERENCE, REAL_LINE,
                                               TABLE_COLUMNS, VERDICTS, can_contradict, judge, judge_equivalence)

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
