"""Pre-decision router features from a text-agent transcript (CIR paper, "Inputs use only
information available before a candidate intervention: action and reasoning repetition,
no-ops, observation novelty, action-observation consistency, task progress, and
context-budget statistics").

A transcript is a sequence of turns, each a mapping with ``action`` (the command the
agent issued), ``observation`` (the text the harness *showed* the agent after it) and
optional ``reasoning``. ``decision_features(transcript, t, ...)`` reads ``transcript[:t]``
only -- the turns up to the decision point -- so nothing after the decision point can
leak into the features (tested by perturbing every later turn).
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

__all__ = ["FEATURE_NAMES", "decision_features", "NOOP_TEXT"]

#: ALFWorld's answer to an action that changes nothing.
NOOP_TEXT = "nothing happens"
_WORD = re.compile(r"[a-z]+")
_STOP = frozenset({"a", "an", "the", "to", "in", "on", "of", "from", "with", "some", "put", "go", "take", "and",
                   "you", "your", "it", "is", "at", "look", "then", "task", "s"})

#: Names and order of the features :func:`decision_features` returns.
FEATURE_NAMES: tuple[str, ...] = (
    "action_repeat", "action_distinct", "reasoning_repeat", "noop_rate", "obs_seen_before", "obs_novelty_rate",
    "consistency_last", "consistency_mean", "progress_goal_words", "steps_frac", "turns_left_frac",
    "context_chars", "last_obs_chars",
)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(str(text).lower()) if w not in _STOP}


def _consistency(action: str, observation: str) -> float:
    """Share of the action's argument words that the shown observation mentions (1 when
    the action has no argument words)."""
    aw = _words(action)
    if not aw:
        return 1.0
    return len(aw & _words(observation)) / len(aw)


def decision_features(
    transcript: Sequence[Mapping[str, Any]],
    t: int,
    *,
    goal: str = "",
    initial_observation: str = "",
    window: int = 4,
    turn_cap: int = 49,
    action_cap: int = 64,
) -> dict[str, float]:
    """Features at decision point ``t`` (after ``t`` turns) from ``transcript[:t]`` only.

    Parameters
    ----------
    transcript : sequence of turns ``{"action", "observation"[, "reasoning"]}``; turn
        ``i``'s observation is what the agent was shown after action ``i``.
    t : number of turns before the decision (``0 <= t <= len(transcript)``).
    goal : the task text (progress = share of its content words the agent's actions
        have named so far).
    initial_observation : the text shown before the first action.
    window : turns in the recent window (repetition, no-ops, novelty, consistency).
    turn_cap, action_cap : the run's caps (budget statistics; paper 49 / 64).

    Returns
    -------
    dict ``{name: float}`` in :data:`FEATURE_NAMES` order; rates lie in [0, 1], character
    counts are in thousands.

    Raises
    ------
    ValueError
        ``t`` outside ``[0, len(transcript)]`` or a non-positive window / cap.
    """
    if not 0 <= int(t) <= len(transcript):
        raise ValueError(f"decision point t={t} outside [0, {len(transcript)}]")
    if window < 1 or turn_cap < 1 or action_cap < 1:
        raise ValueError("window, turn_cap and action_cap must be positive")
    turns = [dict(x) for x in transcript[: int(t)]]  # nothing after t is ever read
    acts = [str(x.get("action", "")) for x in turns]
    obs = [str(x.get("observation", "")) for x in turns]
    reas = [str(x.get("reasoning", "")) for x in turns]
    w = turns[-window:]
    wa, wo, wr = acts[-window:], obs[-window:], reas[-window:]
    start = len(turns) - len(w)

    def rep(seq: list[str], full: list[str], start: int) -> float:
        if not seq:
            return 0.0
        hits = sum(1 for i in range(len(seq)) if start + i > 0 and full[start + i - 1] == seq[i] and seq[i] != "")
        return hits / len(seq)

    shown = [str(initial_observation)] + obs
    seen_before = 0.0
    if obs:
        seen_before = float(obs[-1] in shown[:-1])
    novelty = 0.0
    if wo:
        novelty = sum(1 for i, o in enumerate(wo) if o not in shown[: 1 + start + i]) / len(wo)
    cons = [_consistency(a, o) for a, o in zip(wa, wo)]
    gw = _words(goal)
    named = set().union(*[_words(a) for a in acts]) if acts else set()
    progress = len(gw & named) / len(gw) if gw else 0.0
    return {
        "action_repeat": rep(wa, acts, start),
        "action_distinct": (len(set(wa)) / len(wa)) if wa else 1.0,
        "reasoning_repeat": rep(wr, reas, start),
        "noop_rate": (sum(NOOP_TEXT in o.lower() for o in wo) / len(wo)) if wo else 0.0,
        "obs_seen_before": seen_before,
        "obs_novelty_rate": novelty,
        "consistency_last": cons[-1] if cons else 1.0,
        "consistency_mean": (sum(cons) / len(cons)) if cons else 1.0,
        "progress_goal_words": progress,
        "steps_frac": len(turns) / action_cap,
        "turns_left_frac": max(0.0, 1.0 - len(turns) / turn_cap),
        "context_chars": (len(initial_observation) + sum(len(a) + len(o) + len(r) for a, o, r in zip(acts, obs, reas)))
        / 1000.0,
        "last_obs_chars": len(shown[-1]) / 1000.0,
    }
