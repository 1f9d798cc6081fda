"""agentstudies.handoff estimands against hand-worked arithmetic and a slow loop."""

from fractions import Fraction as F

import numpy as np
import pandas as pd
import pytest

from agentstudies import handoff as ho
from agentstudies.handoff import testing as hot
from agentstudies.handoff.testing import example_tables, handoff_replicates_loop
from agentstudies.stats import bootstrap_counts

# ---------------------------------------------------------------- hand-worked table
# 4 tasks (t1, t2 of type A; t3, t4 of type B) x 2 seeds. Arrival by reacher:
ARRIVED = {
    "SFT": {("t1", 0): 1, ("t1", 1): 0, ("t2", 0): 0, ("t2", 1): 0,
            ("t3", 0): 1, ("t3", 1): 0, ("t4", 0): 0, ("t4", 1): 0},      # 2 / 8
    "RL": {("t1", 0): 1, ("t1", 1): 1, ("t2", 0): 1, ("t2", 1): 0,
           ("t3", 0): 1, ("t3", 1): 1, ("t4", 0): 1, ("t4", 1): 1},       # 7 / 8
}
# solved[(reacher, solver)][state] for the reached states only
SOLVED = {
    ("SFT", "SFT"): {("t1", 0): 0, ("t3", 0): 1},                          # 1 / 2
    ("SFT", "RL"): {("t1", 0): 1, ("t3", 0): 1},                           # 2 / 2
    ("RL", "SFT"): {("t1", 0): 1, ("t1", 1): 0, ("t2", 0): 1, ("t3", 0): 0,
                    ("t3", 1): 1, ("t4", 0): 0, ("t4", 1): 0},             # 3 / 7
    ("RL", "RL"): {("t1", 0): 1, ("t1", 1): 1, ("t2", 0): 1, ("t3", 0): 1,
                   ("t3", 1): 1, ("t4", 0): 1, ("t4", 1): 0},              # 6 / 7
}
# bridge first actions: every win starts with one; a few losses also do
BRIDGE_LOSSES = {("SFT", "SFT", ("t1", 0)), ("RL", "SFT", ("t3", 0)), ("RL", "RL", ("t4", 1))}
TYPE = {"t1": "A", "t2": "A", "t3": "B", "t4": "B"}


def hand_table(split="valid_unseen", base="SFT", treated="RL"):
    lab = {"SFT": base, "RL": treated}
    rows = []
    for w in ("SFT", "RL"):
        for (task, seed), arr in ARRIVED[w].items():
            for r in ("SFT", "RL"):
                if arr:
                    solved = bool(SOLVED[(w, r)][(task, seed)])
                    bridge = solved or (w, r, (task, seed)) in BRIDGE_LOSSES
                else:
                    solved = bridge = None
                rows.append(dict(split=split, task_id=task, task_type=TYPE[task], seed=seed,
                                 reacher=lab[w], solver=lab[r], arrived=bool(arr), solved=solved,
                                 endpoint=int(bool(solved)), bridge=bridge,
                                 arrival_step=5 if arr else None))
    df = pd.DataFrame(rows)
    df["solved"] = df["solved"].astype("boolean")
    df["bridge"] = df["bridge"].astype("boolean")
    df["arrival_step"] = df["arrival_step"].astype("Int64")
    return df


# Expected values by arithmetic (Fractions, from the dictionaries above)
A = {"SFT": F(2, 8), "RL": F(7, 8)}
C = {("SFT", "SFT"): F(1, 2), ("SFT", "RL"): F(2, 2), ("RL", "SFT"): F(3, 7), ("RL", "RL"): F(6, 7)}
J = {("SFT", "SFT"): F(1, 8), ("SFT", "RL"): F(2, 8), ("RL", "SFT"): F(3, 8), ("RL", "RL"): F(6, 8)}
I_EXPECTED = (F(6, 8) - F(3, 8)) - (F(2, 8) - F(1, 8))          # = 1/4


