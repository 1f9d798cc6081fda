"""Episode tables from Inspect eval logs, and τ-bench's pass^k.

Most readers already have Inspect (``inspect_ai``) logs of their agents. This module turns
them into the plain episode table the methods take (:mod:`agentstudies.sasst`, and with
the right columns :mod:`agentstudies.handoff` / :mod:`agentstudies.recovery`): one row
per sample x epoch.

=========================  =========================================================
column                     from the log
=========================  =========================================================
``task_id``                the sample id (``task_id=`` maps it, e.g. ``"retail/{id}"``)
``seed``                   the epoch (1, 2, ...): the replicate of the task
``workflow``               ``workflow=``: a constant, ``"task_arg:NAME"``,
                           ``"metadata:NAME"`` (the eval's metadata), ``"solver"`` or
                           ``"model"`` (default: the solver, else the model)
``score``                  the selected score as a float by :data:`SCORE_RULE`; NaN
                           when the sample has no score
``model``, ``eval_task``, ``log``   which model, which task, which file
``input_tokens``           summed over the sample's models, as Inspect counts them:
                           tokens at the full input rate, **without** cache reads and
                           writes (the whole prompt is ``input_tokens +
                           cache_read_tokens + cache_write_tokens``)
``output_tokens``,         summed over the sample's models; ``total_tokens`` is the
``total_tokens``           provider's total
``cache_read_tokens``,     Inspect's ``input_tokens_cache_read`` / ``_cache_write``
``cache_write_tokens``     (0 when the provider reports none)
``reasoning_tokens``       Inspect's ``reasoning_tokens`` (0 when none reported)
``error``, ``limit``       the sample's error message / the limit it hit ("" if none)
``retries``                how many times the sample errored and was retried
                           (``retry_on_error``) before the attempt that is recorded
``flagged``                True if ``error`` or ``limit`` is set or ``retries > 0``
``run_id``, ``eval_id``    Inspect's ids of the run and of the eval (one log)
``task_args``,             the eval's task arguments and the model's generation config
``model_generate_config``  (JSON text, unset fields left out): two prompt variants or
                           decoding settings of one model stay apart
=========================  =========================================================

Samples with an error or a limit are **kept and flagged**, never dropped silently:
``on_error="keep"`` (default) leaves their score as the log has it (NaN when unscored,
which the methods then refuse, naming the task), ``"zero"`` scores them 0 (a failure
counts as a failure), ``"exclude"`` removes them and *says so* (a warning with the count;
``df.attrs["excluded"]`` lists them) — excluding errored samples can inflate a pass rate
to 100 %. A sample that errored and then passed on retry keeps its final score and is
flagged (``retries``); ``on_error`` does not touch it.

What is refused, with a :class:`LogImportError` naming the file and the reason: a file
that is not a readable log (empty, truncated, not an Inspect log); a log whose status is
not ``success`` (``error``: the eval stopped on a sample error, Inspect's default
``fail_on_error``; ``cancelled``; ``started``) unless ``allow_incomplete=True``, which
imports the samples present, warns, and lists the log in ``attrs["incomplete"]``; a
log that was run without scoring; a scorer that is not named when there are several, or
a scorer with dict values named without its key (select ``"scorer.key"``); a text score
outside :data:`SCORE_RULE`; a missing epoch or sample. An eval-set folder (written by
``inspect eval-set``) reads as a folder of logs: its ``eval-set.json`` and ``logs.json``
are manifests, not logs. Old ``.json`` logs without ``sample_ids`` are read whole. Where
a ``.eval`` log's sample summaries lack the model usage (Inspect 0.3.42–0.3.58 wrote
none) the full samples are read, so tokens are never a silent 0.

Big logs are streamed one sample at a time (``read_eval_log_samples``).
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.results import _id_text  # one text form per id, shared by every method and importer

__all__ = ["INSPECT_COLUMNS", "SCORE_RULE", "from_inspect_log", "pass_hat_k", "LogImportError"]

#: Columns of the table returned by :func:`from_inspect_log`, in order.
INSPECT_COLUMNS: tuple[str, ...] = (
    "task_id", "seed", "workflow", "score", "model", "eval_task", "log",
    "input_tokens", "output_tokens", "total_tokens", "cache_read_tokens", "cache_write_tokens",
    "reasoning_tokens", "error", "limit", "retries", "flagged", "run_id", "eval_id", "task_args",
    "model_generate_config",
)

#: How a score value becomes ``score``: Inspect's CORRECT / INCORRECT / PARTIAL /
#: NOANSWER constants (``inspect_ai.scorer``) map to 1 / 0 / 0.5 / 0 (as Inspect's own
#: ``value_to_float`` does); booleans are 1 / 0; finite numbers are kept. Any other
#: text, a list, or an infinite number is refused (``text_scores=`` adds mappings), and
#: ``None`` is a missing score (NaN). A dict value is a set of scores: select one key.
SCORE_RULE: Mapping[str, float] = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}

ON_ERROR = ("keep", "zero", "exclude")

#: Files of an eval-set folder that are manifests, not logs.
EVAL_SET_MANIFESTS = ("eval-set.json", "logs.json")

_TOKENS = {"input_tokens": "input_tokens", "output_tokens": "output_tokens", "total_tokens": "total_tokens",
           "cache_read_tokens": "input_tokens_cache_read", "cache_write_tokens": "input_tokens_cache_write",
           "reasoning_tokens": "reasoning_tokens"}


class LogImportError(ValueError):
    """An Inspect log cannot become an episode table (the message names the file and says why)."""


def _paths(paths: str | Path | Iterable[str | Path]) -> list[Path]:
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    out: list[Path] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            found = sorted(f for f in [*p.glob("*.eval"), *p.glob("*.json")] if f.name not in EVAL_SET_MANIFESTS)
            if not found:
                raise LogImportError(f"folder {p} holds no .eval or .json Inspect log")
            out.extend(found)
        elif p.is_file():
            if p.name in EVAL_SET_MANIFESTS:
                raise LogImportError(f"{p} is an eval-set manifest, not a log; give its folder ({p.parent})")
            out.append(p)
        else:
            raise FileNotFoundError(f"Inspect log {p} does not exist")
    if not out:
        raise LogImportError("no Inspect log given")
    return out


def _read_header(path: Path) -> Any:
    """The log's header; any reader failure becomes a :class:`LogImportError` naming the file."""
    from inspect_ai.log import read_eval_log

    if path.stat().st_size == 0:
        raise LogImportError(f"{path}: the file is empty; it is not an Inspect log")
    try:
        return read_eval_log(str(path), header_only=True)
    except Exception as exc:  # noqa: BLE001 - zip, JSON and schema errors all mean "not a readable log"
        raise LogImportError(f"{path}: cannot be read as an Inspect log (truncated or not a log?): "
                             f"{type(exc).__name__}: {exc}") from None


