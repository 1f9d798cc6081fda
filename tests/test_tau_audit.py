"""The τ²-bench evaluator audit (agentstudies.envs.tau.task_audit) against the package.

Every verdict of the audit's scripted agents is recomputed with the package's own scorers
(``db_match``, ``score_communicated_info``, ``evaluate_required_actions`` of
``inspect_evals.tau2.common.scorer``) on the tasks of :data:`AUDIT_TASKS`, which show every
verdict combination (:data:`EXPECTED_CASES`) and every gold-replay flag; the counts of
agents that pass come from ../shared/notes/tau_bench_data.md (measured there with the
unmodified package scorers), not from our output.
"""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from agentstudies.envs.tau import (
    AUDIT_COLUMNS,
    TauEnv,
    action_match,
    degenerate_task_ids,
    get_task,
    reward_basis,
    reward_components,
    task_audit,
)
from agentstudies.envs.tau._audit import _episode


def _package_verdicts(env: TauEnv) -> dict[str, bool]:
    """db / communicate / action verdicts of the package's scorers for a finished episode."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelName
    from inspect_ai.scorer import CORRECT, Target
    from inspect_ai.solver import TaskState
    from inspect_ai.tool import ToolCall
    from inspect_ai.util import Store
    from inspect_ai.util._store import init_subtask_store
    from inspect_evals.tau2.common.agents import StoredAgentState
    from inspect_evals.tau2.common.metadata import Tau2MetaData
    from inspect_evals.tau2.common.scorer import db_match, evaluate_required_actions, score_communicated_info

    calls = [e for e in env.transcript if e["kind"] == "tool_call"]
    agent = StoredAgentState(store=Store(), instance="audit-test")
    agent.messages = [
        ChatMessageAssistant(
            content="",
            tool_calls=[ToolCall(id=f"c{i}", function=e["name"], arguments=dict(e["arguments"]))],
        )
        for i, e in enumerate(calls)
    ]

    def run() -> dict[str, bool]:
        init_subtask_store(Store())  # fresh store: the scorer parks its expected DB there
        state = TaskState(
            model=ModelName("mockllm/model"),
            sample_id=env.task_id,
            epoch=1,
            input="",
            messages=[ChatMessageUser(content=m) for m in env.messages],
            metadata=Tau2MetaData(instance="audit-test", task=env.task.raw).model_dump(),
        )
        s_db = asyncio.run(db_match(domain=env.domain, testing_mock_predicted_db=env._tools)(state, Target("")))
        s_info = asyncio.run(score_communicated_info()(state, Target("")))
        s_act = asyncio.run(
            evaluate_required_actions(get_agent_state=lambda instance: agent)(state, Target(""))
        )
        return {"db_match": s_db.value == CORRECT, "communicate_match": s_info.value == CORRECT,
                "action_match": s_act.value == CORRECT}

    return contextvars.copy_context().run(run)


#: The tasks whose degenerate agents are scored by the package below. They were picked from
#: the 20-task random samples per domain (``default_rng(12)``) this test scored until
#: 2026-12-03, as the fewest tasks that still show every case those 20 showed
#: (:data:`EXPECTED_CASES`; each package verdict costs 0.3 s retail, 0.8 s airline):
#: retail/24 and airline/46 have no action (the idle agent's action check passes),
#: retail/50 and airline/13 expect a transfer to a human and leave the database unchanged,
#: retail/36 and airline/7 need information the idle agent does not send, retail/35 and
#: airline/15 change the database and need no information, retail/35 has a gold read that
#: fails in the gold replay and retail/105 a gold write that fails there.
AUDIT_TASKS: dict[str, tuple[str, ...]] = {
    "retail": ("retail/24", "retail/35", "retail/36", "retail/50", "retail/105"),
    "airline": ("airline/7", "airline/13", "airline/15", "airline/46"),
}

#: (agent, db_match, communicate_match, action_match) as the package scores them on
#: :data:`AUDIT_TASKS`: every combination the 20-task samples showed, each at least once.
_SHARED_CASES = {
    ("gold", True, True, True),
    ("idle", False, False, False), ("idle", False, True, False), ("idle", True, True, False),
    ("idle_info", False, True, False), ("idle_info", True, True, False), ("idle_info", True, True, True),
    ("drop_last", False, True, False), ("drop_last", True, True, False),
    ("no_transfer", True, True, False),
}
EXPECTED_CASES: dict[str, set[tuple[str, bool, bool, bool]]] = {
    "retail": _SHARED_CASES | {("idle", True, False, True)},  # retail/24: info required, no action
    "airline": _SHARED_CASES | {("idle", True, True, True)},  # airline/46: nothing required
}


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_audit_agrees_with_the_package_scorer(domain, tmp_path, monkeypatch):
    """Every degenerate agent's components equal the package's, on tasks showing every case."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # DB.load leaks a temp copy per call
    sample = list(AUDIT_TASKS[domain])
    audit = task_audit(task_ids=sample).set_index("task_id")
    checked = 0
    outcomes = set()
    cases = set()
    for tid in sample:
        task = get_task(tid)
        n = len(task.actions)
        transfer = [i for i, a in enumerate(task.actions) if a.name == "transfer_to_human_agents"]
        agents = {
            "gold": _episode(task, None, True),
            "idle": _episode(task, [], False),
            "idle_info": _episode(task, [], True),
        }
        if n:
            agents["drop_last"] = _episode(task, list(range(n - 1)), True)
        if transfer:
            agents["no_transfer"] = _episode(task, [i for i in range(n) if i not in transfer], True)
        for label, env in agents.items():
            ours = reward_components(env)
            theirs = _package_verdicts(env)
            assert {k: ours[k] for k in theirs} == theirs, (tid, label)
            reward = float(theirs["db_match"] and theirs["communicate_match"])
            assert ours["reward"] == reward
            outcomes.add((label, reward))
            cases.add((label, theirs["db_match"], theirs["communicate_match"], theirs["action_match"]))
            checked += 1
            if label in ("gold", "idle", "idle_info", "no_transfer"):
                assert audit.loc[tid, f"{label}_reward"] == reward, (tid, label)
    assert checked >= 3 * len(sample)
    assert ("gold", 1.0) in outcomes and ("idle", 0.0) in outcomes
    # the tasks still show every case (the package's verdicts, not ours), and both kinds of task
    assert cases == EXPECTED_CASES[domain], sorted(cases ^ EXPECTED_CASES[domain])
    assert set(audit["gold_db_unchanged"]) == {True, False}
    if domain == "retail":
        assert audit.loc["retail/35", "n_failed_gold_reads"] > 0 and audit.loc["retail/105", "n_failed_gold_writes"] > 0


