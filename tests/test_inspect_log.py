"""Inspect eval logs -> episode tables (agentstudies.episodes), with real logs made offline.

The logs are written by Inspect itself: inspect_evals' tau2 retail task under the mock
model (two simulated workflows), and a small eval whose mock model fails on some
samples. Expected values are read from the logs with Inspect's own reader, independently
of the converter.
"""

from __future__ import annotations

import functools
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


# The smallest tau2 logs that still exercise every path the tests below read: four tasks
# (SASST needs two discovery clusters; task ids and input tokens differ), two workflows (two
# logs with the same solver and model), one epoch. Several epochs per sample (seed = epoch,
# a missing epoch) are read from the error log (2 epochs) and the corpus' scored_epochs
# logs, whose seeds are checked against values written independently. Inspect spends about
# 1.4 CPU-s per tau2 sample, so 8 samples instead of 16 halve this module's setup.
N_TASKS, EPOCHS = 4, 1


@pytest.fixture(scope="module")
def tau2_logs(tmp_path_factory):
    import gc

    folder = tmp_path_factory.mktemp("tau2logs")
    before = gc.get_threshold()
    logs = [mock_tau2_eval(w, str(folder), limit=N_TASKS, epochs=EPOCHS) for w in ("decline", "transfer")]
    assert gc.get_threshold() == before  # the eval's collector setting is undone afterwards
    return logs


@pytest.fixture(scope="module")
def error_log(tmp_path_factory):
    return mock_error_eval(str(tmp_path_factory.mktemp("errlog")), n_samples=6, epochs=2, fail_every=3)


@functools.cache
def _samples(path):
    """The log's full samples read with Inspect's own reader (once per log: a tau2 sample
    holds the retail database)."""
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
    assert sorted(got) == sorted(expected) and len(got) == 2 * N_TASKS * EPOCHS
    assert {s for _, s, *_ in got} == set(range(1, EPOCHS + 1)) and len({t for t, *_ in got}) == N_TASKS
    assert not df["flagged"].any()


def test_sasst_accepts_the_converted_table(tau2_logs):
    from agentstudies.envs.tau import task_features
    from agentstudies.sasst import SASST, ComparisonPlan, Slot
    from agentstudies.sasst.rules import ThresholdFamily

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
    from agentstudies.book.cli import main

    out = tmp_path / "ep.csv"
    assert main(["import-log", error_log, "-o", str(out), "--on-error", "zero"]) == 0
    printed = capsys.readouterr().out
    assert "flagged (error, limit or retry):" in printed and out.is_file()
    assert len(pd.read_csv(out)) == len(_samples(error_log))
    assert main(["import-log", error_log, "-o", str(tmp_path / "x.txt")]) == 1
    assert "must end in .csv or .parquet" in capsys.readouterr().err


def test_summaries_give_the_rows_of_the_full_samples(tau2_logs, error_log):
    # the converter reads Inspect's sample summaries; the full samples give the same rows
    from agentstudies.episodes import SCORE_RULE, _log_samples, _sample_row

    for path, scorer in ((tau2_logs[1], "retail_scorer"), (error_log, "match")):
        summaries = _log_samples(Path(path))
        # a summary without usage (an errored sample's) is replaced by its full sample
        kinds = {type(s).__name__ for s in summaries}
        assert kinds == ({"EvalSampleSummary"} if path != error_log else {"EvalSampleSummary", "EvalSample"})
        fast = sorted(str(_sample_row(s, scorer, SCORE_RULE)) for s in summaries)
        full = sorted(str(_sample_row(s, scorer, SCORE_RULE)) for s in _samples(path))
        assert fast == full and len(full) == (N_TASKS * EPOCHS if path != error_log else 6 * 2)
        assert ("'flagged': True" in "".join(full)) == (path == error_log)


def _trials_table(outcomes, workflow="w"):
    return pd.DataFrame([{"task_id": t, "seed": s, "workflow": workflow, "score": float(o)}
                         for t, trials in enumerate(outcomes) for s, o in enumerate(trials)])