def _workflow_of(spec: Any, header: Any, path: Path) -> str:
    ev = header.eval
    if callable(spec):
        return str(spec(header))
    if spec is None:
        return str(ev.solver or ev.model)
    if not isinstance(spec, str):
        raise TypeError(f"workflow must be a string or a callable(header) -> str, got {type(spec).__name__}")
    if spec == "solver":
        if not ev.solver:
            raise LogImportError(f"{path.name}: workflow='solver' but the log records no solver; "
                                 "use workflow='task_arg:NAME', 'metadata:NAME' or a constant")
        return str(ev.solver)
    if spec == "model":
        return str(ev.model)
    for prefix, source in (("task_arg:", ev.task_args or {}), ("metadata:", ev.metadata or {})):
        if spec.startswith(prefix):
            key = spec[len(prefix):]
            if key not in source:
                raise LogImportError(f"{path.name}: no {prefix[:-1].replace('_', ' ')} {key!r}; "
                                     f"the log has {sorted(source)}")
            return str(source[key])
    return spec


def _score_names(header: Any) -> list[str]:
    """Selectable score names: each scorer, and ``scorer.key`` for a scorer whose
    results are per key (dict-valued scores)."""
    names: list[str] = []
    for s in (header.results.scores if header.results else []):
        scorer = getattr(s, "scorer", None) or s.name
        name = s.name if s.name == scorer else f"{scorer}.{s.name}"
        if name not in names:
            names.append(name)
    for s in header.eval.scorers or []:
        if s.name not in names and not any(n.startswith(s.name + ".") for n in names):
            names.append(s.name)
    return names