def test_audit_counts_match_the_measured_package_counts():
    """No actions + required info: 11 of 114 retail, 20 of 50 airline (notes, package scorer)."""
    retail = task_audit("retail")
    airline = task_audit("airline")
    for table, n in ((retail, 114), (airline, 50)):
        assert list(table.columns) == list(AUDIT_COLUMNS) and len(table) == n
        assert (table["gold_reward"] == 1.0).all() and table["gold_action_match"].all()
        assert set(table["reward_basis"]) == {"DB+COMMUNICATE"} and not table["action_in_basis"].any()
    assert int(retail["idle_info_reward"].sum()) == 11
    assert int(airline["idle_info_reward"].sum()) == 20
    # the idle agent says nothing: it passes only where nothing must be communicated
    for table in (retail, airline):
        idle = table["idle_reward"] == 1.0
        assert (table.loc[idle, "n_communicate_info"] == 0).all()
        assert (idle <= (table["idle_info_reward"] == 1.0)).all()
        assert (table["idle_info_reward"] == table["gold_db_unchanged"].astype(float)).all()
        # dropping the transfer never changes the DB: reward 1, action check fails
        tr = table[table["transfer_expected"]]
        assert (tr["no_transfer_reward"] == 1.0).all() and not tr["no_transfer_action_match"].any()
        assert table.loc[~table["transfer_expected"], "no_transfer_reward"].isna().all()
        expected = (table["idle_reward"] == 1) | (table["idle_info_reward"] == 1) | (table["no_transfer_reward"] == 1)
        assert (table["degenerate_pass"] == expected).all()
        assert sorted(degenerate_task_ids(table)) == sorted(table.loc[expected, "task_id"])
    # natural-language assertions exist and are never scored
    assert (retail["n_nl_assertions"] > 0).any() and (airline["n_nl_assertions"] > 0).any()
    assert (retail["nl_assertions_ignored"] == (retail["n_nl_assertions"] > 0)).all()


