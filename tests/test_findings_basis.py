"""What a verdict rests on: the basis vocabulary, ``can_contradict`` computed from the rule
and the quantity, and the rules that fit the claim (equivalence, magnitude, selection,
exact testability bounds, power), each checked on independently computed values."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from agentstudies.findings import (
    BASES,
    EVIDENCE_BASES,
    NONNEGATIVE,
    PROPORTION,
    TABLE_COLUMNS,
    VERDICTS,
    Finding,
    Findings,
    can_contradict,
    coverage_finding,
    equivalence_finding,
    exact_finding,
    interval_finding,
    magnitude_finding,
    neutral_control,
    pool_independent,
    power_gated,
    share_upper_bound,
    testability_gate as gate_testability,
    untestable_finding,
    verdicts_by_basis,
    wald_power,
    worst_setting_finding,
)

PAPER = Path(__file__).resolve().parents[1] / "data" / "paper"


def _pass_hat_k(success: np.ndarray, k: int) -> float:
    """pass^k of a tasks x trials 0/1 matrix: mean over tasks of C(c, k) / C(n, k)
    (tau-bench's estimator, written out here with math.comb)."""
    n = success.shape[1]
    return float(np.mean([math.comb(int(c), k) / math.comb(n, k) for c in success.sum(axis=1)]))


def test_quantities_nonnegative_by_definition_cannot_be_contradicted():
    # pass^1 - pass^k is >= 0 for every 0/1 outcome matrix: brute force over all 2 x 3 matrices
    gaps = [_pass_hat_k(np.array(bits).reshape(2, 3), 1) - _pass_hat_k(np.array(bits).reshape(2, 3), 3)
            for bits in itertools.product((0, 1), repeat=6)]
    assert min(gaps) >= 0.0 and max(gaps) > 0.0
    # so the claim "pass^1 - pass^k > 0" on NONNEGATIVE cannot be contradicted, even by a
    # Wald interval that spills below 0; the same rule on an unrestricted quantity can be
    f = interval_finding("reliability drops with k", "pass^1 > pass^k", 0.01, -0.03, -0.01, 20,
                         paper_side="above", domain=NONNEGATIVE, basis="arithmetic", why="pass^k <= pass^1 by definition")
    assert f.can_contradict is False and f.verdict == "inconclusive"
    g = interval_finding("a gain", "> 0", -0.02, -0.03, -0.01, 20, paper_side="above", basis="method", why="planted")
    assert g.can_contradict is True and g.verdict == "contradicted"
    # a share (flip share, >= 0 by definition) claimed to be above 0: cannot be contradicted;
    # the same share claimed to be below 5 %: can be
    assert can_contradict(PROPORTION, paper_side="above", threshold=0.0) is False
    assert can_contradict(PROPORTION, paper_side="below", threshold=0.05) is True
    assert can_contradict(NONNEGATIVE, paper_side="below", threshold=0.0) is True


def test_rules_that_cannot_return_contradicted():
    # only reappears / inconclusive: exact with otherwise="inconclusive", untestable rows
    assert exact_finding("p < 0.05", "0.03", 0.2, 40, holds=False, rule="p < 0.05",
                         otherwise="inconclusive").can_contradict is False
    assert untestable_finding("x", "p", why="0 of 40 forks changed", measured=0.0).can_contradict is False
    # an exact criterion no value of the domain fails: round 1 cheats 0 % by construction
    r1 = exact_finding("round 1 never cheats", "0 %", 0.0, 30, criterion=("==", 0.0), domain=(0.0, 0.0),
                       rule="0 cheating submissions in round 1", basis="arithmetic",
                       why="the first submission is honest by construction")
    assert r1.verdict == "reappears" and r1.can_contradict is False
    live = exact_finding("no clean harm", "0", 2, 40, criterion=("==", 0), domain=(0, 40), rule="0 harms")
    assert live.verdict == "contradicted" and live.can_contradict is True
    with pytest.raises(ValueError, match="disagrees"):
        exact_finding("x", "0", 2, 40, holds=True, criterion=("==", 0), rule="0")
    with pytest.raises(ValueError, match="cannot contradict"):
        Finding("x", "p", 0.0, 0.0, 0.0, 1, "contradicted", "r", can_contradict=False)


def test_basis_vocabulary_and_table_columns():
    assert BASES == ("method", "measured", "built in", "arithmetic") and EVIDENCE_BASES == ("method", "measured")
    with pytest.raises(ValueError, match="basis"):
        interval_finding("x", "p", 0.1, 0.05, 0.2, 9, paper_side="above", basis="simulated", why="w")
    with pytest.raises(ValueError, match="one-line why"):
        interval_finding("x", "p", 0.1, 0.05, 0.2, 9, paper_side="above", basis="method")
    with pytest.raises(ValueError, match="built_in"):
        interval_finding("x", "p", 0.1, 0.05, 0.2, 9, paper_side="above", basis="built in", why="w")
    with pytest.raises(ValueError, match="built_in"):
        interval_finding("x", "p", 0.1, 0.05, 0.2, 9, paper_side="above", basis="method", why="w",
                         built_in=("AgentParams.strictness",))
    f = Findings.build([interval_finding("x", "p", 0.1, 0.05, 0.2, 9, paper_side="above", basis="measured",
                                         why="a trained checkpoint")], seed=0)
    t = f.table()
    assert tuple(t.columns) == TABLE_COLUMNS
    assert {"basis", "can_contradict", "why"} <= set(t.columns)
    assert (t.loc[0, "basis"], bool(t.loc[0, "can_contradict"]), t.loc[0, "why"]) == ("measured", True,
                                                                                     "a trained checkpoint")


def test_table4_coverage_near_nominal_reappears():
    """The paper's own Table 4 (SASST Appendix D.1; 2,000 trials per configuration) fed to
    the coverage rule: every (rule, R) row pooled over the independent M cells is near 95 %."""
    t4 = pd.read_csv(PAPER / "sasst_calibration_table4.csv").assign(n_trials=2000)
    verdicts = {}
    for (rule, R), g in t4.groupby(["rule", "R"]):
        k, n = pool_independent(g, sample="M", rate="coverage")
        assert n == 8000 and k == round(float((g["coverage"] * 2000).sum()))
        f = coverage_finding(f"{rule} R={R} covers near nominal", "Table 4", k, n, nominal=0.95, basis="method",
                             why="coverage of a known truth")
        # the band is Bradley's liberal criterion, 0.95 +- 0.025, and the exact interval
        # (beta quantiles, computed here) lies inside it
        lo, hi = stats.beta.ppf(0.025, k, n - k + 1), stats.beta.ppf(0.975, k + 1, n - k)
        assert 0.925 <= lo and hi <= 0.975
        assert math.isclose(f.ci_low, lo, rel_tol=1e-9) and "0.95 ± 0.025" in f.rule
        verdicts[(rule, R)] = f.verdict
        # the old rule ("interval entirely above 95 %") could not say reappears here
        assert interval_finding("old", "p", k / n, lo, hi, n, paper_side="above", threshold=0.95).verdict \
            == "inconclusive"
    assert set(verdicts.values()) == {"reappears"} and len(verdicts) == 4
    # R = 5 and R = 20 of one M share clusters: pooling them as independent is refused
    with pytest.raises(ValueError, match="share trials"):
        pool_independent(t4[t4["rule"] == "learned"], sample="M", rate="coverage")
    # a coverage well off nominal is contradicted (interval outside the band)
    assert coverage_finding("c", "p", 1800, 2000, nominal=0.95).verdict == "contradicted"


@pytest.mark.parametrize("lo, hi, expected", [
    (0.94, 0.96, "reappears"), (0.90, 0.96, "inconclusive"), (0.80, 0.90, "contradicted"),
    (0.98, 0.99, "contradicted"), (0.925, 0.975, "reappears"),
])
def test_equivalence_by_hand(lo, hi, expected):
    f = equivalence_finding("near", "p", (lo + hi) / 2, lo, hi, 100, target=0.95, margin=0.025, domain=PROPORTION)
    assert f.verdict == expected and f.can_contradict is True


def test_magnitude_differs_is_a_stated_outcome():
    # paper +0.05; ours 13x that with a tight interval: direction reappears, size does not
    big = magnitude_finding("gain", "+0.05", 0.65, 0.60, 0.70, 400, paper_value=0.05, paper_side="above")
    assert big.verdict == "same direction, magnitude differs" and "[0.025, 0.1]" in big.rule
    near = magnitude_finding("gain", "+0.05", 0.08, 0.06, 0.11, 400, paper_value=0.05, paper_side="above")
    assert near.verdict == "reappears"
    tiny = magnitude_finding("gain", "+0.05", 0.01, 0.005, 0.015, 9000, paper_value=0.05, paper_side="above")
    assert tiny.verdict == "same direction, magnitude differs"
    assert magnitude_finding("drop", "-0.2", 0.1, 0.05, 0.15, 400, paper_value=-0.2,
                             paper_side="below").verdict == "contradicted"
    assert "same direction, magnitude differs" in VERDICTS
    with pytest.raises(ValueError, match="strictly"):
        magnitude_finding("gain", "p", 0.1, 0.0, 0.2, 9, paper_value=-0.1, paper_side="above")


def _exact_reappear_prob(n: int, p: float, level: float) -> float:
    """P(the exact two-sided `level` upper bound of k/n lies below p) when k ~ Bin(n, p):
    the upper Clopper-Pearson bound is beta.ppf(1 - (1 - level) / 2, k + 1, n - k)."""
    ks = np.arange(n + 1)
    upper = np.where(ks < n, stats.beta.ppf(1 - (1 - level) / 2, ks + 1, np.maximum(n - ks, 1)), 1.0)
    return float(stats.binom.pmf(ks, n, p)[upper < p].sum())


def test_worst_setting_selection_is_adjusted():
    K, n, p = 4, 400, 0.95
    q_unadj = _exact_reappear_prob(n, p, 0.95)
    q_sidak = _exact_reappear_prob(n, p, 0.95 ** (1 / K))
    fpr_unadj, fpr_sidak = 1 - (1 - q_unadj) ** K, 1 - (1 - q_sidak) ** K
    assert fpr_sidak <= 0.025 < fpr_unadj or fpr_sidak < fpr_unadj / 2
    # the rule itself, on every outcome of 4 exactly-nominal settings that decides it: brute
    # force the FPR over a grid of counts (k per setting) weighted by their probabilities
    ks = np.arange(330, 401)
    w = stats.binom.pmf(ks, n, p)
    single = np.array([worst_setting_finding("w", "p", [k, n, n, n], [n] * 4, list("abcd"), threshold=p).verdict
                       == "reappears" for k in ks])
    # with three settings far above nominal, the rule reappears exactly when the first
    # setting's Šidák-adjusted upper bound lies below p
    assert math.isclose(float(w[single].sum()), q_sidak, rel_tol=1e-6, abs_tol=1e-12)
    f = worst_setting_finding("t-scaled under-covers somewhere", "0.931 to 0.958", [360, 380, 383, 390],
                              [400] * 4, ["s1", "s2", "s3", "s4"], threshold=0.95)
    assert f.verdict == "reappears" and "s1" in f.rule and f.level == pytest.approx(0.95 ** 0.25)
    ok = worst_setting_finding("w", "p", [398, 399, 400, 399], [400] * 4, list("abcd"), threshold=0.95)
    assert ok.verdict == "contradicted"


def test_testability_gate_uses_exact_upper_bounds():
    share, ub = share_upper_bound(0, 6)
    assert share == 0.0 and math.isclose(ub, 1 - 0.05 ** (1 / 6), rel_tol=1e-9)  # about 0.39
    assert gate_testability("refresh helps", "p", 0, 6, threshold=0.05, what="forks changed") is None
    row = gate_testability("refresh helps", "p", 0, 100, threshold=0.05, what="forks changed", basis="method",
                           why="planted recovery")
    assert row.verdict == "not testable here" and math.isclose(1 - 0.05 ** (1 / 100), 0.0295, abs_tol=1e-4)
    assert "0 of 100" in row.why and "0.030" in row.why and row.can_contradict is False
    # an interior count: the one-sided bound is the beta quantile
    _, ub7 = share_upper_bound(7, 50, level=0.9)
    assert math.isclose(ub7, stats.beta.ppf(0.9, 8, 43), rel_tol=1e-9)


def test_power_gate_and_wald_power():
    rng = np.random.default_rng(1)
    effect, se = 0.0375, 0.02
    est = rng.normal(effect, se, 200_000)
    z = stats.norm.ppf(0.975)
    mc = float(np.mean(est - z * se > 0))
    assert abs(wald_power(effect, se) - mc) < 0.005
    # a simultaneous band's critical value (2.74 for ten slots, SASST Table 15) lowers it
    mc_band = float(np.mean(est - 2.7424 * se > 0))
    assert abs(wald_power(effect, se, critical=2.7424) - mc_band) < 0.005 and mc_band < mc
    base = exact_finding("no average gain confirmed", "0 of 2", 0, 2, holds=True, rule="0 confirmed",
                         basis="built in", why="profile intercepts", built_in=("profile intercepts",))
    low = power_gated(base, 0.05, effect="+3.75 points")
    assert low.verdict == "not testable here" and low.measured == 0.05 and "+3.75 points" in low.why
    assert "0.05" in low.why
    high = power_gated(base, 0.9, effect="+3.75 points")
    assert high.verdict == "reappears" and "0.90" in high.why
    found = exact_finding("no gain", "0", 1, 2, holds=False, rule="0 confirmed")
    assert power_gated(found, 0.05, effect="+3.75 points").verdict == "contradicted"


def test_neutral_control_row():
    sim = interval_finding("strict prompt lowers cheating", "lower", -0.30, -0.40, -0.20, 36, paper_side="below")
    neu = interval_finding("strict prompt lowers cheating", "lower", 0.0, -0.08, 0.08, 36, paper_side="below")
    row = neutral_control(neu, sim, built_in=("AgentParams.strictness",), setting="strictness = 0")
    assert (row.basis, row.verdict, row.built_in) == ("built in", "inconclusive", ("AgentParams.strictness",))
    t = Findings.build([row], seed=0).table().iloc[0]
    assert t["built_in"] == "AgentParams.strictness" and t["neutral"] == "strictness = 0"
    assert (t["set_by_simulation"], t["set_by_simulation_ci_low"]) == (-0.30, -0.40)
    assert "set by the simulation" in row.sentence() and "strictness = 0" in row.sentence()
    fs = Findings.build([row, interval_finding("b", "p", 0.1, 0.05, 0.2, 9, paper_side="above", basis="method",
                                               why="w")], seed=0)
    assert list(fs.compact().columns) == ["finding", "verdict", "basis", "estimate", "ci_low", "ci_high", "n",
                                          "set_by_simulation", "set_by_simulation_ci_low", "set_by_simulation_ci_high"]
    assert "set_by_simulation" not in Findings.build(fs.rows[1:], seed=0).compact()
    with pytest.raises(ValueError, match="different claims"):
        neutral_control(neu, interval_finding("other", "p", 0, -1, 1, 3, paper_side="below"),
                        built_in=("x",), setting="x = 0")


def test_one_finding_per_fact_and_counts_by_basis():
    a = interval_finding("stale hurts", "p", 0.2, 0.1, 0.3, 14, paper_side="above", basis="method", why="w",
                         fact="discordant states")
    b = interval_finding("refresh helps", "p", 0.2, 0.1, 0.3, 14, paper_side="above", basis="method", why="w",
                         fact="discordant states")
    with pytest.raises(ValueError, match="one finding per fact"):
        Findings.build([a, b], seed=0)
    rows = [a,
            interval_finding("b", "p", -0.2, -0.3, -0.1, 9, paper_side="above", basis="measured", why="w"),
            exact_finding("c", "p", 1, 1, holds=True, rule="r", basis="built in", why="w", built_in=("p_x",)),
            exact_finding("d", "p", 0, 5, criterion=("==", 0), domain=(0, 0), rule="r", basis="arithmetic",
                          why="by construction")]
    fs = Findings.build(rows, seed=0)
    assert fs.counts(evidence_only=True)["reappears"] == 1 and fs.counts(evidence_only=True)["contradicted"] == 1
    assert fs.counts()["reappears"] == 3
    s = fs.counts_sentence()
    assert s.startswith("Of 4 paper findings, 2 rest on evidence") and "set by the simulation (1)" in s
    wide = verdicts_by_basis({"ch": fs.table(), "old": pd.DataFrame({"verdict": ["inconclusive"]})})
    got = {(r.chapter, r.basis): (r.reappears, r.contradicted, r.total, r.evidence) for r in wide.itertuples()}
    assert got == {("ch", "method"): (1, 0, 1, True), ("ch", "measured"): (0, 1, 1, True),
                   ("ch", "built in"): (1, 0, 1, False), ("ch", "arithmetic"): (1, 0, 1, False),
                   ("old", "not stated"): (0, 0, 1, False)}