def test_hand_worked_assignment_table():
    tab = ho.assignment_table(hand_table())
    assert list(tab.columns[:7]) == ["split", "reacher", "solver", "n", "arrival", "conversion", "endpoint"]
    for r in tab.itertuples():
        assert r.n == 8
        assert r.arrival == pytest.approx(float(A[r.reacher]))
        assert r.conversion == pytest.approx(float(C[(r.reacher, r.solver)]))
        assert r.endpoint == pytest.approx(float(J[(r.reacher, r.solver)]))
        # Eq. 7: J = A C, exactly (to fp)
        assert r.endpoint == pytest.approx(r.arrival * r.conversion, abs=1e-15)


def test_hand_worked_interaction_and_paths():
    terms = ho.interaction_terms(ho.assignment_table(hand_table())).iloc[0]
    assert I_EXPECTED == F(1, 4)
    assert terms.interaction == pytest.approx(0.25)
    # Eq. 8: A_RL * (6/7 - 3/7) - A_SFT * (1 - 1/2) = 3/8 - 1/8
    assert F(7, 8) * (F(6, 7) - F(3, 7)) - F(2, 8) * (F(1) - F(1, 2)) == I_EXPECTED
    assert terms.interaction_eq8 == pytest.approx(0.25)
    # Eq. 3, path 1: reach under RL solver 6/8-2/8, solve on SFT states 2/8-1/8
    assert terms.reach_under_treated_solver == pytest.approx(0.5)
    assert terms.solve_on_base_states == pytest.approx(0.125)
    # path 2: reach under SFT solver 3/8-1/8, solve on RL states 6/8-3/8
    assert terms.reach_under_base_solver == pytest.approx(0.25)
    assert terms.solve_on_treated_states == pytest.approx(0.375)
    assert terms.total_gain == pytest.approx(5 / 8)
    # I = difference of the two solve terms = difference of the two reach terms
    assert terms.solve_on_treated_states - terms.solve_on_base_states == pytest.approx(0.25)
    assert terms.reach_under_treated_solver - terms.reach_under_base_solver == pytest.approx(0.25)


def test_hand_worked_full_analysis():
    res = ho.analyze_handoff(hand_table(), n_draws=0)
    g = lambda k: res.get(k)["estimate"]  # noqa: E731
    assert g("interaction") == pytest.approx(0.25)
    assert g("delta_solve_base_states") == pytest.approx(0.5)          # 1 - 1/2
    assert g("delta_solve_treated_states") == pytest.approx(3 / 7)     # 6/7 - 3/7
    assert g("survivor_interaction") == pytest.approx(3 / 7 - 1 / 2)   # -1/14
    assert g("survivor_minus_endpoint") == pytest.approx(-1 / 14 - 0.25)
    assert g("solve_all_states[base]") == pytest.approx(4 / 9)         # (1 + 3) / 9 states
    assert g("solve_all_states[treated]") == pytest.approx(8 / 9)      # (2 + 6) / 9
    assert g("reach_gap") == pytest.approx(7 / 8 - 2 / 8)
    assert res.checks["holds"].all()
    # per type: A = {t1, t2}, B = {t3, t4}
    bt = res.by_type.set_index(["task_type", "estimand"])["estimate"]
    assert bt[("A", "arrival_base")] == pytest.approx(1 / 4)
    assert bt[("A", "arrival_treated")] == pytest.approx(3 / 4)
    assert bt[("B", "arrival_treated")] == pytest.approx(1.0)
    # type A: J(RL,RL)=3/4 (t1s0,t1s1,t2s0), J(RL,SFT)=2/4, J(SFT,RL)=1/4, J(SFT,SFT)=0
    assert bt[("A", "interaction")] == pytest.approx((3 / 4 - 2 / 4) - (1 / 4 - 0))
    t2 = res.table(2)  # the paper-table convention: Tables 1-2 layout, named by paper
    assert t2.attrs["paper"] == "handoff" and t2.attrs["table"] == "2"
    j = t2.set_index(["reacher", "solver"])["endpoint"]
    assert j[("RL", "RL")] - j[("RL", "SFT")] - j[("SFT", "RL")] + j[("SFT", "SFT")] == pytest.approx(0.25)
    with pytest.raises(KeyError, match=r"handoff's tables \['2'\]"):
        res.table(6)


