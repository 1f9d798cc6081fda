"""ALFWorld as a ReAct text loop through an Inspect model (an option, never a requirement).

The shared client, settings and bookkeeping are in :mod:`agentstudies.agents._llm`; this
module holds only what is ALFWorld-specific: the system prompt, the policy and
:func:`make_llm_policy` (the constructor the ALFWorld chapters call).
"""

from __future__ import annotations

from typing import Any, Mapping

from agentstudies.agents._llm import LLMClient, LLMError, LLMPolicyBase, LLMSpec

__all__ = ["ALFWORLD_SYSTEM", "LLMAlfworldPolicy", "make_llm_policy"]


def make_llm_policy(agent: str, llm_settings: Mapping[str, Any] | None = None, *,
                    show_admissible: bool = False) -> "LLMAlfworldPolicy":
    """An :class:`LLMAlfworldPolicy` for ``agent = "llm:<provider/model>"``.

    ``llm_settings``: keyword arguments of :class:`LLMSpec` (``base_url``,
    ``max_connections``, ``temperature``, ``max_tokens``, ...; ``None`` values dropped).

    Raises
    ------
    ValueError
        If ``agent`` is not ``"llm:<provider>/<model>"``.
    """
    return LLMAlfworldPolicy(LLMSpec.from_agent(agent, **dict(llm_settings or {})), show_admissible=show_admissible)


ALFWORLD_SYSTEM = (
    "You are an agent in a text household. Reach the goal with text commands such as "
    "'go to countertop 1', 'open fridge 1', 'take apple 1 from countertop 1', "
    "'move apple 1 to countertop 1', 'heat apple 1 with microwave 1', 'look', 'inventory'. "
    "Think briefly, then answer with one line 'Action: <command>'."
)


class LLMAlfworldPolicy(LLMPolicyBase):
    """ALFWorld as a ReAct text loop (Yao et al., 2023) through an Inspect model.

    ``act(observation)`` takes what the agent is shown — a string, or a mapping with
    ``"goal"`` / ``"observation"`` (the recovery harness shows exactly these two; a stale
    or missing observation is passed through verbatim) and, from
    :meth:`agentstudies.envs.alfworld.env.AlfworldEnv.observe`, ``"history"`` and
    ``"admissible_commands"`` — and returns one command string, parsed from the reply's
    last ``Action:`` line (the whole reply's last line when there is none).

    * The first message of an episode carries the goal; when the mapping holds a
      visible history ``(o_0, a_0, ..., o_t)`` longer than one item (a handoff solver
      starting on a cloned state), the whole history is shown in that first message, so
      the model continues the episode it was handed.
    * The admissible commands are shown only with ``show_admissible=True`` (ReAct's
      prompt offered them as an option); keys ``"admissible_commands"`` or ``"admissible"``.
    * The generation seed of an episode is ``keyed_seed(seed, "llm", task_id, role)``
      (call ``k`` of the episode uses that seed ``+ k``); copies made with
      :func:`copy.deepcopy` (forks) keep the stream position.
    * A failed model call (HTTP error, timeout) is recorded in ``errors``; the episode
      goes on with ``"look"`` and no further model call (every later step is ``look``),
      so the environment, not the harness, scores the episode, and the table flags it.

    The transcript it keeps is only what it was shown and what it said.
    """

    def __init__(self, spec: LLMSpec | str, *, show_admissible: bool = False, client: LLMClient | None = None,
                 **settings: Any):
        super().__init__(spec, client=client, **settings)
        self.show_admissible = show_admissible

    def reset(self, task_id: str, seed: int, role: str | None = None) -> None:
        """Start an episode; ``role`` (reacher / solver / eval) keys the seed, not shown."""
        from inspect_ai.model import ChatMessageSystem

        from agentstudies.parallel import keyed_seed

        self.task_id, self.role = str(task_id), role
        llm_seed = int(keyed_seed(int(seed), "llm", str(task_id), str(role)).generate_state(1)[0] % (2**31 - 1))
        self._new_record(llm_seed)
        self.messages: list[Any] = [ChatMessageSystem(content=ALFWORLD_SYSTEM)]
        self.last_log: dict[str, Any] = {}

    def _shown_text(self, observation: Any) -> str:
        if not isinstance(observation, Mapping):
            return f"Observation: {observation}"
        first = len(self.messages) == 1
        parts = [f"Goal: {observation['goal']}"] if observation.get("goal") and first else []
        history = observation.get("history")
        if first and history is not None and len(history) > 1:
            parts.append("What happened so far:")
            parts.extend((f"Action: {item}" if i % 2 else f"Observation: {item}") for i, item in enumerate(history))
        else:
            parts.append(f"Observation: {observation.get('observation', '')}")
        admissible = observation.get("admissible_commands", observation.get("admissible"))
        if self.show_admissible and admissible:
            parts.append("Valid commands: " + ", ".join(admissible))
        return "\n".join(parts)

    def act(self, observation: Any) -> str:
        """One command for what the agent is shown (see the class docstring)."""
        from inspect_ai.model import ChatMessageUser

        text = self._shown_text(observation)
        self.messages.append(ChatMessageUser(content=text))
        if self.errors:  # the model failed earlier in this episode: no further calls
            command = "look"
        else:
            try:
                out = self._generate(self.messages)
            except LLMError as exc:
                self.errors.append(str(exc))
                command = "look"
            else:
                reply = out.choices[0].message if out.choices else None
                if reply is not None:
                    self.messages.append(reply)
                else:
                    self.errors.append("the model returned no choice")
                command = _parse_action(reply.text if reply is not None else "")
        self.last_log = {"shown": text, "command": command}
        return command


def _parse_action(reply: str) -> str:
    lines = [ln.strip() for ln in reply.strip().splitlines() if ln.strip()]
    for line in reversed(lines):
        if line.lower().startswith("action:"):
            return line.split(":", 1)[1].strip().strip(".").lower() or "look"
    return (lines[-1].strip(".").lower() if lines else "look")