def _scorer_of(scorer: str | None, header: Any, path: Path) -> str:
    names = _score_names(header)
    if not names:
        raise LogImportError(f"{path.name}: the log records no scorer (run without scoring); "
                             f"score it first with `inspect score {path.name}`")
    if scorer is None:
        if len(names) != 1:
            raise LogImportError(f"{path.name} has scores {names}; name one with scorer=")
        return names[0]
    if scorer not in names and not any(n.startswith(scorer + ".") for n in names):
        raise LogImportError(f"{path.name} has no scorer {scorer!r}; its scores are {names}")
    return scorer


def _task_id_of(task_id: str | Callable[[Any], str] | None, sample_id: Any) -> str:
    if task_id is None:
        return str(sample_id)
    if callable(task_id):
        return str(task_id(sample_id))
    return task_id.format(id=sample_id)


def _score_float(value: Any, rule: Mapping[str, float], where: str) -> float:
    """One score value as a float by :data:`SCORE_RULE` (``rule``); refusals name ``where``."""
    if value is None:
        return float("nan")
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        if math.isinf(float(value)):
            raise LogImportError(f"{where}: infinite score {value!r}")
        return float(value)
    if isinstance(value, str):
        if value in rule:
            return float(rule[value])
        raise LogImportError(f"{where}: text score {value!r} has no mapping; mapped are {dict(rule)} "
                             "(Inspect's CORRECT/INCORRECT/PARTIAL/NOANSWER); pass text_scores={...} to map others")
    raise LogImportError(f"{where}: score of type {type(value).__name__} ({str(value)[:60]}) is not a number")


def _pick_score(scores: Mapping[str, Any] | None, name: str, rule: Mapping[str, float], where: str) -> float:
    """The value of score ``name`` (``scorer`` or ``scorer.key``) in a sample's scores."""
    scores = scores or {}
    key = None
    score = scores.get(name)
    if score is None and "." in name:
        head, key = name.split(".", 1)
        score = scores.get(head)
    if score is None:
        return float("nan")
    value = score.value
    if isinstance(value, Mapping):
        if key is None:
            raise LogImportError(f"{where}: scorer {name!r} gives a dict of scores {sorted(value)}; "
                                 f"select one as scorer='{name}.KEY'")
        if key not in value:
            raise LogImportError(f"{where}: scorer {name.split('.', 1)[0]!r} has no key {key!r}; "
                                 f"its keys are {sorted(value)}")
        value = value[key]
    elif key is not None:
        raise LogImportError(f"{where}: scorer {name.split('.', 1)[0]!r} gives a single value, not a dict; "
                             f"select it as scorer='{name.split('.', 1)[0]}'")
    return _score_float(value, rule, f"{where}, scorer {name!r}")


