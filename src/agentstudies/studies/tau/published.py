"""The published GPT-4o τ-bench (v1) airline runs: pass^k, verdict flips, replay and audit.

Data: ``data/tau_bench_v1/gpt-4o-airline.json`` -- 200 *real* runs of GPT-4o (tool-calling
agent, LLM user simulator) on the 50 airline tasks of τ-bench v1, four trials per task,
from ``historical_trajectories/`` of sierra-research/tau-bench (MIT, Sierra; see the
folder's README). Nothing here is simulated: the rewards are the ones τ-bench recorded,
and the replay sends the recorded tool calls to the real τ²-bench tools.

- :func:`load_runs` -- the records (checksum verified) and :func:`runs_table`, one row per
  run.
- :func:`pass_hat_k` / :func:`passk_table` -- τ-bench's pass^k (Yao et al., 2024, Eq. 1:
  ``pass^k = E_task[C(c, k) / C(n, k)]``) with task-cluster bootstrap intervals.
- :func:`flip_table` -- per task: the four verdicts, successes, whether the verdict
  changes across trials.
- :func:`match_tau2` -- the τ² airline task of each v1 task (same user id in the τ²
  scenario and identical gold actions; τ² renumbered the tasks).
- :func:`replay_runs` -- each matched run's tool calls replayed through
  :class:`agentstudies.envs.tau.TauEnv`; our DB verdict beside the recorded reward, with
  the cause of every disagreement.
- :func:`confirmed_unrun_writes` -- runs whose user consented to a write and ended the
  conversation before the agent could run it (a stated text rule, listed run by run).
- :func:`real_audit` -- the evaluator audit of :func:`agentstudies.envs.tau.task_audit`
  applied to the real successes.
- :func:`published_findings` -- the chapter's findings (:mod:`agentstudies.findings`).
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from math import comb
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from agentstudies.parallel import keyed_seed
from agentstudies.stats import paired_cluster_bootstrap, percentile_interval

__all__ = [
    "DATA_FILE",
    "STOP_TOKEN",
    "data_path",
    "load_runs",
    "runs_table",
    "pass_hat_k",
    "passk_table",
    "flip_table",
    "match_tau2",
    "replay_runs",
    "replay_run",
    "tool_calls",
    "confirmed_unrun_writes",
    "real_audit",
    "share_interval",
    "passk_drop",
    "published_findings",
]

#: The shipped file, relative to the checkout's ``data/``.
DATA_FILE = "tau_bench_v1/gpt-4o-airline.json"
#: τ-bench v1's user simulator ends a conversation with this token.
STOP_TOKEN = "###STOP###"
#: v1 tools that τ² dropped and that never touch the database (skipped in the replay).
V1_ONLY_NON_DB_TOOLS = ("think",)


def data_path() -> Path:
    """``data/tau_bench_v1/gpt-4o-airline.json`` of the checkout this package lives in."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "data").is_dir():
            return parent / "data" / DATA_FILE
    return Path.cwd() / "data" / DATA_FILE


@lru_cache(maxsize=2)
def _load(path: str) -> tuple[dict, ...]:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"published τ-bench runs not found at {p}")
    raw = p.read_bytes()
    sums = p.with_name(p.name + ".sha256")
    if sums.is_file():
        expected = sums.read_text().split()[0]
        got = hashlib.sha256(raw).hexdigest()
        if got != expected:
            raise ValueError(f"{p}: SHA-256 {got} does not match {sums.name} ({expected})")
    records = json.loads(raw)
    need = {"task_id", "trial", "reward", "info", "traj"}
    for i, r in enumerate(records):
        missing = need - set(r)
        if missing:
            raise KeyError(f"{p}: record {i} lacks field(s) {sorted(missing)}")
    keys = [(r["task_id"], r["trial"]) for r in records]
    if len(set(keys)) != len(keys):
        dup = sorted({k for k in keys if keys.count(k) > 1})[:5]
        raise ValueError(f"{p}: duplicate (task_id, trial) record(s) {dup}")
    return tuple(records)


