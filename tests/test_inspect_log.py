"""Inspect eval logs -> episode tables (agentstudies.episodes), with real logs made offline.

The logs are written by Inspect itself: inspect_evals' tau2 retail task under the mock
model (two simulated workflows), and a small eval whose mock model fails on some
samples. Expected values are read from the logs with Inspect's own reader, independently
of the converter.
"""

from __future__ import annotations

import itertools
import json
import math
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentstudies.agents.testing import mock_error_eval, mock_tau2_eval
from agentstudies.episodes import INSPECT_COLUMNS, LogImportError, from_inspect_log, pass_hat_k

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tau2_logs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tau2logs")
    return [mock_tau2_eval(w, str(folder), limit=4, epochs=2) for w in ("decline", "transfer")]


@pytest.fixture(scope="module")
def error_log(tmp_path_factory):
    return mock_error_eval(str(tmp_path_factory.mktemp("errlog")), n_samples=6, epochs=2, fail_every=3)


def _samples(path):
    from inspect_ai.log import read_eval_log

    return read_eval_log(path).samples


def test_rows_match_the_log_samples_one_to_one(tau2_logs):
    from inspect_ai.scorer import value_to_float

    df = from_inspect_log(tau2_logs, task_id="retail/{id}", workflow="metadata:workflow")
    assert list(df.columns) == list(INSPECT_COLUMNS)
    to_float = value_to_float()
    expected = []
    for path, wf in zip(tau2_logs, ("decline", "transfer")):
        for s in _samples(path):
            expected.append((f"retail/{s.id}", s.epoch, wf, to_float(s.scores["retail_scorer"].value),
                             sum(u.input_tokens for u in s.model_usage.values())))
    got = list(df[["task_id", "seed", "workflow", "score", "input_tokens"]].itertuples(index=False, name=None))
    assert sorted(got) == sorted(expected) and len(got) == 2 * 4 * 2
    assert not df["flagged"].any()


def test_sasst_accepts_the_converted_table(tau2_logs):
    from agentstudies.envs.tau import task_features
    from agentstudies.sasst import SASST, ComparisonPlan, Slot, ThresholdFamily

    df = from_inspect_log(tau2_logs, task_id="retail/{id}", workflow="metadata:workflow")
    features = task_features(text_encoder="tfidf-svd").loc[df["task_id"].unique()].select_dtypes("number")
    report = SASST(ComparisonPlan(("decline", "transfer")),
                   [Slot("uniform", {"transfer": 1, "decline": -1}, sign=+1),
                    Slot("stress", {"transfer": 1, "decline": -1}, sign=-1, family="thr", radius=None)],
                   {"thr": ThresholdFamily()}).run(df[["task_id", "seed", "workflow", "score"]], features)
    assert set(report.table.index) == {"uniform", "stress"}


def test_errored_samples_are_kept_flagged_and_counted(error_log):
    samples = _samples(error_log)
    n_err = sum(s.error is not None for s in samples)
    assert 0 < n_err < len(samples)
    keep = from_inspect_log(error_log)
    assert len(keep) == len(samples) and int(keep["flagged"].sum()) == n_err
    assert keep.loc[keep["flagged"], "score"].isna().all()
    zero = from_inspect_log(error_log, on_error="zero")
    assert (zero.loc[zero["flagged"], "score"] == 0).all()
    with pytest.warns(UserWarning, match=f"excluded {n_err} of {len(samples)}"):
        excl = from_inspect_log(error_log, on_error="exclude")
    assert len(excl) == len(samples) - n_err and len(excl.attrs["excluded"]) == n_err
    # excluding errors inflates the pass rate relative to counting them as failures
    assert excl["score"].mean() >= zero["score"].mean()


