"""One τ²-bench episode: real tools on a private database, transcript and reward.

Observations and actions used by the policies of :mod:`agentstudies.agents.tau`
----------------------------------------------------------------------------------
A policy talks to :class:`TauEnv` through three kinds of action (see
:mod:`agentstudies.agents.tau`): a tool call (``name`` + ``arguments``), a
message to the user (free text) or stop. The environment answers a tool call with a
:class:`ToolResult` (``ok`` with the tool's output, or a failed call with the error
message); a ``ToolError`` raised by the package's tool, unknown tools and arguments that
do not bind to the tool's signature are failed calls, never exceptions.

Reward (as the package's ``retail_scorer`` / ``airline_scorer`` compute it)
-------------------------------------------------------------------------
1. DB check: replay the task's gold actions on a fresh database (skip ``calculate`` and
   ``transfer_to_human_agents``, ignore ``ToolError``) and compare the SHA-256 of
   ``json.dumps(db.model_dump(), sort_keys=True, default=str)`` with the episode's.
2. Communicate check: every ``communicate_info`` string, lower-cased, must appear in the
   agent's messages to the user joined by newlines, lower-cased, commas removed.

The reward is 1 only if both pass. :meth:`TauEnv.db_matches_gold` evaluates check 1
without hashing the whole database: both databases differ from the pristine one only in
the entries they touched, and the canonical JSON of the whole database is the sorted
concatenation of its entries' canonical JSON, so the two hashes are equal exactly when
every entry touched by either side has the same canonical JSON on both sides (and the
same keys exist). :meth:`TauEnv.final_db_hash` computes the full hash as the package does;
the tests check that both give the same verdict, and that the reward agrees with the
package's own scorers.
"""

from __future__ import annotations

import functools
import gc
import inspect
import json
from dataclasses import dataclass
from typing import Any, Mapping

import pandas as pd

from agentstudies.envs.tau._data import (
    NON_DB_TOOLS,
    _tools_class,
    entry_json,
    get_task,
    is_write_tool,
    load_tasks,
    new_episode_db,
    pristine_db,
    pristine_entry_json,
    table_names,
    tool_names,
    tool_specs,
)

__all__ = [
    "ToolResult",
    "TauEnv",
    "gold_signature",
    "gold_db_hash",
    "db_hash",
    "replay_gold",
    "communicated",
]


@dataclass(frozen=True)
class ToolResult:
    """Outcome of one tool call.

    ``ok`` is False for a failed call (``error`` holds the message); ``output`` is the
    tool's return value as a string otherwise. ``irreversible`` is the write-tool flag.
    """

    name: str
    arguments: Mapping[str, Any]
    ok: bool
    output: str | None
    error: str | None
    irreversible: bool


def db_hash(db: Any) -> str:
    """SHA-256 of a τ-bench DB exactly as the package computes it (``DB.get_hash``)."""
    from inspect_evals.tau2.utils import get_pydantic_hash

    return get_pydantic_hash(db)


def communicated(messages: list[str], communicate_info: tuple[str, ...] | list[str]) -> list[str]:
    """The ``communicate_info`` strings missing from ``messages`` (empty list: check passes).

    Same rule as the package's ``score_communicated_info``: messages joined by newlines,
    lower-cased, commas removed; each info string lower-cased must be a substring.
    """
    text = "\n".join(messages).lower().replace(",", "")
    return [info for info in communicate_info if info.lower() not in text]


def _calculate(expression: str) -> str:
    """The package's ``calculate`` tool (same checks and rounding), through its private
    ``_evaluate_arithmetic`` (``inspect_evals==0.26.0``, pinned; the one private name of
    inspect_evals this package uses)."""
    from inspect_ai.tool import ToolError
    from inspect_evals.tau2.common.tools import _evaluate_arithmetic

    if not all(char in "0123456789+-*/(). " for char in expression):
        raise ToolError("Invalid characters in expression")
    try:
        return str(round(float(_evaluate_arithmetic(expression)), 2))
    except ArithmeticError as exc:
        raise ToolError(f"Cannot evaluate expression: {exc}") from exc


def _transfer_to_human_agents(summary: str) -> str:
    """The package's ``transfer_to_human_agents`` tool."""
    return "Transfer successful"


@functools.cache
def _signature(domain: str, name: str) -> inspect.Signature | None:
    if name == "calculate":
        return inspect.signature(_calculate)
    if name == "transfer_to_human_agents":
        return inspect.signature(_transfer_to_human_agents)
    if name not in tool_names(domain):
        return None
    sig = inspect.signature(getattr(_tools_class(domain), name))
    params = list(sig.parameters.values())[1:]  # drop ``self`` of the unbound method
    return sig.replace(parameters=params)