def _sample_row(sample: Any, scorer: str, rule: Mapping[str, float], where: str = "") -> dict[str, Any]:
    """One row (before the log's columns) from a full sample or a sample summary."""
    here = f"{where}sample {sample.id!r} epoch {sample.epoch}"
    value = _pick_score(sample.scores, scorer, rule, here)
    usage = sample.model_usage or {}
    tokens = {col: sum(int(getattr(u, attr, 0) or 0) for u in usage.values()) for col, attr in _TOKENS.items()}
    error = "" if sample.error is None else str(getattr(sample.error, "message", sample.error))
    limit = "" if sample.limit is None else str(getattr(sample.limit, "type", sample.limit))
    retries = getattr(sample, "retries", None)
    if retries is None:
        retries = len(getattr(sample, "error_retries", None) or [])
    return {"sample_id": sample.id, "seed": int(sample.epoch), "score": value, **tokens,
            "error": error, "limit": limit, "retries": int(retries), "flagged": bool(error or limit or retries)}


def _log_samples(path: Path) -> list[Any]:
    """The samples of one log, as Inspect's sample summaries where they are complete.

    A ``.eval`` log stores a summary of every sample (id, epoch, scores, model usage,
    error, limit, retries: all that :func:`_sample_row` reads) beside the full samples
    with their event streams, which take about a second each to parse for a tau2
    sample. The summaries are used when each one has its sample file in the archive and
    every sample file has a summary; otherwise the full samples are read, so a sample
    missing from the log is missing from the table either way. A summary without model
    usage (Inspect 0.3.42–0.3.58 wrote none; an errored sample may have none) is
    replaced by its full sample, which carries the usage where there was any. A ``.json`` log
    is read whole (old ones lack the ``sample_ids`` that the streaming reader needs).
    """
    import zipfile

    from inspect_ai.log import (read_eval_log, read_eval_log_sample, read_eval_log_sample_summaries,
                                read_eval_log_samples)

    try:
        if path.suffix != ".eval":
            return list(read_eval_log(str(path)).samples or [])
        try:
            summaries = read_eval_log_sample_summaries(str(path))
            with zipfile.ZipFile(path) as z:
                files = {n for n in z.namelist() if n.startswith("samples/")}
        except Exception:  # noqa: BLE001 - any reader problem: fall back to the full samples
            summaries = None
        if summaries is not None:
            named = {f"samples/{s.id}_epoch_{s.epoch}.json" for s in summaries}
            if named == files and len(named) == len(summaries):
                return [s if s.model_usage else read_eval_log_sample(str(path), id=s.id, epoch=s.epoch)
                        for s in summaries]
        return list(read_eval_log_samples(str(path), all_samples_required=False))
    except Exception as exc:  # noqa: BLE001 - a damaged log names itself
        raise LogImportError(f"{path}: its samples cannot be read: {type(exc).__name__}: {exc}") from None


def _spec_json(value: Any) -> str:
    """JSON text of a task-args dict or a GenerateConfig, unset (None) fields left out."""
    if value is None:
        return "{}"
    if hasattr(value, "model_dump"):
        value = value.model_dump(exclude_none=True)
    return json.dumps({k: v for k, v in dict(value).items() if v is not None}, sort_keys=True, default=str)


