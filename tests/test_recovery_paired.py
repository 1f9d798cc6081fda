"""agentstudies.recovery: paired table validation, Delta / rescue / harm, bootstrap, sign flip.

Expected values are hand-worked, brute-forced or taken from scipy -- never from the code.
"""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from agentstudies import recovery as rc
from agentstudies.parallel import keyed_seed
from agentstudies.stats import bootstrap_counts

# ------------------------------------------------------------ hand-worked table
# 5 tasks, conditions clean / stale-2, delays 0 and 2, operation refresh.
# (y_without, y_with) by task for each cell:
HAND = {
    ("clean", 0): {"a": (1, 1), "b": (1, 0), "c": (0, 0), "d": (1, 1), "e": (1, 0)},   # R0 H2 S2 F1
    ("clean", 2): {"a": (1, 1), "b": (1, 1), "c": (0, 1), "d": (1, 1), "e": (1, 0)},   # R1 H1 S3 F0
    ("stale-2", 0): {"a": (0, 1), "b": (0, 1), "c": (0, 0), "d": (1, 1), "e": (1, 0)},  # R2 H1 S1 F1
    ("stale-2", 2): {"a": (0, 1), "b": (0, 0), "c": (0, 0), "d": (1, 1), "e": (1, 1)},  # R1 H0 S2 F2
}
COUNTS = {("clean", 0): (0, 2, 2, 1), ("clean", 2): (1, 1, 3, 0),
          ("stale-2", 0): (2, 1, 1, 1), ("stale-2", 2): (1, 0, 2, 2)}


def hand_table(cohort=None):
    rows = []
    for (cond, d), per in HAND.items():
        for t, (y0, y1) in per.items():
            rows.append(dict(task_id=t, condition=cond, delay=d, operation="refresh", y_without=y0, y_with=y1))
    df = pd.DataFrame(rows)
    if cohort is not None:
        df["cohort"] = cohort
    return df


def test_hand_worked_counts_delta_and_contrast():
    res = rc.analyze_paired(hand_table(), n_draws=200, seed=1)
    for (cond, d), (R, H, S, F) in COUNTS.items():
        row = res.cells[(res.cells["condition"] == cond) & (res.cells["delay"] == d)].iloc[0]
        assert (row["rescue"], row["harm"], row["both_succeed"], row["both_fail"]) == (R, H, S, F)
        assert row["n"] == 5
        assert row["delta"] == pytest.approx(100 * (R - H) / 5)
        assert res.get("delta", condition=cond, delay=d)["estimate"] == pytest.approx(100 * (R - H) / 5)
    # stale - clean at delay 0: (2-1)/5 - (0-2)/5 = 3/5 = 60 points; delay 2: 1/5 - 0 = 20
    con = res.contrast_table().set_index("delay")["estimate"]
    assert con.loc[0] == pytest.approx(60.0)
    assert con.loc[2] == pytest.approx(20.0)
    assert res.get("delta_minus_clean", condition="stale-2", delay=0)["estimate"] == pytest.approx(60.0)
    pc = res.paired_counts()
    assert ((pc["rescue"] - pc["harm"]) == pc["net"]).all()
    assert np.allclose(pc["net"], pc["delta"] * pc["n"] / 100)
    # success rates: clean without = 4/5, stale without = 2/5
    assert res.get("success_without", condition="clean", delay=0)["estimate"] == pytest.approx(80.0)
    assert res.get("success_with", condition="stale-2", delay=2)["estimate"] == pytest.approx(60.0)


def test_tidy_frame_contract():
    res = rc.analyze_paired(hand_table(), n_draws=50)
    df = res.to_frame()
    assert list(df.columns[:4]) == ["cohort", "condition", "delay", "operation"]
    assert res.strata == ("cohort", "condition", "delay", "operation")
    assert {"delta", "rescue", "harm", "both_succeed", "both_fail", "delta_minus_clean"} <= set(df["estimand"])
    assert "paired recovery" in res.summary()


def test_bootstrap_matches_numpy_loop():
    rng = np.random.default_rng(5)
    rows = []
    for t in range(17):
        for cond in ("clean", "stale-2"):
            y0 = int(rng.random() < 0.6)
            for d in (0, 1):
                rows.append(dict(task_id=f"t{t:02d}", condition=cond, delay=d, operation="refresh",
                                 y_without=y0, y_with=int(rng.random() < 0.6)))
    df = pd.DataFrame(rows)
    B, seed = 300, 11
    res = rc.analyze_paired(df, n_draws=B, seed=seed, level=0.9)
    # the same multiplicity draws, then a plain loop over resamples and tasks
    counts = bootstrap_counts(17, B, np.random.default_rng(keyed_seed(seed, "recovery-bootstrap", "all")))
    tasks = sorted(df["task_id"].unique())
    per = {(r.task_id, r.condition, r.delay): r.y_with - r.y_without for r in df.itertuples()}
    for cond, d in [("clean", 0), ("stale-2", 1)]:
        reps, con = [], []
        for b in range(B):
            drawn = [t for t, m in zip(tasks, counts[b]) for _ in range(m)]
            reps.append(100 * np.mean([per[(t, cond, d)] for t in drawn]))
            con.append(100 * np.mean([per[(t, "stale-2", d)] - per[(t, "clean", d)] for t in drawn]))
        row = res.get("delta", condition=cond, delay=d)
        assert row["ci_low"] == pytest.approx(np.quantile(reps, 0.05))
        assert row["ci_high"] == pytest.approx(np.quantile(reps, 0.95))
        assert row["se"] == pytest.approx(np.std(reps, ddof=1))
        if cond == "stale-2":
            c = res.get("delta_minus_clean", condition=cond, delay=d)
            assert c["ci_low"] == pytest.approx(np.quantile(con, 0.05))
            assert c["ci_high"] == pytest.approx(np.quantile(con, 0.95))