class TauEnv:
    """A τ²-bench episode of one task on a private copy of the domain database.

    Parameters
    ----------
    task_id:
        Global task id, e.g. ``"retail/12"`` (see :func:`agentstudies.envs.tau.task_ids`).

    Attributes
    ----------
    task:
        The :class:`~agentstudies.envs.tau.TauTask`.
    transcript:
        One dict per event in order: ``{"kind": "tool_call", "name", "arguments", "ok",
        "output", "error", "irreversible"}`` or ``{"kind": "message", "text"}``.
    messages:
        The agent's messages to the user, in order.

    Raises
    ------
    KeyError
        If ``task_id`` is unknown.
    """

    def __init__(self, task_id: str):
        from inspect_ai.util import Store

        self.task = get_task(task_id)
        self.task_id = self.task.task_id
        self.domain = self.task.domain
        self.db = new_episode_db(self.domain)
        self._tools = _tools_class(self.domain)(
            store=Store(), instance=f"agentstudies:{task_id}", db=self.db, initialized=True
        )
        self.transcript: list[dict[str, Any]] = []
        self.messages: list[str] = []

    # ------------------------------------------------------------------ interface
    @property
    def tools(self) -> tuple[Any, ...]:
        """The agent-facing :class:`~agentstudies.envs.tau.ToolSpec` list."""
        return tool_specs(self.domain)

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The names of :attr:`tools`, in the same order (no copy of the specs)."""
        return tool_names(self.domain)

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Run tool ``name`` with ``arguments`` on this episode's database.

        A ``ToolError`` from the tool, an unknown tool, arguments that are not JSON or
        do not bind to the tool's signature, and a pydantic validation error of an
        argument are all returned as a failed call (``ok=False``) and recorded; nothing
        is raised. The arguments are deep-copied (through JSON) before the call.
        """
        from inspect_ai.tool import ToolError
        from pydantic import ValidationError

        irreversible = isinstance(name, str) and is_write_tool(name)
        try:
            args = json.loads(json.dumps(dict(arguments or {})))
        except (TypeError, ValueError) as exc:
            return self._record(str(name), {}, False, None, f"arguments are not JSON: {exc}", irreversible)
        sig = _signature(self.domain, name) if isinstance(name, str) else None
        if sig is None:
            return self._record(str(name), args, False, None, f"Unknown tool {name!r}", irreversible)
        try:
            sig.bind(**args)
        except TypeError as exc:
            return self._record(name, args, False, None, f"Invalid arguments: {exc}", irreversible)
        call_args = json.loads(json.dumps(args))
        try:
            if name == "calculate":
                out: Any = _calculate(**call_args)
            elif name == "transfer_to_human_agents":
                out = _transfer_to_human_agents(**call_args)
            else:
                out = getattr(self._tools, name)(**call_args)
        except ToolError as exc:
            return self._record(name, args, False, None, str(exc), irreversible)
        except (ValidationError, KeyError, TypeError, AttributeError) as exc:
            # Argument values the tool cannot handle (inspect would reject them against the
            # JSON schema before the call); the model sees an error either way.
            return self._record(name, args, False, None, f"{type(exc).__name__}: {exc}", irreversible)
        if not isinstance(out, str):
            out = json.dumps(out)
        return self._record(name, args, True, out, None, irreversible)

    def send_message(self, text: str) -> None:
        """Send ``text`` to the user (counts for the communicate check).

        Raises
        ------
        TypeError
            If ``text`` is not a string.
        """
        if not isinstance(text, str):
            raise TypeError(f"a message to the user must be a string, got {type(text).__name__}")
        self.messages.append(text)
        self.transcript.append({"kind": "message", "text": text})

    def _record(self, name: str, args: dict, ok: bool, out: str | None, err: str | None, irr: bool) -> ToolResult:
        self.transcript.append(
            {"kind": "tool_call", "name": name, "arguments": args, "ok": ok, "output": out, "error": err, "irreversible": irr}
        )
        return ToolResult(name=name, arguments=args, ok=ok, output=out, error=err, irreversible=irr)

    # ---------------------------------------------------------------- evaluation
    def final_db_hash(self) -> str:
        """SHA-256 of this episode's database as the package computes it (0.04 s retail,
        about 0.1-0.2 s airline)."""
        return db_hash(self.db)

    def touched(self) -> dict[str, set[str]]:
        """Keys of every entry this episode looked up, wrote or removed, per table."""
        return {t: set(getattr(self.db, t).touched) for t in table_names(self.domain)}

    def entry_jsons(self) -> dict[str, dict[str, str | None]]:
        """Canonical JSON of every touched entry (``None``: the key no longer exists)."""
        out: dict[str, dict[str, str | None]] = {}
        for t in table_names(self.domain):
            tab = getattr(self.db, t)
            out[t] = {k: (entry_json(dict.__getitem__(tab, k)) if dict.__contains__(tab, k) else None) for k in tab.touched}
        return out

    def db_matches_gold(self) -> bool:
        """DB check of the reward: does this database equal the gold one?

        Exactly equivalent to ``self.final_db_hash() == gold_db_hash(task_id)`` (see the
        module docstring), at the cost of dumping only the touched entries.
        """
        gold = gold_signature(self.task_id)
        for t in table_names(self.domain):
            tab = getattr(self.db, t)
            gold_t = gold[t]
            for k in tab.touched | gold_t.keys():
                mine = (
                    (entry_json(dict.__getitem__(tab, k)) if dict.__contains__(tab, k) else None)
                    if k in tab.touched
                    else pristine_entry_json(self.domain, t, k)
                )
                theirs = gold_t[k] if k in gold_t else pristine_entry_json(self.domain, t, k)
                if mine != theirs:
                    return False
        return True

    def missing_info(self) -> list[str]:
        """``communicate_info`` strings not found in the messages to the user."""
        return communicated(self.messages, self.task.communicate_info)

    def reward(self) -> float:
        """1.0 if the DB check and the communicate check both pass, else 0.0."""
        return float(self.db_matches_gold() and not self.missing_info())