def from_inspect_log(
    paths: str | Path | Iterable[str | Path],
    *,
    scorer: str | None = None,
    workflow: str | Callable[[Any], str] | None = None,
    task_id: str | Callable[[Any], str] | None = None,
    task: str | None = None,
    on_error: str = "keep",
    require_all_epochs: bool = True,
    allow_incomplete: bool = False,
    text_scores: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Convert Inspect eval logs (``.eval`` or ``.json``) to an episode table.

    Parameters
    ----------
    paths : a log file, a folder of logs (an eval-set folder too), or a list of either.
        Each log is one workflow (one run of one task); several logs of the same task
        give the paired comparison.
    scorer : the score that becomes ``score``: a scorer name, or ``"scorer.key"`` for a
        scorer whose value is a dict (required when a log has several).
    workflow : how to name each log's workflow (see the module docstring).
    task_id : map a sample id to a task id: a format string with ``{id}`` or a callable.
    task : keep only logs of this Inspect task (logs of several tasks otherwise raise).
    on_error : ``"keep"`` | ``"zero"`` | ``"exclude"`` for samples with an error or limit.
    require_all_epochs : every sample must have every epoch the log was run with, and
        every sample of the log's dataset must be present.
    allow_incomplete : import logs whose status is not ``success`` (``error``,
        ``cancelled``, ``started``): the samples present, with a warning; such logs are
        listed in ``attrs["incomplete"]`` and their missing samples are not an error.
    text_scores : extra text-to-number mappings on top of :data:`SCORE_RULE`.

    Returns
    -------
    DataFrame with :data:`INSPECT_COLUMNS`, one row per (log, sample, epoch), ordered by
    log, task and epoch. ``attrs["excluded"]`` lists excluded rows (``on_error="exclude"``).

    Raises
    ------
    FileNotFoundError
        A path does not exist.
    LogImportError
        Naming the file: not a readable log (empty, truncated); no log; an unscored log;
        a log without the named score (or several and none named); a dict score named
        without its key; a text score outside the rule; logs of different tasks (give
        ``task=``); a missing epoch or sample; the same (task, epoch, workflow) twice; a
        workflow source the log lacks; a log whose status is not ``success`` (unless
        ``allow_incomplete``) or that holds no samples.
    ValueError
        Unknown ``on_error``; a ``text_scores`` value that is not a finite number.
    """
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
    rule = _score_rule(text_scores)
    files = _paths(paths)
    headers = {p: _read_header(p) for p in files}
    files, superseded = _latest_of_eval_sets(files, headers)
    tasks = {p: h.eval.task for p, h in headers.items()}
    if task is not None:
        files = [p for p in files if tasks[p] == task or tasks[p].split("/")[-1] == task]
        if not files:
            raise LogImportError(f"no log of task {task!r}; the logs hold {sorted(set(tasks.values()))}")
    elif len(set(tasks.values())) > 1:
        raise LogImportError(
            "logs of different tasks cannot form one episode table: "
            + "; ".join(f"{p.name}: {t}" for p, t in tasks.items()) + " — select one with task="
        )
    frames, incomplete = [], []
    for path in files:
        df, note = _log_frame(path, headers[path], scorer, workflow, task_id, rule, require_all_epochs,
                              allow_incomplete)
        frames.append(df)
        if note:
            incomplete.append(note)
    out = pd.concat(frames, ignore_index=True)
    dup = out.duplicated(["task_id", "seed", "workflow"], keep=False)
    if dup.any():
        first = out.loc[dup, ["task_id", "seed", "workflow", "log"]].head(4).to_dict("records")
        raise LogImportError(f"{int(dup.sum())} rows repeat a (task, epoch, workflow), e.g. {first}; "
                             "give each log its own workflow name (workflow=...)")
    out = out.sort_values(["log", "task_id", "seed"], kind="stable").reset_index(drop=True)[list(INSPECT_COLUMNS)]
    out = _apply_on_error(out, on_error)
    if superseded:
        warnings.warn(f"eval-set folder: {len(superseded)} older attempt(s) of a task skipped for its newest log "
                      f"(as Inspect's eval_set does): " + "; ".join(f"{s['log']} -> {s['newest']}" for s in superseded),
                      stacklevel=2)
        out.attrs["superseded"] = superseded
    if incomplete:
        warnings.warn("imported incomplete log(s) (allow_incomplete=True): "
                      + "; ".join(f"{n['log']}: status {n['status']}, {n['missing_samples']} dataset sample(s) "
                                  "absent" for n in incomplete), stacklevel=2)
        out.attrs["incomplete"] = incomplete
    return out


def _latest_of_eval_sets(files: list[Path], headers: Mapping[Path, Any]) -> tuple[list[Path], list[dict[str, str]]]:
    """In an eval-set folder (one holding ``eval-set.json``), keep each task's newest log.

    ``inspect eval-set`` retries a failed task in a new log seeded from the old one;
    with ``retry_cleanup=False`` the older attempts stay in the folder. Like Inspect
    (``latest_completed_task_eval_logs``), the newest log of each ``eval.task_id`` is
    the task's (newest by the time it completed, then was created, then by file name,
    which starts with the creation time); the others are
    returned as ``{"log", "status", "newest"}`` so the caller can say so.
    """
    groups: dict[tuple[Path, str], list[Path]] = {}
    for p in files:
        if (p.parent / "eval-set.json").is_file() and headers[p].eval.task_id:
            groups.setdefault((p.parent, headers[p].eval.task_id), []).append(p)
    dropped: list[dict[str, str]] = []
    for group in groups.values():
        if len(group) < 2:
            continue

        def when(p: Path) -> tuple[str, str, str]:
            h = headers[p]
            return str(getattr(h.stats, "completed_at", "") or ""), str(h.eval.created or ""), p.name

        newest = max(group, key=when)
        dropped += [{"log": p.name, "status": str(headers[p].status), "newest": newest.name} for p in group if p != newest]
    names = {d["log"] for d in dropped}
    return [p for p in files if p.name not in names or not (p.parent / "eval-set.json").is_file()], dropped


def _score_rule(text_scores: Mapping[str, float] | None) -> dict[str, float]:
    rule = dict(SCORE_RULE)
    for key, value in dict(text_scores or {}).items():
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)) \
                or not math.isfinite(float(value)):
            raise ValueError(f"text_scores[{key!r}] must be a finite number, got {value!r}")
        rule[str(key)] = float(value)
    return rule


def _log_frame(path: Path, header: Any, scorer: str | None, workflow: Any, task_id: Any,
               rule: Mapping[str, float], require_all_epochs: bool,
               allow_incomplete: bool) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    """One log's rows (all columns) and, for an accepted incomplete log, its note."""
    status = header.status
    if status != "success" and not allow_incomplete:
        why = f" ({header.error.message.strip()[:200]})" if getattr(header, "error", None) else ""
        raise LogImportError(f"{path}: the eval's status is {status!r}{why}; it did not finish, so samples may be "
                             "missing or cut short. Pass allow_incomplete=True (--allow-incomplete) to import "
                             "the samples it holds")
    name = _scorer_of(scorer, header, path)
    wf = _workflow_of(workflow, header, path)
    samples = _log_samples(path)
    if not samples:
        raise LogImportError(f"{path}: holds no samples (status {status!r})")
    if not any(s.scores for s in samples) and status == "success":
        raise LogImportError(f"{path}: no sample has a score (the eval ran without scoring); "
                             f"score it first with `inspect score {path.name}`")
    rows = [_sample_row(s, name, rule, f"{path.name}: ") for s in samples]
    df = pd.DataFrame(rows)
    ds = header.eval.dataset
    expected_ids = list(getattr(ds, "sample_ids", None) or [])
    present = set(df["sample_id"].astype(str))
    missing = [i for i in expected_ids if str(i) not in present]
    note = None
    if status != "success":
        note = {"log": path.name, "status": status, "missing_samples": len(missing)}
    elif require_all_epochs:
        _check_epochs(df, int(header.eval.config.epochs or 1), path, missing)
    df.insert(0, "task_id", [_task_id_of(task_id, s) for s in df.pop("sample_id")])
    df.insert(2, "workflow", wf)
    df["model"], df["eval_task"], df["log"] = str(header.eval.model), header.eval.task, path.name
    df["run_id"], df["eval_id"] = str(header.eval.run_id or ""), str(header.eval.eval_id or "")
    df["task_args"] = _spec_json(header.eval.task_args)
    df["model_generate_config"] = _spec_json(header.eval.model_generate_config)
    return df, note


