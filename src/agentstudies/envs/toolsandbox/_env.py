"""The ToolSandbox-style environment: world, tools, scripted user, message log, scoring.

One :class:`ToolSandboxEnv` runs one case (a scenario under one augmentation). The log
opens with the system message (index 0) and the user's first request; the agent then
acts with :class:`ToolCall` (a tool by its *shown* name -> execution environment, whose
reply -- result or error text -- comes back as the next message) or :class:`Say` (a
message to the user, who answers at once or ends the conversation). The episode ends when
the user ends the conversation or the message cap (30) is reached.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from agentstudies.envs.toolsandbox._context import ExecutionContext, Message, MessageCapReached, Role, Snapshot
from agentstudies.envs.toolsandbox._scenarios import Case, Scenario
from agentstudies.envs.toolsandbox._scoring import Evaluation, evaluate
from agentstudies.envs.toolsandbox._tools import TOOLS, ToolError, ToolView, execute_tool
from agentstudies.envs.toolsandbox._user import ScriptedUser
from agentstudies.specs import check_seed

__all__ = ["ToolCall", "Say", "ToolSandboxEnv", "SYSTEM_PROMPT", "replay_gold", "validate_scenario", "gold_case"]

SYSTEM_PROMPT = ("You are a helpful assistant on the user's phone. Use the tools to fulfil requests; "
                 "ask the user when information is missing; never invent facts.")


@dataclass(frozen=True)
class ToolCall:
    """Agent action: call the tool shown as ``name`` with ``arguments``."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Say:
    """Agent action: a message to the user with a dialogue act (``ask``/``done``/``inform``/``cannot``)."""

    text: str
    act: Mapping[str, Any] = field(default_factory=dict)


def _visible(m: Message, role: str) -> bool:
    return role in m.visible_to


def _read_only(*_args, **_kwargs):
    raise TypeError("an observation is read-only (it is shared by every later observation of the episode); "
                    "copy what you change, e.g. dict(message) or list(observation['messages'])")


class ReadOnlyDict(dict):
    """A ``dict`` that refuses changes (``TypeError``): the messages and tool specs an
    observation hands out are shared between the episode's observations. Reads, equality,
    ``repr`` and ``json.dumps`` are a plain dict's; ``dict(d)``, ``copy.copy`` and
    ``copy.deepcopy`` give plain, changeable dicts."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = update = pop = popitem = clear = setdefault = _read_only

    def __reduce__(self):
        return dict, (dict(self),)


class ReadOnlyList(list):
    """A ``list`` that refuses changes (``TypeError``); see :class:`ReadOnlyDict`."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = extend = insert = remove = pop = clear = sort = reverse = _read_only

    def __reduce__(self):
        return list, (list(self),)


_ATOMIC = frozenset({str, int, float, bool, type(None)})


