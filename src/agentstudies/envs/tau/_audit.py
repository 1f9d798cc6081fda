"""Evaluator audit of τ²-bench retail and airline: what does the benchmark's reward miss?

τ²-bench (Barres et al., 2025; the successor of τ-bench, Yao et al., 2024) declares per
task a ``reward_basis`` (``DB``, ``COMMUNICATE``, ``ACTION``, ``NL_ASSERTION``,
``ENV_ASSERTION``). Every retail and airline task shipped in ``inspect_evals`` has the
basis ``DB + COMMUNICATE``, and the package's ``retail_scorer`` / ``airline_scorer``
compute exactly those two checks (see :mod:`agentstudies.envs.tau._env`): the action
check (``evaluate_required_actions``: every gold action called with the same arguments)
and the natural-language assertions never count. This module measures what that allows.

- :func:`reward_basis` -- the task's declared basis, e.g. ``"DB+COMMUNICATE"``.
- :func:`action_match` -- the τ²-bench action check (``find_unused_actions`` of
  ``inspect_evals.tau2.common.scorer``) on a list of tool calls, reported even where it is
  not part of the basis.
- :func:`reward_components` -- one episode's ``reward_basis``, ``db_match``,
  ``communicate_match``, ``action_match`` and the reward the package gives.
- :func:`task_audit` -- one row per task: the reward of degenerate agents (idle; idle but
  sending the required information; gold minus each single action; gold without the
  transfer to a human), the gold writes and gold reads that fail during the gold replay
  itself, and the natural-language assertions the scorer ignores.
- :func:`flagged_task_ids` -- the task ids of an audit table grouped by the reason they
  are flagged (for a chapter's collapsed listing).

Every degenerate agent here is *scripted* (it replays the task's gold actions, or none,
through the real tools); nothing is simulated about the tools, the databases or the
reward, which are the package's.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from agentstudies.envs.tau._data import TauTask, get_task, load_tasks
from agentstudies.envs.tau._env import TauEnv

__all__ = [
    "AUDIT_COLUMNS",
    "DEGENERATE_AGENTS",
    "reward_basis",
    "action_match",
    "reward_components",
    "task_audit",
    "degenerate_task_ids",
    "flagged_task_ids",
    "FLAG_REASONS",
]

#: The degenerate agents of :func:`task_audit` (column ``<agent>_reward``).
DEGENERATE_AGENTS: tuple[str, ...] = ("idle", "idle_info", "no_transfer")

#: Columns of :func:`task_audit`, in order.
AUDIT_COLUMNS: tuple[str, ...] = (
    "task_id",
    "domain",
    "split",
    "reward_basis",
    "action_in_basis",
    "n_actions",
    "n_writes",
    "n_communicate_info",
    "transfer_expected",
    "gold_reward",
    "gold_action_match",
    "idle_reward",
    "idle_info_reward",
    "no_transfer_reward",
    "no_transfer_action_match",
    "single_drops",
    "single_drop_passes",
    "single_drop_pass_actions",
    "write_drop_passes",
    "failed_gold_writes",
    "n_failed_gold_writes",
    "failed_gold_reads",
    "n_failed_gold_reads",
    "gold_db_unchanged",
    "n_nl_assertions",
    "nl_assertions_ignored",
    "degenerate_pass",
)


def _audit_schema() -> object:
    """pandera schema of :func:`task_audit`'s table (types, 0/1 rewards, unique task ids)."""
    import pandera.pandas as pa

    reward = pa.Column(float, pa.Check.isin([0.0, 1.0]))
    count = pa.Column(int, pa.Check.ge(0))
    return pa.DataFrameSchema(
        {
            "task_id": pa.Column(str, unique=True), "domain": pa.Column(str), "split": pa.Column(str),
            "reward_basis": pa.Column(str), "action_in_basis": pa.Column(bool),
            "n_actions": count, "n_writes": count, "n_communicate_info": count,
            "transfer_expected": pa.Column(bool), "gold_reward": reward, "gold_action_match": pa.Column(bool),
            "idle_reward": reward, "idle_info_reward": reward,
            "no_transfer_reward": pa.Column(float, pa.Check.isin([0.0, 1.0]), nullable=True),
            "single_drops": count, "single_drop_passes": count, "write_drop_passes": count,
            "n_failed_gold_writes": count, "n_failed_gold_reads": count, "gold_db_unchanged": pa.Column(bool), "n_nl_assertions": count,
            "nl_assertions_ignored": pa.Column(bool), "degenerate_pass": pa.Column(bool),
        },
        strict=False,
    )