def test_hand_worked_solve_stages():
    st = ho.solve_stages(hand_table()).set_index("solver")
    # SFT solver: bridges on 6 of 9 states (4 wins + 2 bridge losses), wins 4
    assert st.loc["SFT", "n_states"] == 9
    assert st.loc["SFT", "bridge_rate"] == pytest.approx(6 / 9)
    assert st.loc["SFT", "finish_rate"] == pytest.approx(4 / 6)
    assert st.loc["SFT", "product"] == pytest.approx(st.loc["SFT", "conversion"])
    assert st.loc["RL", "bridge_rate"] == pytest.approx(9 / 9)
    assert st.loc["RL", "finish_rate"] == pytest.approx(8 / 9)
    # states won by one solver only: RL wins t1s0 (SFT states) and t1s1, t3s0, t4s0 (RL states)
    assert st.loc["RL", "only_this_solver_wins"] == 4
    assert st.loc["SFT", "only_this_solver_wins"] == 0
    res = ho.analyze_handoff(hand_table(), n_draws=0)
    contrib = res.get("bridge_contribution")["estimate"] + res.get("finish_contribution")["estimate"]
    assert contrib == pytest.approx(8 / 9 - 4 / 9)  # the two stages add up to the Solve gap
    assert res.get("bridge_gap")["estimate"] == pytest.approx(1 - 6 / 9)


def test_win_without_bridge_is_rejected():
    df = hand_table()
    i = df.index[(df.task_id == "t3") & (df.seed == 0) & (df.reacher == "SFT") & (df.solver == "SFT")][0]
    df.loc[i, "bridge"] = False
    with pytest.raises(ValueError, match="t3"):
        ho.solve_stages(df)


def test_prespecified_states_reproduce_sft_state_gap():
    df = hand_table()
    df["mu"] = df["arrived"] & (df["reacher"] == "SFT")
    res = ho.analyze_handoff(df, n_draws=0, prespecified="mu")
    assert res.get("delta_solve_prespecified")["estimate"] == pytest.approx(0.5)


def test_custom_checkpoint_labels():
    df = hand_table(base="sft-7b", treated="rl-7b")
    res = ho.analyze_handoff(df, base="sft-7b", treated="rl-7b", n_draws=0)
    assert res.get("interaction")["estimate"] == pytest.approx(0.25)
    assert "J(rl-7b,rl-7b)" in res.get("interaction")["symbol"]
    with pytest.raises(ValueError, match="checkpoint labels"):
        ho.analyze_handoff(df, n_draws=0)  # default labels SFT/RL do not match


def test_j_equals_a_times_c_violation_raises():
    df = ho.validate_episodes(hand_table())
    i = df.index[(df.arrived) & (df.solver == "RL")][0]
    df.loc[i, "endpoint"] = 1 - df.loc[i, "endpoint"]
    with pytest.raises(ValueError, match="Eq. 7"):
        ho.assignment_table(df, validate=False)


# ------------------------------------------------------------------- bad input
def _mutate(fn):
    df = hand_table()
    fn(df)
    return df


