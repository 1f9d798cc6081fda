"""The learned ALFWorld policy's belief: what it has been shown, read into a state.

One job: turn shown texts (goal line, observations) and the policy's own commands into a
:class:`Belief`, and propose the grammar's candidate commands from it
(:func:`candidate_commands`). Nothing here reads the engine: a stale or missing
observation misleads the belief exactly as it would mislead any agent that trusts its
inputs. The policy is :class:`~agentstudies.agents.alfworld._learned.LearnedAlfworldPolicy`
(its module docstring describes the belief and the candidates in full).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["Belief", "candidate_commands", "shown_text", "NOTHING"]

NOTHING = "Nothing happens."
_STOP = frozenset(
    "a an the some it in on and put them to with under of your task is by using at into".split()
)
_GOAL_RE = re.compile(r"Your task is to:\s*([^\n]*)")
_ENT = r"([a-z]+ \d+)"
_ARRIVE = re.compile(r"You arrive at (?:loc \d+\. )?([a-z]+ \d+)\.")
#: ALFWorld's own ``look`` reply at a receptacle ("You are facing the X[, and Y]. Next to
#: it, you see nothing."): where the agent is, without a visit (a look moves nothing).
_FACING = re.compile(r"You are facing the ([a-z]+ \d+)")
_ON = re.compile(r"On the ([a-z]+ \d+), you see (.*?)\.(?:\s|$)")
_IN = re.compile(r"(?:The|the) ([a-z]+ \d+) is open\. In it, you see (.*?)\.(?:\s|$)")
_CLOSED = re.compile(r"The ([a-z]+ \d+) is closed\.")
_OPEN = re.compile(r"You open the ([a-z]+ \d+)\.")
_CLOSE = re.compile(r"You close the ([a-z]+ \d+)\.")
_TAKE = re.compile(r"You pick up the ([a-z]+ \d+) from the ([a-z]+ \d+)\.")
_MOVE = re.compile(r"You (?:move|put) the ([a-z]+ \d+) (?:to|in|on|into) the ([a-z]+ \d+)\.")
_TREAT = re.compile(r"You (heat|cool|clean) the ([a-z]+ \d+) using the ([a-z]+ \d+)\.")
_USE = re.compile(r"You turn on the ([a-z]+ \d+)\.")
_ROOM = re.compile(r"Looking quickly around you, you see (.*?)\.(?:\s|$)")
_ITEM = re.compile(r"(?:and )?an? ([a-z]+ \d+)")
_TREAT_WORD = {"heat": "hot", "cool": "cool", "clean": "clean"}


def _cls(name: str) -> str:
    return name.rsplit(" ", 1)[0]


def _items(text: str) -> list[str]:
    if text.strip() == "nothing":
        return []
    return _ITEM.findall(text)


def shown_text(observation: str | Mapping[str, Any] | None) -> str:
    """The text an agent is shown for ``observation``: ``goal + "\\n" + latest text``.

    A string is taken as the shown text itself. A mapping contributes only its ``goal``
    (optional) and ``observation`` keys; ``None`` or a missing observation is shown as
    the empty string (the policy then acts on its belief alone).
    """
    if observation is None:
        return ""
    if isinstance(observation, str):
        return observation
    if not isinstance(observation, Mapping):
        raise TypeError(f"observation: expected str or mapping, got {type(observation).__name__}")
    goal = observation.get("goal") or ""
    text = observation.get("observation") or ""
    return f"{goal}\n{text}" if goal else str(text)


@dataclass
class Belief:
    """What the policy believes, built only from shown texts and its own commands."""

    goal: str = ""
    goal_tokens: tuple[str, ...] = ()
    receptacles: list[str] = field(default_factory=list)
    at: str | None = None
    contents: dict[str, list[str]] = field(default_factory=dict)
    closed: set[str] = field(default_factory=set)
    opened: set[str] = field(default_factory=set)
    holding: str | None = None
    treated: dict[str, set[str]] = field(default_factory=dict)
    lamp_on: bool = False
    placed: set[str] = field(default_factory=set)
    visits: dict[str, int] = field(default_factory=dict)
    tried: dict[str, int] = field(default_factory=dict)
    last_command: str | None = None
    last_failed: bool = False
    failed: set[str] = field(default_factory=set)
    last_moved: str | None = None
    prev_at: str | None = None
    steps: int = 0
    #: ``(listed, own)`` while the engine's admissible list is shown (policy with
    #: ``admissible=True``): the commands of the shown list and the policy's own
    #: belief-generated candidates; ``None`` when no list is shown (features unchanged).
    shown_list: tuple[frozenset, frozenset] | None = None

    def update(self, text: str) -> None:
        """Fold one shown text (goal line and/or latest observation) into the belief."""
        text = text or ""
        m = _GOAL_RE.search(text)
        if m and not self.goal:
            goal = m.group(1).strip().rstrip(".").lower()
            self.goal = goal
            toks = [t for t in re.findall(r"[a-z]+", goal) if t not in _STOP]
            self.goal_tokens = tuple(dict.fromkeys(toks))
        self.last_failed = NOTHING in text
        if self.last_failed and self.last_command is not None:
            self.failed.add(self.last_command)
        self._read_location(text)
        for r, items in _ON.findall(text):
            self.contents[r] = _items(items)
        for r in _CLOSED.findall(text):
            self.closed.add(r)
            self.opened.discard(r)
        for r in _OPEN.findall(text):
            self.opened.add(r)
            self.closed.discard(r)
        for r, items in _IN.findall(text):
            self.contents[r] = _items(items)
            self.opened.add(r)
            self.closed.discard(r)
        for r in _CLOSE.findall(text):
            self.closed.add(r)
            self.opened.discard(r)
        for o, r in _TAKE.findall(text):
            self.holding = o
            if o in self.contents.get(r, []):
                self.contents[r] = [x for x in self.contents[r] if x != o]
            self.placed.discard(o)
        for o, r in _MOVE.findall(text):
            self.last_moved = o
            self.contents.setdefault(r, [])
            if o not in self.contents[r]:
                self.contents[r].append(o)
            if self.holding == o:
                self.holding = None
            if _cls(r) in self.goal_tokens:
                self.placed.add(o)
        for verb, o, _r in _TREAT.findall(text):
            self.treated.setdefault(o, set()).add(_TREAT_WORD[verb])
        if _USE.search(text):
            self.lamp_on = True
        if "You are not carrying anything." in text:
            self.holding = None
        m = re.search(r"You are carrying: an? ([a-z]+ \d+)\.", text)
        if m:
            self.holding = m.group(1)

    def _read_location(self, text: str) -> None:
        """The room's receptacles, and where the agent now is: an arrival ("You arrive at
        X") counts a visit; the raw ``look`` reply ("You are facing X") only places it."""
        m = _ROOM.search(text)
        if m:
            for r in _items(m.group(1)):
                if r not in self.receptacles:
                    self.receptacles.append(r)
        for r in _ARRIVE.findall(text):
            if r not in self.receptacles:
                self.receptacles.append(r)
            if r != self.at:
                self.prev_at = self.at
            self.at = r
            self.visits[r] = self.visits.get(r, 0) + 1
        for r in _FACING.findall(text):
            if r not in self.receptacles:
                self.receptacles.append(r)
            if r != self.at:
                self.prev_at = self.at
            self.at = r

    def record_command(self, command: str) -> None:
        """Remember a command the policy chose (counts only; effects come from texts)."""
        self.tried[command] = self.tried.get(command, 0) + 1
        self.last_command = command
        self.steps += 1


def candidate_commands(b: Belief) -> list[str]:
    """Candidate commands from the belief and the ALFWorld 0.4 grammar (module docstring)."""
    out = ["look", "inventory"]
    out += [f"go to {r}" for r in b.receptacles if r != b.at]
    if b.at is not None:
        r = b.at
        if r in b.closed:
            out.append(f"open {r}")
        if r in b.opened:
            out.append(f"close {r}")
        out.append(f"examine {r}")
        seen = b.contents.get(r, [])
        if b.holding is None:
            out += [f"take {o} from {r}" for o in seen]
        else:
            h = b.holding
            out.append(f"move {h} to {r}")
            out += [f"{v} {h} with {r}" for v in ("heat", "cool", "clean")]
        out += [f"use {o}" for o in seen if o != b.holding]
    if b.holding is not None:
        out.append(f"examine {b.holding}")
    return list(dict.fromkeys(out))