def test_bootstrap_se_close_to_closed_form():
    rng = np.random.default_rng(3)
    n = 60
    y0 = (rng.random(n) < 0.5).astype(int)
    y1 = (rng.random(n) < 0.7).astype(int)
    df = pd.DataFrame(dict(task_id=[f"t{i}" for i in range(n)], condition="stale-2", delay=0, operation="refresh",
                           y_without=y0, y_with=y1))
    res = rc.analyze_paired(df, n_draws=4000, seed=0)
    diff = 100 * (y1 - y0)
    se = diff.std(ddof=0) / np.sqrt(n)  # bootstrap SE of a mean = plug-in SE
    assert res.get("delta", condition="stale-2")["se"] == pytest.approx(se, rel=0.06)


def test_cohorts_are_separate_and_seeded():
    a = hand_table("primary")
    b = hand_table("independent")
    b["y_with"] = 1 - b["y_with"]
    both = pd.concat([a, b], ignore_index=True)
    r1 = rc.analyze_paired(both, n_draws=100, seed=3)
    r2 = rc.analyze_paired(both.iloc[::-1], n_draws=100, seed=3)
    pd.testing.assert_frame_equal(r1.cells, r2.cells)
    only = rc.analyze_paired(a, n_draws=100, seed=3)
    sel = r1.cells[r1.cells["cohort"] == "primary"].reset_index(drop=True)
    pd.testing.assert_frame_equal(sel, only.cells.reset_index(drop=True))


def test_shared_rescues():
    df = hand_table()
    abl = df.copy()
    abl["operation"] = "ablated"
    # ablated rescues only task "a" wherever full refresh rescues it
    abl["y_with"] = np.where(abl["task_id"] == "a", abl["y_with"], abl["y_without"])
    res = rc.analyze_paired(pd.concat([df, abl], ignore_index=True), n_draws=40)
    sh = res.shared_rescues("refresh", "ablated").set_index(["condition", "delay"])
    assert sh.loc[("stale-2", 0), "rescued_a"] == 2 and sh.loc[("stale-2", 0), "shared"] == 1
    assert sh.loc[("clean", 2), "rescued_a"] == 1 and sh.loc[("clean", 2), "shared"] == 0


# ------------------------------------------------------------ validation
def test_missing_column_and_type():
    with pytest.raises(KeyError, match="y_with"):
        rc.validate_paired(hand_table().drop(columns="y_with"))
    with pytest.raises(TypeError):
        rc.validate_paired([1, 2])
    with pytest.raises(ValueError, match="empty"):
        rc.validate_paired(hand_table().iloc[:0])


def test_unpaired_row_named():
    df = hand_table()
    df.loc[6, "y_with"] = np.nan
    with pytest.raises(ValueError, match=r"unpaired row 6 .*task_id='b'.*y_with is missing"):
        rc.analyze_paired(df)


def test_nan_outcome_named():
    df = hand_table()
    df["y_without"] = df["y_without"].astype(float)
    df["y_with"] = df["y_with"].astype(float)
    df.loc[3, ["y_without", "y_with"]] = np.nan
    with pytest.raises(ValueError, match=r"row 3 .*NaN outcome"):
        rc.analyze_paired(df)


def test_non_binary_outcome_named():
    df = hand_table()
    df.loc[4, "y_with"] = 2
    with pytest.raises(ValueError, match=r"row 4 .*y_with=2 is not a binary"):
        rc.validate_paired(df)


def test_duplicate_fork_named():
    df = pd.concat([hand_table(), hand_table().iloc[[7]]], ignore_index=True)
    with pytest.raises(ValueError, match=r"duplicate fork: row 20 .*repeats row 7"):
        rc.analyze_paired(df)


def test_missing_condition_named():
    df = hand_table()
    df = df[~((df["task_id"] == "c") & (df["condition"] == "clean"))].reset_index(drop=True)
    with pytest.raises(ValueError, match=r"task 'c' .*no row for condition\(s\) \['clean'\]"):
        rc.analyze_paired(df)