@pytest.mark.parametrize(
    "mutate, exc, pattern",
    [
        (lambda d: d.drop(columns="arrived", inplace=True), KeyError, "arrived"),
        (lambda d: d.loc.__setitem__((0, "reacher"), "PPO"), ValueError, "PPO"),
        (lambda d: d.loc.__setitem__((d.index[(d.task_id == "t2") & (d.seed == 1)][0], "arrived"), True),
         ValueError, "t2"),
        (lambda d: d.loc.__setitem__((d.index[d.arrived][0], "solved"), pd.NA), ValueError, "solved"),
        (lambda d: d.loc.__setitem__((d.index[~d.arrived][0], "solved"), False), ValueError, "NA when"),
        (lambda d: d.loc.__setitem__((d.index[d.arrived & d.solved.fillna(False)][0], "endpoint"), 0),
         ValueError, "endpoint"),
        (lambda d: d.__setitem__("arrived", d["arrived"].astype(object).where(d.index != 0, "maybe")),
         ValueError, "maybe"),
        (lambda d: d.loc.__setitem__((d.index[d.task_id == "t4"][0], "task_type"), "C"), ValueError, "task_type"),
        (lambda d: d.loc.__setitem__((d.index[d.arrived][0], "arrival_step"), pd.NA), ValueError, "arrival_step"),
    ],
    ids=["missing-column", "unknown-label", "arrived-differs-across-solvers", "solved-NA-on-arrival",
         "solved-on-non-arrival", "endpoint-mismatch", "non-boolean", "task-type-varies", "arrival-step-missing"],
)
def test_bad_input_errors(mutate, exc, pattern):
    with pytest.raises(exc, match=pattern):
        ho.validate_episodes(_mutate(mutate))


def test_duplicate_row_names_its_keys():
    df = hand_table()
    dup = pd.concat([df, df.iloc[[5]]], ignore_index=True)
    r = df.iloc[5]
    with pytest.raises(ValueError, match=f"task_id='{r.task_id}'.*seed={r.seed}.*reacher='{r.reacher}'.*solver='{r.solver}'"):
        ho.validate_episodes(dup)


def test_missing_assignment_names_task_and_seed():
    df = hand_table()
    df = df[~((df.task_id == "t3") & (df.seed == 1) & (df.reacher == "RL") & (df.solver == "SFT"))]
    with pytest.raises(ValueError, match=r"task_id='t3', seed=1"):
        ho.validate_episodes(df)


def test_empty_table_and_bad_parameters():
    with pytest.raises(ValueError, match="empty"):
        ho.validate_episodes(hand_table().iloc[:0])
    with pytest.raises(ValueError, match="level"):
        ho.analyze_handoff(hand_table(), level=1.5, n_draws=0)
    with pytest.raises(ValueError, match="seed"):
        ho.analyze_handoff(hand_table(), seed=None, n_draws=40)


# -------------------------------------------------------------------- bootstrap
@pytest.fixture(scope="module")
def example():
    return example_tables(seed=7, n_per_type=4, n_seeds=3)


def test_vectorized_bootstrap_equals_loop_with_same_indices(example):
    ep = example["episodes"]
    stats = hot.episode_task_stats(ep)["valid_unseen"]
    counts = bootstrap_counts(stats.n_units, 40, np.random.default_rng(11), stats.strata)
    fast = hot.handoff_replicates(stats, counts)
    slow = handoff_replicates_loop(ep, stats.units, counts)
    assert list(slow.columns) == [c for c in fast.columns if c in slow.columns]
    np.testing.assert_allclose(fast[slow.columns].to_numpy(), slow.to_numpy(), rtol=0, atol=1e-12, equal_nan=True)


def test_percentile_intervals_match_numpy_on_loop_output(example):
    ep = example["episodes"]
    B, seed = 40, 5
    res = ho.analyze_handoff(ep, n_draws=B, seed=seed)
    stats = hot.episode_task_stats(ep)["valid_unseen"]
    counts = hot.draw_counts(stats, B, hot.bootstrap_seed(seed, "handoff", "valid_unseen"))
    slow = handoff_replicates_loop(ep, stats.units, counts)
    for name in ("interaction", "reach_gap", "survivor_interaction", "endpoint[treated,treated]",
                 "delta_solve_all_states", "finish_rate[base]"):
        x = slow[name].to_numpy()
        x = x[~np.isnan(x)]
        lo, hi = np.percentile(x, [2.5, 97.5])
        row = res.get(name)
        assert row["ci_low"] == pytest.approx(lo, abs=1e-12), name
        assert row["ci_high"] == pytest.approx(hi, abs=1e-12), name
        assert row["n_excluded"] == B - x.size