def reward_basis(task: TauTask | str) -> str:
    """The task's declared ``evaluation_criteria.reward_basis``, ``"+"``-joined (``"DB+COMMUNICATE"``)."""
    task = get_task(task) if isinstance(task, str) else task
    crit = task.raw.evaluation_criteria
    basis = crit.reward_basis if crit is not None else []
    return "+".join(getattr(b, "value", str(b)) for b in basis)


def _deep_equal_unordered(a: Any, b: Any) -> bool:
    from inspect_evals.tau2.utils import deep_equal_unordered

    return bool(deep_equal_unordered(a, b))


def action_match(task: TauTask | str, calls: Iterable[tuple[str, Mapping[str, Any]]]) -> bool:
    """τ²-bench's action check: was every gold action of the assistant called?

    Same rule as ``find_unused_actions`` in ``inspect_evals.tau2.common.scorer``: a gold
    action is used when some call has its tool name (or a name ending in ``_<name>``)
    and arguments equal to the gold ones (order-insensitive deep equality; only the keys
    in ``compare_args`` if the action lists them, any call if that list is empty; any
    call to ``transfer_to_human_agents``). ``calls`` are ``(name, arguments)`` pairs --
    every call the agent made, failed ones included, as the package reads them from the
    agent's messages. Gold actions requested by the user (``requestor == "user"``) are
    outside an agent's calls and are skipped.
    """
    task = get_task(task) if isinstance(task, str) else task
    crit = task.raw.evaluation_criteria
    gold = [a for a in ((crit.actions if crit else None) or []) if a.requestor == "assistant"]
    calls = [(str(n), dict(a or {})) for n, a in calls]

    def used(action: Any) -> bool:
        for name, args in calls:
            if name != action.name and not name.endswith(f"_{action.name}"):
                continue
            if action.name == "transfer_to_human_agents":
                return True
            if action.compare_args is not None:
                if not action.compare_args:
                    return True
                actual = {k: args.get(k) for k in action.compare_args}
                expected = {k: action.arguments.get(k) for k in action.compare_args}
                if _deep_equal_unordered(actual, expected):
                    return True
            elif _deep_equal_unordered(args, action.arguments):
                return True
        return False

    return all(used(a) for a in gold)


def reward_components(env: TauEnv) -> dict[str, Any]:
    """The reward of a finished episode and its components.

    Returns
    -------
    dict with ``reward_basis`` (str, the task's declared basis), ``db_match`` (bool),
    ``communicate_match`` (bool), ``action_match`` (bool, τ²-bench's action check on the
    calls that reached a tool, computed even when ``ACTION`` is not in the basis) and
    ``reward`` (float; the package's retail/airline rule: 1.0 iff ``db_match`` and
    ``communicate_match``).
    """
    calls = [(e["name"], e["arguments"]) for e in env.transcript if e["kind"] == "tool_call"]
    db_ok = env.db_matches_gold()
    info_ok = not env.missing_info()
    return {
        "reward_basis": reward_basis(env.task),
        "db_match": db_ok,
        "communicate_match": info_ok,
        "action_match": action_match(env.task, calls),
        "reward": float(db_ok and info_ok),
    }


def _episode(task: TauTask, actions: Sequence[int] | None, info: bool) -> TauEnv:
    """Scripted episode: call the gold actions with the given indices (``None``: all),
    in order, then send one message with every ``communicate_info`` string if ``info``."""
    env = TauEnv(task.task_id)
    keep = range(len(task.actions)) if actions is None else actions
    for i in keep:
        action = task.actions[i]
        env.call(action.name, action.args())
    if info and task.communicate_info:
        env.send_message("Here is the information you asked for: " + "; ".join(task.communicate_info))
    return env