def _check_epochs(df: pd.DataFrame, epochs: int, path: Path, missing: Sequence[Any] = ()) -> None:
    if missing:
        raise LogImportError(f"{path.name}: {len(missing)} sample(s) of the eval's dataset are absent, e.g. "
                             f"{list(missing)[:5]}; pass require_all_epochs=False to accept")
    have = df.groupby("sample_id")["seed"].apply(lambda s: sorted(s))
    expected = list(range(1, epochs + 1))
    short = {str(k): v for k, v in have.items() if v != expected}
    if short:
        some = dict(list(short.items())[:5])
        raise LogImportError(f"{path.name}: the eval ran {epochs} epoch(s) but {len(short)} sample(s) lack some "
                             f"(sample: epochs present) {some}; pass require_all_epochs=False to accept")


def _apply_on_error(df: pd.DataFrame, on_error: str) -> pd.DataFrame:
    failed = (df["error"] != "") | (df["limit"] != "")
    if on_error == "zero":
        df.loc[failed, "score"] = 0.0
    elif on_error == "exclude" and failed.any():
        excluded = df.loc[failed, ["task_id", "seed", "workflow", "error", "limit"]]
        warnings.warn(f"excluded {len(excluded)} of {len(df)} samples with an error or limit "
                      f"(on_error='exclude'); rates computed without them are conditional on no error",
                      stacklevel=3)
        df = df.loc[~failed].reset_index(drop=True)
        df.attrs["excluded"] = excluded.to_dict("records")
    return df