def test_stratification_keeps_type_counts_fixed(example):
    ep = example["episodes"]
    stats = hot.episode_task_stats(ep)["valid_unseen"]
    counts = hot.draw_counts(stats, 500, hot.bootstrap_seed(1, "handoff", "valid_unseen"))
    sizes = np.bincount(stats.strata)
    for k, n_k in enumerate(sizes):
        np.testing.assert_array_equal(counts[:, stats.strata == k].sum(axis=1), n_k)
    # and the resampled rows keep every type's trajectory count
    from agentstudies.handoff.testing import resample_rows
    want = ep.groupby("task_type").size()
    for c in counts[:5]:
        got = resample_rows(ep, stats.units, c).groupby("task_type").size()
        pd.testing.assert_series_equal(got.sort_index(), want.sort_index(), check_names=False)


def _one_arrival_table():
    """SFT reaches the frontier exactly once (task a1); RL everywhere."""
    rows = []
    tasks = [("a1", "A"), ("a2", "A"), ("a3", "A"), ("b1", "B"), ("b2", "B"), ("b3", "B")]
    for task, typ in tasks:
        for w in ("SFT", "RL"):
            arr = w == "RL" or task == "a1"
            for r in ("SFT", "RL"):
                solved = (r == "RL" or task in ("a1", "b2")) if arr else None
                rows.append(dict(split="s", task_id=task, task_type=typ, seed=0, reacher=w, solver=r,
                                 arrived=arr, solved=solved, endpoint=int(bool(solved)),
                                 arrival_step=3 if arr else None))
    return pd.DataFrame(rows)


def test_empty_denominator_rule_excludes_and_counts():
    df = _one_arrival_table()
    B, seed = 3000, 2
    with pytest.warns(RuntimeWarning, match="stopping threshold"):
        res = ho.analyze_handoff(df, n_draws=B, seed=seed)
    stats = hot.episode_task_stats(df)["s"]
    counts = hot.draw_counts(stats, B, hot.bootstrap_seed(seed, "handoff", "s"))
    a1 = list(stats.units).index("a1")
    n_empty = int((counts[:, a1] == 0).sum())       # draws without the single SFT arrival
    assert 0.2 < n_empty / B < 0.4                  # (2/3)^3 = 0.296 in expectation
    surv = res.get("survivor_interaction")
    assert surv["n_excluded"] == n_empty
    assert surv["excluded_share"] == pytest.approx(n_empty / B)
    assert bool(surv["flagged"])
    assert res.get("interaction")["n_excluded"] == 0   # the endpoint estimand never loses a draw
    # a looser threshold does not flag
    res2 = ho.analyze_handoff(df, n_draws=B, seed=seed, empty_threshold=0.5)
    assert not bool(res2.get("survivor_interaction")["flagged"])
    reps = hot.handoff_replicates(stats, counts)
    assert np.array_equal(np.isnan(reps["survivor_interaction"].to_numpy()), counts[:, a1] == 0)


def test_split_intervals_do_not_depend_on_other_splits(example):
    ep = example["episodes"]
    other = example_tables(seed=8, n_per_type=3, n_seeds=2, split="valid_seen")["episodes"]
    one = ho.analyze_handoff(ep, n_draws=300, seed=4).get("interaction", "valid_unseen")
    both = ho.analyze_handoff(pd.concat([ep, other]), n_draws=300, seed=4).get("interaction", "valid_unseen")
    assert one["ci_low"] == both["ci_low"] and one["ci_high"] == both["ci_high"]


def test_result_object_frozen_and_summary(example):
    res = ho.analyze_handoff(example["episodes"], n_draws=200, seed=0)
    with pytest.raises(Exception):
        res.seed = 3
    text = res.summary()
    assert "interaction" in text and "valid_unseen" in text
    frame = res.to_frame()
    assert {"split", "estimand", "estimate", "ci_low", "ci_high", "excluded_share", "flagged"} <= set(frame.columns)
    assert len(res.provenance.inputs["episodes"]) == 64