def _failed_gold_calls(task: TauTask) -> tuple[list[str], list[str]]:
    """Gold writes and gold reads that fail when the gold actions are replayed in order
    through the real tools, as ``"<index>:<tool>"`` lists ``(writes, reads)``.

    A failing write raises ``ToolError`` in the package's own gold replay, which skips it
    silently, so the gold database never gets its change. A failing read (for example a
    product id that is not in the database, as in retail 2-4, tau2-bench#89) does not
    change the gold database, but the gold trajectory it belongs to cannot be followed by
    an agent. ``transfer_to_human_agents`` cannot fail and is skipped; ``calculate`` counts
    as a read.
    """
    env = TauEnv(task.task_id)
    writes, reads = [], []
    for i, action in enumerate(task.actions):
        if action.name == "transfer_to_human_agents":
            continue
        result = env.call(action.name, action.args())
        if not result.ok:
            (writes if action.irreversible else reads).append(f"{i}:{action.name}")
    return writes, reads


def _audit_row(task: TauTask) -> dict[str, Any]:
    n = len(task.actions)
    gold = _episode(task, None, True)
    gold_c = reward_components(gold)
    idle = reward_components(_episode(task, [], False))
    idle_info = reward_components(_episode(task, [], True))
    transfer = [i for i, a in enumerate(task.actions) if a.name == "transfer_to_human_agents"]
    if transfer:
        no_tr = reward_components(_episode(task, [i for i in range(n) if i not in transfer], True))
        no_transfer_reward, no_transfer_action = no_tr["reward"], no_tr["action_match"]
    else:
        no_transfer_reward, no_transfer_action = float("nan"), None
    passes, write_passes = [], 0
    for i in range(n):
        r = reward_components(_episode(task, [j for j in range(n) if j != i], True))["reward"]
        if r == 1.0:
            passes.append(f"{i}:{task.actions[i].name}")
            write_passes += int(task.actions[i].irreversible)
    failed, failed_reads = _failed_gold_calls(task)
    nl = len(task.nl_assertions)
    basis = reward_basis(task)
    return {
        "task_id": task.task_id,
        "domain": task.domain,
        "split": task.split,
        "reward_basis": basis,
        "action_in_basis": "ACTION" in basis.split("+"),
        "n_actions": n,
        "n_writes": len(task.write_actions),
        "n_communicate_info": len(task.communicate_info),
        "transfer_expected": bool(transfer),
        "gold_reward": gold_c["reward"],
        "gold_action_match": gold_c["action_match"],
        "idle_reward": idle["reward"],
        "idle_info_reward": idle_info["reward"],
        "no_transfer_reward": no_transfer_reward,
        "no_transfer_action_match": no_transfer_action,
        "single_drops": n,
        "single_drop_passes": len(passes),
        "single_drop_pass_actions": ";".join(passes),
        "write_drop_passes": write_passes,
        "failed_gold_writes": ";".join(failed),
        "n_failed_gold_writes": len(failed),
        "failed_gold_reads": ";".join(failed_reads),
        "n_failed_gold_reads": len(failed_reads),
        "gold_db_unchanged": _db_unchanged(task),
        "n_nl_assertions": nl,
        # the retail/airline scorers evaluate DB + COMMUNICATE only, whatever the basis
        "nl_assertions_ignored": nl > 0,
        "degenerate_pass": bool(
            idle["reward"] == 1.0 or idle_info["reward"] == 1.0 or no_transfer_reward == 1.0
        ),
    }


def _db_unchanged(task: TauTask) -> bool:
    """True if the gold replay leaves the database as it was (the DB check then passes
    for an agent that writes nothing)."""
    env = TauEnv(task.task_id)  # an untouched episode: the initial database
    return env.db_matches_gold()