def _trial_scores(col: pd.Series, keys: pd.Series) -> np.ndarray:
    """The ``score`` column as floats: booleans 0/1; text, NaN, +/-inf and values outside
    [0, 1] refused with rows."""
    if pd.api.types.is_bool_dtype(col):
        return col.to_numpy(dtype=float)
    if not pd.api.types.is_numeric_dtype(col):
        text = np.array([isinstance(v, (str, bytes)) for v in col])
        if text.any():
            raise ValueError(
                f"pass_hat_k: column 'score' holds text, e.g. {col[text].iloc[0]!r} for {keys[text].iloc[0]}; "
                "map it to numbers first (from_inspect_log maps Inspect's C/I/P/N to 1/0/0.5/0)")
        try:
            col = col.map(lambda v: float(v) if isinstance(v, (bool, np.bool_)) else v).astype(float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"pass_hat_k: column 'score' holds values that are not numbers ({exc})") from None
    values = col.to_numpy(dtype=float)
    for name, bad in (("NaN", np.isnan(values)), ("infinite", np.isinf(values))):
        if bad.any():
            raise ValueError(f"pass_hat_k: {name} score in column 'score' for {int(bad.sum())} trial(s) "
                             f"(task/seed) {keys[bad].head(5).tolist()}; decide how errored samples count first")
    out = (values < 0) | (values > 1)
    if out.any():
        raise ValueError(f"pass_hat_k: score outside [0, 1] in column 'score' for {int(out.sum())} trial(s) "
                         f"(task/seed) {keys[out].head(5).tolist()}, e.g. {values[out][0]:g}; a score is 0/1 success "
                         "or a share of credit in [0, 1]: rescale or map the scores first")
    return values


