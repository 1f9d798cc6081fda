"""Regenerate the small Inspect logs of this folder with the installed inspect_ai (offline).

Run from the repository root: ``.venv/bin/python tests/data/inspect_logs/make_fixtures.py``.
Every log comes from a real ``inspect_ai.eval`` / ``eval_set`` run of a tiny arithmetic
task under the mock model (``mockllm/model``, every output with its ``usage`` set, so
Inspect never reaches the network), except the cases that stand for logs of older or
damaged writers, which are edited copies (said per case below). The expected table of
every case is written by hand in ``tests/test_inspect_log.py`` from the script here.

Cases (file: how it is made -> what the import must do):

- ``scored_epochs.eval`` / ``scored_epochs.json``: 3 samples x 2 epochs, ``match``
  scorer; the model answers right except sample 2 at epoch 2; usage per call
  input 10 + sample id, output 2, cache read 4, cache write 1, reasoning 3, total
  input + 7; task args ``variant="a"``, ``n=3``; temperature 0.5, seed 7 -> 6 rows.
- ``status_error.eval``: Inspect's default ``fail_on_error``: the model raises on sample 1
  -> status ``error`` -> refused unless ``allow_incomplete=True``.
- ``cancelled.eval``: a copy of ``scored_epochs.eval`` whose header says ``cancelled``
  and which lacks sample 2's files (what an interrupted run leaves) -> refused unless
  ``allow_incomplete=True``.
- ``unscored.eval``: ``score=False`` -> refused (no scores), naming ``inspect score``.
- ``dict_scores.eval``: a scorer whose value is ``{"exact": 0 or 1, "partial": 0.5 or 1}``
  -> select ``dict_scorer.exact`` / ``dict_scorer.partial``.
- ``cipn_scores.eval``: a scorer answering ``C``, ``I``, ``P``, ``N`` for samples 0..3.
- ``text_scores.eval``: a scorer answering ``"good"`` / ``"bad"`` -> refused.
- ``retries.eval``: ``retry_on_error=1``; the model raises on its first call for sample 1
  only, which then passes on retry -> ``retries`` 1, flagged.
- ``eval_set/``: ``inspect_ai.eval_set`` of the task with ``variant="a"`` and ``"b"``
  (2 samples, 1 epoch); the folder holds ``eval-set.json`` and ``logs.json``.
- ``eval_set_retried/``: an eval set of one task whose first attempt failed (the model
  raised on sample 1, status ``error``) and was retried (``retry_cleanup=False`` keeps
  the failed log) -> the newest log per task, the older one named in a warning.
- ``old_no_sample_ids.json``: ``scored_epochs.json`` without ``eval.dataset.sample_ids``
  (logs of old Inspect versions).
- ``no_summary_usage.eval``: ``scored_epochs.eval`` whose ``summaries.json`` lacks
  ``model_usage`` (as written by Inspect 0.3.42-0.3.58); the full samples keep it.
- ``truncated.eval``: the first 600 bytes of ``scored_epochs.eval``; ``empty.eval``: 0 bytes.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _usage(sample_id: int):
    from inspect_ai.model import ModelUsage

    n_in = 10 + sample_id
    return ModelUsage(input_tokens=n_in, output_tokens=2, total_tokens=n_in + 2 + 4 + 1,
                      input_tokens_cache_read=4, input_tokens_cache_write=1, reasoning_tokens=3)


def _sample_id(input) -> int:
    return int(input[-1].text.split()[2])


def _answer(sample_id: int, wrong: bool = False):
    from inspect_ai.model import ModelOutput

    out = ModelOutput.from_content("mockllm/model", str(2 * sample_id + int(wrong)))
    out.usage = _usage(sample_id)
    return out


def _task(n: int, scorer=None, name: str = "arith", variant: str = "a"):
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    return Task(dataset=[Sample(id=i, input=f"What is {i} + {i}?", target=str(2 * i)) for i in range(n)],
                solver=generate(), scorer=scorer if scorer is not None else match(), name=name)


def _eval(task, log_dir: Path, **kwargs):
    from inspect_ai import eval as inspect_eval

    kwargs.setdefault("display", "none")
    kwargs.setdefault("log_realtime", False)
    kwargs.setdefault("max_samples", 1)
    return inspect_eval(task, model="mockllm/model", log_dir=str(log_dir), **kwargs)[0]


def _keep(log, name: str) -> Path:
    dst = HERE / name
    shutil.copyfile(log.location, dst)
    return dst


_ARITH: list = []


def _arith_task():
    """The arithmetic task as an Inspect ``@task`` (so ``task_args`` are recorded)."""
    if not _ARITH:
        from inspect_ai import task as task_decorator

        @task_decorator(name="arith")
        def arith(variant: str = "a", n: int = 2):
            return _task(n)

        _ARITH.append(arith)
    return _ARITH[0]


def scored_epochs(tmp: Path) -> None:
    seen: dict[int, int] = {}  # the epoch is not shown to the model: count calls per sample

    def outputs(input, tools, tool_choice, config):
        sid = _sample_id(input)
        seen[sid] = seen.get(sid, 0) + 1
        return _answer(sid, wrong=(sid == 2 and seen[sid] == 2))

    for fmt in ("eval", "json"):
        seen.clear()
        log = _eval(_arith_task()(variant="a", n=3), tmp / fmt, model_args={"custom_outputs": outputs}, epochs=2,
                    temperature=0.5, seed=7, log_format=fmt)
        _keep(log, f"scored_epochs.{fmt}")


def status_error(tmp: Path) -> None:
    def outputs(input, tools, tool_choice, config):
        sid = _sample_id(input)
        if sid == 1:
            raise RuntimeError("simulated provider failure on sample 1")
        return _answer(sid)

    log = _eval(_task(3), tmp / "err", model_args={"custom_outputs": outputs})
    assert log.status == "error", log.status
    _keep(log, "status_error.eval")


def unscored(tmp: Path) -> None:
    log = _eval(_task(2), tmp / "unscored", model_args={"custom_outputs": lambda i, *a: _answer(_sample_id(i))},
                score=False)
    _keep(log, "unscored.eval")


def _value_scorer(name: str, values):
    from inspect_ai.scorer import Score, mean, scorer

    @scorer(metrics=[mean()] if name != "dict_scorer" else {"*": [mean()]}, name=name)
    def make():
        async def score(state, target):
            return Score(value=values(int(state.sample_id)))

        return score

    return make()


def value_scorers(tmp: Path) -> None:
    answer = {"custom_outputs": lambda i, *a: _answer(_sample_id(i))}
    dict_scorer = _value_scorer("dict_scorer", lambda i: {"exact": int(i == 0), "partial": 1.0 if i == 0 else 0.5})
    _keep(_eval(_task(2, dict_scorer), tmp / "dict", model_args=answer), "dict_scores.eval")
    cipn = _value_scorer("cipn_scorer", lambda i: "CIPN"[i])
    _keep(_eval(_task(4, cipn), tmp / "cipn", model_args=answer), "cipn_scores.eval")
    text = _value_scorer("text_scorer", lambda i: ("good", "bad")[i % 2])
    _keep(_eval(_task(2, text), tmp / "text", model_args=answer), "text_scores.eval")


def retries(tmp: Path) -> None:
    failed = set()

    def outputs(input, tools, tool_choice, config):
        sid = _sample_id(input)
        if sid == 1 and sid not in failed:
            failed.add(sid)
            raise RuntimeError("simulated transient failure on sample 1")
        return _answer(sid)

    log = _eval(_task(3), tmp / "retry", model_args={"custom_outputs": outputs}, retry_on_error=1)
    assert log.status == "success", log.status
    _keep(log, "retries.eval")


def eval_set(tmp: Path) -> None:
    from inspect_ai import eval_set as inspect_eval_set

    arith = _arith_task()
    folder = HERE / "eval_set"
    shutil.rmtree(folder, ignore_errors=True)
    ok, logs = inspect_eval_set([arith(variant="a"), arith(variant="b")], log_dir=str(tmp / "set"),
                                model="mockllm/model",
                                model_args={"custom_outputs": lambda i, *a: _answer(_sample_id(i))},
                                display="none", log_realtime=False)
    assert ok, [l.status for l in logs]
    shutil.copytree(tmp / "set", folder, ignore=shutil.ignore_patterns(".*"))


def eval_set_retried(tmp: Path) -> None:
    from inspect_ai import eval_set as inspect_eval_set

    failed: list[bool] = []

    def outputs(input, tools, tool_choice, config):
        if _sample_id(input) == 1 and not failed:
            failed.append(True)
            raise RuntimeError("simulated failure in the first attempt")
        return _answer(_sample_id(input))

    folder = HERE / "eval_set_retried"
    shutil.rmtree(folder, ignore_errors=True)
    ok, logs = inspect_eval_set([_arith_task()(variant="a")], log_dir=str(tmp / "retried"), model="mockllm/model",
                                model_args={"custom_outputs": outputs}, display="none", log_realtime=False,
                                retry_attempts=1, retry_cleanup=False, retry_wait=0)
    assert ok and failed
    shutil.copytree(tmp / "retried", folder, ignore=shutil.ignore_patterns(".*"))


def edited_copies() -> None:
    # an old .json log: no sample_ids in the dataset spec
    log = json.loads((HERE / "scored_epochs.json").read_text())
    log["eval"]["dataset"].pop("sample_ids", None)
    (HERE / "old_no_sample_ids.json").write_text(json.dumps(log))
    src = HERE / "scored_epochs.eval"
    # summaries without usage (Inspect 0.3.42-0.3.58); the full samples keep theirs
    _rewrite_zip(src, HERE / "no_summary_usage.eval",
                 {"summaries.json": lambda b: json.dumps([{k: v for k, v in s.items() if k != "model_usage"}
                                                          for s in json.loads(b)]).encode()},
                 drop=lambda n: n.startswith("_journal/summaries/"))
    # an interrupted run: status cancelled, sample 2 never written
    def cancel(b: bytes) -> bytes:
        h = json.loads(b)
        h["status"] = "cancelled"
        h.pop("results", None)
        return json.dumps(h).encode()

    _rewrite_zip(src, HERE / "cancelled.eval", {"header.json": cancel},
                 drop=lambda n: n.startswith("samples/2_") or n.startswith("_journal/summaries/"),
                 summaries_without=2)
    (HERE / "truncated.eval").write_bytes(src.read_bytes()[:600])
    (HERE / "empty.eval").write_bytes(b"")


def _rewrite_zip(src: Path, dst: Path, edits, drop=lambda n: False, summaries_without=None) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            if drop(item.filename):
                continue
            data = zin.read(item.filename)
            if item.filename in edits:
                data = edits[item.filename](data)
            if summaries_without is not None and item.filename == "summaries.json":
                data = json.dumps([s for s in json.loads(data) if s["id"] != summaries_without]).encode()
            zout.writestr(item.filename, data)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        scored_epochs(t)
        status_error(t)
        unscored(t)
        value_scorers(t)
        retries(t)
        eval_set(t)
        eval_set_retried(t)
    edited_copies()
    for p in sorted(HERE.rglob("*")):
        if p.is_file() and p.suffix in (".eval", ".json"):
            print(f"{p.relative_to(HERE)}: {p.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