def _replay_actions(env: TauEnv) -> None:
    """Replay the gold actions as the package's ``get_expected_db`` does."""
    from inspect_ai.tool import ToolError

    for action in env.task.actions:
        if action.name in NON_DB_TOOLS:
            continue
        try:
            getattr(env._tools, action.name)(**action.args())
        except ToolError:
            pass


@functools.cache
def gold_signature(task_id: str) -> dict[str, dict[str, str | None]]:
    """Canonical JSON of every DB entry the gold replay of ``task_id`` touched.

    Cached per process; computing it costs a few milliseconds (the replay only copies the
    entries it touches).

    Raises
    ------
    KeyError
        If ``task_id`` is unknown.
    """
    env = TauEnv(task_id)
    enabled = gc.isenabled()
    gc.disable()
    try:
        _replay_actions(env)
    finally:
        if enabled:
            gc.enable()
    return env.entry_jsons()


@functools.cache
def gold_db_hash(task_id: str) -> str:
    """SHA-256 of the gold database of ``task_id`` (package rule), cached per process.

    Costs one full-database hash (0.04 s retail, about 0.1-0.2 s airline) the first time.
    """
    env = TauEnv(task_id)
    _replay_actions(env)
    return env.final_db_hash()


def initial_db_hash(domain: str) -> str:
    """SHA-256 of the pristine database of ``domain``."""
    return _initial_db_hash(domain)


@functools.cache
def _initial_db_hash(domain: str) -> str:
    return db_hash(pristine_db(domain))


def replay_gold(domain: str | None = None, *, communicate: bool = True) -> pd.DataFrame:
    """Run every task's gold actions through :class:`TauEnv` and score them.

    The agent of this check calls each gold action in order through the real tools
    (including ``calculate`` and ``transfer_to_human_agents``), then, if ``communicate``,
    sends one message holding every ``communicate_info`` string. With ``communicate=True``
    the reward must be 1.0 on all 114 retail and 50 airline tasks (the package's own
    scorers give exactly that); with ``communicate=False``
    the package gives 76 of 114 and 44 of 50.

    Returns
    -------
    DataFrame with columns ``task_id`` (str), ``domain``, ``reward`` (float),
    ``db_match`` (bool), ``info_match`` (bool), ``failed_calls`` (int), one row per task.

    Raises
    ------
    ValueError
        If ``domain`` is unknown.
    """
    rows = []
    for task in load_tasks(domain):
        env = TauEnv(task.task_id)
        for action in task.actions:
            env.call(action.name, action.args())
        if communicate and task.communicate_info:
            env.send_message("Here is the information you asked for: " + "; ".join(task.communicate_info))
        db_ok = env.db_matches_gold()
        info_ok = not env.missing_info()
        rows.append(
            {
                "task_id": task.task_id,
                "domain": task.domain,
                "reward": float(db_ok and info_ok),
                "db_match": db_ok,
                "info_match": info_ok,
                "failed_calls": sum(1 for e in env.transcript if e["kind"] == "tool_call" and not e["ok"]),
            }
        )
    return pd.DataFrame(rows)