def _frozen(value: Any) -> Any:
    """``value`` with every dict, list and tuple in it rebuilt read-only (:class:`ReadOnlyDict`,
    :class:`ReadOnlyList`, tuples of frozen items); other values as they are (strings,
    numbers and ``None`` skip the call: ~4.5 us more per message view, built once per
    message and episode)."""
    if isinstance(value, dict):
        return ReadOnlyDict({k: v if type(v) in _ATOMIC else _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return ReadOnlyList([v if type(v) in _ATOMIC else _frozen(v) for v in value])
    if type(value) is tuple:
        return tuple(v if type(v) in _ATOMIC else _frozen(v) for v in value)
    return value


def _agent_view(m: Message, index: int) -> ReadOnlyDict | None:
    """Message ``m`` (at ``index``) as the agent sees it, or ``None`` when hidden from it;
    read-only all the way down (the view is shared by the episode's later observations, and
    a tool result in it is a copy, never the log's own object)."""
    if not _visible(m, Role.AGENT):
        return None
    d = dict(m.to_dict(), index=index)
    if d["tool_call"] is not None and "shown_name" in d["tool_call"]:
        # the agent sees the name it called, never the canonical one
        d["tool_call"] = {"name": d["tool_call"]["shown_name"], "arguments": d["tool_call"]["arguments"]}
    return _frozen(d)


class ToolSandboxEnv:
    """One episode of one case.

    Parameters
    ----------
    case : :class:`Case` (or a :class:`Scenario`, shown with its allow-list only)
    seed : int or SeedSequence of the scripted user
    max_messages : message cap (ToolSandbox: 30)

    Raises
    ------
    TypeError
        ``case`` is neither a :class:`Case` nor a :class:`Scenario` (e.g. ``None``), or
        ``seed`` is neither a SeedSequence nor an integer.
    ValueError
        A negative ``seed``.
    """

    def __init__(self, case: Case | Scenario, seed: Any = 0, *, max_messages: int = 30):
        if not isinstance(case, (Case, Scenario)):
            raise TypeError(f"case must be a Case or a Scenario (from agentstudies.envs.toolsandbox.make_cases() / "
                            f"generate_scenarios()); got {type(case).__name__} {case!r:.60}")
        if not isinstance(seed, np.random.SeedSequence):
            seed = check_seed(seed, where="ToolSandboxEnv")
        if isinstance(case, Scenario):
            case = Case(case.scenario_id + "/base", case, "base", ToolView(case.allow_list))
        self.case = case
        self.scenario = case.scenario
        self.view = case.view
        self.user = ScriptedUser(self.scenario.intents, np.random.default_rng(seed))
        self.ctx = ExecutionContext(self.scenario.initial, max_messages=max_messages)
        self.done = False
        self.termination = ""
        self._views: list[tuple[Message, dict[str, Any] | None]] = []  # observation(): (message, agent view)
        self._specs: tuple[dict[str, Any], ...] | None = None
        self._add(Message(Role.SYSTEM, Role.AGENT, SYSTEM_PROMPT, (Role.SYSTEM, Role.AGENT)))
        self._add(self.user.opening(0))

    # -------------------------------------------------------------- plumbing
    def _add(self, msg: Message) -> bool:
        try:
            self.ctx.add_message(msg)
            return True
        except MessageCapReached:
            self.done = True
            self.termination = "max_messages"
            return False

    def observation(self) -> dict[str, Any]:
        """What the agent sees: its visible messages (with indices), the tool specs, done.

        The agent's view of each message is built once per episode and reused while the
        log holds that same message object at that index (a replaced or restored message
        is viewed afresh), and the tool specs once per episode: the scripted and LLM
        agents only read them (about 8 observations per episode rebuilt every earlier
        message's dict). Shared, so read-only: each message and spec is a
        :class:`ReadOnlyDict` (nested dicts / lists read-only too; changing one raises
        ``TypeError``); the returned dict and its ``messages`` list are the caller's."""
        seen = self._views
        msgs = []
        for i, m in enumerate(self.ctx.messages):
            if i < len(seen) and seen[i][0] is m:
                d = seen[i][1]
            else:
                d = _agent_view(m, i)
                if i < len(seen):
                    seen[i] = (m, d)
                else:
                    seen.append((m, d))
            if d is not None:
                msgs.append(d)
        if self._specs is None:
            self._specs = _frozen(self.view.specs)
        return {"case_id": self.case.case_id, "messages": msgs, "tools": self._specs, "done": self.done}

    # ---------------------------------------------------------------- acting
    def step(self, action: ToolCall | Say) -> dict[str, Any]:
        """Apply one agent action; return the new observation.

        Raises
        ------
        RuntimeError
            If the episode is over.
        TypeError
            If ``action`` is neither :class:`ToolCall` nor :class:`Say`.
        """
        if self.done:
            raise RuntimeError("the episode is over")
        if isinstance(action, ToolCall):
            self._tool(action)
        elif isinstance(action, Say):
            if self._add(Message(Role.AGENT, Role.USER, action.text, (Role.AGENT, Role.USER), act=dict(action.act))):
                self._user_turn()
        else:
            raise TypeError(f"agent action must be ToolCall or Say, got {type(action).__name__}")
        return self.observation()

    def _tool(self, action: ToolCall) -> None:
        args = dict(action.arguments)
        canonical = self.view.canonical(action.name)
        call = {"name": canonical or action.name, "arguments": args, "shown_name": action.name}
        if not self._add(Message(Role.AGENT, Role.EXECUTION_ENVIRONMENT, "", (Role.AGENT, Role.EXECUTION_ENVIRONMENT), tool_call=call)):
            return
        result, error = None, None
        if self.ctx.last_index + 1 >= self.ctx.max_messages:
            self.done, self.termination = True, "max_messages"
            return
        # the call's writes are stamped with the index of the reply message
        self.ctx.messages.append(Message(Role.EXECUTION_ENVIRONMENT, Role.AGENT, "", (Role.EXECUTION_ENVIRONMENT, Role.AGENT)))
        try:
            if canonical is None:
                raise ToolError(f"Unknown tool {action.name!r}.")
            result = execute_tool(self.ctx, canonical, args)
        except ToolError as exc:
            error = str(exc)
        self.ctx.messages[-1] = Message(Role.EXECUTION_ENVIRONMENT, Role.AGENT, error or repr(result),
                                        (Role.EXECUTION_ENVIRONMENT, Role.AGENT), result=result, error=error)

    def _user_turn(self) -> None:
        reply = self.user.respond(self.ctx.messages)
        if not self._add(reply):
            return
        if reply.tool_call is not None and reply.tool_call["name"] == "end_conversation":
            self._add(Message(Role.EXECUTION_ENVIRONMENT, Role.USER, "conversation ended", (Role.EXECUTION_ENVIRONMENT, Role.USER)))
            self.done = True
            self.termination = "user_ended"

    def consent(self, prompt: str, mutation: Mapping[str, Any] | None) -> str:
        """Ask the user (Confirmation gate): logs the question and the answer; returns it."""
        if not self._add(Message(Role.AGENT, Role.USER, prompt, (Role.AGENT, Role.USER), act={"act": "confirm"})):
            return "NO"
        answer = self.user.consent(mutation, self.ctx.messages)
        self._add(Message(Role.USER, Role.AGENT, answer, (Role.USER, Role.AGENT), act={"act": "consent", "answer": answer}))
        return answer

    # --------------------------------------------------------------- results
    def evaluate(self, *, guardrails: bool = True) -> Evaluation:
        """ToolSandbox score of the log so far (similarity, mapping, minefields, turns);
        ``guardrails=False`` drops the automatic guardrails (a named departure)."""
        sc = self.scenario
        return evaluate(self.ctx, sc.milestones, sc.edges, sc.minefields, guardrails=guardrails)

    def snapshot(self, after: int | None = None) -> Snapshot:
        return self.ctx.snapshot(after)

    def restore(self, snap: Snapshot) -> None:
        """Restore world and log from ``snap`` (the episode continues from there)."""
        self.ctx.restore(snap)
        last = self.ctx.messages[-1] if self.ctx.messages else None
        self.done = bool(last is not None and last.recipient == Role.USER and last.sender == Role.EXECUTION_ENVIRONMENT)
        self.termination = "user_ended" if self.done else ""


def gold_case(scenario: Scenario) -> Case:
    """The base case of ``scenario`` (its allow-list only, nothing scrambled)."""
    return Case(scenario.scenario_id + "/base", scenario, "base", ToolView(scenario.allow_list))


def replay_gold(case: Case | Scenario, *, trigger: bool = False, seed: Any = 0) -> ToolSandboxEnv:
    """Run the scenario's gold trajectory (validation only; no agent reads it).

    With ``trigger`` the scenario's minefield trigger is inserted just before the final
    message to the user. Tool names are mapped to the case's shown names.
    """
    if isinstance(case, Scenario):
        case = gold_case(case)
    steps = list(case.scenario.gold)
    if trigger:
        extra = tuple(s[1] for s in case.scenario.trigger if s[0] == "call" and s[1] not in case.view.tools)
        if extra:
            case = Case(case.case_id, case.scenario, case.augmentation,
                        ToolView(case.view.tools + extra, case.view.scramble, case.view.key))
    env = ToolSandboxEnv(case, seed)
    if trigger:
        steps = steps[:-1] + list(case.scenario.trigger) + steps[-1:]
    for step in steps:
        if env.done:
            break
        if step[0] == "call":
            env.step(ToolCall(case.view.shown_name(step[1]), dict(step[2])))
        else:
            env.step(Say(step[2], step[1]))
    return env


def validate_scenario(scenario: Scenario) -> list[str]:
    """Problems of ``scenario`` (empty list = valid).

    Checks: the gold trajectory runs without tool errors, ends the conversation, scores
    1.0 with every milestone matched and no minefield; minefields exist exactly in the
    insufficient-information scenarios (as in ToolSandbox), each avoidable (the gold avoids
    it) and live (the trigger hits it and the score drops to 0); the allow-list holds every
    tool the gold calls.
    """
    problems = []
    for step in scenario.gold:
        if step[0] == "call" and step[1] not in scenario.allow_list:
            problems.append(f"gold calls {step[1]} outside the allow-list")
        if step[0] == "call" and step[1] not in TOOLS:
            problems.append(f"gold calls unknown tool {step[1]}")
    env = replay_gold(scenario)
    errs = [m.error for m in env.ctx.messages if m.error]
    if errs and "insufficient_information" not in scenario.categories:
        problems.append(f"gold tool errors: {errs}")
    if env.termination != "user_ended":
        problems.append(f"gold does not end the conversation ({env.termination or 'open'})")
    ev = env.evaluate()
    if ev.similarity != 1.0 or ev.matched != len(scenario.milestones):
        problems.append(f"gold scores {ev.similarity} with {ev.matched}/{len(scenario.milestones)} milestones {ev.milestone_scores}")
    if ev.minefield_hit:
        problems.append("gold hits a minefield")
    insufficient = "insufficient_information" in scenario.categories
    if insufficient != bool(scenario.minefields):
        problems.append(f"{len(scenario.minefields)} minefield(s); minefields belong to insufficient-information scenarios only")
    if scenario.minefields:
        tr = replay_gold(scenario, trigger=True).evaluate()
        if not (tr.minefield_hit and tr.similarity == 0.0):
            problems.append(f"trigger does not set off the minefield: {tr}")
    return problems