def test_clear_errors(tau2_logs, error_log, tmp_path):
    with pytest.raises(LogImportError, match="no scorer 'accuracy'.*retail_scorer"):
        from_inspect_log(tau2_logs[0], scorer="accuracy")
    with pytest.raises(LogImportError, match="different tasks"):
        from_inspect_log([tau2_logs[0], error_log])
    assert len(from_inspect_log([tau2_logs[0], error_log], task="mock_arithmetic")) == 6 * 2
    with pytest.raises(LogImportError, match="repeat a"):
        from_inspect_log(tau2_logs)  # both logs have the same solver/model name
    with pytest.raises(LogImportError, match="metadata 'arm'"):
        from_inspect_log(tau2_logs[0], workflow="metadata:arm")
    with pytest.raises(FileNotFoundError):
        from_inspect_log(tmp_path / "nope.eval")
    with pytest.raises(ValueError, match="on_error"):
        from_inspect_log(error_log, on_error="drop")
    # a log missing one epoch of one sample: remove that sample's file from the zip
    broken = tmp_path / "broken.eval"
    with zipfile.ZipFile(error_log) as src, zipfile.ZipFile(broken, "w") as dst:
        names = [n for n in src.namelist() if n.startswith("samples/")]
        for item in src.infolist():
            if item.filename != names[0]:
                dst.writestr(item, src.read(item.filename))
    with pytest.raises(LogImportError, match="lack some"):
        from_inspect_log(broken)
    assert len(from_inspect_log(broken, require_all_epochs=False)) == 6 * 2 - 1


def _brute_pass_hat_k(outcomes, k):
    """Fraction of all k-subsets of a task's trials that are all successes, averaged."""
    vals = []
    for trials in outcomes:
        subsets = list(itertools.combinations(trials, k))
        vals.append(np.mean([all(s) for s in subsets]))
    return float(np.mean(vals))


def test_pass_hat_k_is_the_unbiased_estimator():
    rng = np.random.default_rng(0)
    outcomes = [list(rng.random(5) < p) for p in (0.2, 0.5, 0.9, 1.0)]
    df = pd.DataFrame([{"task_id": t, "seed": s, "workflow": "w", "score": float(o)}
                       for t, trials in enumerate(outcomes) for s, o in enumerate(trials)])
    for k in (1, 2, 3, 5):
        got = pass_hat_k(df, k)["pass_hat_k"].item()
        assert math.isclose(got, _brute_pass_hat_k(outcomes, k), rel_tol=1e-12)
    with pytest.raises(ValueError, match="fewer than k=6"):
        pass_hat_k(df, 6)
    with pytest.raises(ValueError, match="NaN score"):
        pass_hat_k(df.assign(score=np.nan), 1)


def test_pass_hat_k_agrees_with_inspects_reducer():
    from inspect_ai.scorer import Score, pass_k

    rng = np.random.default_rng(1)
    rows, ours = [], []
    for t in range(6):
        trials = [float(x) for x in rng.random(4) < 0.6]
        rows += [{"task_id": t, "seed": s, "workflow": "w", "score": v} for s, v in enumerate(trials)]
        ours.append(pass_k(2)([Score(value=v) for v in trials]).value)
    assert math.isclose(pass_hat_k(pd.DataFrame(rows), 2)["pass_hat_k"].item(), float(np.mean(ours)))


def test_import_log_command(error_log, tmp_path, capsys):
    from agentstudies.cli import main

    out = tmp_path / "ep.csv"
    assert main(["import-log", error_log, "-o", str(out), "--on-error", "zero"]) == 0
    printed = capsys.readouterr().out
    assert "flagged (error or limit):" in printed and out.is_file()
    assert len(pd.read_csv(out)) == len(_samples(error_log))
    assert main(["import-log", error_log, "-o", str(tmp_path / "x.txt")]) == 1
    assert "must end in .csv or .parquet" in capsys.readouterr().err


def test_summaries_give_the_rows_of_the_full_samples(tau2_logs, error_log):
    # the converter reads Inspect's sample summaries; the full samples give the same rows
    from inspect_ai.log import read_eval_log_samples
    from inspect_ai.scorer import value_to_float

    from agentstudies.episodes import _log_samples, _sample_row

    for path, scorer in ((tau2_logs[1], "retail_scorer"), (error_log, "match")):
        summaries = _log_samples(Path(path))
        assert {type(s).__name__ for s in summaries} == {"EvalSampleSummary"}
        fast = sorted(str(_sample_row(s, scorer, value_to_float())) for s in summaries)
        full = sorted(str(_sample_row(s, scorer, value_to_float())) for s in read_eval_log_samples(path))
        assert fast == full and len(full) == (4 * 2 if path != error_log else 6 * 2)
        assert ("'flagged': True" in "".join(full)) == (path == error_log)