def load_runs(path: str | Path | None = None) -> list[dict]:
    """The published runs as a list of records (``task_id``, ``trial``, ``reward``, ``info``,
    ``traj``), sorted by task and trial; the file's SHA-256 is checked against the
    ``.sha256`` file beside it.

    Raises
    ------
    FileNotFoundError
        If the file is missing. ValueError: checksum mismatch or duplicate (task, trial).
        KeyError: a record lacks a field.
    """
    recs = _load(str(Path(path) if path is not None else data_path()))
    return sorted(recs, key=lambda r: (int(r["task_id"]), int(r["trial"])))


def tool_calls(record: dict) -> list[dict[str, Any]]:
    """The assistant's tool calls of one run in order, each paired with its recorded result.

    Tool messages follow the assistant message that made the calls, one per call in the
    same order (the call ids repeat across runs, so pairing is by position).

    Returns
    -------
    list of dicts ``{"turn", "name", "arguments" (dict), "recorded" (str or None)}``.

    Raises
    ------
    ValueError
        If a call's ``arguments`` are not a JSON object (names the task, trial and turn).
    """
    out: list[dict[str, Any]] = []
    traj = record["traj"]
    for i, m in enumerate(traj):
        if m.get("role") != "assistant":
            continue
        calls = m.get("tool_calls") or []
        results = []
        j = i + 1
        while j < len(traj) and traj[j].get("role") == "tool" and len(results) < len(calls):
            results.append(traj[j].get("content"))
            j += 1
        for k, tc in enumerate(calls):
            try:
                args = json.loads(tc["function"]["arguments"] or "{}")
            except ValueError as exc:
                raise ValueError(
                    f"task {record['task_id']} trial {record['trial']} turn {i}: tool-call arguments are not JSON: {exc}"
                ) from exc
            if not isinstance(args, dict):
                raise ValueError(f"task {record['task_id']} trial {record['trial']} turn {i}: arguments are not an object")
            out.append({"turn": i, "name": tc["function"]["name"], "arguments": args,
                        "recorded": results[k] if k < len(results) else None})
    return out


def _write(name: str) -> bool:
    from agentstudies.envs.tau import is_write_tool

    return is_write_tool(name)


def runs_table(records: Sequence[dict]) -> pd.DataFrame:
    """One row per run: ``task_id, trial, reward, r_actions, reward_info_missing, user_id,
    n_gold_actions, n_gold_writes, n_tool_calls, n_write_calls, n_messages, user_ended``.

    ``r_actions`` is τ-bench's recorded database check (NaN where ``reward_info`` is
    missing, i.e. the run ended abnormally); ``user_ended`` says the last message is the
    user's and holds :data:`STOP_TOKEN`.

    Raises
    ------
    ValueError
        If a reward is not 0 or 1 (names the task and trial).
    """
    rows = []
    for r in records:
        if r["reward"] not in (0, 1, 0.0, 1.0):
            raise ValueError(f"task {r['task_id']} trial {r['trial']}: reward {r['reward']!r} is not 0/1")
        task = r["info"]["task"]
        ri = r["info"].get("reward_info")
        calls = tool_calls(r)
        last = r["traj"][-1] if r["traj"] else {}
        rows.append({
            "task_id": int(r["task_id"]), "trial": int(r["trial"]), "reward": float(r["reward"]),
            "r_actions": float((ri or {}).get("info", {}).get("r_actions", np.nan)) if ri else np.nan,
            "reward_info_missing": ri is None, "user_id": task["user_id"],
            "n_gold_actions": len(task["actions"]), "n_gold_writes": sum(_write(a["name"]) for a in task["actions"]),
            "n_tool_calls": len(calls), "n_write_calls": sum(_write(c["name"]) for c in calls),
            "n_messages": len(r["traj"]),
            "user_ended": last.get("role") == "user" and STOP_TOKEN in (last.get("content") or ""),
        })
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- pass^k
def pass_hat_k(successes: np.ndarray, n: int, k: int) -> np.ndarray:
    """Per-task unbiased estimate of passing all of ``k`` i.i.d. trials: ``C(c, k) / C(n, k)``.

    Source: τ-bench (Yao et al., 2024), Section 5, Eq. (1); pass^k is the mean of this
    over tasks.

    Parameters
    ----------
    successes : int array (T,), ``c`` successes of each task among ``n`` trials.
    n, k : ints with ``1 <= k <= n``.

    Raises
    ------
    ValueError
        If ``k`` is outside ``1..n`` or a count is outside ``0..n``.
    """
    c = np.asarray(successes)
    if not 1 <= k <= n:
        raise ValueError(f"k must lie in 1..n = 1..{n}; got {k}")
    if c.size and (c.min() < 0 or c.max() > n):
        raise ValueError(f"success counts must lie in 0..{n}; got range {c.min()}..{c.max()}")
    return np.array([comb(int(x), k) / comb(n, k) for x in c.ravel()], dtype=float).reshape(c.shape)