def test_pass_hat_k_by_groups_matches_brute_force_per_group():
    rng = np.random.default_rng(7)
    a = [list(rng.random(4) < p) for p in (0.3, 0.6, 0.8)]
    b = [list(rng.random(4) < p) for p in (0.1, 0.9, 0.5, 0.95)]
    df = pd.concat([_trials_table(a, "A"), _trials_table(b, "B")], ignore_index=True)
    for k in (1, 2, 4):
        got = pass_hat_k(df, k).set_index("workflow")
        assert math.isclose(got.loc["A", "pass_hat_k"], _brute_pass_hat_k(a, k), rel_tol=1e-12)
        assert math.isclose(got.loc["B", "pass_hat_k"], _brute_pass_hat_k(b, k), rel_tol=1e-12)
        assert got["n_tasks"].tolist() == [3, 4] and got["trials_per_task"].tolist() == [4, 4]
    # no grouping: all tasks of both workflows pooled (task ids overlap: 0..2 in both, so group by nothing
    # needs distinct ids)
    pooled = pd.concat([_trials_table(a).assign(task_id=lambda d: "a" + d["task_id"].astype(str)),
                        _trials_table(b).assign(task_id=lambda d: "b" + d["task_id"].astype(str))])
    assert math.isclose(pass_hat_k(pooled, 2, by=()).loc[0, "pass_hat_k"], _brute_pass_hat_k(a + b, 2), rel_tol=1e-12)


def test_pass_hat_k_ids_compare_as_text_and_bools_count_as_0_1():
    outcomes = [[True, True, False], [True, True, True]]
    df = _trials_table(outcomes)
    # task 0 written as int in some rows and as "0" text in others is still one task of 3 trials
    mixed = df.astype({"task_id": object})
    mixed.loc[mixed.index[1], "task_id"] = "0"
    mixed.loc[mixed.index[2], "task_id"] = 0.0
    got = pass_hat_k(mixed, 3)
    assert got["n_tasks"].item() == 2 and math.isclose(got["pass_hat_k"].item(), _brute_pass_hat_k(outcomes, 3))
    as_bool = df.assign(score=df["score"].astype(bool))
    assert math.isclose(pass_hat_k(as_bool, 2)["pass_hat_k"].item(), _brute_pass_hat_k(outcomes, 2))


@pytest.mark.parametrize("change, match", [
    (lambda d: pd.concat([d.astype({"task_id": object}), d.iloc[[0]].assign(task_id="0")]), "repeat a .*w/0/0"),
    (lambda d: pd.concat([d, d.iloc[[3]]]), r"repeat a \(workflow, task_id, seed\)"),
    (lambda d: d.assign(score=[np.inf] + [1.0] * (len(d) - 1)), "infinite score in column 'score'"),
    (lambda d: d.assign(score=[-np.inf] + [1.0] * (len(d) - 1)), "infinite score in column 'score'"),
    (lambda d: d.assign(score=[np.nan] + [1.0] * (len(d) - 1)), "NaN score in column 'score'"),
    (lambda d: d.assign(score=["C"] * len(d)), "column 'score' holds text, e.g. 'C'"),
    (lambda d: d.assign(score=["1"] + [1.0] * (len(d) - 1)), "column 'score' holds text"),
    (lambda d: d.assign(seed=[None] + list(d["seed"])[1:]), "column 'seed' is missing"),
    (lambda d: d.drop(columns="seed"), "needs column"),
    (lambda d: d.iloc[:0], "empty"),
])
def test_pass_hat_k_refuses_bad_tables(change, match):
    df = _trials_table([[True, False, True], [True, True, True]])
    with pytest.raises((ValueError, KeyError), match=match):
        pass_hat_k(change(df), 1)


@pytest.mark.parametrize("kwargs, match", [
    ({"k": True}, "k must be a positive integer"), ({"k": 0}, "k must be a positive integer"),
    ({"k": 2.0}, "k must be a positive integer"), ({"k": "2"}, "k must be a positive integer"),
    ({"k": 1, "success": float("nan")}, "success must be a finite number"),
    ({"k": 1, "success": float("inf")}, "success must be a finite number"),
    ({"k": 1, "success": True}, "success must be a finite number"),
])
def test_pass_hat_k_refuses_bad_parameters(kwargs, match):
    df = _trials_table([[True, False, True], [True, True, True]])
    with pytest.raises(ValueError, match=match):
        pass_hat_k(df, **kwargs)
    assert pass_hat_k(df, np.int64(1))["pass_hat_k"].item() == pytest.approx(_brute_pass_hat_k([[1, 0, 1], [1, 1, 1]], 1))


# ------------------------------------------------------------------ the fixture corpus
# Small logs written by tests/data/inspect_logs/make_fixtures.py with the installed
# inspect_ai and its mock model; each expected table below is written from that script
# (what the mock model answered and the usage it reported), not from our output.
CORPUS = Path(__file__).resolve().parent / "data" / "inspect_logs"


def _header_json(path: Path) -> dict:
    """The log's header read with zipfile/json, not with Inspect's reader."""
    if path.suffix == ".eval":
        with zipfile.ZipFile(path) as z:
            return json.loads(z.read("header.json"))
    return json.loads(path.read_text())