def test_failed_gold_writes_are_tool_errors_in_the_replay():
    """Every listed failed gold write raises a ToolError when the gold is replayed."""
    from inspect_ai.tool import ToolError

    audit = task_audit("retail")
    rows = audit[audit["n_failed_gold_writes"] > 0]
    assert len(rows) >= 1
    for _, row in rows.iterrows():
        task = get_task(row["task_id"])
        env = TauEnv(task.task_id)
        errors = []
        for i, action in enumerate(task.actions):
            if action.name in ("calculate", "transfer_to_human_agents"):
                continue
            try:
                getattr(env._tools, action.name)(**action.args())
            except ToolError:
                if action.irreversible:
                    errors.append(f"{i}:{action.name}")
        assert ";".join(errors) == row["failed_gold_writes"]


def test_action_match_rule_by_hand():
    task = get_task("retail/0")
    gold = [(a.name, a.args()) for a in task.actions]
    assert action_match(task, gold)
    assert action_match(task, list(reversed(gold)))  # order does not matter
    assert not action_match(task, gold[:-1])
    name, args = gold[-1]
    altered = dict(args)
    key = next(iter(altered))
    altered[key] = "something else"
    assert not action_match(task, gold[:-1] + [(name, altered)])
    assert action_match(task, gold + [("get_user_details", {"user_id": "nobody"})])  # extra calls are fine
    assert reward_basis("retail/0") == "DB+COMMUNICATE"


# ------------------------------------------------------------------ the two τ chapters
TAU_CHAPTERS = {"tau_controller_audit": "episodes.csv", "tau_workflow_stress": "episodes.parquet"}


def test_tau_chapter_sources_report_the_audit():
    """Both τ notebooks run the audit, save it, glue the degenerate count and compare."""
    import nbformat
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    for name in TAU_CHAPTERS:
        nb = nbformat.read(repo / "notebooks" / f"{name}.ipynb", as_version=4)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        assert "task_audit(" in code and 'ch.save_table(audit, "task_audit")' in code
        assert "{glue:text}`n_degenerate`" in text
        assert "success_with_without(" in code
    code = "\n".join(c.source for c in nbformat.read(repo / "notebooks" / "tau_workflow_stress.ipynb",
                                                      as_version=4).cells if c.cell_type == "code")
    assert "slots_side_by_side(" in code and code.count("ts.run_tau_sasst(") >= 2


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TAU_CHAPTERS))
def test_tau_chapter_episode_tables_carry_the_components(name, tmp_path, monkeypatch):
    """Smoke run: the episode table has reward_basis and the three match columns, the
    audit table is an artifact and the page shows the glued degenerate-agent count."""
    import json
    from pathlib import Path

    import nbformat
    import pandas as pd

    from agentstudies.book import runner

    repo = Path(__file__).resolve().parents[1]
    result = runner.run_notebook(name, {}, tmp_path / f"{name}.ipynb", profile="smoke", root=repo)
    art = result.artifacts  # beside the -o notebook (it wins over AGENTSTUDIES_ARTIFACTS)
    table = TAU_CHAPTERS[name]
    episodes = pd.read_parquet(art / table) if table.endswith(".parquet") else pd.read_csv(art / table)
    for col in ("reward_basis", "db_match", "communicate_match", "action_match"):
        assert col in episodes.columns, (name, col)
    assert set(episodes["reward_basis"]) == {"DB+COMMUNICATE"}
    assert (episodes["reward"] == (episodes["db_match"] & episodes["communicate_match"]).astype(float)).all()
    audit = pd.read_csv(art / "task_audit.csv")
    assert list(audit.columns) == list(AUDIT_COLUMNS)
    assert sorted(audit["task_id"]) == sorted(episodes["task_id"].unique())
    nb = nbformat.read(result.output_path, as_version=4)
    glued = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            key = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if key:
                glued[key] = next(v for k, v in out["data"].items() if k.endswith("text/plain"))
    assert int(glued["n_degenerate"]) == int(audit["degenerate_pass"].sum())
    assert int(glued["n_audited"]) == len(audit)
    assert "success_with_without.csv" in json.loads((art / "provenance.json").read_text())["outputs"]
