"""Validation of ALFWorld-format problems before the engine loads them.

:func:`validate_game` checks that every predicate the goal of a game needs is present in
the problem's ``:init`` (and every type the domain uses undeclared is declared), raising
:class:`GameValidationError` instead of the engine's ``KeyError: 'val1'``. Used by the
generator (:mod:`.generate`) on every problem it writes and by the environment
(:mod:`.env`) on every game it loads; it imports neither.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

__all__ = ["TASK_TYPES", "UNDECLARED_TYPES", "GameValidationError", "validate_game"]

#: The six ALFWorld task types, in the order of ``alfworld.agents.environment.TASK_TYPES``.
TASK_TYPES: tuple[str, ...] = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
#: Types the domain uses in preconditions without declaring them (KeyError if absent).
UNDECLARED_TYPES: dict[str, str] = {
    "MicrowaveType": "rtype",
    "SinkBasinType": "rtype",
    "FridgeType": "rtype",
    "KnifeType": "otype",
    "ButterKnifeType": "otype",
}
_APPLIANCE = {
    "pick_clean_then_place_in_recep": "SinkBasin",
    "pick_heat_then_place_in_recep": "Microwave",
    "pick_cool_then_place_in_recep": "Fridge",
}
_ACTION_SET = {
    "pick_clean_then_place_in_recep": "Cleanable",
    "pick_heat_then_place_in_recep": "Heatable",
    "pick_cool_then_place_in_recep": "Coolable",
}


class GameValidationError(ValueError):
    """A problem lacks a predicate its goal needs (raised before the engine loads it)."""


_FACT = re.compile(r"\(\s*([A-Za-z][\w-]*)((?:\s+[^\s()]+)*)\s*\)")


def _init_facts(problem: str) -> list[tuple[str, tuple[str, ...]]]:
    low = problem
    i = low.find("(:init")
    j = low.find("(:goal")
    if i < 0 or j < 0:
        raise GameValidationError("problem has no (:init ...) or no (:goal ...) section")
    facts = []
    for m in _FACT.finditer(low[i + len("(:init"): j]):
        facts.append((m.group(1).lower(), tuple(a.lower() for a in m.group(2).split())))
    return facts


def _declared(problem: str) -> dict[str, str]:
    i = problem.find("(:objects")
    j = problem.find("(:init")
    body = problem[i + len("(:objects"): j]
    out = {}
    pending: list[str] = []
    toks = body.replace("(", " ").replace(")", " ").split()
    k = 0
    while k < len(toks):
        if toks[k] == "-" and k + 1 < len(toks):
            for name in pending:
                out[name.lower()] = toks[k + 1].lower()
            pending = []
            k += 2
        else:
            pending.append(toks[k])
            k += 1
    return out


def validate_game(game: Mapping[str, Any]) -> None:
    """Check, before the engine sees it, that every predicate the goal needs is present.

    For the task type and ``pddl_params`` in ``game['traj_data']``: the goal's object and
    receptacle types exist (``objectType``/``receptacleType``, two objects for
    ``pick_two_obj_and_place``), an object of the target type is ``pickupable`` and some
    receptacle of the target type ``canContain`` it; ``cleanable`` + a ``SinkBasinType``
    receptacle (clean), ``heatable`` + ``MicrowaveType`` (heat), ``coolable`` +
    ``FridgeType`` (cool), a ``toggleable`` object of the toggle type ``inReceptacle`` some
    receptacle with ``receptacleAtLocation`` (look). Every type the domain uses without
    declaring it (:data:`UNDECLARED_TYPES`) must be declared.

    Raises :class:`GameValidationError` (a ``ValueError``) naming the task id, the missing
    predicate and the object/type it was needed for -- instead of the engine's
    ``KeyError: 'val1'``.

    Length: a flat list of independent checks, in the order above.
    """
    for key in ("pddl_domain", "grammar", "pddl_problem", "traj_data"):
        if key not in game:
            raise KeyError(f"game {game.get('task_id', '?')!r}: missing key {key!r}")
    traj = game["traj_data"]
    task = game.get("task_id") or traj.get("task_id", "?")
    tt = traj.get("task_type")
    if tt not in TASK_TYPES:
        raise GameValidationError(f"task {task!r}: task_type {tt!r} not one of {list(TASK_TYPES)}")
    p = traj["pddl_params"]
    problem = game["pddl_problem"]
    declared = _declared(problem)
    for tname, kind in UNDECLARED_TYPES.items():
        if declared.get(tname.lower()) != kind:
            raise GameValidationError(
                f"task {task!r} ({tt}): type {tname} must be declared as '{tname} - {kind}' "
                "(the domain uses it without declaring it)"
            )
    facts = _init_facts(problem)
    by_pred: dict[str, list[tuple[str, ...]]] = {}
    for name, args in facts:
        by_pred.setdefault(name, []).append(args)

    def _need(pred: str, what: str, ok: bool) -> None:
        if not ok:
            raise GameValidationError(f"task {task!r} ({tt}): goal needs ({pred} ...) for {what}, but :init has none")

    def objs_of(t: str) -> list[str]:
        return [a[0] for a in by_pred.get("objecttype", []) if a[1] == t.lower() + "type"]

    def recs_of(t: str) -> list[str]:
        return [a[0] for a in by_pred.get("receptacletype", []) if a[1] == t.lower() + "type"]

    def has(pred: str, *args: str) -> bool:
        return tuple(args) in set(by_pred.get(pred, []))

    obj = p.get("object_target", "")
    o_ids = objs_of(obj)
    _need("objectType", f"object {obj}Type", bool(o_ids))
    if tt == "pick_two_obj_and_place":
        _need("objectType", f"two objects of type {obj}Type (found {len(o_ids)})", len(o_ids) >= 2)
    _need("pickupable", f"an object of type {obj}Type", any(has("pickupable", o) for o in o_ids))
    if tt == "look_at_obj_in_light":
        tog = p.get("toggle_target", "")
        t_ids = objs_of(tog)
        _need("objectType", f"toggle object {tog}Type", bool(t_ids))
        _need("toggleable", f"an object of type {tog}Type", any(has("toggleable", o) for o in t_ids))
        in_rec = {a[0]: a[1] for a in by_pred.get("inreceptacle", [])}
        at_loc = {a[0] for a in by_pred.get("receptacleatlocation", [])}
        _need(
            "inReceptacle",
            f"toggle object {tog}Type in a receptacle with receptacleAtLocation",
            any(in_rec.get(o) in at_loc for o in t_ids),
        )
        return
    rec = p.get("parent_target", "")
    r_ids = recs_of(rec)
    _need("receptacleType", f"receptacle {rec}Type", bool(r_ids))
    _need("receptacleAtLocation", f"a receptacle of type {rec}Type",
          any(a[0] in r_ids for a in by_pred.get("receptacleatlocation", [])))
    _need("canContain", f"{rec}Type holding {obj}Type", has("cancontain", rec.lower() + "type", obj.lower() + "type"))
    if tt in _APPLIANCE:
        pred = {"Cleanable": "cleanable", "Heatable": "heatable", "Coolable": "coolable"}[_ACTION_SET[tt]]
        _need(pred, f"an object of type {obj}Type", any(has(pred, o) for o in o_ids))
        app = _APPLIANCE[tt]
        _need("receptacleType", f"a {app}Type receptacle ({pred[:-4]} needs one)", bool(recs_of(app)))