def _expected_scored_epochs():
    """scored_epochs: 3 samples x 2 epochs; wrong only on sample 2, epoch 2; per call input
    10 + id, output 2, cache read 4, cache write 1, reasoning 3, total input + 7."""
    return pd.DataFrame([
        {"task_id": str(i), "seed": e, "score": 0.0 if (i, e) == (2, 2) else 1.0, "input_tokens": 10 + i,
         "output_tokens": 2, "total_tokens": 17 + i, "cache_read_tokens": 4, "cache_write_tokens": 1,
         "reasoning_tokens": 3, "error": "", "limit": "", "retries": 0, "flagged": False}
        for i in range(3) for e in (1, 2)])


def _compare(df, expected):
    got = df[list(expected.columns)].reset_index(drop=True)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)


@pytest.mark.parametrize("name", ["scored_epochs.eval", "scored_epochs.json", "old_no_sample_ids.json",
                                  "no_summary_usage.eval"])
def test_corpus_scored_logs_import_with_tokens_ids_and_config(name):
    path = CORPUS / name
    df = from_inspect_log(path)
    assert list(df.columns) == list(INSPECT_COLUMNS)
    _compare(df, _expected_scored_epochs())
    header = _header_json(path)
    assert set(df["run_id"]) == {header["eval"]["run_id"]} and set(df["eval_id"]) == {header["eval"]["eval_id"]}
    assert df["task_args"].nunique() == 1 and json.loads(df["task_args"].iloc[0]) == {"variant": "a", "n": 3}
    assert json.loads(df["model_generate_config"].iloc[0]) == {"seed": 7, "temperature": 0.5}
    assert (df["log"] == name).all() and (df["model"] == "mockllm/model").all()


def test_corpus_fixtures_are_what_they_stand_for():
    # the edited copies really lack what they claim to lack
    assert "sample_ids" not in _header_json(CORPUS / "old_no_sample_ids.json")["eval"]["dataset"]
    with zipfile.ZipFile(CORPUS / "no_summary_usage.eval") as z:
        summaries = json.loads(z.read("summaries.json"))
        assert summaries and not any("model_usage" in s for s in summaries)
        assert all(json.loads(z.read(n)).get("model_usage") for n in z.namelist() if n.startswith("samples/"))
    assert _header_json(CORPUS / "cancelled.eval")["status"] == "cancelled"
    assert _header_json(CORPUS / "status_error.eval")["status"] == "error"
    assert (CORPUS / "empty.eval").stat().st_size == 0
    assert {p.name for p in (CORPUS / "eval_set").iterdir()} >= {"eval-set.json", "logs.json"}
    # small files: the whole corpus stays well under a megabyte
    assert sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file()) < 400_000


def test_corpus_status_error_refused_or_imported_flagged():
    path = CORPUS / "status_error.eval"
    with pytest.raises(LogImportError, match=r"status_error\.eval: the eval's status is 'error'.*allow_incomplete"):
        from_inspect_log(path)
    with pytest.warns(UserWarning, match="status_error.eval: status error"):
        df = from_inspect_log(path, allow_incomplete=True)
    # sample 0 answered right; the model raised on sample 1; Inspect then cancelled sample 2
    assert df["task_id"].tolist() == ["0", "1", "2"] and df["flagged"].tolist() == [False, True, True]
    assert df.loc[0, "score"] == 1.0 and df.loc[1:, "score"].isna().all()
    assert "simulated provider failure on sample 1" in df.loc[1, "error"] and "Cancel" in df.loc[2, "error"]
    assert df.attrs["incomplete"] == [{"log": "status_error.eval", "status": "error", "missing_samples": 0}]
    with pytest.warns(UserWarning):
        zero = from_inspect_log(path, allow_incomplete=True, on_error="zero")
    assert zero["score"].tolist() == [1.0, 0.0, 0.0]


def test_corpus_cancelled_refused_or_imported_with_the_missing_sample_counted():
    path = CORPUS / "cancelled.eval"
    with pytest.raises(LogImportError, match=r"cancelled\.eval: the eval's status is 'cancelled'"):
        from_inspect_log(path)
    with pytest.warns(UserWarning, match="1 dataset sample"):
        df = from_inspect_log(path, allow_incomplete=True)
    _compare(df, _expected_scored_epochs().iloc[:4])  # sample 2 was never written
    assert df.attrs["incomplete"][0]["missing_samples"] == 1


def test_corpus_unscored_log_is_refused():
    with pytest.raises(LogImportError, match=r"unscored\.eval: no sample has a score.*inspect score"):
        from_inspect_log(CORPUS / "unscored.eval")


