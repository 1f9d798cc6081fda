"""``AlfworldEnv``: the ALFWorld text engine with a budget, a visible history and clones.

One job: the evaluation state of one episode and its clones. The engine it drives is
:class:`~agentstudies.envs.alfworld.pddl_env.PddlEnvCached` (TextWorld's ``PddlEnv``
with per-game caches); step records and their replay check are in
:mod:`~agentstudies.envs.alfworld.records`; official game files in
:mod:`~agentstudies.envs.alfworld.games` (all re-exported here).

The engine is ALFWorld's own: TextWorld ``PddlEnv`` (PDDL domain ``alfred`` +
fast-downward) wrapped by ``AlfredDemangler(shuffle=False)`` and ``AlfredInfos``, as in
``alfworld.agents.environment.AlfredTWEnv``. A game is either a dict produced by
:mod:`agentstudies.envs.alfworld.generate` or the path of an official ALFWorld game file
(``$ALFWORLD_DATA/json_2.1.1/<split>/<task>/<trial>/game.tw-pddl``; its
``traj_data.json`` next to it supplies the task type). The official data cannot be
downloaded in this workplace, so the path branch is implemented but untested here.

Evaluation state (handoff paper, Eq. 1): ``Sigma_t = (T, x_t, h_t, b_t)``. Here ``T`` is
the loaded game, ``x_t`` the engine state, ``h_t = (o_0, a_0, ..., a_{t-1}, o_t)`` is
:attr:`AlfworldEnv.history` and ``b_t`` is :attr:`AlfworldEnv.remaining_budget`.

Clones (paper Section 3.2, Appendix A):

* **operational clone** (:meth:`AlfworldEnv.replay`): deterministic reset with the task
  seed and exact replay of the recorded action prefix, checked after the reset and after
  every action against the JSON-safe record of the original run (observation, ordered
  admissible list, score, terminal flag, won flag); a mismatch raises
  :class:`ReplayMismatch` naming the step index. This is the reference.
* **in-process snapshot** (:meth:`AlfworldEnv.snapshot` / :meth:`AlfworldEnv.restore`):
  the bundled ``libdownward.so`` exports ``get_state_id`` / ``set_state_id``; a snapshot
  stores the state id plus the Python-side facts, the operators dict, the TextWorld game
  state, the history and the budget, and restores in tens of microseconds. Limits: the
  state registry is wiped by ``load``/``reset``, so a snapshot is only valid within the
  episode (reset generation) it was taken in -- :meth:`restore` raises otherwise; and
  only one ``AlfworldEnv`` per process may use snapshots (a process-wide guard raises for
  a second one until the first calls :meth:`release_snapshots` or is closed). Worker
  processes (joblib) each own their env, so parallel runs are unaffected.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import random
import re
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from textworld.core import EnvInfos

from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

from agentstudies.envs.alfworld.engine import (
    _copy_tables,
    applicable_operators,
    atoms,
    enable_parse_cache,
    preserve_argv,
)
from agentstudies.envs.alfworld.games import load_game_file, official_game_files  # noqa: F401 - re-exported
from agentstudies.envs.alfworld.pddl_env import PddlEnvCached as _PddlEnv
from agentstudies.envs.alfworld.pddl_env import game_logic as _logic_for  # noqa: F401 - old private name
from agentstudies.envs.alfworld.pddl_env import template_placeholders as _template_placeholders  # noqa: F401
from agentstudies.envs.alfworld.records import (  # noqa: F401 - re-exported
    ReplayMismatch,
    check_budget,
    compare_record as _compare,
    record_of,
)
from agentstudies.envs.alfworld.validation import validate_game
from agentstudies.specs import check_seed

__all__ = [
    "AlfworldEnv",
    "Snapshot",
    "ReplayMismatch",
    "SnapshotError",
    "load_game_file",
    "official_game_files",
    "record_of",
    "FLUENT_PREDICATES",
    "InadmissibleCommand",
    "NOTHING_HAPPENS",
]

#: The engine's answer to a command outside the admissible list.
NOTHING_HAPPENS = "Nothing happens."


#: Predicates whose facts :meth:`AlfworldEnv.state_key` hashes (those ALFRED actions change,
#: less bookkeeping ``checked``/``examined`` and display-only ``isOn``).
FLUENT_PREDICATES = frozenset(
    {"atlocation", "objectatlocation", "opened", "inreceptacle", "inreceptacleobject", "holds",
     "holdsany", "holdsanyreceptacleobject", "isclean", "ishot", "iscool", "istoggled", "issliced",
     "wasinreceptacle", "isreceptacleobjectfull", "full"}
)


#: ``str`` of the facts :meth:`AlfworldEnv.fluent_facts` has met, keyed by the fact (a
#: proposition's text is a function of its name and arguments, which its equality and
#: hash compare); cleared beyond :data:`_FACT_TEXT_MAX` entries.
_FACT_TEXT: dict = {}
_FACT_TEXT_MAX = 200_000


def _fact_text(prop) -> str:
    """``str(prop)``, memoised in :data:`_FACT_TEXT`."""
    text = _FACT_TEXT.get(prop)
    if text is None:
        if len(_FACT_TEXT) >= _FACT_TEXT_MAX:
            _FACT_TEXT.clear()
        text = _FACT_TEXT[prop] = str(prop)
    return text




class InadmissibleCommand(ValueError):
    """Strict mode: a command outside the admissible list was refused (no budget spent)."""


class SnapshotError(RuntimeError):
    """A snapshot cannot be taken or restored (stale generation, other env, other task)."""




@dataclass(frozen=True)
class Snapshot:
    """An in-process clone of one :class:`AlfworldEnv` state (see module docstring)."""

    env_token: int
    generation: int
    task_id: str
    state_id: int
    payload: tuple


_GUARD_LOCK = threading.Lock()
_SNAPSHOT_OWNER: "weakref.ReferenceType[AlfworldEnv] | None" = None


class AlfworldEnv:
    """One ALFWorld game on the real engine, with an action budget and clones.

    Parameters
    ----------
    budget:
        Default actions allowed per episode (``b_0``; :meth:`reset` may override it);
        :meth:`step` raises once it is spent.
    cache_templates:
        Memoise TextWorld's template parsing (:func:`engine.enable_parse_cache`).
    command_cache:
        Render each grounded command once per game (see ``_PddlEnv``); same text.
    validate:
        Run :func:`generate.validate_game` on every loaded game that has ``traj_data``.
    strict:
        Refuse inadmissible commands: :meth:`step` raises :class:`InadmissibleCommand`
        (a ``ValueError``) before the engine sees the command, and no budget is spent.
        Default ``False``: the command goes to the engine, which answers "Nothing
        happens." and charges one action, as ALFWorld does.
    step_cache:
        Memoise the engine state after every step of the current episode, keyed by the
        episode's action path (the actions since :meth:`reset`, the new one last): a
        step along a path already taken in this episode restores the stored engine
        state (as :meth:`restore` does) instead of running the engine. The engine is
        deterministic given its state and the command (it reads no global random
        state), so observations, admissible lists, ``won`` and later steps are the
        same as without the cache (tested); the budget, :attr:`records` and
        :attr:`valid` are computed as usual. Meant for forking protocols that restore
        snapshots and replay the same continuations many times (the recovery study);
        it uses the snapshot guard like :meth:`snapshot`. Cleared by
        ``reset``/``load_game``/:meth:`release_snapshots`.

    Attributes (after :meth:`reset`): :attr:`observation`, :attr:`admissible`,
    :attr:`won`, :attr:`done`, :attr:`remaining_budget`, :attr:`actions`,
    :attr:`history`, :attr:`records`, :attr:`valid` (one admissibility flag per action),
    :attr:`goal`.
    """

    def __init__(
        self,
        budget: int = 48,
        *,
        cache_templates: bool = True,
        command_cache: bool = True,
        validate: bool = True,
        strict: bool = False,
        step_cache: bool = False,
    ):
        budget = check_budget(budget)
        if cache_templates:
            enable_parse_cache()
        self.budget = int(budget)
        self._episode_budget = int(budget)
        self.validate = validate
        self.strict = bool(strict)
        self.step_cache = bool(step_cache)
        self._step_memo: dict[tuple, tuple] = {}
        self._step_memo_generation = -1
        self._valid: list[bool] = []
        infos = EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
        with preserve_argv():
            self._pddl = _PddlEnv(infos)
        self._pddl.command_cache = bool(command_cache)
        self._tw = AlfredInfos(AlfredDemangler(self._pddl, shuffle=False))
        self._lib = self._pddl.downward_lib
        self._lib.get_state_id.restype = ctypes.c_int
        self._lib.get_state_id.argtypes = []
        self._lib.set_state_id.restype = None
        self._lib.set_state_id.argtypes = [ctypes.c_int]
        self._generation = 0
        self._token = id(self)
        self.game: dict[str, Any] | None = None
        self.seed: int | None = None
        self._state: Any = None
        self._actions: list[str] = []
        self._records: list[dict[str, Any]] = []
        self._history_memo: tuple | None = None  # history of the first _history_n actions
        self._history_n = 0

    # ------------------------------------------------------------ loading
    def load_game(self, game: Mapping[str, Any] | str | os.PathLike) -> None:
        """Load a generated game dict, or an official ``game.tw-pddl`` path (with its
        ``traj_data.json``). Invalidates every snapshot. Raises
        :class:`generate.GameValidationError` for a problem missing a goal predicate."""
        if not isinstance(game, Mapping):
            game = load_game_file(game)
        if self.validate and "traj_data" in game and "pddl_params" in game["traj_data"]:
            validate_game(game)
        self.game = dict(game)
        with preserve_argv():
            self._tw.load(self.game)
        self._generation += 1
        self._state = None

    @property
    def task_id(self) -> str:
        """Task id of the loaded game."""
        self._need_game()
        return str(self.game.get("task_id") or self.game.get("traj_data", {}).get("task_id", "game"))

    @property
    def task_type(self) -> str:
        """ALFWorld task type of the loaded game."""
        self._need_game()
        return str(self.game.get("traj_data", {}).get("task_type", ""))

    def _need_game(self) -> None:
        if self.game is None:
            raise RuntimeError("no game loaded: call load_game() first")

    def _need_episode(self) -> None:
        if self._state is None:
            raise RuntimeError("no episode: call reset(seed) first")

    # ------------------------------------------------------------ episode
    def reset(self, seed: int = 0, budget: int | None = None) -> dict[str, Any]:
        """Start an episode with task seed ``seed`` (seeds the global ``random`` the
        TextWorld templates and hand-coded expert read) and action budget ``budget``
        (default :attr:`budget`). Returns :meth:`observe`. A seed that is not a
        non-negative integer is refused (``TypeError`` / ``ValueError`` naming it): -1
        would equal seed 1 and 1.7 would be cut to 1."""
        seed = check_seed(seed, where="AlfworldEnv.reset")
        self._need_game()
        self._episode_budget = self.budget if budget is None else check_budget(budget)
        self.seed = seed
        random.seed(self.seed)
        with preserve_argv():
            self._state = self._tw.reset()
        self._generation += 1
        self._actions = []
        self._valid = []
        self._records = [record_of(self._state, self._episode_budget)]
        self._history_memo = None
        return self.observe()

    def step(self, action: str) -> tuple[dict[str, Any], bool, bool]:
        """Take ``action`` (text). Returns ``(observe(), won, done)``.

        Whether the command was admissible (in :attr:`admissible` before the step) is
        recorded in :attr:`valid`. A command outside the admissible list is passed to the
        engine like any other (it answers "Nothing happens.") and uses one unit of
        budget -- unless the env is ``strict``, which raises :class:`InadmissibleCommand`
        before the engine sees it. Raises ``RuntimeError`` when the episode is over (won
        or budget spent).
        """
        self._need_episode()
        if self.done:
            raise RuntimeError(
                f"task {self.task_id}: episode over (won={self.won}, remaining budget {self.remaining_budget})"
            )
        valid = str(action) in self._state["admissible_commands"]
        if self.strict and not valid:
            raise InadmissibleCommand(
                f"task {self.task_id}, step {len(self._actions) + 1}: {action!r} is not admissible "
                f"(strict mode; {len(self._state['admissible_commands'])} admissible commands)"
            )
        if self.step_cache:
            self._cached_step(str(action))
        else:
            self._state, _, _ = self._tw.step(str(action))
        self._actions.append(str(action))
        self._valid.append(valid)
        self._records.append(record_of(self._state, self.remaining_budget))
        return self.observe(), self.won, self.done

    @property
    def observation(self) -> str:
        """Latest observation text ``o_t``."""
        self._need_episode()
        return str(self._state["feedback"])

    @property
    def admissible(self) -> list[str]:
        """Admissible commands at the current state, in the engine's (sorted) order."""
        self._need_episode()
        return list(self._state["admissible_commands"])

    @property
    def won(self) -> bool:
        """The engine's native ``won`` flag (goal check on the fast-downward state)."""
        self._need_episode()
        return bool(self._state["won"])

    @property
    def remaining_budget(self) -> int:
        """``b_t`` = the episode's budget minus actions taken."""
        return self._episode_budget - len(self._actions)

    def set_remaining_budget(self, n: int) -> None:
        """Set ``b_t`` to ``n`` from here on (the handoff gives a solver its continuation
        budget ``B_cont``). Raises ``ValueError`` for a negative ``n``."""
        if int(n) != n or n < 0:
            raise ValueError(f"remaining budget {n!r}: expected a non-negative integer")
        self._episode_budget = len(self._actions) + int(n)

    @property
    def done(self) -> bool:
        """Terminal: won, or budget spent."""
        return self.won or self.remaining_budget <= 0

    @property
    def actions(self) -> list[str]:
        """Actions taken this episode ``(a_0, ..., a_{t-1})``."""
        return list(self._actions)

    @property
    def valid(self) -> list[bool]:
        """Per action of this episode: was it admissible when taken (ALFWorld 0.4 grammar)."""
        return list(self._valid)

    @property
    def goal(self) -> str:
        """The task sentence as the agent sees it (``"Your task is to: ..."``), read from
        the intro observation; ``""`` if the intro has none."""
        self._need_episode()
        m = re.search(r"Your task is to:[^\n]*", self._records[0]["observation"])
        return m.group(0).strip() if m else ""

    @property
    def records(self) -> list[dict[str, Any]]:
        """JSON-safe record after the reset and after every action (see :func:`record_of`)."""
        return [dict(r) for r in self._records]

    @property
    def history(self) -> tuple:
        """Visible history ``h_t = (o_0, a_0, o_1, ..., a_{t-1}, o_t)`` as a flat tuple.

        Built once per episode prefix: extended by the actions taken since the last call
        (steps only append), rebuilt after ``reset``/``restore`` (they replace the lists)."""
        n = len(self._actions)
        memo = self._history_memo
        if memo is not None and self._history_n == n:
            return memo
        if memo is None or self._history_n > n:
            out: list[str] = [self._records[0]["observation"]]
            start = 0
        else:
            out, start = list(memo), self._history_n
        for a, r in zip(self._actions[start:], self._records[start + 1:]):
            out += [a, r["observation"]]
        self._history_memo, self._history_n = tuple(out), n
        return self._history_memo

    def history_hash(self) -> str:
        """SHA-256 of the visible history (JSON)."""
        return hashlib.sha256(json.dumps(self.history).encode()).hexdigest()

    def observe(self) -> dict[str, Any]:
        """Policy input: ``task_id``, ``task_type``, ``goal``, ``observation``,
        ``admissible_commands``, ``history``, ``remaining_budget``, ``step``, ``won``, plus
        ``expert`` -- a zero-argument callable returning the planner expert's optimal plan
        from the current state (used by *simulated* policies only; a learned or real
        checkpoint reads only ``goal`` and ``observation``)."""
        self._need_episode()
        return {
            "task_id": self.task_id,
            "task_type": self.task_type,
            "goal": self.goal,
            "observation": self.observation,
            "admissible_commands": self.admissible,
            "history": self.history,
            "remaining_budget": self.remaining_budget,
            "step": len(self._actions),
            "won": self.won,
            "expert": self.expert_plan,
        }

    def expert_plan(self) -> list[str]:
        """Planner expert: fast-downward's optimal plan from the current state (replanned
        on every call), as admissible command strings; ``[]`` when won or unsolvable."""
        self._need_episode()
        if self.won:
            return []
        ps = self._pddl._pddl_state
        sid = self._lib.get_state_id()
        plan = ps.replan(self._pddl._entity_infos)
        if self._lib.get_state_id() != sid:  # pragma: no cover - defensive
            self._lib.set_state_id(sid)
        return list(plan)

    # ------------------------------------------------------------ engine state
    @property
    def lib(self):
        """The env's private copy of ``libdownward`` (C-side state)."""
        return self._lib

    def state_id(self) -> int:
        """fast-downward state-registry id of the current state (valid within one episode)."""
        self._need_episode()
        return int(self._lib.get_state_id())

    def facts(self) -> list[str]:
        """Sorted positive atoms of the engine's C-side state (exact, but the library's
        ``get_state`` is quadratic in the state size: ~10-70 ms in a kitchen)."""
        self._need_episode()
        return sorted(atoms(self._lib))

    def fluent_facts(self) -> list[str]:
        """Sorted positive task facts that actions can change (``atLocation``, ``opened``,
        ``inReceptacle``, ``holds``, ``isClean``/``isHot``/``isCool``, ``isToggled``, ...),
        read from TextWorld's copy of the state. Excluded: the bookkeeping predicates
        ``checked``/``examined`` (set by look/examine/inventory) and the display-only
        ``isOn``, whose Python copy is wrong after a conditional effect (notes)."""
        self._need_episode()
        ps = self._pddl._pddl_state
        out = []
        for sig, props in ps._facts.items():
            if sig.name in FLUENT_PREDICATES:
                out.extend(map(_fact_text, props))
        return sorted(out)

    def state_key(self) -> str:
        """16-hex digest of :meth:`fluent_facts`: equal keys = equal task state (who holds
        what, where the agent and objects are, what is open/clean/hot/cool/toggled)."""
        return hashlib.sha256("\n".join(self.fluent_facts()).encode()).hexdigest()[:16]

    def operator_commands(self) -> dict[int, str]:
        """Map operator id -> admissible command for the current state (rendered by the
        engine at the last step)."""
        self._need_episode()
        return {a.id: c for a, c in zip(self._state["_valid_actions"], self._state["_valid_commands"])}

    def applicable_operators(self) -> list[tuple[int, str, int]]:
        """``(id, name, n_effects)`` of the applicable operators (one per name)."""
        self._need_episode()
        return applicable_operators(self._lib)

    # ------------------------------------------------------------ step cache
    def _engine_state(self) -> tuple:
        """The engine part of a snapshot, copied: C-side state id, then Python-side facts
        and operators, TextWorld's game states, move counter, the wrapper's state (the
        layout :meth:`snapshot` stores after its state id)."""
        ps = self._pddl._pddl_state
        pe = self._pddl
        return (
            int(self._lib.get_state_id()),
            *_copy_tables(ps),
            dict(getattr(ps, "_operators", {})),
            pe.state,
            pe.prev_state,
            pe._last_action,
            pe._moves,
            self._state,
        )

    def _set_engine_state(self, eng: Sequence) -> None:
        """Put the engine back into ``eng`` (from :meth:`_engine_state`; copies again, so
        ``eng`` can be put back any number of times), as :meth:`restore` does."""
        (sid, facts, vbn, vbt, vc, ops, st, prev, last, moves, state) = eng
        ps = self._pddl._pddl_state
        self._lib.set_state_id(int(sid))
        ps._facts, ps._vars_by_name, ps._vars_by_type, ps._var_counts = _copy_tables((facts, vbn, vbt, vc))
        ps._operators = dict(ops)
        pe = self._pddl
        pe.state, pe.prev_state, pe._last_action, pe._moves = st, prev, last, moves
        self._state = state

    def _step_key(self, action: str) -> tuple:
        """Step-cache key: the episode's action path with ``action`` last (the engine state
        it leads to is a function of the path, within one episode)."""
        return (*self._actions, action)

    def _cached_step(self, action: str) -> None:
        """Engine step through the episode's step cache (see ``step_cache``): restore the
        stored state after ``actions + [action]`` if this path was stepped before in this
        episode, else step the engine and store the state it reached."""
        if self._step_memo_generation != self._generation:
            self._step_memo = {}
            self._step_memo_generation = self._generation
        self._claim_guard()
        key = self._step_key(action)
        hit = self._step_memo.get(key)
        if hit is not None:
            self._set_engine_state(hit)
            return
        self._state, _, _ = self._tw.step(action)
        self._step_memo[key] = self._engine_state()

    # ------------------------------------------------------------ snapshots
    def _claim_guard(self) -> None:
        global _SNAPSHOT_OWNER
        with _GUARD_LOCK:
            owner = _SNAPSHOT_OWNER() if _SNAPSHOT_OWNER is not None else None
            if owner is None:
                _SNAPSHOT_OWNER = weakref.ref(self)
            elif owner is not self:
                raise SnapshotError(
                    "only one AlfworldEnv per process may use snapshot()/restore(); another env holds "
                    "the guard -- call its release_snapshots() (or close()) first, or use replay()"
                )

    def release_snapshots(self) -> None:
        """Give up the process-wide snapshot guard (existing snapshots become invalid)."""
        global _SNAPSHOT_OWNER
        with _GUARD_LOCK:
            owner = _SNAPSHOT_OWNER() if _SNAPSHOT_OWNER is not None else None
            if owner is self:
                _SNAPSHOT_OWNER = None
        self._generation += 1
        self._step_memo = {}  # the step cache belongs to the episode, like the snapshots

    def close(self) -> None:
        """Release the snapshot guard and the engine."""
        self.release_snapshots()
        self._state = None

    def __del__(self):  # pragma: no cover - interpreter teardown
        try:
            self.release_snapshots()
        except Exception:
            pass

    def snapshot(self) -> Snapshot:
        """In-process clone of the current evaluation state (engine, history, budget)."""
        self._need_episode()
        self._claim_guard()
        sid, *engine = self._engine_state()
        payload = (*engine, tuple(self._actions), tuple(self._records), self._pddl._pddl_state,
                   self._episode_budget, tuple(self._valid))
        return Snapshot(self._token, self._generation, self.task_id, sid, payload)

    def restore(self, snap: Snapshot) -> dict[str, Any]:
        """Put the env back in the state of ``snap``. Returns :meth:`observe`.

        Raises :class:`SnapshotError` if ``snap`` comes from another env, another task, or
        an earlier episode (taken before the latest ``reset``/``load_game``).
        """
        self._need_episode()
        self._claim_guard()
        if snap.env_token != self._token:
            raise SnapshotError("snapshot was taken on another AlfworldEnv")
        if snap.generation != self._generation or snap.task_id != self.task_id:
            raise SnapshotError(
                f"stale snapshot: taken in episode generation {snap.generation} of {snap.task_id!r}, "
                f"env is at generation {self._generation} of {self.task_id!r} (reset/load since)"
            )
        *engine, actions, records, ps, budget, valid = snap.payload
        if ps is not self._pddl._pddl_state:  # pragma: no cover - guarded by generation
            raise SnapshotError("snapshot belongs to a different engine state object")
        self._set_engine_state((snap.state_id, *engine))
        self._actions = list(actions)
        self._records = list(records)
        self._history_memo = None
        self._valid = list(valid)
        self._episode_budget = budget
        return self.observe()

    # ------------------------------------------------------------ operational clone
    def replay(
        self,
        seed: int,
        actions: Sequence[str],
        records: Sequence[Mapping[str, Any]] | None = None,
        budget: int | None = None,
    ) -> dict[str, Any]:
        """Operational clone: reset with ``seed`` and replay ``actions``.

        If ``records`` (``len(actions) + 1`` JSON-safe records, e.g. :attr:`records` of the
        original run) are given, the record after the reset and after every action must
        equal the recorded one; otherwise :class:`ReplayMismatch` is raised with the step
        index (0 = after reset). ``budget`` is the episode budget of the original run
        (default :attr:`budget`; the terminal flags depend on it). Returns :meth:`observe`
        at the end of the prefix.
        """
        if records is not None and len(records) != len(actions) + 1:
            raise ValueError(
                f"records has {len(records)} entries, expected len(actions) + 1 = {len(actions) + 1}"
            )
        self.reset(seed, budget)
        if records is not None:
            _compare(0, self._records[-1], records[0])
        for i, a in enumerate(actions):
            self.step(a)
            if records is not None:
                _compare(i + 1, self._records[-1], records[i + 1])
        return self.observe()
