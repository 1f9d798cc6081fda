"""Seeded generator of ALFWorld-format household problems (all six task types).

The official ALFWorld task files (``alfworld-download``) are not needed: this module
writes problems in ``(:domain alfred)`` against the domain and grammar shipped with the
``alfworld`` package (``alfworld/data/alfred.pddl``, ``alfworld/data/alfred.twl2``) and
the real ALFWorld engine (TextWorld ``PddlEnv`` + fast-downward) plays them.

Rooms come from the AI2-THOR floor plans shipped in ``alfworld/gen/layouts``
(``FloorPlan<n>-openable.json`` lists the receptacles with their ALFRED ids,
``FloorPlan<n>-objects.json`` the object classes of the scene), capped at 36
receptacles: kitchens have 16--36 (mean 28), living rooms 6--35 (mean 14), bedrooms 6--25
(mean 13), bathrooms 9--19 (mean 13), as in ALFWorld. Objects of every pickupable class of the scene are scattered (1--3 instances each) in
receptacles that may hold them (``alfworld.gen.constants.VAL_RECEPTACLE_OBJECTS``), so
most objects are distractors. Goals are ``alfworld.gen.goal_library.gdict[task_type]
['pddl']``.

Two pools mirror ALFWorld's validation splits: ``valid_seen`` draws rooms from
``constants.TRAIN_SCENE_NUMBERS`` and ``valid_unseen`` from
``constants.TEST_SCENE_NUMBERS``; the two sets of floor plans are disjoint, so an unseen
room layout is never used by the seen pool.

Source: Shridhar et al. (2021), ALFWorld; the handoff paper's protocol (Section 4.1,
Appendix A) uses 30 tasks per split, five per task type.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping, Sequence

import numpy as np

import alfworld.gen.constants as C
import alfworld.gen.goal_library as glib
from alfworld.agents.utils.misc import add_task_to_grammar

from agentstudies.envs.alfworld.validation import (
    _ACTION_SET,
    _APPLIANCE,
    TASK_TYPES,
    UNDECLARED_TYPES,
    GameValidationError,
    validate_game,
)

__all__ = [
    "TASK_TYPES",
    "SHORT_NAMES",
    "SPLITS",
    "UNDECLARED_TYPES",
    "GameSpec",
    "GameValidationError",
    "load_layout",
    "sample_spec",
    "render_problem",
    "make_game",
    "validate_game",
    "generate_game",
    "generate_pool",
    "pool_digest",
    "domain_text",
    "grammar_text",
]

SHORT_NAMES: dict[str, str] = {
    "pick_and_place_simple": "pick",
    "look_at_obj_in_light": "look",
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool",
    "pick_two_obj_and_place": "two",
}
#: Floor plans per pool: seen = ALFRED training scenes, unseen = held-out scenes (disjoint).
SPLITS: dict[str, tuple[int, ...]] = {
    "valid_seen": tuple(C.TRAIN_SCENE_NUMBERS),
    "valid_unseen": tuple(C.TEST_SCENE_NUMBERS),
    # training problems for the learned checkpoints (studies/alfworld/training/__init__.py): the
    # training floor plans, as in ALFWorld's own train split; its own key in every seed
    "train": tuple(C.TRAIN_SCENE_NUMBERS),
    # development problems (checkpoint selection / learning-curve evaluations during
    # training): training floor plans, their own key; never in an evaluation pool
    # (appended last so the spawn keys of the other splits are unchanged)
    "dev": tuple(C.TRAIN_SCENE_NUMBERS),
}

_STATIC_RECEPTACLES = frozenset(C.RECEPTACLES - C.MOVABLE_RECEPTACLES_SET) - {"Box"}
_OPENABLE = frozenset({"Fridge", "Cabinet", "Microwave", "Drawer", "Safe"})
_SLICED = frozenset(c for c in C.OBJECTS_WSLICED if c.endswith("Sliced"))
_PICKUPABLE = frozenset(
    set().union(*C.VAL_RECEPTACLE_OBJECTS.values()) - _SLICED - _STATIC_RECEPTACLES
)
_LAMPS = ("DeskLamp", "FloorLamp")
_LAMP_HOLDERS = ("Desk", "SideTable", "Dresser", "Shelf", "CoffeeTable", "DiningTable", "TVStand")
_EXTRA_COUNTS = {"StoveBurner": 4}
#: Largest room generated (ALFWorld kitchens reach the mid-thirties; FloorPlan30 lists 54).
MAX_RECEPTACLES = 36
_ROOMS = {name: set(rng) for name, rng in C.SCENE_TYPE.items()}


def domain_text() -> str:
    """Text of the shipped ALFRED PDDL domain (``alfworld/data/alfred.pddl``)."""
    return _read_data("alfred.pddl")


def grammar_text() -> str:
    """Text of the shipped ALFRED TextWorld grammar (``alfworld/data/alfred.twl2``)."""
    return _read_data("alfred.twl2")


@lru_cache(maxsize=None)
def _read_data(name: str) -> str:
    return resources.files("alfworld").joinpath("data", name).read_text()


def room_type(layout: int) -> str:
    """Room type (Kitchen, LivingRoom, Bedroom, Bathroom) of an AI2-THOR floor plan."""
    for name, ids in _ROOMS.items():
        if layout in ids:
            return name
    raise KeyError(f"layout {layout!r}: not an AI2-THOR floor plan id (1-30, 201-230, 301-330, 401-430)")


def _mangle(thor_id: str) -> str:
    return (
        thor_id.replace("|", "_bar_").replace("+", "_plus_").replace("-", "_minus_").replace(".", "_dot_")
    )


def _coord(v: float) -> str:
    return f"{v:+06.2f}"


@dataclass(frozen=True)
class Layout:
    """A floor plan: receptacles ``(pddl_id, class, location)`` and object classes present."""

    layout: int
    room: str
    receptacles: tuple[tuple[str, str, str], ...]
    object_classes: tuple[str, ...]


@lru_cache(maxsize=None)
def load_layout(layout: int) -> Layout:
    """Read ``FloorPlan<layout>`` from ``alfworld/gen/layouts``.

    Receptacles are the non-movable receptacles of ``-openable.json`` (ALFRED ids, e.g.
    ``Sink|-01.90|+00.97|-01.50|SinkBasin`` -> ``Sink_bar__minus_01_dot_90_..._bar_SinkBasin``
    which reads "sinkbasin 1"), plus one instance of each receptacle class listed in
    ``-objects.json`` but absent there (four stove burners); rooms above
    :data:`MAX_RECEPTACLES` lose their surplus cabinets/drawers. Each receptacle gets its
    own location ``loc_bar_<x>_bar_<z>_bar_<rot>_bar_<horizon>`` (made unique).

    Raises ``KeyError`` for an unknown floor plan.
    """
    room = room_type(layout)
    base = resources.files("alfworld").joinpath("gen", "layouts")
    points = json.loads(base.joinpath(f"FloorPlan{layout}-openable.json").read_text())
    classes_present = json.loads(base.joinpath(f"FloorPlan{layout}-objects.json").read_text())
    recs: list[tuple[str, str, tuple]] = []
    seen_classes = set()
    for thor_id in sorted(points):
        parts = thor_id.split("|")
        cls = parts[-1] if parts[-1].endswith("Basin") else parts[0]
        if cls not in _STATIC_RECEPTACLES:
            continue
        x, z, rot, hor = points[thor_id]
        recs.append((_mangle(thor_id), cls, (int(round(x * 4)), int(round(z * 4)), int(rot) // 90 % 4, int(hor))))
        seen_classes.add(cls)
    h = int(hashlib.sha256(f"layout{layout}".encode()).hexdigest()[:8], 16)
    extra_rng = np.random.default_rng(h)
    for cls in sorted(set(classes_present)):
        if cls in seen_classes or cls not in _STATIC_RECEPTACLES:
            continue
        for _ in range(_EXTRA_COUNTS.get(cls, 1)):
            xyz = extra_rng.uniform(-3, 3, size=3).round(2)
            thor_id = f"{cls}|{_coord(xyz[0])}|{_coord(xyz[1])}|{_coord(xyz[2])}"
            loc = (int(round(xyz[0] * 4)), int(round(xyz[2] * 4)), int(extra_rng.integers(4)), 30)
            recs.append((_mangle(thor_id), cls, loc))
    # cap the room at MAX_RECEPTACLES by thinning the most numerous classes (cabinets,
    # drawers) deterministically, keeping at least one of each class
    recs.sort()
    while len(recs) > MAX_RECEPTACLES:
        counts: dict[str, int] = {}
        for _, cls, _ in recs:
            counts[cls] = counts.get(cls, 0) + 1
        big = max(sorted(counts), key=lambda c: counts[c])
        idx = max(i for i, rec in enumerate(recs) if rec[1] == big)
        del recs[idx]
    used: set[str] = set()
    out = []
    for rid, cls, (x, z, r, hz) in sorted(recs):
        loc = _mangle(f"loc|{x}|{z}|{r}|{hz}").replace("|", "_bar_")
        k = 0
        base_loc = loc
        while loc in used:
            k += 1
            loc = f"{base_loc}_bar_{k}"
        used.add(loc)
        out.append((rid, cls, loc))
    objs = tuple(sorted(c for c in set(classes_present) if c in _PICKUPABLE or c in _LAMPS))
    return Layout(layout=layout, room=room, receptacles=tuple(out), object_classes=objs)


@dataclass(frozen=True)
class GameSpec:
    """Structured content of one generated problem (everything the PDDL is rendered from)."""

    task_id: str
    split: str
    layout: int
    task_type: str
    pddl_params: Mapping[str, Any]
    receptacles: tuple[tuple[str, str, str], ...]  # (id, class, location)
    objects: tuple[tuple[str, str, str], ...]  # (id, class, receptacle id)
    start_location: str = "loc_bar_start"
    attempt: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)


def _valid_receps(ocls: str, rec_classes: Sequence[str]) -> list[str]:
    return [r for r in rec_classes if ocls in C.VAL_RECEPTACLE_OBJECTS.get(r, ())]


def _task_candidates(task_type: str, lay: Layout) -> list[dict[str, str]]:
    rec_classes = sorted({c for _, c, _ in lay.receptacles})
    objs = [o for o in lay.object_classes if o in _PICKUPABLE]
    cands: list[dict[str, str]] = []
    if task_type == "look_at_obj_in_light":
        lamps = [lp for lp in _LAMPS if lp in lay.object_classes]
        holders = [r for r in rec_classes if r in _LAMP_HOLDERS]
        if not holders:
            return []
        for lamp in lamps:
            for o in objs:
                if len(_valid_receps(o, rec_classes)) >= 1:
                    cands.append(dict(obj=o, recep="", toggle=lamp))
        return cands
    appliance = _APPLIANCE.get(task_type)
    if appliance and appliance not in rec_classes:
        return []
    action_set = C.VAL_ACTION_OBJECTS[_ACTION_SET[task_type]] if task_type in _ACTION_SET else None
    for o in objs:
        if action_set is not None and o not in action_set:
            continue
        receps = _valid_receps(o, rec_classes)
        for r in receps:
            if appliance and r == appliance:
                continue
            if task_type == "pick_clean_then_place_in_recep" and r == "BathtubBasin":
                continue
            # the object must be placeable somewhere that is not the target type
            if not [x for x in receps if x != r]:
                continue
            cands.append(dict(obj=o, recep=r, toggle=""))
    return cands


def _obj_id(cls: str, rng: np.random.Generator) -> str:
    xyz = rng.uniform(-3, 3, size=3)
    return _mangle(f"{cls}|{_coord(xyz[0])}|{_coord(xyz[1])}|{_coord(xyz[2])}")


def sample_spec(
    split: str,
    task_type: str,
    index: int,
    seed: int,
    attempt: int = 0,
    *,
    layouts: Sequence[int] | None = None,
) -> GameSpec:
    """Draw the content of task ``index`` of ``task_type`` in pool ``split``.

    All randomness comes from ``SeedSequence(seed, spawn_key=(split, type, index,
    attempt))``, so the same arguments always give the same spec, whatever else is drawn.

    ``layouts`` restricts the floor plans (they must belong to the split).

    Raises ``KeyError`` for an unknown split or task type, ``ValueError`` for a layout not
    in the split, ``RuntimeError`` when no floor plan supports the task type.

    Length: one body on purpose -- the order of the random draws fixes every generated
    problem and so the checksums of the embedded pools; splitting it must keep that order.
    """
    if split not in SPLITS:
        raise KeyError(f"split {split!r}: expected one of {sorted(SPLITS)}")
    if task_type not in TASK_TYPES:
        raise KeyError(f"task_type {task_type!r}: expected one of {list(TASK_TYPES)}")
    ss = np.random.SeedSequence(
        int(seed), spawn_key=(list(SPLITS).index(split), TASK_TYPES.index(task_type), int(index), int(attempt))
    )
    rng = np.random.default_rng(ss)
    rooms = C.GOALS_VALID[task_type]
    allowed = SPLITS[split]
    if layouts is not None:
        bad = [n for n in layouts if n not in allowed]
        if bad:
            raise ValueError(f"layouts {bad} are not floor plans of split {split!r}")
        allowed = tuple(layouts)
    layouts = [
        lay for lay in (load_layout(n) for n in allowed)
        if lay.room in rooms and _task_candidates(task_type, lay)
    ]
    if not layouts:
        raise RuntimeError(f"no floor plan of split {split!r} supports task type {task_type!r}")
    lay = layouts[int(rng.integers(len(layouts)))]
    cands = _task_candidates(task_type, lay)
    params = cands[int(rng.integers(len(cands)))]
    target_o, target_r, toggle = params["obj"], params["recep"], params["toggle"]
    rec_classes = sorted({c for _, c, _ in lay.receptacles})
    by_class: dict[str, list[str]] = {}
    for rid, cls, _ in lay.receptacles:
        by_class.setdefault(cls, []).append(rid)

    objects: list[tuple[str, str, str]] = []
    used_ids: set[str] = set()

    def _place(cls: str, n: int, exclude: set[str]) -> None:
        options = [r for r in _valid_receps(cls, rec_classes) if r not in exclude]
        if cls in _LAMPS:
            options = [r for r in rec_classes if r in _LAMP_HOLDERS]
        if not options:
            return
        for _ in range(n):
            rcls = options[int(rng.integers(len(options)))]
            rid = by_class[rcls][int(rng.integers(len(by_class[rcls])))]
            oid = _obj_id(cls, rng)
            while oid in used_ids:
                oid = _obj_id(cls, rng)
            used_ids.add(oid)
            objects.append((oid, cls, rid))

    for cls in lay.object_classes:
        if cls in _LAMPS:
            n = 1 if cls != toggle else 1
        else:
            n = int(rng.choice([1, 2, 3], p=[0.5, 0.3, 0.2]))
        exclude: set[str] = set()
        if cls == target_o:
            if task_type == "pick_two_obj_and_place":
                n = max(n, 2)
            # no instance of the target class may start in a receptacle of the target type
            exclude = {target_r} if target_r else set()
            if task_type in _APPLIANCE:
                exclude.add(_APPLIANCE[task_type])
        _place(cls, n, exclude)
    objects.sort()
    pddl_params = {
        "object_target": target_o,
        "parent_target": target_r,
        "toggle_target": toggle,
        "mrecep_target": "",
        "object_sliced": False,
    }
    task_id = f"{split}-{SHORT_NAMES[task_type]}-{index:02d}"
    start = f"loc_bar_start_bar_{lay.layout}"
    return GameSpec(
        task_id=task_id,
        split=split,
        layout=lay.layout,
        task_type=task_type,
        pddl_params=pddl_params,
        receptacles=lay.receptacles,
        objects=tuple(objects),
        start_location=start,
        attempt=attempt,
        extra={"template_seed": int(rng.integers(2**31 - 1))},
    )


def render_problem(spec: GameSpec) -> str:
    """Render a :class:`GameSpec` as a PDDL problem in ``(:domain alfred)``.

    Declares every class type present plus :data:`UNDECLARED_TYPES`; ``:init`` holds
    ``atLocation``, ``receptacleType``, ``receptacleAtLocation``, ``openable``,
    ``objectType``, ``inReceptacle``, ``objectAtLocation``, ``pickupable``,
    ``isReceptacleObject``, ``canContain`` (all valid pairs of the room, from
    ``VAL_RECEPTACLE_OBJECTS``), ``heatable`` / ``coolable`` / ``cleanable`` (from
    ``VAL_ACTION_OBJECTS``) and ``toggleable`` (lamps). The goal is
    ``goal_library.gdict[task_type]['pddl']`` with ``#`` replaced by ``-``.
    """
    p = spec.pddl_params
    rec_loc = {rid: loc for rid, _, loc in spec.receptacles}
    rtypes = sorted({c for _, c, _ in spec.receptacles} | {k[:-4] for k, v in UNDECLARED_TYPES.items() if v == "rtype"})
    otypes = sorted({c for _, c, _ in spec.objects} | {k[:-4] for k, v in UNDECLARED_TYPES.items() if v == "otype"})
    lines = [f"(define (problem {spec.task_id.replace('-', '_')})", "(:domain alfred)", "(:objects", "    agent1 - agent"]
    lines += [f"    {t}Type - otype" for t in otypes]
    lines += [f"    {t}Type - rtype" for t in rtypes]
    lines += [f"    {oid} - object" for oid, _, _ in spec.objects]
    lines += [f"    {rid} - receptacle" for rid, _, _ in spec.receptacles]
    lines += [f"    {loc} - location" for loc in sorted({spec.start_location} | set(rec_loc.values()))]
    lines += ["    )", "(:init", f"    (atLocation agent1 {spec.start_location})"]
    for rid, cls, loc in spec.receptacles:
        lines.append(f"    (receptacleType {rid} {cls}Type)")
        lines.append(f"    (receptacleAtLocation {rid} {loc})")
        if cls in _OPENABLE:
            lines.append(f"    (openable {rid})")
    present_r = sorted({c for _, c, _ in spec.receptacles})
    present_o = sorted({c for _, c, _ in spec.objects})
    for oid, cls, rid in spec.objects:
        lines.append(f"    (objectType {oid} {cls}Type)")
        lines.append(f"    (inReceptacle {oid} {rid})")
        lines.append(f"    (objectAtLocation {oid} {rec_loc[rid]})")
        if cls in _PICKUPABLE:
            lines.append(f"    (pickupable {oid})")
        if cls in C.MOVABLE_RECEPTACLES_SET:
            lines.append(f"    (isReceptacleObject {oid})")
        if cls in C.VAL_ACTION_OBJECTS["Heatable"]:
            lines.append(f"    (heatable {oid})")
        if cls in C.VAL_ACTION_OBJECTS["Coolable"]:
            lines.append(f"    (coolable {oid})")
        if cls in C.VAL_ACTION_OBJECTS["Cleanable"]:
            lines.append(f"    (cleanable {oid})")
        if cls in C.VAL_ACTION_OBJECTS["Toggleable"]:
            lines.append(f"    (toggleable {oid})")
    for r in present_r:
        for o in present_o:
            if o in C.VAL_RECEPTACLE_OBJECTS.get(r, ()):
                lines.append(f"    (canContain {r}Type {o}Type)")
    lines.append("    )")
    goal = glib.gdict[spec.task_type]["pddl"].replace("#", "-")
    goal = goal.format(obj=p["object_target"], recep=p["parent_target"], toggle=p["toggle_target"], mrecep=p["mrecep_target"])
    return "\n".join(lines) + "\n" + goal.strip() + "\n"


def make_game(spec: GameSpec) -> dict[str, Any]:
    """Assemble the game dict the engine loads: ``pddl_domain``, ``grammar`` (task text via
    ``alfworld.agents.utils.misc.add_task_to_grammar``), ``pddl_problem`` and ``traj_data``
    (``task_type``, ``pddl_params``, ``scene``), plus ``task_id``/``split``/``layout``.

    The task-text template is drawn with the global ``random`` seeded from the spec; the
    global state is restored afterwards.
    """
    traj = {
        "task_type": spec.task_type,
        "pddl_params": dict(spec.pddl_params),
        "scene": {"floor_plan": f"FloorPlan{spec.layout}", "scene_num": spec.layout},
        "task_id": spec.task_id,
    }
    state = random.getstate()
    try:
        random.seed(int(spec.extra.get("template_seed", 0)))
        grammar = add_task_to_grammar(grammar_text(), traj)
    finally:
        random.setstate(state)
    m = re.search(r"Your task is to: (.*)\.\"", grammar)
    traj["task_desc"] = m.group(1) if m else ""
    return {
        "task_id": spec.task_id,
        "split": spec.split,
        "layout": spec.layout,
        "room": room_type(spec.layout),
        "pddl_domain": domain_text(),
        "grammar": grammar,
        "pddl_problem": render_problem(spec),
        "traj_data": traj,
        "attempt": spec.attempt,
    }


# --------------------------------------------------------------------------- validation
# --------------------------------------------------------------------------- pools
def generate_game(
    split: str,
    task_type: str,
    index: int,
    seed: int,
    *,
    budget: int = 48,
    min_plan_length: int = 4,
    max_plan_length: int = 14,
    max_attempts: int = 25,
    check: bool = True,
    env: Any = None,
    layouts: Sequence[int] | None = None,
    attempt: int | None = None,
) -> dict[str, Any]:
    """Generate one validated, winnable game.

    Attempt ``a = 0, 1, ...`` draws :func:`sample_spec` ``(split, task_type, index, seed,
    a)``; the first attempt whose problem validates, whose planner-expert plan at the
    start state (TextWorld's fast-downward planner, cost-optimal) has ``min_plan_length <=
    len <= max_plan_length`` and, executed in the engine, wins within ``budget`` steps is
    returned, with ``expert_plan`` and ``attempt`` recorded. The analytic expert
    (:mod:`.expert`) must find a plan of the same length, else ``RuntimeError`` (it would be
    a bug there). Regeneration is deterministic. ``check=False`` skips the engine
    (validation still runs); ``attempt`` forces one attempt (used to rebuild stored
    pools).

    A checked game (``check=True``) is pure in its arguments (``env`` aside, which only
    lends the engine), so it is kept across builds in the user cache
    (:mod:`.usercache`, keyed by every argument and the package / engine versions,
    checksummed; a corrupt entry is reported and the game generated again).

    Raises ``RuntimeError`` if ``max_attempts`` attempts all fail.
    """
    if check:
        from agentstudies.envs.alfworld import usercache

        if usercache.cache_folder() is not None:
            key = usercache.entry_key("alfworld-game", repr((split, task_type, int(index), int(seed), int(budget),
                                                             int(min_plan_length), int(max_plan_length),
                                                             int(max_attempts),
                                                             None if layouts is None else tuple(map(int, layouts)),
                                                             None if attempt is None else int(attempt))))
            game = usercache.get("alfworld-game", key)
            if game is None:
                game = _generate_game(split, task_type, index, seed, budget, min_plan_length, max_plan_length,
                                      max_attempts, check, env, layouts, attempt)
                usercache.put("alfworld-game", key, game)
            return game
    return _generate_game(split, task_type, index, seed, budget, min_plan_length, max_plan_length, max_attempts,
                          check, env, layouts, attempt)


def _generate_game(split, task_type, index, seed, budget, min_plan_length, max_plan_length, max_attempts, check,
                   env, layouts, attempt):
    """:func:`generate_game` without the cache."""
    last = None
    attempts = [attempt] if attempt is not None else range(max_attempts)
    for a in attempts:
        spec = sample_spec(split, task_type, index, seed, a, layouts=layouts)
        game = make_game(spec)
        try:
            validate_game(game)
        except GameValidationError as exc:  # pragma: no cover - generator bug guard
            last = str(exc)
            continue
        if not check:
            return game
        if env is None:
            from agentstudies.envs.alfworld.env import AlfworldEnv

            env = AlfworldEnv(budget=budget)
        from agentstudies.envs.alfworld.expert import Expert

        env.load_game(game)
        env.reset(seed=0)
        plan = env.expert_plan()
        if not (min_plan_length <= len(plan) <= max_plan_length):
            last = f"attempt {a}: expert plan length {len(plan)} outside [{min_plan_length}, {max_plan_length}]"
            continue
        analytic = Expert(env).plan()
        if len(analytic) != len(plan):
            raise RuntimeError(
                f"task {game['task_id']!r}: analytic expert plan has {len(analytic)} actions, "
                f"fast-downward's {len(plan)} ({analytic} vs {plan})"
            )
        for cmd in plan[:budget]:
            if env.done:
                break
            env.step(cmd)
        if not env.won:
            last = f"attempt {a}: planner expert did not win within {budget} steps"
            continue
        game["expert_plan"] = list(plan)
        return game
    raise RuntimeError(
        f"generate_game({split!r}, {task_type!r}, index={index}, seed={seed}): no winnable game in "
        f"{len(list(attempts))} attempt(s) (last: {last})"
    )


def generate_pool(
    split: str,
    tasks_per_type: int,
    seed: int = 2029,
    *,
    task_types: Sequence[str] = TASK_TYPES,
    budget: int = 48,
    check: bool = True,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """Generate a type-balanced pool: ``tasks_per_type`` games of each task type.

    Same ``(split, tasks_per_type, seed)`` -> byte-identical problems. Every game is
    validated and (``check=True``) won by the planner expert within ``budget`` steps.
    Returns a list of game dicts ordered by task type then index.
    """
    if tasks_per_type < 1:
        raise ValueError(f"tasks_per_type={tasks_per_type}: expected a positive integer")
    env = None
    if check:
        from agentstudies.envs.alfworld.env import AlfworldEnv

        env = AlfworldEnv(budget=budget)
    pool = []
    for tt in task_types:
        for k in range(tasks_per_type):
            pool.append(generate_game(split, tt, k, seed, budget=budget, check=check, env=env, **kwargs))
    return pool


def pool_digest(pool: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """SHA-256 of each game's ``pddl_problem`` + ``grammar``, keyed by task id."""
    return {
        g["task_id"]: hashlib.sha256((g["pddl_problem"] + "\n" + g["grammar"]).encode()).hexdigest()
        for g in pool
    }