def pass_hat_k(episodes: pd.DataFrame, k: int, *, by: Sequence[str] = ("workflow",),
               success: float = 1.0) -> pd.DataFrame:
    """τ-bench's pass^k: the chance that all of k i.i.d. trials of a task succeed.

    Convention: the unbiased draw-without-replacement estimator of Yao et al. (2024,
    τ-bench, §5), per task ``C(c, k) / C(n, k)`` with ``c`` successes in ``n`` trials,
    averaged over tasks — the one Inspect's ``pass_k`` reducer uses. (The other
    published convention, the plug-in ``(c / n) ** k``, is biased upward for k > 1 and
    is not used.) A trial succeeds when ``score >= success``.

    Input is checked at the edge: task ids are compared as text (``5``, ``5.0`` and
    ``"5"`` are one task), a repeated (``by``, task, seed) row is an error rather than a
    further trial, booleans in ``score`` read as 0/1, and text, NaN or infinite scores
    are refused, and so are scores outside [0, 1] (7 or -1 would count as successes or
    failures of another scale).

    Parameters
    ----------
    episodes : rows task_id, seed, score (+ the ``by`` columns); one row per trial.
    k : trials that must all succeed (a positive ``int``, not a bool; at most the
        trials of every task).
    by : columns whose groups each get their own pass^k (default: the workflow).
    success : finite threshold; a trial with ``score >= success`` succeeds.

    Returns
    -------
    DataFrame: the ``by`` columns, ``k``, ``pass_hat_k`` (fraction in [0, 1]),
    ``n_tasks``, ``trials_per_task`` (minimum over tasks).

    Raises
    ------
    ValueError
        k not a positive int (or a bool), ``success`` not a finite number, an empty
        table, a missing task / seed / ``by`` value, a duplicate (``by``, task, seed)
        row, a text, NaN or infinite score, a score outside [0, 1], or a task with fewer
        than k trials.
    KeyError
        If a column is missing.
    """
    if not isinstance(episodes, pd.DataFrame):
        raise TypeError(f"pass_hat_k: episodes must be a pandas DataFrame, got {type(episodes).__name__}")
    by = [by] if isinstance(by, str) else list(by)
    need = ["task_id", "seed", "score", *by]
    missing = [c for c in need if c not in episodes.columns]
    if missing:
        raise KeyError(f"pass_hat_k needs column(s) {missing}; the table has {list(episodes.columns)}")
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"pass_hat_k: k must be a positive integer (not a bool), got {k!r}")
    k = int(k)
    if isinstance(success, (bool, np.bool_)) or not isinstance(success, (int, float, np.number)) \
            or not math.isfinite(float(success)):
        raise ValueError(f"pass_hat_k: success must be a finite number (the score threshold), got {success!r}")
    if len(episodes) == 0:
        raise ValueError("pass_hat_k: the episode table is empty")
    for col in ["task_id", "seed", *by]:
        na = episodes[col].isna()
        if na.any():
            raise ValueError(f"pass_hat_k: column {col!r} is missing (NaN/None) in {int(na.sum())} row(s): "
                             f"rows {episodes.index[na][:5].tolist()}")
    ep = pd.DataFrame({"task_id": episodes["task_id"].map(_id_text), "seed": episodes["seed"].map(_id_text),
                       **{c: episodes[c] for c in by}})
    keys = ep["task_id"] + "/" + ep["seed"]
    scores = _trial_scores(episodes["score"].reset_index(drop=True), keys.reset_index(drop=True))
    ep = ep.reset_index(drop=True).assign(ok=scores >= float(success))
    dup = ep.duplicated([*by, "task_id", "seed"], keep=False)
    if dup.any():
        rows = ep.loc[dup, [*by, "task_id", "seed"]].astype(str).agg("/".join, axis=1).unique()[:5].tolist()
        raise ValueError(f"pass_hat_k: {int(dup.sum())} rows repeat a ({', '.join([*by, 'task_id', 'seed'])}), "
                         f"e.g. {rows}; each trial must appear once (task ids are compared as text)")
    g = ep.groupby([*by, "task_id"])["ok"].agg(["sum", "size"])
    short = g[g["size"] < k]
    if len(short):
        raise ValueError(f"pass_hat_k: {len(short)} task(s) have fewer than k={k} trials, e.g. "
                         f"{short.index[:3].tolist()}")
    g["p"] = [math.comb(int(c), k) / math.comb(int(n), k) for c, n in zip(g["sum"], g["size"])]
    if not by:
        return pd.DataFrame({"k": [k], "pass_hat_k": [g["p"].mean()], "n_tasks": [len(g)],
                             "trials_per_task": [int(g["size"].min())]})
    out = g.groupby(by).agg(pass_hat_k=("p", "mean"), n_tasks=("p", "size"), trials_per_task=("size", "min"))
    out.insert(0, "k", k)
    return out.reset_index()