def test_missing_delay_cell_named():
    df = hand_table()
    df = df[~((df["task_id"] == "d") & (df["condition"] == "stale-2") & (df["delay"] == 2))]
    with pytest.raises(ValueError, match=r"task 'd' .*lacks .*\('stale-2', 2, 'refresh'\)"):
        rc.analyze_paired(df)


def test_bad_delay_and_ids():
    df = hand_table()
    df.loc[2, "delay"] = -1
    with pytest.raises(ValueError, match="row 2 .*delay=-1"):
        rc.validate_paired(df)
    df = hand_table()
    df.loc[5, "task_id"] = None
    with pytest.raises(ValueError, match="row 5 .*task_id is missing"):
        rc.validate_paired(df)


def test_shared_without_check():
    df = hand_table()
    # y_without of task a under clean: delay 0 -> 1, delay 2 -> 1; make delay 2 differ
    i = df.index[(df["task_id"] == "a") & (df["condition"] == "clean") & (df["delay"] == 2)][0]
    df.loc[i, "y_without"] = 0
    rc.validate_paired(df)  # allowed by default (stochastic no-recovery branches)
    with pytest.raises(ValueError, match="unpaired row .*y_without differs"):
        rc.validate_paired(df, shared_without=True)


def test_bad_parameters():
    with pytest.raises(ValueError, match="level"):
        rc.analyze_paired(hand_table(), level=1.5)
    with pytest.raises(ValueError, match="n_draws"):
        rc.analyze_paired(hand_table(), n_draws=0)


# ------------------------------------------------------------ sign flip
def _brute(d, alternative="two-sided"):
    d = np.asarray(d, float)
    s = d.sum()
    hits = 0
    for signs in itertools.product((-1, 1), repeat=len(d)):
        t = np.dot(signs, d)
        if alternative == "two-sided":
            hits += abs(t) >= abs(s) - 1e-12
        elif alternative == "greater":
            hits += t >= s - 1e-12
        else:
            hits += t <= s + 1e-12
    return hits / 2 ** len(d)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_sign_flip_exact_vs_brute_force(alternative):
    rng = np.random.default_rng(0)
    for _ in range(5):
        ints = rng.integers(-3, 4, size=11)
        floats = rng.normal(0.3, 1, size=10)
        assert rc.sign_flip_test(ints, alternative=alternative).p_value == pytest.approx(_brute(ints, alternative))
        r = rc.sign_flip_test(floats, alternative=alternative)
        assert r.method == "exact"
        assert r.p_value == pytest.approx(_brute(floats, alternative))
        # integer differences through full enumeration agree with the convolution route
        assert rc.sign_flip_test(ints, alternative=alternative, method="exact").p_value == pytest.approx(
            _brute(ints, alternative))


def test_sign_flip_vs_scipy_permutation_test():
    rng = np.random.default_rng(1)
    d = rng.normal(0.4, 1.0, size=12)
    ref = sps.permutation_test((d,), np.sum, permutation_type="samples", n_resamples=np.inf,
                               alternative="two-sided").pvalue
    assert rc.sign_flip_test(d).p_value == pytest.approx(ref)
    ref_g = sps.permutation_test((d,), np.sum, permutation_type="samples", n_resamples=np.inf,
                                 alternative="greater").pvalue
    assert rc.sign_flip_test(d, alternative="greater").p_value == pytest.approx(ref_g)


def test_sign_flip_large_integer_exact_and_monte_carlo():
    rng = np.random.default_rng(2)
    d = rng.choice([-1, 0, 0, 0, 1, 1, 2], size=75)
    exact = rc.sign_flip_test(d)
    assert exact.method == "exact-dp" and exact.n == 75
    # normal approximation of the symmetric null: S ~ N(0, sum d_i^2)
    z = abs(d.sum()) / np.sqrt((d.astype(float) ** 2).sum())
    assert exact.p_value == pytest.approx(2 * sps.norm.sf(z), abs=0.03)
    mc = rc.sign_flip_test(d.astype(float) + 0.0, method="monte-carlo", n_draws=40_000, seed=4)
    assert mc.method == "monte-carlo"
    assert mc.p_value == pytest.approx(exact.p_value, abs=0.01)
    assert mc.p_value == rc.sign_flip_test(d, method="monte-carlo", n_draws=40_000, seed=4).p_value


def test_sign_flip_edge_cases():
    assert rc.sign_flip_test([0, 0, 0]).p_value == 1.0
    # a single +1 among zeros: two-sided p = 1, greater p = 1/2
    assert rc.sign_flip_test([0, 1, 0], alternative="greater").p_value == pytest.approx(0.5)
    with pytest.raises(ValueError, match="finite"):
        rc.sign_flip_test([1, np.nan])
    with pytest.raises(ValueError, match="alternative"):
        rc.sign_flip_test([1], alternative="up")
    with pytest.raises(ValueError, match="at least one"):
        rc.sign_flip_test([])
    with pytest.raises(ValueError, match="integer"):
        rc.sign_flip_test([0.5], method="exact-dp")