def _counts(runs: pd.DataFrame) -> tuple[pd.Series, int]:
    missing = {"task_id", "trial", "reward"} - set(runs.columns)
    if missing:
        raise KeyError(f"runs table lacks column(s) {sorted(missing)}")
    per = runs.groupby("task_id")["reward"].agg(["sum", "size"])
    sizes = per["size"].unique()
    if len(sizes) != 1:
        bad = per.index[per["size"] != per["size"].max()].tolist()[:5]
        raise ValueError(f"every task needs the same number of trials; tasks {bad} differ ({sorted(sizes)})")
    return per["sum"].astype(int), int(sizes[0])


def passk_table(runs: pd.DataFrame, ks: Sequence[int] = (1, 2, 3, 4), *, n_draws: int = 2000,
                level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """pass^k for each ``k`` with a task-cluster percentile bootstrap interval.

    Tasks are resampled with replacement (all trials of a task travel together); the
    interval is the percentile interval of the replicates.

    Returns
    -------
    DataFrame with columns ``k, estimate, se, ci_low, ci_high, level, n`` (``n`` tasks).

    Raises
    ------
    KeyError / ValueError
        Missing columns, unequal trials per task, ``k`` out of range.
    """
    c, n = _counts(runs)
    vals = np.column_stack([pass_hat_k(c.to_numpy(), n, k) for k in ks])
    T = vals.shape[0]
    reps = paired_cluster_bootstrap(vals, lambda tot: tot / T, n_draws=n_draws,
                                    rng=np.random.default_rng(keyed_seed(seed, "passk")))
    lo, hi = percentile_interval(reps, level)
    return pd.DataFrame({"k": list(ks), "estimate": vals.mean(axis=0), "se": reps.std(axis=0, ddof=1),
                         "ci_low": lo, "ci_high": hi, "level": level, "n": T})


def passk_drop(runs: pd.DataFrame, k: int, *, n_draws: int = 2000, level: float = 0.95,
               seed: int = 0) -> tuple[float, float, float]:
    """pass^1 - pass^k with a task-cluster percentile bootstrap interval
    ``(estimate, ci_low, ci_high)`` (both terms from the same resampled tasks).

    Raises
    ------
    KeyError / ValueError
        As :func:`passk_table`.
    """
    c, n = _counts(runs)
    d = pass_hat_k(c.to_numpy(), n, 1) - pass_hat_k(c.to_numpy(), n, k)
    reps = paired_cluster_bootstrap(d[:, None], lambda tot: tot[:, 0] / d.size, n_draws=n_draws,
                                    rng=np.random.default_rng(keyed_seed(seed, "passk_drop", k)))
    lo, hi = percentile_interval(reps, level)
    return float(d.mean()), float(lo), float(hi)


def flip_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per task: the verdict of every trial (``trial_0`` ...), ``successes``, ``trials``,
    ``flips`` (True if the verdict changes across the trials, i.e. ``0 < successes <
    trials``) and ``changes`` (adjacent trial pairs whose verdicts differ, in trial order).

    Raises
    ------
    KeyError / ValueError
        Missing columns or unequal trials per task.
    """
    _counts(runs)
    wide = runs.pivot(index="task_id", columns="trial", values="reward").sort_index(axis=1)
    out = wide.rename(columns=lambda t: f"trial_{t}").astype(int)
    v = wide.to_numpy()
    out["successes"] = v.sum(axis=1).astype(int)
    out["trials"] = v.shape[1]
    out["flips"] = (out["successes"] > 0) & (out["successes"] < out["trials"])
    out["changes"] = (np.diff(v, axis=1) != 0).sum(axis=1)
    return out.reset_index()


def share_interval(flags: np.ndarray, *, n_draws: int = 2000, level: float = 0.95, seed: int = 0,
                   key: str = "share") -> tuple[float, float, float]:
    """Share of True among per-task flags with a task bootstrap percentile interval
    ``(estimate, ci_low, ci_high)``.

    Raises
    ------
    ValueError
        If ``flags`` is empty.
    """
    f = np.asarray(flags, dtype=float)
    if f.size == 0:
        raise ValueError("share_interval needs at least one task")
    reps = paired_cluster_bootstrap(f[:, None], lambda tot: tot[:, 0] / f.size, n_draws=n_draws,
                                    rng=np.random.default_rng(keyed_seed(seed, key)))
    lo, hi = percentile_interval(reps, level)
    return float(f.mean()), float(lo), float(hi)


# ----------------------------------------------------------------------------- matching
def _gold_key(actions: Sequence[tuple[str, dict]]) -> list[tuple[str, str]]:
    return [(n, json.dumps(a, sort_keys=True)) for n, a in actions]


def match_tau2(records: Sequence[dict]) -> pd.DataFrame:
    """The τ² airline task(s) of every v1 task.

    A τ² task matches when its scenario holds "user id is <user_id>" of the v1 task and
    its gold actions equal the v1 gold actions (same tools, same arguments, same order).
    Where several τ² tasks match (duplicated tasks with identical gold), the lowest τ²
    number is used for the replay; their gold, hence the database verdict, is identical.

    Returns
    -------
    DataFrame, one row per v1 task: ``task_id, user_id, n_gold_actions, same_user``
    (τ² ids with that user), ``candidates`` (ids that also have identical gold, ``;``-joined),
    ``n_candidates``, ``tau2_task`` (``None`` if unmatched), ``communicate_info_equal``
    (the τ² ``communicate_info`` equals the v1 ``outputs``, as sets).
    """
    from agentstudies.envs.tau import load_tasks

    tau2 = load_tasks("airline")
    seen: dict[int, dict] = {}
    for r in records:
        seen.setdefault(int(r["task_id"]), r["info"]["task"])
    rows = []
    for tid, task in sorted(seen.items()):
        uid = task["user_id"]
        same_user = [t for t in tau2 if f"user id is {uid}".lower() in t.scenario.lower()]
        g = _gold_key([(a["name"], a["kwargs"]) for a in task["actions"]])
        cands = [t for t in same_user if _gold_key([(a.name, a.args()) for a in t.actions]) == g]
        cands.sort(key=lambda t: int(t.local_id))
        best = cands[0] if cands else None
        rows.append({
            "task_id": tid, "user_id": uid, "n_gold_actions": len(task["actions"]),
            "same_user": ";".join(t.task_id for t in same_user),
            "candidates": ";".join(t.task_id for t in cands), "n_candidates": len(cands),
            "tau2_task": best.task_id if best else None,
            "communicate_info_equal": (set(best.communicate_info) == set(task.get("outputs") or [])) if best else None,
        })
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- replay
def _is_error(text: str | None) -> bool:
    return isinstance(text, str) and text.startswith("Error")


def replay_run(record: dict, tau2_task: str) -> dict[str, Any]:
    """Replay one run's tool calls, in order, through a fresh :class:`~agentstudies.envs.tau.TauEnv`
    of ``tau2_task``; the assistant's text messages are sent to the user channel too.

    v1-only tools that touch no database (:data:`V1_ONLY_NON_DB_TOOLS`, e.g. ``think``)
    are skipped and counted.

    Returns
    -------
    dict with ``db_match`` (bool, the τ² DB check of the replayed database),
    ``n_replayed``, ``n_skipped``, ``n_failed`` (our failed calls), ``n_failed_recorded``
    (recorded results that start with "Error"), ``n_status_differs`` (calls that failed
    on one side only), ``writes_ran`` (successful write calls in our replay).
    """
    from agentstudies.envs.tau import TauEnv

    env = TauEnv(tau2_task)
    calls = tool_calls(record)
    by_turn: dict[int, list[dict]] = {}
    for c in calls:
        by_turn.setdefault(c["turn"], []).append(c)
    skipped = failed = failed_rec = differs = writes = 0
    for i, m in enumerate(record["traj"]):
        if m.get("role") != "assistant":
            continue
        if m.get("content"):
            env.send_message(m["content"])
        for c in by_turn.get(i, []):
            if c["name"] in V1_ONLY_NON_DB_TOOLS:
                skipped += 1
                continue
            res = env.call(c["name"], c["arguments"])
            rec_err = _is_error(c["recorded"])
            failed += int(not res.ok)
            failed_rec += int(rec_err)
            differs += int((not res.ok) != rec_err)
            writes += int(res.ok and res.irreversible)
    return {"db_match": env.db_matches_gold(), "n_replayed": len(calls) - skipped, "n_skipped": skipped,
            "n_failed": failed, "n_failed_recorded": failed_rec, "n_status_differs": differs, "writes_ran": writes}


def _cause(row: pd.Series) -> str:
    """Why our DB verdict and the recorded reward disagree (or ``""`` when they agree)."""
    if row["agree"]:
        return ""
    if row["reward_info_missing"]:
        return ("recorded run ended abnormally (reward_info is None) and was scored 0; "
                f"the replayed database {'matches' if row['db_match'] else 'does not match'} the gold")
    if row["db_match"] and row["r_actions"] == 1.0:
        return "database matches on both sides; the recorded reward failed τ-bench's output check (required outputs not said)"
    if row["n_status_differs"]:
        return f"{int(row['n_status_differs'])} call(s) failed on one side only: the v1 and τ² databases or tools differ"
    return "database verdicts differ with identical call outcomes: the v1 and τ² gold databases differ"


def replay_runs(records: Sequence[dict], matches: pd.DataFrame) -> pd.DataFrame:
    """Replay every run of a matched task and compare our DB verdict with the recorded one.

    Returns
    -------
    DataFrame, one row per run of a matched task: ``task_id, trial, tau2_task, reward,
    r_actions, reward_info_missing``, the fields of :func:`replay_run`, ``agree`` (our
    ``db_match`` equals ``reward == 1``), ``agree_db`` (equals ``r_actions == 1``; NaN where
    τ-bench recorded no ``r_actions``: runs ended abnormally, and tasks with required
    outputs, whose record keeps only the output check) and
    ``cause`` (text, empty where ``agree``).

    Raises
    ------
    KeyError
        If ``matches`` lacks ``task_id`` / ``tau2_task``.
    """
    missing = {"task_id", "tau2_task"} - set(matches.columns)
    if missing:
        raise KeyError(f"matches table lacks column(s) {sorted(missing)}; pass match_tau2(...)")
    m = matches.set_index("task_id")["tau2_task"]
    runs = runs_table(records).set_index(["task_id", "trial"])
    rows = []
    for r in records:
        t2 = m.get(int(r["task_id"]))
        if t2 is None or (isinstance(t2, float) and np.isnan(t2)):
            continue
        base = runs.loc[(int(r["task_id"]), int(r["trial"]))]
        rows.append({"task_id": int(r["task_id"]), "trial": int(r["trial"]), "tau2_task": t2,
                     "reward": base["reward"], "r_actions": base["r_actions"],
                     "reward_info_missing": bool(base["reward_info_missing"]), **replay_run(r, t2)})
    out = pd.DataFrame(rows)
    out["agree"] = out["db_match"] == (out["reward"] == 1.0)
    # r_actions is absent where the task has required outputs (τ-bench v1 then records the
    # output check only): no recorded database verdict to compare with
    out["agree_db"] = (out["db_match"] == (out["r_actions"] == 1.0)).where(out["r_actions"].notna())
    out["cause"] = out.apply(_cause, axis=1)
    return out


# ----------------------------------------------------------------------------- audit
_CONSENT = re.compile(r"\b(yes|yeah|sure|confirm|confirmed|proceed|go ahead|please do|that works|sounds good)\b", re.I)
_WRITE_WORDS = re.compile(r"\b(cancel\w*|book\w*|modif\w*|chang\w*|updat\w*|upgrad\w*|issu\w*|send|certificate|add\w*|refund\w*)\b", re.I)
_TRANSFER = re.compile(r"transfer", re.I)
_ASKS = re.compile(r"\?|let me know|shall i|would you like|confirm", re.I)


def confirmed_unrun_writes(records: Sequence[dict]) -> pd.DataFrame:
    """Runs in which the user consented to a write and ended the conversation before it ran.

    The rule (stated, textual; every hit is listed so it can be read): the last message is
    the user's and holds :data:`STOP_TOKEN`; it consents (``yes``, ``sure``, ``confirm``,
    ``proceed``, ``go ahead``, ...); the assistant message before it made no tool call,
    asks for an answer (a ``?``, "let me know", "shall I", "would you like", "confirm"),
    proposes a write (cancel, book, change, update, upgrade, issue/send a certificate, add
    bags, refund) and is not an offer to transfer to a human; and the gold holds a write
    tool. The agent's write can then never run: the episode is over (tau2-bench#182
    describes the same user-simulator behaviour).

    Returns
    -------
    DataFrame with ``task_id, trial, reward, gold_writes, agent_said, user_said`` (texts
    cut to 300 characters), one row per hit.
    """
    rows = []
    for r in records:
        tr = r["traj"]
        if len(tr) < 2:
            continue
        last, prev = tr[-1], tr[-2]
        u = last.get("content") or ""
        a = prev.get("content") or ""
        gold_w = [x["name"] for x in r["info"]["task"]["actions"] if _write(x["name"])]
        if (last.get("role") == "user" and STOP_TOKEN in u and _CONSENT.search(u)
                and prev.get("role") == "assistant" and not prev.get("tool_calls")
                and _ASKS.search(a) and _WRITE_WORDS.search(a) and not _TRANSFER.search(a) and gold_w):
            rows.append({"task_id": int(r["task_id"]), "trial": int(r["trial"]), "reward": float(r["reward"]),
                         "gold_writes": ";".join(gold_w), "agent_said": a[-300:], "user_said": u[:300]})
    return pd.DataFrame(rows, columns=["task_id", "trial", "reward", "gold_writes", "agent_said", "user_said"])


def real_audit(replay: pd.DataFrame, audit: pd.DataFrame) -> pd.DataFrame:
    """The evaluator audit on the real successes of matched tasks.

    ``audit`` is :func:`agentstudies.envs.tau.task_audit` of the matched τ² tasks. For each
    flag (a do-nothing agent passes: ``idle_reward == 1``; any degenerate agent passes;
    a gold read fails; a gold write fails) it counts the v1 tasks whose matched τ² task is
    flagged (``tasks_flagged``; two v1 tasks can share one τ² task) and the real successes
    (recorded reward 1) on them.

    Returns
    -------
    DataFrame with ``flag, tasks_flagged, matched_tasks, successes_on_flagged,
    successes`` (all counts of this run's data).

    Raises
    ------
    KeyError
        If a column is missing from either table.
    """
    need_a = {"task_id", "idle_reward", "degenerate_pass", "n_failed_gold_writes", "n_failed_gold_reads"}
    miss = need_a - set(audit.columns)
    if miss:
        raise KeyError(f"audit table lacks column(s) {sorted(miss)}; pass task_audit(...)'s table")
    if not {"tau2_task", "reward", "task_id"} <= set(replay.columns):
        raise KeyError("replay table needs tau2_task, task_id and reward; pass replay_runs(...)")
    a = audit.set_index("task_id")
    flags = {
        "a do-nothing agent passes (idle reward 1)": a["idle_reward"] == 1.0,
        "a degenerate agent passes (idle, idle + info, or no transfer)": a["degenerate_pass"].astype(bool),
        "a gold read fails in the gold replay": a["n_failed_gold_reads"] > 0,
        "a gold write fails in the gold replay": a["n_failed_gold_writes"] > 0,
    }
    succ = replay[replay["reward"] == 1.0]
    rows = []
    for name, flag in flags.items():
        flagged = set(flag.index[flag])
        v1_tasks = replay.loc[replay["tau2_task"].isin(flagged), "task_id"].unique()
        rows.append({"flag": name, "tasks_flagged": len(v1_tasks), "matched_tasks": replay["task_id"].nunique(),
                     "successes_on_flagged": int(succ["tau2_task"].isin(flagged).sum()), "successes": len(succ)})
    return pd.DataFrame(rows)


def published_findings(runs: pd.DataFrame, passk: pd.DataFrame, flips: pd.DataFrame, replay: pd.DataFrame,
                       paper_passk: pd.DataFrame, *, n_draws: int = 2000, level: float = 0.95,
                       seed: int = 0) -> Any:
    """The chapter's findings, one per claim of the τ-bench paper / leaderboard it can test.

    - pass^k falls with k (pass^1 - pass^n, task-bootstrap interval above 0);
    - verdicts of identical trials differ on some tasks (share of flipping tasks above 0);
    - this run's pass^k equals the printed leaderboard to three decimals (exact; the
      leaderboard was computed from these runs, so this checks our arithmetic);
    - our replayed database verdict agrees with the recorded reward on every run that has a
      reward record (exact; abnormal endings are listed as disagreements, not counted here);
    - a workflow contrast is not testable (the runs hold one agent workflow).

    Returns
    -------
    :class:`agentstudies.findings.Findings`.

    Raises
    ------
    KeyError
        A missing column in one of the tables.
    """
    from agentstudies.findings import (
        NONNEGATIVE, PROPORTION, Findings, exact_finding, interval_finding, untestable_finding,
    )

    for name, t, cols in (("passk", passk, {"k", "estimate"}), ("flips", flips, {"flips"}),
                          ("replay", replay, {"agree", "reward_info_missing"}), ("paper_passk", paper_passk, {"k", "pass_k"})):
        if not cols <= set(t.columns):
            raise KeyError(f"{name} table lacks column(s) {sorted(cols - set(t.columns))}")
    n_tasks = int(runs["task_id"].nunique())
    k_max = int(passk["k"].max())
    drop, lo, hi = passk_drop(runs, k_max, n_draws=n_draws, level=level, seed=seed)
    share, s_lo, s_hi = share_interval(flips["flips"].to_numpy(), n_draws=n_draws, level=level, seed=seed, key="flips")
    joined = passk.merge(paper_passk, on="k")
    same = bool((joined["estimate"].round(3) == joined["pass_k"].round(3)).all()) and len(joined) == len(passk)
    printed = ", ".join(f"{v:.3f}" for v in joined["pass_k"])
    recorded = replay[~replay["reward_info_missing"]]
    real = "the τ-bench authors' published trajectories (real model runs), recomputed here"
    rows = [
        interval_finding(f"pass^k falls from k = 1 to k = {k_max}", "pass^k drops as k grows (τ-bench paper, Yao et al., 2024)",
                         drop, lo, hi, n_tasks, paper_side="above", level=level, domain=NONNEGATIVE,
                         quantity=f"pass^1 - pass^{k_max}", basis="arithmetic",
                         why="pass^k <= pass^1 by definition; it is above 0 exactly when some task's trials disagree "
                             "(the next row)"),
        interval_finding("identical trials of a task disagree on some tasks",
                         "agents are inconsistent across trials (τ-bench paper, Yao et al., 2024)", share, s_lo, s_hi, n_tasks,
                         paper_side="above", level=level, quantity="share of tasks whose verdict flips",
                         domain=PROPORTION, basis="measured", why=real),
        exact_finding("pass^k equals the printed leaderboard", f"leaderboard pass^1..{k_max}: {printed}",
                      float(passk["estimate"].iloc[-1]), n_tasks, holds=same,
                      rule="every k equal to three decimals", basis="measured", why=real),
        exact_finding("our replayed DB verdict agrees with every recorded reward",
                      "τ-bench's recorded rewards", float(recorded["agree"].mean()), len(recorded),
                      holds=bool(recorded["agree"].all()),
                      rule="agreement on every replayed run with a reward record", basis="measured", why=real),
        untestable_finding("a workflow changes reliability", "(the τ chapters' workflow contrast)",
                           why="every published run used the same tool-calling agent: one workflow, no contrast",
                           measured=1.0, rule="a contrast needs at least two workflows on the same tasks",
                           basis="measured"),
    ]
    return Findings.build(rows, seed=seed, title="tau_published_runs findings", n_draws=n_draws, level=level)