def task_audit(domain: str | None = None, task_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """Audit the reward of every task of ``domain`` (``None``: both) or of ``task_ids``.

    All agents are scripted and run through the real tools on private databases; the
    reward is the package's (DB + COMMUNICATE). Cost: one episode per gold action plus
    four per task, about 1-3 s per domain.

    Returns
    -------
    DataFrame with columns :data:`AUDIT_COLUMNS`, one row per task:

    ``reward_basis`` / ``action_in_basis``
        the task's declared basis and whether ``ACTION`` is in it.
    ``gold_reward`` / ``gold_action_match``
        gold actions + required info (1.0 on every task) and the action check on them.
    ``idle_reward``
        the agent that does nothing and says nothing.
    ``idle_info_reward``
        the agent that does nothing but sends the required ``communicate_info``.
    ``no_transfer_reward`` / ``no_transfer_action_match``
        gold without ``transfer_to_human_agents`` (NaN / None where no transfer is
        expected); the transfer never touches the database, so the reward cannot see it,
        while the action check can.
    ``single_drops`` / ``single_drop_passes`` / ``single_drop_pass_actions`` / ``write_drop_passes``
        gold minus one action, for each action: how many such agents still score 1
        (``"<index>:<tool>"`` list), and how many of those dropped a write.
    ``failed_gold_writes`` / ``n_failed_gold_writes``
        gold writes that raise ``ToolError`` during the gold replay itself
        (``"<index>:<tool>"``); the package ignores the error, so the expected database
        lacks their change.
    ``failed_gold_reads`` / ``n_failed_gold_reads``
        gold reads (non-write tools, ``calculate`` included) that fail during the gold
        replay (``"<index>:<tool>"``), e.g. ``get_product_details`` of a product that is
        not in the database (retail 2-4); the gold trajectory cannot be followed there.
    ``gold_db_unchanged``
        the gold replay leaves the initial database unchanged.
    ``n_nl_assertions`` / ``nl_assertions_ignored``
        natural-language assertions of the task, all ignored by the scorer.
    ``degenerate_pass``
        the idle, idle-with-info or no-transfer agent scores 1.

    Raises
    ------
    ValueError
        If ``domain`` is unknown. KeyError: an unknown task id.
    """
    tasks = [get_task(t) for t in task_ids] if task_ids is not None else load_tasks(domain)
    rows = [_audit_row(t) for t in tasks]
    out = pd.DataFrame(rows, columns=list(AUDIT_COLUMNS))
    return _audit_schema().validate(out)


def degenerate_task_ids(audit: pd.DataFrame) -> list[str]:
    """Task ids of :func:`task_audit` rows that a degenerate agent passes."""
    missing = {"task_id", "degenerate_pass"} - set(audit.columns)
    if missing:
        raise KeyError(f"audit table lacks column(s) {sorted(missing)}; pass task_audit(...)'s table")
    return audit.loc[audit["degenerate_pass"].astype(bool), "task_id"].astype(str).tolist()


#: Reasons of :func:`flagged_task_ids`: label -> predicate on a :func:`task_audit` row.
FLAG_REASONS: dict[str, str] = {
    "idle agent passes": "idle_reward == 1",
    "idle agent sending the required info passes": "idle_info_reward == 1",
    "gold without the transfer to a human passes": "no_transfer_reward == 1",
    "a gold write fails in the gold replay": "n_failed_gold_writes > 0",
    "a gold read fails in the gold replay": "n_failed_gold_reads > 0",
}


def flagged_task_ids(audit: pd.DataFrame) -> pd.DataFrame:
    """Task ids of a :func:`task_audit` table grouped by why they are flagged.

    Returns
    -------
    DataFrame with columns ``reason`` (the keys of :data:`FLAG_REASONS`, in order, every
    reason listed even with no task), ``rule`` (its predicate), ``n_tasks`` and
    ``task_ids`` (``", "``-joined, in the audit's order). A task can appear under several
    reasons.

    Raises
    ------
    KeyError
        If a column the rules read is missing.
    """
    need = {"task_id", "idle_reward", "idle_info_reward", "no_transfer_reward",
            "n_failed_gold_writes", "n_failed_gold_reads"}
    missing = need - set(audit.columns)
    if missing:
        raise KeyError(f"audit table lacks column(s) {sorted(missing)}; pass task_audit(...)'s table")
    rows = []
    for reason, rule in FLAG_REASONS.items():
        ids = audit.loc[audit.eval(rule).fillna(False).astype(bool), "task_id"].astype(str).tolist()
        rows.append({"reason": reason, "rule": rule, "n_tasks": len(ids), "task_ids": ", ".join(ids)})
    return pd.DataFrame(rows)