def test_corpus_dict_scores_are_selected_by_key():
    path = CORPUS / "dict_scores.eval"
    with pytest.raises(LogImportError, match=r"\['dict_scorer.exact', 'dict_scorer.partial'\]; name one"):
        from_inspect_log(path)
    assert from_inspect_log(path, scorer="dict_scorer.exact")["score"].tolist() == [1.0, 0.0]
    assert from_inspect_log(path, scorer="dict_scorer.partial")["score"].tolist() == [1.0, 0.5]
    with pytest.raises(LogImportError, match="gives a dict of scores.*dict_scorer.KEY"):
        from_inspect_log(path, scorer="dict_scorer")
    with pytest.raises(LogImportError, match="no scorer 'dict_scorer.f1'"):
        from_inspect_log(path, scorer="dict_scorer.f1")


def test_corpus_text_scores_mapped_by_the_rule_or_refused():
    # Inspect's CORRECT / INCORRECT / PARTIAL / NOANSWER on samples 0..3
    assert from_inspect_log(CORPUS / "cipn_scores.eval")["score"].tolist() == [1.0, 0.0, 0.5, 0.0]
    path = CORPUS / "text_scores.eval"
    with pytest.raises(LogImportError, match=r"text_scores\.eval: sample 0 epoch 1.*text score 'good' has no mapping"):
        from_inspect_log(path)
    assert from_inspect_log(path, text_scores={"good": 1, "bad": 0})["score"].tolist() == [1.0, 0.0]
    with pytest.raises(ValueError, match=r"text_scores\['good'\] must be a finite number"):
        from_inspect_log(path, text_scores={"good": float("nan")})


def test_corpus_retried_sample_is_counted_and_flagged_but_keeps_its_score():
    df = from_inspect_log(CORPUS / "retries.eval")
    # the model raised on its first call for sample 1 only; the retry answered right
    assert df["retries"].tolist() == [0, 1, 0] and df["flagged"].tolist() == [False, True, False]
    assert df["score"].tolist() == [1.0, 1.0, 1.0] and (df["error"] == "").all()
    assert from_inspect_log(CORPUS / "retries.eval", on_error="zero")["score"].tolist() == [1.0, 1.0, 1.0]


def test_corpus_eval_set_folder_reads_as_its_logs():
    folder = CORPUS / "eval_set"
    with pytest.raises(LogImportError, match="repeat a"):
        from_inspect_log(folder)  # both variants have the same solver and model
    df = from_inspect_log(folder, workflow="task_arg:variant")
    assert sorted(df["workflow"]) == ["a", "a", "b", "b"] and (df["score"] == 1.0).all()
    assert df.groupby("workflow")["task_id"].apply(sorted).tolist() == [["0", "1"], ["0", "1"]]
    assert df["log"].nunique() == 2 and not df["log"].isin(["eval-set.json", "logs.json"]).any()
    assert {json.loads(t)["variant"] for t in df["task_args"]} == {"a", "b"}
    with pytest.raises(LogImportError, match="eval-set manifest"):
        from_inspect_log(folder / "logs.json")


@pytest.mark.parametrize("name, match", [("truncated.eval", r"truncated\.eval: cannot be read as an Inspect log"),
                                         ("empty.eval", r"empty\.eval: the file is empty")])
def test_corpus_damaged_files_are_refused_by_name(name, match):
    with pytest.raises(LogImportError, match=match):
        from_inspect_log(CORPUS / name)


def _cli(args, capsys):
    from agentstudies.book.cli import main

    status = main(["import-log", *map(str, args)])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_import_log_never_prints_a_traceback_on_malformed_input(tmp_path, capsys):
    (tmp_path / "notalog.json").write_text('{"hello": 1}')
    (tmp_path / "text.eval").write_text("not a zip")
    (tmp_path / "nologs").mkdir()
    out = tmp_path / "t.csv"
    cases = [
        ([CORPUS / "truncated.eval"], "truncated.eval"),
        ([CORPUS / "empty.eval"], "empty.eval"),
        ([CORPUS / "status_error.eval"], "status is 'error'"),
        ([CORPUS / "cancelled.eval"], "status is 'cancelled'"),
        ([CORPUS / "unscored.eval"], "no sample has a score"),
        ([CORPUS / "text_scores.eval"], "text score 'good'"),
        ([CORPUS / "dict_scores.eval"], "name one with --scorer NAME"),
        ([CORPUS / "dict_scores.eval", "--scorer", "dict_scorer"], "dict_scorer.KEY"),
        ([tmp_path / "notalog.json"], "notalog.json: cannot be read"),
        ([tmp_path / "text.eval"], "text.eval: cannot be read"),
        ([tmp_path / "nologs"], "holds no .eval or .json"),
        ([tmp_path / "missing.eval"], "does not exist"),
        ([CORPUS / "scored_epochs.eval", "--task-id", "{nope}"], "KeyError"),
        ([CORPUS / "scored_epochs.eval", "--workflow", "metadata:arm"], "no metadata 'arm'"),
    ]
    for args, expected in cases:
        status, printed, err = _cli([*args, "-o", out], capsys)
        assert status == 1, (args, printed, err)
        assert "Traceback" not in err + printed and expected in err, (args, err)
        assert err.startswith("agentstudies import-log: error:") and err.count("\n") == 1, err
    assert not out.exists()


