"""Episode tables from Inspect eval logs, and τ-bench's pass^k.

Most readers already have Inspect (``inspect_ai``) logs of their agents. This module turns
them into the plain episode table the methods take (:mod:`agentstudies.sasst`, and with
the right columns :mod:`agentstudies.handoff` / :mod:`agentstudies.recovery`): one row
per sample x epoch.

======================  ============================================================
column                  from the log
======================  ============================================================
``task_id``             the sample id (``task_id=`` maps it, e.g. ``"retail/{id}"``)
``seed``                the epoch (1, 2, ...): the replicate of the task
``workflow``            ``workflow=``: a constant, ``"task_arg:NAME"``,
                        ``"metadata:NAME"`` (the eval's metadata), ``"solver"`` or
                        ``"model"`` (default: the solver, else the model)
``score``               the named scorer's value as a float (Inspect's
                        ``value_to_float``: ``C`` = 1, ``I`` = 0, ``P`` = 0.5, numbers
                        and booleans as they are); NaN when the sample has no score
``model``, ``eval_task``, ``log``   which model, which task, which file
``input_tokens``, ``output_tokens``, ``total_tokens``   summed over the sample's models
``error``, ``limit``    the sample's error message / the limit it hit ("" if none)
``flagged``             True if ``error`` or ``limit`` is set
======================  ============================================================

Samples with an error or a limit are **kept and flagged**, never dropped silently:
``on_error="keep"`` (default) leaves their score as the log has it (NaN when unscored,
which the methods then refuse, naming the task), ``"zero"`` scores them 0 (a failure
counts as a failure), ``"exclude"`` removes them and *says so* (a warning with the count;
``df.attrs["excluded"]`` lists them) — excluding errored samples can inflate a pass rate
to 100 %.

Big logs are streamed one sample at a time (``read_eval_log_samples``).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pandas as pd

__all__ = ["INSPECT_COLUMNS", "from_inspect_log", "pass_hat_k", "LogImportError"]

#: Columns of the table returned by :func:`from_inspect_log`, in order.
INSPECT_COLUMNS: tuple[str, ...] = (
    "task_id", "seed", "workflow", "score", "model", "eval_task", "log",
    "input_tokens", "output_tokens", "total_tokens", "error", "limit", "flagged",
)

ON_ERROR = ("keep", "zero", "exclude")


class LogImportError(ValueError):
    """An Inspect log cannot become an episode table (the message says why)."""


def _paths(paths: str | Path | Iterable[str | Path]) -> list[Path]:
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    out: list[Path] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            found = sorted([*p.glob("*.eval"), *p.glob("*.json")])
            if not found:
                raise LogImportError(f"folder {p} holds no .eval or .json Inspect log")
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            raise FileNotFoundError(f"Inspect log {p} does not exist")
    if not out:
        raise LogImportError("no Inspect log given")
    return out


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


def _scorer_of(scorer: str | None, header: Any, path: Path) -> str:
    names = [s.name for s in (header.results.scores if header.results else [])]
    if not names:
        names = sorted({s.scorer for s in (header.eval.scorers or [])} | {s.name for s in (header.eval.scorers or [])})
    if scorer is None:
        if len(names) != 1:
            raise LogImportError(f"{path.name} has scorers {names}; name one with scorer=")
        return names[0]
    if scorer not in names:
        raise LogImportError(f"{path.name} has no scorer {scorer!r}; its scorers are {names}")
    return scorer


def _task_id_of(task_id: str | Callable[[Any], str] | None, sample_id: Any) -> str:
    if task_id is None:
        return str(sample_id)
    if callable(task_id):
        return str(task_id(sample_id))
    return task_id.format(id=sample_id)


def _sample_row(sample: Any, scorer: str, to_float: Callable[[Any], float]) -> dict[str, Any]:
    score = sample.scores.get(scorer) if sample.scores else None
    value = float("nan")
    if score is not None and score.value is not None:
        value = float(to_float(score.value))
    usage = sample.model_usage or {}
    tokens = {k: sum(int(getattr(u, k) or 0) for u in usage.values())
              for k in ("input_tokens", "output_tokens", "total_tokens")}
    error = "" if sample.error is None else str(getattr(sample.error, "message", sample.error))
    limit = "" if sample.limit is None else str(getattr(sample.limit, "type", sample.limit))
    return {"sample_id": sample.id, "seed": int(sample.epoch), "score": value, **tokens,
            "error": error, "limit": limit, "flagged": bool(error or limit)}


def _log_samples(path: Path) -> list[Any]:
    """The samples of one log, as Inspect's sample summaries where they are complete.

    A ``.eval`` log stores a summary of every sample (id, epoch, scores, model usage,
    error, limit: all that :func:`_sample_row` reads) beside the full samples with
    their event streams, which take about a second each to parse for a tau2 sample.
    The summaries are used when each one has its sample file in the archive and every
    sample file has a summary; otherwise (a ``.json`` log, an older layout, a damaged
    archive) the full samples are read, so a sample missing from the log is missing
    from the table either way.
    """
    import zipfile

    from inspect_ai.log import read_eval_log_sample_summaries, read_eval_log_samples

    if path.suffix == ".eval":
        try:
            summaries = read_eval_log_sample_summaries(str(path))
            with zipfile.ZipFile(path) as z:
                files = {n for n in z.namelist() if n.startswith("samples/")}
        except Exception:  # noqa: BLE001 - any reader problem: fall back to the full samples
            summaries = None
        if summaries is not None:
            named = {f"samples/{s.id}_epoch_{s.epoch}.json" for s in summaries}
            if named == files and len(named) == len(summaries):
                return list(summaries)
    return list(read_eval_log_samples(str(path), all_samples_required=False))


def from_inspect_log(
    paths: str | Path | Iterable[str | Path],
    *,
    scorer: str | None = None,
    workflow: str | Callable[[Any], str] | None = None,
    task_id: str | Callable[[Any], str] | None = None,
    task: str | None = None,
    on_error: str = "keep",
    require_all_epochs: bool = True,
) -> pd.DataFrame:
    """Convert Inspect eval logs (``.eval`` or ``.json``) to an episode table.

    Parameters
    ----------
    paths : a log file, a folder of logs, or a list of either. Each log is one workflow
        (one run of one task); several logs of the same task give the paired comparison.
    scorer : the scorer whose value is ``score`` (required when a log has several).
    workflow : how to name each log's workflow (see the module docstring).
    task_id : map a sample id to a task id: a format string with ``{id}`` or a callable.
    task : keep only logs of this Inspect task (logs of several tasks otherwise raise).
    on_error : ``"keep"`` | ``"zero"`` | ``"exclude"`` for samples with an error or limit.
    require_all_epochs : every sample must have every epoch the log was run with.

    Returns
    -------
    DataFrame with :data:`INSPECT_COLUMNS`, one row per (log, sample, epoch), ordered by
    log, task and epoch. ``attrs["excluded"]`` lists excluded rows (``on_error="exclude"``).

    Raises
    ------
    FileNotFoundError
        A path does not exist.
    LogImportError
        No log; a log without the named scorer (or several scorers and none named);
        logs of different tasks (give ``task=``); a missing epoch; the same
        (task, epoch, workflow) twice; a workflow source the log lacks; a log that did
        not finish (status not ``success``/``error``) or holds no samples.
    ValueError
        Unknown ``on_error``.
    """
    from inspect_ai.log import read_eval_log
    from inspect_ai.scorer import value_to_float

    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
    to_float = value_to_float()
    files = _paths(paths)
    headers = {p: read_eval_log(str(p), header_only=True) for p in files}
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
    frames = []
    for path in files:
        header = headers[path]
        if header.status not in ("success", "error"):
            raise LogImportError(f"{path.name}: the eval's status is {header.status!r}; it did not finish")
        name = _scorer_of(scorer, header, path)
        wf = _workflow_of(workflow, header, path)
        rows = [_sample_row(s, name, to_float) for s in _log_samples(path)]
        if not rows:
            raise LogImportError(f"{path.name} holds no samples")
        df = pd.DataFrame(rows)
        _check_epochs(df, int(header.eval.config.epochs or 1), path, require_all_epochs)
        df.insert(0, "task_id", [_task_id_of(task_id, s) for s in df.pop("sample_id")])
        df.insert(2, "workflow", wf)
        df["model"], df["eval_task"], df["log"] = str(header.eval.model), header.eval.task, path.name
        frames.append(df)
    out = pd.concat(frames, ignore_index=True)
    dup = out.duplicated(["task_id", "seed", "workflow"], keep=False)
    if dup.any():
        first = out.loc[dup, ["task_id", "seed", "workflow", "log"]].head(4).to_dict("records")
        raise LogImportError(f"{int(dup.sum())} rows repeat a (task, epoch, workflow), e.g. {first}; "
                             "give each log its own workflow name (workflow=...)")
    out = out.sort_values(["log", "task_id", "seed"], kind="stable").reset_index(drop=True)[list(INSPECT_COLUMNS)]
    return _apply_on_error(out, on_error)


def _check_epochs(df: pd.DataFrame, epochs: int, path: Path, require: bool) -> None:
    if not require:
        return
    have = df.groupby("sample_id")["seed"].apply(lambda s: sorted(s))
    expected = list(range(1, epochs + 1))
    short = {str(k): v for k, v in have.items() if v != expected}
    if short:
        some = dict(list(short.items())[:5])
        raise LogImportError(f"{path.name}: the eval ran {epochs} epoch(s) but {len(short)} sample(s) lack some "
                             f"(sample: epochs present) {some}; pass require_all_epochs=False to accept")


def _apply_on_error(df: pd.DataFrame, on_error: str) -> pd.DataFrame:
    flagged = df["flagged"]
    if on_error == "zero":
        df.loc[flagged, "score"] = 0.0
    elif on_error == "exclude" and flagged.any():
        excluded = df.loc[flagged, ["task_id", "seed", "workflow", "error", "limit"]]
        warnings.warn(f"excluded {len(excluded)} of {len(df)} samples with an error or limit "
                      f"(on_error='exclude'); rates computed without them are conditional on no error",
                      stacklevel=3)
        df = df.loc[~flagged].reset_index(drop=True)
        df.attrs["excluded"] = excluded.to_dict("records")
    return df


def _id_text(value: Any) -> str:
    """One text form per id: ``5``, ``5.0``, ``np.int64(5)`` and ``"5"`` are all ``"5"``."""
    if isinstance(value, (bool, np.bool_)):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _trial_scores(col: pd.Series, keys: pd.Series) -> np.ndarray:
    """The ``score`` column as floats: booleans 0/1; text, NaN and +/-inf refused with rows."""
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
    are refused.

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
        row, a text, NaN or infinite score, or a task with fewer than k trials.
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
