"""τ²-bench retail (114 tasks) and airline (50 tasks) from ``inspect_evals.tau2``.

Source: the τ²-bench domains (Sierra Research, MIT) as shipped in ``inspect-evals``
(UK AI Security Institute, MIT); the SASST paper's agent studies (Section 4, Appendix D.8)
run workflows on τ-bench tasks of these domains.

- :func:`load_tasks`, :func:`task_ids`, :func:`get_task`, :func:`sample_task_ids`: the
  tasks (global ids ``"retail/12"``, ``"airline/3"``), loaded once per process.
- :class:`TauEnv`: one episode with the real tools on a private database, a transcript,
  :meth:`~TauEnv.final_db_hash` and the package's reward.
- :func:`replay_gold`: gold actions + required info communicated (reward 1 on every task).
- :func:`is_write_tool`: the state-changing (declared irreversible) tools.
- :func:`task_audit`, :func:`action_match`, :func:`reward_components`,
  :func:`reward_basis`: the evaluator audit (degenerate agents that pass, gold writes and reads
  that fail in the gold replay, ignored natural-language assertions, the action check).
- :func:`task_features`, :func:`encode_texts`: pre-execution task features and text
  embeddings (``text_encoder="tfidf-svd"`` or ``"minilm"``).
"""

from agentstudies.envs.tau._data import (
    DOMAINS,
    NON_DB_TOOLS,
    WRITE_PREFIXES,
    GoldAction,
    TauTask,
    ToolSpec,
    get_task,
    is_write_tool,
    load_tasks,
    policy_text,
    pristine_db,
    sample_task_ids,
    split_task_id,
    task_ids,
    tool_specs,
)
from agentstudies.envs.tau._audit import (
    AUDIT_COLUMNS,
    DEGENERATE_AGENTS,
    FLAG_REASONS,
    action_match,
    degenerate_task_ids,
    flagged_task_ids,
    reward_basis,
    reward_components,
    task_audit,
)
from agentstudies.envs.tau._features import MINILM_DIM, TEXT_ENCODERS, TFIDF_SVD_DIM, encode_texts, task_features
from agentstudies.envs.tau._env import (
    TauEnv,
    ToolResult,
    communicated,
    db_hash,
    gold_db_hash,
    gold_signature,
    initial_db_hash,
    replay_gold,
)

__all__ = [
    "policy_text",
    "pristine_db",
    "AUDIT_COLUMNS",
    "DEGENERATE_AGENTS",
    "FLAG_REASONS",
    "action_match",
    "degenerate_task_ids",
    "flagged_task_ids",
    "reward_basis",
    "reward_components",
    "task_audit",
    "DOMAINS",
    "MINILM_DIM",
    "TEXT_ENCODERS",
    "TFIDF_SVD_DIM",
    "encode_texts",
    "task_features",
    "NON_DB_TOOLS",
    "WRITE_PREFIXES",
    "GoldAction",
    "TauTask",
    "ToolSpec",
    "TauEnv",
    "ToolResult",
    "communicated",
    "db_hash",
    "get_task",
    "gold_db_hash",
    "gold_signature",
    "initial_db_hash",
    "is_write_tool",
    "load_tasks",
    "replay_gold",
    "sample_task_ids",
    "split_task_id",
    "task_ids",
    "tool_specs",
]