def test_import_log_reads_an_eval_set_folder_and_incomplete_logs_on_request(tmp_path, capsys):
    out = tmp_path / "set.csv"
    status, printed, err = _cli([CORPUS / "eval_set", "--workflow", "task_arg:variant", "-o", out], capsys)
    assert status == 0 and "4 episodes (2 tasks, workflows ['a', 'b'])" in printed
    assert sorted(pd.read_csv(out)["workflow"]) == ["a", "a", "b", "b"]
    status, printed, err = _cli([CORPUS / "status_error.eval", "--allow-incomplete", "-o", out], capsys)
    assert status == 0 and "note: imported incomplete log(s)" in printed and "flagged (error, limit or retry): 2" in printed


def test_corpus_eval_set_with_a_retried_task_uses_the_newest_log():
    folder = CORPUS / "eval_set_retried"
    logs = sorted(p.name for p in folder.glob("*.eval"))
    statuses = {p: _header_json(folder / p)["status"] for p in logs}
    assert len(logs) == 2 and sorted(statuses.values()) == ["error", "success"]
    newest = next(p for p, s in statuses.items() if s == "success")
    with pytest.warns(UserWarning, match="1 older attempt"):
        df = from_inspect_log(folder)
    # the retry reused sample 0 and reran sample 1, whose first attempt had errored
    assert (df["log"] == newest).all() and df["task_id"].tolist() == ["0", "1"] and (df["score"] == 1.0).all()
    assert df["retries"].tolist() == [0, 1] and df["flagged"].tolist() == [False, True]
    assert df.attrs["superseded"] == [{"log": next(p for p in logs if p != newest), "status": "error",
                                       "newest": newest}]
    # the failed attempt alone is still refused by name
    with pytest.raises(LogImportError, match="status is 'error'"):
        from_inspect_log(folder / next(p for p in logs if p != newest))


def test_store_events_off_changes_no_table_only_the_store_diffs(tau2_logs, tmp_path):
    """mock_tau2_eval's default (store_events=False) leaves out Inspect's per-span StoreEvent
    diffs and nothing the converter reads: against a run with Inspect's default logging of
    the same two tasks, the episode tables are equal (run ids aside), every sample keeps its
    final store (the retail database) and its other event types, and only the other log
    holds StoreEvents."""
    from inspect_ai.log import read_eval_log_samples

    on = mock_tau2_eval("transfer", str(tmp_path), limit=2, epochs=1, store_events=True)
    off_path = tau2_logs[1]                          # transfer, N_TASKS tasks, store events off

    import re

    def events(path):  # store keys carry a uuid drawn per run: compared without it
        uuid = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
        return [(s.id, {type(e).__name__ for e in s.events}, sorted(uuid.sub("<uuid>", k) for k in s.store))
                for s in read_eval_log_samples(path)]

    ev_on = {i: (kinds, keys) for i, kinds, keys in events(on)}
    ev_off = {i: (kinds, keys) for i, kinds, keys in events(off_path) if i in ev_on}
    assert len(ev_off) == len(ev_on) == 2
    for i in ev_on:
        assert "StoreEvent" in ev_on[i][0] and "StoreEvent" not in ev_off[i][0]
        assert ev_off[i][0] == ev_on[i][0] - {"StoreEvent"}      # model, tool, score ... events all kept
        assert ev_off[i][1] == ev_on[i][1] and ev_off[i][1]      # the same final store keys, not empty
    drop = ["run_id", "eval_id", "log"]
    t_on = from_inspect_log(on, task_id="retail/{id}", workflow="metadata:workflow").drop(columns=drop)
    t_off = from_inspect_log(off_path, task_id="retail/{id}", workflow="metadata:workflow").drop(columns=drop)
    t_off = t_off[t_off["task_id"].isin(t_on["task_id"])].reset_index(drop=True)
    pd.testing.assert_frame_equal(t_off, t_on.reset_index(drop=True))
