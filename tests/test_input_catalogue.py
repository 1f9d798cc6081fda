"""A catalogue of malformed inputs across every entry point.

Each case feeds one malformed input to SASST, the checkpoint-handoff API, the τ episode
and audit import, or the ``agentstudies`` CLI, and asserts an error -- or, where the
input is usable but unusual, a note/warning -- that names the problem (column, task,
parameter). Nothing may be silently dropped: the "note" cases check that the result
says what happened. Issue 24 added the recovery API (one-task cohorts, text outcomes,
oversized ``n_draws``), the environments' constructors, in-range CLI values that cannot work,
a corrupt notebook and ``-o`` against ``AGENTSTUDIES_ARTIFACTS``; the data checksums are in
``tests/test_data_checksums.py`` and plain papermill in ``tests/test_plain_papermill.py``.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import nbformat as nbf
import numpy as np
import pandas as pd
import pytest
import yaml

from agentstudies import handoff as ho
from agentstudies.book import cli
from agentstudies.handoff import testing as ho_testing
from agentstudies.sasst import SASST, ComparisonPlan, Slot
from agentstudies.sasst.rules import ThresholdFamily

SYSTEMS = ("ReAct", "PV", "Gate")


# ------------------------------------------------------------------------- fixtures
def sasst_tables(n: int = 20, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    ids = [f"t{i:03d}" for i in range(n)]
    rows = [(ids[i], s, w, float(rng.random() < 0.4)) for i in range(n) for s in range(2) for w in SYSTEMS]
    return (pd.DataFrame(rows, columns=["task_id", "seed", "workflow", "score"]),
            pd.DataFrame(X, index=ids, columns=["x0", "x1", "x2"]))


def sasst_engine() -> SASST:
    slots = [Slot("uniform PV", {"PV": 1, "ReAct": -1}, sign=1),
             Slot("stress PV", {"PV": 1, "ReAct": -1}, sign=-1, family="thr", radius=None, min_ess=5)]
    return SASST(ComparisonPlan(SYSTEMS), slots, {"thr": ThresholdFamily(quantiles=(0.5,), lifts=(3.0,))},
                 n_stability=0)


def run_sasst(ep: pd.DataFrame, feats: Any, split: Any = None):
    return sasst_engine().run(ep, feats, split)


def int_ids(ep: pd.DataFrame, feats: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    ep = ep.assign(task_id=[int(t[1:]) for t in ep["task_id"]])
    feats = feats.set_axis([int(t[1:]) for t in feats.index])
    return ep, feats


def with_row(ep: pd.DataFrame, row: dict) -> pd.DataFrame:
    return pd.concat([ep.astype(object), pd.DataFrame([row]).astype(object)], ignore_index=True)


def zero_variance(ep: pd.DataFrame) -> pd.DataFrame:
    """PV = ReAct + 0.1 on every task and seed, Gate = ReAct: every contrast is constant."""
    react = ep[ep.workflow == "ReAct"].set_index(["task_id", "seed"])["score"]
    out = ep.copy()
    key = pd.MultiIndex.from_frame(out[["task_id", "seed"]])
    base = react.reindex(key).to_numpy()
    out["score"] = np.where(out.workflow == "PV", base + 0.1, base)
    return out


def handoff_tables(n_per_type: int = 2) -> dict[str, pd.DataFrame]:
    return ho_testing.example_tables(n_per_type=n_per_type, n_seeds=2, task_types=("pick", "heat"))


def handoff_ep(**kw) -> pd.DataFrame:
    return handoff_tables(**kw)["episodes"]


def mutate(df: pd.DataFrame, fn: Callable[[pd.DataFrame], None]) -> pd.DataFrame:
    out = df.copy()
    fn(out)
    return out


# ------------------------------------------------------------------------- the cases
@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[], Any]
    exc: type | tuple | None  # None: must succeed with a note/warning matching `match`
    match: str
    note: Callable[[Any], str] | None = None  # where the note lives on the result


def _sasst_cases() -> list[Case]:
    ep, f = sasst_tables()

    def set_(col, i, v):
        return lambda d: d.__setitem__(col, d[col].astype(object).where(d.index != i, v))

    split_one = pd.Series(["discovery"] * 19 + ["confirmation"], index=f.index)
    return [
        Case("sasst missing column", lambda: run_sasst(ep.drop(columns="task_id"), f), KeyError, "task_id"),
        Case("sasst missing cluster id", lambda: run_sasst(mutate(ep, set_("task_id", 3, None)), f),
             ValueError, "missing cluster id"),
        Case("sasst NaN score", lambda: run_sasst(mutate(ep, set_("score", 5, np.nan)), f),
             ValueError, "NaN or non-numeric score in column 'score'.*t000/1/Gate"),
        Case("sasst +inf score", lambda: run_sasst(mutate(ep, set_("score", 4, np.inf)), f),
             ValueError, r"non-finite score \(\+/-inf\) in column 'score'.*t000/1/PV"),
        Case("sasst -inf score", lambda: run_sasst(mutate(ep, set_("score", 0, -np.inf)), f),
             ValueError, r"non-finite score \(\+/-inf\).*t000/0/ReAct"),
        Case("sasst string scores '0'/'1'", lambda: run_sasst(ep.assign(score=ep.score.map(lambda v: str(int(v)))), f),
             TypeError, "score column 'score' holds text.*'0'/'1'"),
        Case("sasst boolean scores noted", lambda: run_sasst(ep.assign(score=ep.score.astype(bool)), f),
             None, "score column 'score' is boolean; read as 0/1", note=lambda r: "\n".join(r.notes)),
        Case("sasst exact duplicate row", lambda: run_sasst(pd.concat([ep, ep.iloc[[0]]]), f),
             ValueError, "duplicate .* t000/0/ReAct"),
        Case("sasst duplicate 5 vs '5'",
             lambda: (lambda e, g: run_sasst(with_row(e, {"task_id": "5", "seed": 0, "workflow": "ReAct",
                                                          "score": 1 - e.score.iloc[15]}), g))(*int_ids(ep, f)),
             ValueError, r"duplicate \(task_id, seed, workflow\) rows: 5/0/ReAct"),
        Case("sasst duplicate 5 vs 5.0",
             lambda: (lambda e, g: run_sasst(with_row(e, {"task_id": 5.0, "seed": 0, "workflow": "ReAct",
                                                          "score": 0.0}), g))(*int_ids(ep, f)),
             ValueError, "duplicate .*5/0/ReAct"),
        Case("sasst duplicate seed 0 vs '0'", lambda: run_sasst(with_row(ep, {"task_id": "t000", "seed": "0",
                                                                             "workflow": "ReAct", "score": 1.0}), f),
             ValueError, "duplicate .*t000/0/ReAct"),
        Case("sasst unknown system", lambda: run_sasst(mutate(ep, set_("workflow", 2, "Other")), f),
             ValueError, r"system\(s\) \['Other'\] not in the plan's systems"),
        Case("sasst unpaired design", lambda: run_sasst(ep.drop(index=5), f), ValueError, "unpaired design.*t000/seed 1"),
        Case("sasst cluster without features", lambda: run_sasst(ep, f.iloc[:-1]), ValueError,
             r"cluster\(s\) without features: t019"),
        Case("sasst NaN feature", lambda: run_sasst(ep, mutate(f, lambda d: d.iloc.__setitem__((2, 1), np.nan))),
             ValueError, r"NaN feature values in column\(s\) \['x1'\].*x1 of cluster t002"),
        Case("sasst +inf feature", lambda: run_sasst(ep, mutate(f, lambda d: d.iloc.__setitem__((3, 0), np.inf))),
             ValueError, r"infinite \(\+/-inf\) feature values in column\(s\) \['x0'\].*x0 of cluster t003"),
        Case("sasst -inf feature", lambda: run_sasst(ep, mutate(f, lambda d: d.iloc.__setitem__((4, 2), -np.inf))),
             ValueError, r"infinite .*\['x2'\].*cluster t004"),
        Case("sasst features as a dict", lambda: run_sasst(ep, f.to_dict(orient="index")), TypeError,
             "features must be a pandas DataFrame.*got dict"),
        Case("sasst episodes as a dict", lambda: run_sasst(ep.to_dict(), f), TypeError,
             "episodes must be a pandas DataFrame"),
        Case("sasst extra feature rows reported",
             lambda: run_sasst(ep, pd.concat([f, pd.DataFrame([[0.0, 0.0, 0.0]], index=["zzz"], columns=f.columns)])),
             None, r"feature table has 1 cluster\(s\) without episodes, not used: zzz",
             note=lambda r: r.summary()),
        Case("sasst text feature column", lambda: run_sasst(ep, f.assign(domain="retail")), ValueError,
             r"feature column\(s\) \['domain'\] are not numeric"),
        Case("sasst duplicate feature ids 5 vs '5'",
             lambda: (lambda e, g: run_sasst(e, pd.concat([g, g.iloc[[5]].set_axis(["5"])])))(*int_ids(ep, f)),
             ValueError, "feature table has duplicate cluster ids: 5"),
        Case("sasst empty episode table", lambda: run_sasst(ep.iloc[:0], f), ValueError, "episode table is empty"),
        Case("sasst split lacks clusters", lambda: run_sasst(ep, f, pd.Series("discovery", index=f.index[:-1])),
             ValueError, r"split lacks cluster\(s\): t019"),
        Case("sasst bad split label", lambda: run_sasst(ep, f, pd.Series("holdout", index=f.index)), ValueError,
             "split labels must be 'discovery' or 'confirmation'"),
        Case("sasst one confirmation cluster (band undefined)", lambda: run_sasst(ep, f, split_one), ValueError,
             "confirmation split has 1 cluster; need at least 2"),
        Case("sasst zero variance never confirmed", lambda: run_sasst(zero_variance(ep), f), None,
             "undefined: zero variance",
             note=lambda r: ("" if (r.table["status"] == "confirmed").any() else "\n".join(r.table["band"]))),
        Case("sasst summary states the bound side", lambda: run_sasst(ep, f), None, "bound_side.*lower.*upper",
             note=lambda r: r.summary().replace("\n", " ")),
    ]


def _handoff_cases() -> list[Case]:
    ep = handoff_ep()
    tr = handoff_tables()["trajectories"]
    single = handoff_ep(n_per_type=1)

    def at(col, i, v):
        return lambda d: d.__setitem__(col, d[col].astype(object).where(d.index != i, v))

    first_arrived = int(ep.index[ep["arrived"].astype(bool)][0])
    first_missed = int(ep.index[~ep["arrived"].astype(bool)][0])

    def relabel_dup(d: pd.DataFrame) -> pd.DataFrame:
        d = d.copy()
        d["task_id"] = d["task_id"].astype(object)
        ids = sorted(d["task_id"].unique())
        d.loc[d.task_id == ids[0], "task_id"] = 5
        d.loc[d.task_id == ids[1], "task_id"] = "5"
        return d

    def warned(fn):
        def run():
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                res = fn()
            return res, "\n".join(str(w.message) for w in got)
        return run

    return [
        Case("handoff missing column", lambda: ho.analyze_handoff(ep.drop(columns="solved"), n_draws=0), KeyError,
             r"lacks required column\(s\) \['solved'\]"),
        Case("handoff episodes as a dict", lambda: ho.validate_episodes(ep.to_dict()), TypeError,
             "episodes must be a pandas DataFrame"),
        Case("handoff duplicate row", lambda: ho.validate_episodes(pd.concat([ep, ep.iloc[[0]]])), ValueError,
             "duplicate rows for"),
        Case("handoff duplicate task 5 vs '5'", lambda: ho.validate_episodes(relabel_dup(ep)), ValueError,
             "duplicate rows for .*task_id='5'"),
        Case("handoff non-boolean flag", lambda: ho.validate_episodes(mutate(ep, at("arrived", 0, "maybe"))), ValueError,
             "column 'arrived' must hold booleans.*'maybe'"),
        Case("handoff solved = 2", lambda: ho.validate_episodes(mutate(ep, at("solved", first_arrived, 2))), ValueError,
             "column 'solved' must hold booleans"),
        Case("handoff text flags '0'/'1' noted",
             warned(lambda: ho.validate_episodes(ep.assign(arrived=ep["arrived"].map(lambda v: "1" if v else "0")))),
             None, "column 'arrived' holds text values", note=lambda r: r[1]),
        Case("handoff +inf arrival_step",
             lambda: ho.validate_episodes(mutate(ep, at("arrival_step", first_arrived, np.inf))), ValueError,
             r"column 'arrival_step' has non-finite values \(\+/-inf\)"),
        Case("handoff arrival_step for a non-arrival",
             lambda: ho.validate_episodes(mutate(ep, at("arrival_step", first_missed, 3))), ValueError,
             "arrival_step must be NA when the reacher did not arrive"),
        Case("handoff endpoint != arrived & solved",
             lambda: ho.validate_episodes(mutate(ep, at("endpoint", first_missed, 1))), ValueError,
             "'endpoint' must equal arrived & solved"),
        Case("handoff incomplete assignments", lambda: ho.validate_episodes(ep.iloc[1:]), ValueError,
             "needs all four reacher x solver assignments"),
        Case("handoff unknown checkpoint label", lambda: ho.validate_episodes(mutate(ep, at("solver", 0, "PPO"))),
             ValueError, "must be one of the two checkpoint labels.*PPO"),
        Case("handoff task_type varies within a task",
             lambda: ho.validate_episodes(mutate(ep, at("task_type", 0, "cool"))), ValueError, "a task has one task type"),
        Case("handoff one task per task_type", lambda: ho.analyze_handoff(single, n_draws=50), ValueError,
             r"task_type sets the strata.*task_type='heat'\): 1 task.*allow_singleton_strata=True"),
        Case("handoff singleton strata allowed, noted", warned(lambda: ho.analyze_handoff(single, n_draws=50,
                                                                                          allow_singleton_strata=True)),
             None, "fewer than two tasks.*allowed", note=lambda r: r[1] + "\n".join(r[0].notes)),
        Case("handoff budget diagnostic singleton strata",
             lambda: ho.budget_diagnostic(handoff_tables(n_per_type=1)["trajectories"], n_draws=50),
             ValueError, "trajectories: task_type sets the strata"),
        Case("handoff negative n_draws", lambda: ho.analyze_handoff(ep, n_draws=-1), ValueError,
             r"n_draws=-1 is too few resamples.*\(or 0 for no intervals\)"),
        Case("handoff summary states the interval sides", lambda: ho.analyze_handoff(ep, n_draws=40, empty_threshold=1.0), None,
             r"two-sided 95% percentile intervals \[lower, upper\]", note=lambda r: r.summary()),
        Case("log import: empty recorded trajectory", lambda: ho.cut_before_final_call([]), ValueError,
             "recorded trajectory is empty"),
        Case("log import: no model call", lambda: ho.cut_before_final_call([{"role": "user", "content": "hi"}]),
             ValueError, "has no model call"),
        Case("log import: record not a dict",
             lambda: ho.cut_before_final_call([{"role": "user"}, "oops", {"role": "assistant"}]), TypeError,
             "history record.* must be a dict; got str"),
        Case("log import: record not JSON", lambda: ho.history_hash([{"role": "user", "x": {1, 2}}]), TypeError,
             "is not JSON-serialisable"),
        Case("log import: replay differs",
             lambda: ho.verify_replay([{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]),
             ho.ReplayMismatch, "differs from the recording at step 0"),
        Case("handoff trajectories missing reacher",
             lambda: ho.validate_trajectories(tr[tr["reacher"] != "RL"]), ValueError,
             "needs a trajectory from both reachers"),
    ]


def _tau_study_warns_on_partial_credit() -> str:
    from agentstudies.studies.tau import workflow as ts

    ep, f = sasst_tables()
    ep = ep.rename(columns={"score": "reward"})
    ep.loc[3, "reward"] = 0.5
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        try:
            ts.run_tau_sasst(ep, f, pd.Series("discovery", index=f.index), (0.1, 0.2, 0.3))
        except (ValueError, KeyError):
            pass  # the tables are not a τ study; only the warning matters here
    return "\n".join(str(w.message) for w in got)


def _tau_cases() -> list[Case]:
    from agentstudies.agents.tau import run_episodes
    from agentstudies.envs.tau import degenerate_task_ids, task_audit

    return [
        Case("tau study reward other than 0/1 warned", _tau_study_warns_on_partial_credit, None,
             r"assumes 0/1 task success in column 'reward'; found other values \['0.5'\]"),
        Case("tau episodes duplicate task ids", lambda: run_episodes(["retail/0", "retail/0"]), ValueError,
             r"duplicate task_ids \['retail/0'\]"),
        Case("tau episodes unknown task", lambda: run_episodes(["retail/9999"]), KeyError, "no tau task 'retail/9999'"),
        Case("tau episodes negative seed", lambda: run_episodes(["retail/0"], seeds=(-1,)), ValueError,
             "seed must be a non-negative integer, got -1"),
        Case("tau audit unknown domain", lambda: task_audit("telecom"), ValueError, "unknown tau domain 'telecom'"),
        Case("tau audit malformed task id", lambda: task_audit(task_ids=["retail-0"]), KeyError,
             "is not of the form '<domain>/<id>'"),
        Case("tau degenerate ids from a table without the flag",
             lambda: degenerate_task_ids(pd.DataFrame({"task_id": ["retail/0"]})), KeyError,
             r"lacks column\(s\) \['degenerate_pass'\]"),
    ]


def recovery_table(n_tasks: int = 3, cohorts: tuple[str, ...] = ("all",)) -> pd.DataFrame:
    """A balanced paired table: per cohort ``n_tasks`` tasks x (clean, stale-2); stale-2
    rescues every task, clean changes nothing (Delta(stale-2) - Delta(clean) = 100 points)."""
    rows = [dict(cohort=c, task_id=f"{c}-t{i}", condition=cond, delay=0, operation="refresh",
                 y_without=0 if cond == "stale-2" else i % 2, y_with=1 if cond == "stale-2" else i % 2)
            for c in cohorts for i in range(n_tasks) for cond in ("clean", "stale-2")]
    return pd.DataFrame(rows)


def _warned(fn):
    def run():
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            res = fn()
        return res, "\n".join(str(w.message) for w in got)
    return run


def _recovery_cases() -> list[Case]:
    from agentstudies.recovery import analyze_paired, validate_paired

    one = recovery_table(n_tasks=1, cohorts=("A", "B"))
    tab = recovery_table()
    text = tab.assign(y_with=tab["y_with"].astype(str))
    def relabel_5(d: pd.DataFrame) -> pd.DataFrame:
        d = d.astype(object)
        d.loc[d.task_id == "all-t0", "task_id"] = 5
        d.loc[d.task_id == "all-t1", "task_id"] = "5"
        return d

    def at(col, i, v):
        return lambda d: d.__setitem__(col, d[col].astype(float).where(d.index != i, v))

    return [
        Case("recovery duplicate task 5 vs '5'", lambda: validate_paired(relabel_5(tab)), ValueError,
             r"duplicate fork: row 2 \(cohort='all', task_id='5', condition='clean'.*repeats row 0"),
        Case("recovery +inf outcome", lambda: validate_paired(mutate(tab, at("y_with", 2, np.inf))), ValueError,
             "y_with=inf is not a binary outcome"),
        Case("recovery NaN in one branch", lambda: validate_paired(mutate(tab, at("y_with", 3, np.nan))), ValueError,
             "unpaired row 3 .*y_with is missing"),
        Case("recovery one task per cohort", lambda: analyze_paired(one, n_draws=50), ValueError,
             r"2 of 2 cohort\(s\) have fewer than two tasks: 'A': 1 task, 'B': 1 task.*allow_singleton_strata=True"),
        Case("recovery one-task cohorts allowed, noted",
             _warned(lambda: analyze_paired(one, n_draws=50, allow_singleton_strata=True)), None,
             r"(?s)fewer than two tasks.*allowed by allow_singleton_strata=True.*note: paired table: .*fewer than two tasks",
             note=lambda r: r[1] + "\n" + r[0].summary()),
        Case("recovery text outcomes '0'/'1' warned", _warned(lambda: validate_paired(text)), None,
             r"column 'y_with' holds text values \['0', '1'\]", note=lambda r: r[1]),
        Case("recovery n_draws=True", lambda: analyze_paired(tab, n_draws=True), TypeError,
             "n_draws=True: expected an integer number of resamples"),
        Case("recovery n_draws=10**11 refused up front", lambda: analyze_paired(tab, n_draws=10**11), ValueError,
             r"n_draws=100,000,000,000 is too large.*GiB of replicates.*about [\d,.]+ h"),
        Case("handoff n_draws=10**12 refused up front", lambda: ho.analyze_handoff(handoff_ep(), n_draws=10**12),
             ValueError, r"n_draws=1,000,000,000,000 is too large.*GiB.*bound"),
        Case("bootstrap n_draws=True", lambda: __import__("agentstudies.stats", fromlist=["x"]).paired_cluster_bootstrap(
            np.ones((3, 1)), lambda t: t, n_draws=True), ValueError, "n_draws must be a positive integer; got True"),
    ]


def _env_cases() -> list[Case]:
    from agentstudies.envs.alfworld import AlfworldEnv
    from agentstudies.envs.alfworld._testing import small_game
    from agentstudies.envs.toolsandbox import ToolSandboxEnv

    return [
        Case("alfworld budget '20'", lambda: AlfworldEnv(budget="20"), TypeError,
             "budget='20': expected a non-negative integer number of actions, got str"),
        Case("alfworld budget 2.5", lambda: AlfworldEnv(budget=2.5), TypeError, "budget=2.5: expected a non-negative integer"),
        Case("alfworld budget nan", lambda: AlfworldEnv(budget=float("nan")), TypeError, "budget=nan: expected"),
        Case("alfworld budget True", lambda: AlfworldEnv(budget=True), TypeError, "budget=True: expected"),
        Case("alfworld budget -1", lambda: AlfworldEnv(budget=-1), ValueError, "budget=-1: expected a non-negative"),
        Case("alfworld small_game('nope')", lambda: small_game("nope"), KeyError,
             "task_type='nope': no small game of that type; known task types: pick_and_place_simple"),
        Case("toolsandbox env of None", lambda: ToolSandboxEnv(None), TypeError,
             "case must be a Case or a Scenario .*got NoneType None"),
    ]


def _injected(source: str, chapter: str = "method_recovery") -> Any:
    """What ``Chapter.from_parameters`` checks in a kernel that papermill injected ``source`` into."""
    from agentstudies.book.chapter import check_injected
    from agentstudies.book.runner import declared_parameters

    declared = declared_parameters(Path(__file__).resolve().parents[1] / "notebooks" / f"{chapter}.ipynb")
    namespace: dict[str, Any] = {"In": ["", "seed = 0\nn_boot = 2000\nlevel = 0.95", source]}
    exec(source, {}, namespace)
    return check_injected(chapter, declared, namespace)


def _truncated_data(rel: str, keep: int) -> Any:
    """Read a truncated copy of ``data/<rel>`` through the package, in a throwaway data folder."""
    import shutil
    import tempfile
    from unittest import mock

    from agentstudies import _data

    repo_data = Path(__file__).resolve().parents[1] / "data"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        shutil.copytree(repo_data / "alfworld", root / "alfworld")
        shutil.copy(repo_data / "SHA256SUMS", root / "SHA256SUMS")
        target = root / rel
        target.write_bytes(target.read_bytes()[:keep])
        with mock.patch.object(_data, "data_dir", lambda: root):
            if rel.endswith("pools.json"):
                from agentstudies.envs.alfworld.pools import load_manifest

                return load_manifest(target)
            from agentstudies.agents.alfworld import load_weights

            return load_weights(Path(rel).stem, target.parent)


def _kernel_and_data_cases() -> list[Case]:
    from agentstudies._data import DataFileError
    from agentstudies.book.runner import ParameterError

    return [
        Case("plain papermill: misspelled -p n_boots", lambda: _injected("# Parameters\nn_boots = 5\n"), ParameterError,
             r"unknown parameter\(s\) \['n_boots'\] injected into chapter 'method_recovery'.*declares: seed, n_boot, level"),
        Case("plain papermill: -p seed -1", lambda: _injected("# Parameters\nseed = -1\n"), ParameterError,
             "parameter 'seed' of notebook method_recovery must be a non-negative integer seed.*papermill's injected"),
        Case("plain papermill: -p n_boot 0", lambda: _injected("# Parameters\nn_boot = 0\n"), ParameterError,
             "parameter 'n_boot' of notebook method_recovery is the number of resamples"),
        Case("plain papermill: -p level 1.5", lambda: _injected("# Parameters\nlevel = 1.5\n"), ParameterError,
             "parameter 'level' of notebook method_recovery is a probability"),
        Case("plain papermill: -p level 0.99 -p n_boot 100", lambda: _injected("# Parameters\nlevel = 0.99\nn_boot = 100\n"),
             ParameterError, "parameter 'n_boot' of notebook method_recovery .* must be >= 200 at level 0.99; got 100"),
        Case("plain papermill: method_sasst base_rate + gain > 1",
             lambda: _injected("# Parameters\nbase_rate = 0.95\n", "method_sasst"), ParameterError,
             r"base_rate \+ gain \(workflow B's success probability\) = 1.07 must be a probability in \[0, 1\] "
             r"\(from papermill's injected parameters\)"),
        Case("plain papermill: known names pass", lambda: _injected("# Parameters\nseed = 3\nn_boot = 40\n"), None,
             r"\['seed', 'n_boot'\]", note=repr),
        Case("truncated data/alfworld/pools.json", lambda: _truncated_data("alfworld/pools.json", 500), DataFileError,
             r"data/alfworld/pools.json does not match its checksum.*git checkout -- data/alfworld/pools.json"),
        Case("truncated data/alfworld/checkpoints/RL.json", lambda: _truncated_data("alfworld/checkpoints/RL.json", 30),
             DataFileError, r"data/alfworld/checkpoints/RL.json does not match.*git checkout -- data/alfworld/checkpoints/RL.json"),
    ]


def _truncated_prereg() -> Any:
    """A pre-registration saved by the engine, cut to half its bytes, then loaded."""
    import tempfile

    from agentstudies.sasst import Preregistration, cluster_data

    ep, f = sasst_tables(n=30)
    eng = sasst_engine()
    data = cluster_data(ep, f, SYSTEMS)
    with tempfile.TemporaryDirectory() as tmp:
        path = Preregistration.from_discovery(eng, eng.discover(data), data).save(Path(tmp) / "prereg.json")
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        return Preregistration.load(path)


def _prereg_without(section: str) -> Any:
    """A pre-registration saved by the engine with one section removed, then loaded."""
    import json
    import tempfile

    from agentstudies.sasst import Preregistration, cluster_data

    ep, f = sasst_tables(n=30)
    eng = sasst_engine()
    data = cluster_data(ep, f, SYSTEMS)
    with tempfile.TemporaryDirectory() as tmp:
        path = Preregistration.from_discovery(eng, eng.discover(data), data).save(Path(tmp) / "prereg.json")
        obj = json.loads(path.read_text())
        del obj[section]
        path.write_text(json.dumps(obj))
        return Preregistration.load(path)


def _on_half_corpus(read) -> Any:
    """``read(target)`` on the held-out classifier corpus with its second half deleted (still
    valid YAML), in a throwaway data folder that the package's checked readers use."""
    import shutil
    import tempfile
    from unittest import mock

    from agentstudies import _data

    repo_data = Path(__file__).resolve().parents[1] / "data"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        shutil.copytree(repo_data / "classifier_corpus", root / "classifier_corpus")
        shutil.copy(repo_data / "SHA256SUMS", root / "SHA256SUMS")
        target = root / "classifier_corpus" / "heldout.yaml"
        lines = target.read_text().splitlines(keepends=True)
        target.write_text("".join(lines[: len(lines) // 2]))
        with mock.patch.object(_data, "data_dir", lambda: root):
            return read(target)


def _half_corpus_study() -> Any:
    """The study's reader on a held-out corpus cut in half (9 rows instead of 21 before)."""
    from agentstudies.studies.impossible.classifier import classifier_corpus

    return _on_half_corpus(classifier_corpus)


def _pass_hat_k(score: float) -> Any:
    from agentstudies.episodes import pass_hat_k

    ep = pd.DataFrame({"task_id": ["a", "a", "b", "b"], "seed": [0, 1, 0, 1], "workflow": "w",
                       "score": [1.0, 0.0, score, 1.0]})
    return pass_hat_k(ep, 2)


def _half_corpus() -> Any:
    """The package's checked YAML reader on the held-out corpus cut in half."""
    from agentstudies import _data

    return _on_half_corpus(_data.read_yaml)


def _range_cases() -> list[Case]:
    """Resample counts, probabilities, shares, seeds and stability settings out of range."""
    from agentstudies.envs.alfworld import AlfworldEnv
    from agentstudies.envs.toolsandbox import ToolSandboxEnv, generate_scenarios, make_cases
    from agentstudies.recovery import analyze_paired, sign_flip_test
    from agentstudies.specs import BootstrapSpec, check_probability

    tab = recovery_table()
    plan = ComparisonPlan(SYSTEMS)
    slot = Slot("uniform PV", {"PV": 1, "ReAct": -1}, sign=1)
    too_few = r"too few resamples for a two-sided percentile interval at level 0.95: need n_draws >= 2/\(1 - level\) = 40"
    return [
        Case("recovery n_draws=1 (interval of one resample)", lambda: analyze_paired(tab, n_draws=1), ValueError,
             "analyze_paired: n_draws=1 is " + too_few),
        Case("recovery n_draws=39 at level 0.95", lambda: analyze_paired(tab, n_draws=39), ValueError, "n_draws=39 is too few"),
        Case("recovery n_draws=100 at level 0.99", lambda: analyze_paired(tab, n_draws=100, level=0.99), ValueError,
             r"at level 0.99: need n_draws >= 2/\(1 - level\) = 200"),
        Case("handoff n_draws=1", lambda: ho.analyze_handoff(handoff_ep(), n_draws=1), ValueError,
             r"analyze_handoff: n_draws=1 is too few .* = 40 \(or 0 for no intervals\)"),
        Case("handoff n_draws=2.5", lambda: ho.analyze_handoff(handoff_ep(), n_draws=2.5), TypeError,
             "n_draws=2.5: expected an integer number of resamples"),
        Case("BootstrapSpec n_draws=1", lambda: BootstrapSpec(n_draws=1), ValueError, "n_draws=1 is too few"),
        Case("SASST n_draws=2.7 not cut to 2", lambda: SASST(plan, [slot], n_draws=2.7), TypeError,
             "SASST: n_draws=2.7: expected an integer"),
        Case("SASST n_draws=0", lambda: SASST(plan, [slot], n_draws=0), ValueError,
             r"SASST: n_draws=0 is too few resamples for a one-sided percentile interval .* = 20"),
        Case("SASST n_draws=-5", lambda: SASST(plan, [slot], n_draws=-5), ValueError, "SASST: n_draws=-5 is too few"),
        Case("SASST n_stability=-3", lambda: SASST(plan, [slot], n_stability=-3), ValueError,
             r"SASST: n_stability=-3 must be a non-negative integer \(stability resamples; 0: none\)"),
        Case("SASST top_fraction=5", lambda: SASST(plan, [slot], top_fraction=5), ValueError,
             r"SASST: top_fraction=5 must be a share in \(0, 1\]"),
        Case("SASST discovery_fraction=1", lambda: SASST(plan, [slot], discovery_fraction=1.0), ValueError,
             r"discovery_fraction=1.0 must be a share in \(0, 1\)"),
        Case("slot stability_threshold=-1", lambda: Slot("s", {"PV": 1, "ReAct": -1}, stability_threshold=-1),
             ValueError, r"slot 's': stability_threshold=-1 must lie in \[0, 1\]"),
        Case("ThresholdFamily quantiles=(1.5,)", lambda: ThresholdFamily(quantiles=(1.5,)), ValueError,
             r"ThresholdFamily: quantiles=\(1.5,\) has \[1.5\] outside \[0, 1\]"),
        Case("ThresholdFamily lifts=(0,)", lambda: ThresholdFamily(lifts=(0.0,)), ValueError, "must be > 0"),
        Case("analyze_paired reference='nope'", lambda: analyze_paired(tab, n_draws=50, reference="nope"), ValueError,
             "reference='nope' is not a condition of the table; allowed values: 'clean', 'stale-2'"),
        Case("sign_flip_test 2-D input", lambda: sign_flip_test(np.ones((4, 2))), ValueError,
             r"differences must be 1-D.*shape \(4, 2\)"),
        Case("alfworld reset(-1)", lambda: AlfworldEnv().reset(-1), ValueError,
             r"AlfworldEnv.reset: seed=-1 must be a non-negative integer seed"),
        Case("alfworld reset(1.7)", lambda: AlfworldEnv().reset(1.7), TypeError,
             r"AlfworldEnv.reset: seed=1.7 must be a non-negative integer seed .*got float"),
        Case("toolsandbox env seed=-1", lambda: ToolSandboxEnv(make_cases(generate_scenarios()[:1])[0], seed=-1),
             ValueError, "ToolSandboxEnv: seed=-1 must be a non-negative integer seed"),
        Case("probability 1.5", lambda: check_probability("arrival", 1.5), ValueError,
             r"arrival=1.5 must be a probability in \[0, 1\]"),
        Case("truncated prereg.json names the file", _truncated_prereg, ValueError,
             r"pre-registration .*prereg.json is not readable JSON \(JSONDecodeError"),
        Case("prereg.json lacking a section names the file", lambda: _prereg_without("engine"), ValueError,
             r"engine: section missing from the file \(pre-registration .*prereg.json\)"),
        Case("classifier_corpus on a held-out corpus cut in half", _half_corpus_study, ValueError,
             r"data/classifier_corpus/heldout.yaml does not match its checksum"),
        Case("pass_hat_k score 7", lambda: _pass_hat_k(7.0), ValueError,
             r"pass_hat_k: score outside \[0, 1\] in column 'score' for 1 trial\(s\) \(task/seed\) \['b/0'\], e.g. 7"),
        Case("pass_hat_k score -1", lambda: _pass_hat_k(-1.0), ValueError, r"score outside \[0, 1\].*e.g. -1"),
        Case("half the held-out corpus deleted", _half_corpus, ValueError,
             r"data/classifier_corpus/heldout.yaml does not match its checksum.*git checkout -- "
             r"data/classifier_corpus/heldout.yaml"),
    ]


CASES = (_sasst_cases() + _handoff_cases() + _tau_cases() + _recovery_cases() + _env_cases()
         + _kernel_and_data_cases() + _range_cases())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_malformed_input_is_named(case):
    if case.exc is not None:
        with pytest.raises(case.exc, match=case.match):
            case.run()
    else:
        result = case.run()
        text = case.note(result) if case.note else str(result)
        import re

        assert re.search(case.match, text), f"{case.name}: no note matching {case.match!r} in {text[:500]!r}"


# ------------------------------------------------------------------------------- CLI
@pytest.fixture
def tiny_root(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.delenv("AGENTSTUDIES_ARTIFACTS", raising=False)
    root = tmp_path / "repo"
    (root / "book").mkdir(parents=True)
    (root / "book" / "intro.md").write_text("# t\n")
    (root / "book" / "_toc.yml").write_text(yaml.safe_dump(
        {"format": "jb-book", "root": "intro", "chapters": [{"file": "chapters/alpha"}, {"file": "chapters/beta"}]}))
    for name in ("alpha", "beta"):
        nb = nbf.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        cell = nbf.v4.new_code_cell("seed = 0\nn_tasks = 10\nsim_seeds = [0, 1]\nlabels = ['a']\nn_jobs = 1\n"
                                    "min_ess = 10.0\nn_boot = 200\nn_draws = 200\n")
        cell.metadata["tags"] = ["parameters"]
        nb.cells = [nbf.v4.new_markdown_cell(f"# {name}"), cell, nbf.v4.new_code_cell("x = 1")]
        (root / "notebooks").mkdir(exist_ok=True)
        nbf.write(nb, root / "notebooks" / f"{name}.ipynb")
    (root / "notebooks" / "profiles.yaml").write_text("chapters:\n  alpha:\n    smoke: {n_tasks: 2}\n")
    return root


CLI_CASES = [
    (["run", "alpha", "-p", "n_tasks", "None"], "parameter 'n_tasks' of notebook alpha expects int like its default; got None"),
    (["run", "alpha", "-p", "sim_seeds", "[a,b]"], "parameter 'sim_seeds' of notebook alpha expects int like its default element [0]; got str 'a'"),
    (["run", "alpha", "-p", "sim_seeds", "[0, -3]"], "parameter 'sim_seeds' of notebook alpha must be a non-negative integer seed"),
    (["run", "alpha", "-p", "seed", "-1"], "parameter 'seed' of notebook alpha must be a non-negative integer seed"),
    (["run", "alpha", "-p", "seed", "abc"], "parameter 'seed' of notebook alpha expects int"),
    (["run", "alpha", "-p", "n_tasks", "-4"], "parameter 'n_tasks' of notebook alpha is a count and must be >= 0"),
    (["run", "alpha", "-p", "n_jobs", "0"], "parameter 'n_jobs' of notebook alpha must be a positive number of workers"),
    (["run", "alpha", "-p", "labels", "[x, 3]"], "parameter 'labels' of notebook alpha expects str like its default element [1]"),
    (["run", "alpha", "-p", "labels", "[x"], "parameter 'labels': cannot parse '[x' as a YAML list/mapping"),
    (["run", "alpha", "-p", "n_task", "1"], "unknown parameter 'n_task' for notebook alpha"),
    (["run", "alpha", "-p", "n_tasks", "0"], "parameter 'n_tasks' of notebook alpha sets the chapter's sample and must be >= 1"),
    (["run", "alpha", "-p", "min_ess", "inf"], "parameter 'min_ess' of notebook alpha must be a finite number; got inf"),
    (["run", "alpha", "-p", "min_ess", "nan"], "parameter 'min_ess' of notebook alpha must be a finite number; got nan"),
    (["run", "alpha", "-p", "n_boot", "0"], "parameter 'n_boot' of notebook alpha is the number of resamples behind the intervals"),
    (["run", "alpha", "-p", "n_draws", "0"], "parameter 'n_draws' of notebook alpha is the number of resamples"),
    (["run", "alpha", "-p", "n_draws", "1000000000000"],
     "parameter 'n_draws' of notebook alpha is too large: 1,000,000,000,000 resamples hold at least 7,450.6 GiB"),
    (["run", "alpha", "-p", "seed", "1", "-p", "seed", "2"], "parameter 'seed' is given twice"),
    (["run", "no_such_chapter"], "no chapter named 'no_such_chapter'"),
    (["book", "--only", "gamma"], "unknown chapter(s) gamma; chapters in book/_toc.yml: alpha, beta"),
]


@pytest.mark.parametrize("args, message", CLI_CASES, ids=[" ".join(a) for a, _ in CLI_CASES])
def test_cli_malformed_input_is_named_before_running(tiny_root, capsys, args, message):
    assert cli.main([*args, "--root", str(tiny_root)]) == 1
    err = capsys.readouterr().err
    assert message in err
    assert not (tiny_root / "book" / "chapters").exists()  # nothing ran, nothing written


#: Meaning checks of the book's own chapters' parameters: refused before the notebook starts.
CHAPTER_CASES = [
    (["method_recovery", "-p", "n_boot", "1"], "parameter 'n_boot' of notebook method_recovery is the number of "
     "resamples behind the intervals this chapter shows and must be >= 40 at level 0.95; got 1"),
    (["tau_published_runs", "-p", "n_draws", "1"], "parameter 'n_draws' of notebook tau_published_runs is the number "
     "of resamples behind the intervals this chapter shows and must be >= 40"),
    (["method_recovery", "-p", "level", "0.99", "-p", "n_boot", "100"], "must be >= 200 at level 0.99; got 100"),
    (["tau_workflow_stress", "-p", "n_multiplier", "10"], "must be >= 20 at level 0.95; got 10"),
    (["method_handoff", "-p", "arrival", "{SFT: [1.5, 0.2, 0.15], RL: [0.8, 0.85, 0.75]}"],
     "parameter 'arrival' of notebook method_handoff is a probability and must lie in [0, 1]; got 1.5 (element "
     "['SFT'][0])"),
    (["method_handoff", "-p", "solve", "{SFT: [-0.2, 0.5, 0.3], RL: [0.75, 0.9, 0.7]}"],
     "parameter 'solve' of notebook method_handoff is a probability and must lie in [0, 1]; got -0.2"),
    (["method_handoff", "-p", "solve", "{SFT: [0.4, 0.5], RL: [0.75, 0.9]}"],
     "the per-type lists must have one length (one entry per task type); solve['SFT'] has 2, arrival['SFT'] has 3"),
    (["method_handoff", "-p", "arrival", "{SFT: [0.1, 0.2, 0.15]}"], "needs the keys ['RL', 'SFT'] like its default"),
    (["method_handoff", "-p", "n_tasks_per_type", "1"], "parameter 'n_tasks_per_type' of notebook method_handoff "
     "sets the tasks of each task type, the bootstrap stratum, and must be >= 2; got 1"),
    (["method_sasst", "-p", "n_population", "0"], "parameter 'n_population' of notebook method_sasst sets the "
     "chapter's sample and must be >= 1; got 0"),
    (["method_sasst", "-p", "base_rate", "1.5"], "parameter 'base_rate' of notebook method_sasst is a probability "
     "and must lie in [0, 1]; got 1.5"),
    (["method_sasst", "-p", "base_rate", "0.95"], "base_rate + gain (workflow B's success probability) = 1.07 must "
     "be a probability in [0, 1]"),
    (["alfworld_recovery", "-p", "task_types", "5"], "parameter 'task_types' of notebook alfworld_recovery must be "
     "None (all six types) or a non-empty list of ALFWorld task types"),
    (["alfworld_recovery", "-p", "task_types", "[pick]"], "names unknown ALFWorld task type(s) ['pick']"),
    (["tau_workflow_stress", "-p", "stability_threshold", "-1"], "parameter 'stability_threshold' of notebook "
     "tau_workflow_stress is a probability and must lie in [0, 1]; got -1"),
    (["tau_workflow_stress", "-p", "n_stability", "-3"], "parameter 'n_stability' of notebook tau_workflow_stress "
     "is a count and must be >= 0; got -3"),
    (["method_recovery", "-p", "level", "-inf"], "parameter 'level' of notebook method_recovery is a probability and "
     "must lie strictly between 0 and 1; got -inf"),
    (["method_sasst", "-p", "long_task_penalty", "0.5"], "base_rate + gain - long_task_penalty (workflow B "
     "on long tasks) = -0.08 must be a probability in [0, 1]"),
    (["method_sasst", "--scheduler", "tcp://127.0.0.1:1"], "--scheduler tcp://127.0.0.1:1: notebook method_sasst runs "
     "no parallel work (it declares no n_jobs or backend parameter)"),
    (["method_sasst", "--root", "/nonexistent"], "--root /nonexistent: /nonexistent does not exist"),
    (["alfworld_recovery", "-p", "cate_learner", "forst"], "parameter 'cate_learner' of notebook alfworld_recovery "
     "must be one of dr, forest; got 'forst'"),
    (["alfworld_recovery", "-p", "cap_scale", "0"], "parameter 'cap_scale' of notebook alfworld_recovery "
     "multiplies a budget and must be > 0; got 0"),
    (["alfworld_recovery", "-p", "checkpoint", "BC-nope"], "parameter 'checkpoint' of notebook alfworld_recovery "
     "names 'BC-nope', not one of BC-memory, RL, SFT, SFT-equal, hand"),
    (["alfworld_handoff", "-p", "clone", "copy"], "parameter 'clone' of notebook alfworld_handoff must be one of "
     "replay, snapshot; got 'copy'"),
    (["sasst_geometry", "-p", "diagnostic_encoders", "[minilm, bert]"], "must be one of tfidf-svd, minilm (each "
     "element); got 'bert'"),
    (["sasst_calibration", "-p", "backend", "dask2"], "parameter 'backend' of notebook sasst_calibration must be one "
     "of loky, threading, sequential, dask; got 'dask2'"),
    (["tau_workflow_stress", "-p", "profiles", "[profile_c]"], "parameter 'profiles' of notebook tau_workflow_stress "
     "names 'profile_c', not one of profile_a, profile_b"),
    (["toolsandbox_workflows", "-p", "augmentations", "[base, noise]"], "parameter 'augmentations' of notebook "
     "toolsandbox_workflows names 'noise', not one of base, 3_distraction_tools"),
    (["toolsandbox_workflows", "-p", "sasst_profile", "bse"], "parameter 'sasst_profile' of notebook "
     "toolsandbox_workflows names 'bse', not one of base, treated"),
    (["method_sasst", "-p", "min_stability", "1.2"], "parameter 'min_stability' of notebook method_sasst is a "
     "probability and must lie in [0, 1]; got 1.2"),
]


@pytest.mark.parametrize("args, message", CHAPTER_CASES, ids=[" ".join(a) for a, _ in CHAPTER_CASES])
def test_chapter_parameter_meaning_is_checked_before_running(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.setenv("AGENTSTUDIES_ARTIFACTS", str(tmp_path / "artifacts"))
    out = tmp_path / "out.ipynb"
    assert cli.main(["run", *args, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert message in err, err
    assert not out.exists() and not any(tmp_path.glob("out*"))  # nothing ran, nothing written


def test_cli_unknown_chapter_lists_chapters(tiny_root, capsys):
    assert cli.main(["run", "gamma", "--root", str(tiny_root)]) == 1
    assert "chapters in book/_toc.yml: alpha, beta" in capsys.readouterr().err


def test_cli_output_folder_refused_before_running(tiny_root, tmp_path, capsys):
    out = tmp_path / "a_folder"
    out.mkdir()
    assert cli.main(["run", "alpha", "-o", str(out), "--root", str(tiny_root)]) == 1
    assert "is a folder" in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_cli_profile_with_a_plain_notebook_path_is_refused(tiny_root, tmp_path, capsys):
    plain = tmp_path / "variant.ipynb"
    plain.write_bytes((tiny_root / "notebooks" / "alpha.ipynb").read_bytes())
    assert cli.main(["run", str(plain), "--profile", "smoke", "--root", str(tiny_root)]) == 1
    assert "--profile smoke: notebook" in capsys.readouterr().err
    assert not plain.with_name("variant.executed.ipynb").exists()


def test_cli_corrupt_notebook_is_one_line(tiny_root, capsys):
    """A truncated notebook: one line naming the file and how to restore it, no nbformat traceback."""
    path = tiny_root / "notebooks" / "alpha.ipynb"
    path.write_bytes(path.read_bytes()[:200])
    assert cli.main(["run", "alpha", "--root", str(tiny_root)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert f"notebook {path} is not a readable Jupyter notebook (NotJSONError" in err and "git checkout --" in err


def test_cli_o_wins_over_the_environment_and_a_failed_first_run_leaves_nothing(tiny_root, tmp_path, monkeypatch, capsys):
    """Two -o runs with AGENTSTUDIES_ARTIFACTS set never share a folder; a first -o run that
    fails leaves no empty OUT.artifacts/."""
    nb = tiny_root / "notebooks" / "alpha.ipynb"
    book = nbf.read(nb, as_version=4)
    book.cells.append(nbf.v4.new_code_cell(
        "import os, pathlib\nd = pathlib.Path(os.environ['AGENTSTUDIES_ARTIFACTS']) / 'alpha'\nd.mkdir(parents=True)\n"
        "(d / 't.csv').write_text(str(seed))\nif seed == 9:\n    raise ValueError('seed 9 fails')"))
    nbf.write(book, nb)
    monkeypatch.setenv("AGENTSTUDIES_ARTIFACTS", str(tmp_path / "env_folder"))
    for seed in ("1", "2"):
        assert cli.main(["run", "alpha", "-p", "seed", seed, "-o", str(tmp_path / f"o{seed}.ipynb"),
                         "--root", str(tiny_root)]) == 0
    assert (tmp_path / "o1.artifacts" / "alpha" / "t.csv").read_text() == "1"
    assert (tmp_path / "o2.artifacts" / "alpha" / "t.csv").read_text() == "2"
    assert not (tmp_path / "env_folder").exists()
    assert cli.main(["run", "alpha", "-p", "seed", "9", "-o", str(tmp_path / "o9.ipynb"), "--root", str(tiny_root)]) == 1
    assert "seed 9 fails" in capsys.readouterr().err
    assert not (tmp_path / "o9.artifacts").exists() and (tmp_path / "o9.failed.ipynb").is_file()


def test_catalogue_size():
    n = len(CASES) + len(CLI_CASES) + len(CHAPTER_CASES) + 5
    assert n >= 140, n


def test_selection_skips_candidates_whose_value_is_undefined():
    """A stability resample can leave the plan's value undefined (NaN) for a candidate; the
    selection then skips it instead of failing (smoke run of tau_workflow_stress)."""
    from agentstudies.sasst._engine import _select

    loc = np.array([np.nan, 0.3, 0.1, np.nan])
    feas = np.array([True, True, True, True])
    ess = np.ones(4)
    dist = np.zeros(4)
    assert _select(loc, feas, ess, dist, "first", 0.0) == 2
    assert _select(np.full(3, np.nan), np.ones(3, bool), np.ones(3), np.zeros(3), "max_ess", 0.0) == -1


def test_cli_second_run_of_one_output_is_refused_while_the_first_runs(tiny_root, tmp_path, capsys):
    """Two runs writing one executed notebook at once: the second is refused before it starts,
    naming the first's pid, and touches nothing of the first's."""
    from agentstudies.book.execute import _run_lock

    out = tmp_path / "o.ipynb"
    with _run_lock(out.resolve()):
        (tmp_path / "o.failed.ipynb").write_text("{}")  # the first run's kept notebook
        assert cli.main(["run", "alpha", "-o", str(out), "--root", str(tiny_root)]) == 1
        err = capsys.readouterr().err
        assert f"another run is writing {out.resolve()} (pid {os.getpid()})" in err and "-o OTHER.ipynb" in err
        assert (tmp_path / "o.failed.ipynb").read_text() == "{}"
    assert not (tmp_path / ".o.ipynb.lock").exists()  # released and removed


def test_cli_chapter_that_never_reaches_finish_fails(tiny_root, tmp_path, capsys):
    """A notebook that makes a Chapter but has no ch.finish() cell: the run fails, its
    artifacts (INCOMPLETE, no provenance) are not committed, the notebook is kept as failed."""
    from agentstudies.book.chapter import INCOMPLETE
    from agentstudies.book.execute import INCOMPLETE_MARKER

    assert INCOMPLETE_MARKER == INCOMPLETE  # the runner looks for the marker the chapter writes
    nb_path = tiny_root / "notebooks" / "alpha.ipynb"
    book = nbf.read(nb_path, as_version=4)
    book.cells.append(nbf.v4.new_code_cell(
        "from agentstudies.book.chapter import Chapter\nch = Chapter('alpha', {'seed': seed})\n"
        "ch.save_table(__import__('pandas').DataFrame({'a': [1]}), 't')"))
    nbf.write(book, nb_path)
    out = tmp_path / "o.ipynb"
    assert cli.main(["run", "alpha", "-o", str(out), "--root", str(tiny_root)]) == 1
    err = capsys.readouterr().err
    assert "ChapterNotFinished" in err and "never reached ch.finish()" in err
    assert not out.exists() and (tmp_path / "o.failed.ipynb").is_file()
    assert not (tmp_path / "o.artifacts").exists()


def _archive(tmp_path: Path, run: Any, name: str = "method_sasst") -> Path:
    from agentstudies.book.paper import runs as paper_runs

    art = tmp_path / "artifacts" / name
    art.mkdir(parents=True, exist_ok=True)
    (art / "t.csv").write_text("a\n1\n")
    prov = {"started": "2026-12-01T00:00:00+0000", "wall_time_s": 5.0, "parameters": {"seed": 1}}
    if run is not None:
        prov["run"] = run
    (art / "provenance.json").write_text(__import__("json").dumps(prov))
    return paper_runs.archive_run(name, tmp_path / "artifacts", tmp_path / "runs")


ARCHIVE_CASES = [
    ({"profile": "smoke", "overrides": {}}, "is a smoke-profile run (provenance 'run.profile'), not the paper profile"),
    ({"profile": "paper", "overrides": {"seed": 1}}, "is a paper-profile run with non-profile parameters (seed=1)"),
    (None, "records no profile in its provenance"),
]


@pytest.mark.parametrize("run, message", ARCHIVE_CASES, ids=["smoke run", "modified paper run", "no profile"])
def test_archive_refuses_anything_but_an_unmodified_paper_profile_run(tmp_path, run, message):
    with pytest.raises(ValueError, match=re.escape(message) + ".*agentstudies book --profile paper --only method_sasst"):
        _archive(tmp_path, run)
    assert not (tmp_path / "runs" / "method_sasst").exists()


def test_archive_cli_refusal_is_one_line(tmp_path, monkeypatch, capsys):
    from agentstudies.book.paper import runs as paper_runs

    art = tmp_path / "artifacts" / "method_sasst"
    art.mkdir(parents=True)
    (art / "provenance.json").write_text('{"run": {"profile": "smoke", "overrides": {}}, "wall_time_s": 1.0}')
    assert paper_runs.main(["archive", "method_sasst", "--artifacts", str(tmp_path / "artifacts")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: the run in") and "smoke-profile run" in err


def test_load_run_label_states_the_profile_from_provenance(tmp_path):
    """An archive whose provenance says smoke is labelled smoke, never "paper-profile run"."""
    from agentstudies.book.paper import runs as paper_runs

    out = _archive(tmp_path, {"profile": "paper", "overrides": {}})
    assert paper_runs.load_run("method_sasst", folder=out).label == "paper-profile run of 2026-12-01, 5 s"
    prov = out / "provenance.json"
    for run, want in ((({"profile": "smoke", "overrides": {}}), "smoke-profile run (not the paper profile) of 2026-12-01, 5 s"),
                      ({"profile": "paper", "overrides": {"seed": 1}},
                       "paper-profile run with non-profile parameters (seed=1) of 2026-12-01, 5 s"),
                      (None, "run of 2026-12-01, 5 s (its provenance records no profile)")):
        d = {"started": "2026-12-01T00:00:00+0000", "wall_time_s": 5.0}
        if run is not None:
            d["run"] = run
        prov.write_text(__import__("json").dumps(d))
        sums = "".join(f"{__import__('hashlib').sha256(p.read_bytes()).hexdigest()}  {p.name}\n"
                       for p in sorted(out.iterdir()) if p.name != "SHA256SUMS")
        (out / "SHA256SUMS").write_text(sums)
        assert paper_runs.load_run("method_sasst", folder=out).label == want


READ_ONLY = "/sys/agentstudies-read-only"  # the kernel refuses to create anything here, even for root


@pytest.mark.parametrize("how", ["-o", "AGENTSTUDIES_ARTIFACTS", "import-log -o"])
def test_read_only_output_is_one_line_naming_the_path(tiny_root, monkeypatch, capsys, how):
    if how == "-o":
        args = ["run", "alpha", "-o", f"{READ_ONLY}/out.ipynb", "--root", str(tiny_root)]
    elif how == "AGENTSTUDIES_ARTIFACTS":
        monkeypatch.setenv("AGENTSTUDIES_ARTIFACTS", READ_ONLY)
        args = ["run", "alpha", "--root", str(tiny_root)]
    else:
        args = ["import-log", str(tiny_root / "no-such.eval"), "-o", f"{READ_ONLY}/episodes.csv"]
    assert cli.main(args) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err, err
    assert f": {READ_ONLY}; choose a writable place" in err, err


def test_import_log_hints_name_the_command_options():
    """from_inspect_log's hints name Python keywords; the command shows its own options, and says
    where an option does not exist (text_scores, require_all_epochs)."""
    from agentstudies.book.cli import cli_hints

    assert cli_hints("x.eval has scores ['a', 'b']; name one with scorer=") == \
        "x.eval has scores ['a', 'b']; name one with --scorer NAME"
    assert cli_hints("select one as scorer='acc.KEY'") == "select one as --scorer acc.KEY"
    assert cli_hints("use workflow='task_arg:NAME'") == "use --workflow task_arg:NAME"
    assert "text_scores=" not in cli_hints("pass text_scores={...} to map others").split("from_inspect_log")[0]
    assert "no option" in cli_hints("pass require_all_epochs=False to accept")
    assert cli_hints("Pass allow_incomplete=True (--allow-incomplete) to import") == "Pass --allow-incomplete to import"


def test_plain_jupyter_book_build_on_unexecuted_chapters_says_how_to_execute(tiny_root):
    """The book's Sphinx extension, at builder-inited: no executed chapter is an error naming
    `agentstudies book`; a missing one a warning naming `agentstudies book --only NAME`."""
    import logging
    from types import SimpleNamespace

    from sphinx.errors import ExtensionError

    from agentstudies.book.site import _check_executed, unexecuted_chapters

    app = SimpleNamespace(srcdir=str(tiny_root / "book"))
    assert unexecuted_chapters(tiny_root / "book") == (["alpha", "beta"], ["alpha", "beta"])
    with pytest.raises(ExtensionError, match=r"none of the 2 chapters of book/_toc.yml is executed.*"
                                             r"`agentstudies book` \(or `make book`\)"):
        _check_executed(app)
    (tiny_root / "book" / "chapters").mkdir()
    (tiny_root / "book" / "chapters" / "alpha.ipynb").write_text("{}")
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("sphinx.agentstudies.book.site")
    logger.addHandler(handler)
    try:
        _check_executed(app)
    finally:
        logger.removeHandler(handler)
    assert [r.getMessage() for r in records] == [
        "chapter beta is not executed (book/chapters/beta.ipynb is missing); `agentstudies book --only beta` executes it"]
