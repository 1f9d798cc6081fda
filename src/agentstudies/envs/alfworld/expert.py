"""Fast optimal expert for the six ALFWorld task types.

The planner expert of TextWorld (``PddlState.replan``) runs fast-downward's uniform-cost
search on the whole problem on every call; in rooms of ALFWorld's usual size (20-40
receptacles, 30-50 objects) that takes 0.05-10 s per call, far too slow for policies that
replan after every action over thousands of steps. This module computes the same
quantity -- an optimal plan (fewest actions) from the current engine state -- by
enumerating the few plan shapes the ALFRED domain allows:

    [put down a held object] -> [take a target object] -> [heat / cool / clean it]
    -> [put it in a receptacle of the target type]            (pick / clean / heat / cool)
    ... twice into the same receptacle                         (two objects)
    [take the object] + [go to the lamp] + [use the lamp], in either order (look)

over every choice of receptacle, object, appliance and lamp, with "go to" (1 action,
0 if already there) and "open" (1 action, 0 if open or not openable) priced from the
current state. Distractor objects never appear in an optimal plan (touching one costs at
least a take and a put and unlocks nothing). Optimality is checked, not assumed: the
tests compare the length of these plans with ``l_T(sigma)`` from exhaustive breadth-first
search on the engine and with fast-downward's own plan, and replay them to a win.

:class:`Expert` also exposes ``method="fast_downward"`` (TextWorld's planner, exact but
slow), which is what official ALFWorld games with shapes this module does not model
(objects in several receptacles, shared locations) should use.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:  # pragma: no cover
    from agentstudies.envs.alfworld.env import AlfworldEnv

__all__ = ["Expert", "optimal_plan"]

_PROPERTY = {
    "pick_clean_then_place_in_recep": ("isclean", "clean", "sinkbasintype"),
    "pick_heat_then_place_in_recep": ("ishot", "heat", "microwavetype"),
    "pick_cool_then_place_in_recep": ("iscool", "cool", "fridgetype"),
}
_PROPERTY_ABLE = {"isclean": "cleanable", "ishot": "heatable", "iscool": "coolable"}


@dataclass
class _Static:
    rec_loc: dict[str, str]
    rtype: dict[str, str]
    otype: dict[str, str]
    openable: frozenset
    cancontain: frozenset
    pickupable: frozenset
    able: dict[str, frozenset]
    toggleable: frozenset
    names: dict[str, str]


class _Sim:
    """Cheap forward model of the ALFRED domain for the relevant facts."""

    __slots__ = ("st", "loc", "opened", "held", "where", "props", "toggled", "cmds")

    def __init__(self, st, loc, opened, held, where, props, toggled):
        self.st = st
        self.loc = loc
        self.opened = set(opened)
        self.held = held
        self.where = dict(where)
        self.props = {k: set(v) for k, v in props.items()}
        self.toggled = set(toggled)
        self.cmds: list[str] = []

    def copy(self) -> "_Sim":
        s = _Sim(self.st, self.loc, self.opened, self.held, self.where, self.props, self.toggled)
        s.cmds = list(self.cmds)
        return s

    def n(self, x: str) -> str:
        return self.st.names[x]

    def goto(self, r: str) -> None:
        loc = self.st.rec_loc[r]
        if self.loc != loc:
            self.cmds.append(f"go to {self.n(r)}")
            self.loc = loc

    def open(self, r: str) -> None:
        if r in self.st.openable and r not in self.opened:
            self.cmds.append(f"open {self.n(r)}")
            self.opened.add(r)

    def take(self, o: str) -> None:
        c = self.where.pop(o)
        self.goto(c)
        self.open(c)
        self.cmds.append(f"take {self.n(o)} from {self.n(c)}")
        self.held = o

    def put(self, r: str) -> None:
        o = self.held
        self.goto(r)
        self.open(r)
        self.cmds.append(f"move {self.n(o)} to {self.n(r)}")
        self.where[o] = r
        self.held = None

    def treat(self, verb: str, prop: str, appliance: str) -> None:
        self.goto(appliance)
        self.cmds.append(f"{verb} {self.n(self.held)} with {self.n(appliance)}")
        self.props.setdefault(prop, set()).add(self.held)

    def toggle(self, lamp: str) -> None:
        self.goto(self.where[lamp])
        self.cmds.append(f"use {self.n(lamp)}")
        self.toggled.add(lamp)

    def cost_put(self, r: str) -> int:
        return (self.st.rec_loc[r] != self.loc) + (r in self.st.openable and r not in self.opened) + 1


def _best(cands: Iterable[_Sim]) -> list[str] | None:
    best = None
    for s in cands:
        if s is not None and (best is None or len(s.cmds) < len(best)):
            best = s.cmds
    return None if best is None else list(best)


class Expert:
    """Optimal next actions for the loaded ALFWorld game.

    Parameters
    ----------
    env:
        An :class:`~agentstudies.envs.alfworld.env.AlfworldEnv` with a game loaded.
    method:
        ``"analytic"`` (default; this module's enumeration) or ``"fast_downward"``
        (TextWorld's planner expert, ``env.expert_plan()``).
    """

    def __init__(self, env: "AlfworldEnv", method: str = "analytic"):
        if method not in ("analytic", "fast_downward"):
            raise ValueError(f"method={method!r}: expected 'analytic' or 'fast_downward'")
        self.env = env
        self.method = method
        self._static: _Static | None = None
        self._static_for: object = None

    # ---------------------------------------------------------------- facts
    def _facts(self) -> dict[str, list[tuple[str, ...]]]:
        ps = self.env._pddl._pddl_state
        out: dict[str, list[tuple[str, ...]]] = {}
        for sig, props in ps._facts.items():
            for p in props:
                out.setdefault(p.name, []).append(tuple(a.name for a in p.arguments))
        return out

    def _load_static(self) -> _Static:
        game = self.env.game
        if self._static is not None and self._static_for is game:
            return self._static
        f = self._facts()
        infos = self.env._pddl._entity_infos
        st = _Static(
            rec_loc={r: l for r, l in f.get("receptacleatlocation", [])},
            rtype={r: t for r, t in f.get("receptacletype", [])},
            otype={o: t for o, t in f.get("objecttype", [])},
            openable=frozenset(a[0] for a in f.get("openable", [])),
            cancontain=frozenset(f.get("cancontain", [])),
            pickupable=frozenset(a[0] for a in f.get("pickupable", [])),
            able={k: frozenset(a[0] for a in f.get(k, [])) for k in ("cleanable", "heatable", "coolable")},
            toggleable=frozenset(a[0] for a in f.get("toggleable", [])),
            names={k: v.name for k, v in infos.items()},
        )
        self._static = st
        self._static_for = game  # keep a reference: identity marks the loaded game
        return st

    def _sim(self) -> _Sim:
        st = self._load_static()
        f = self._facts()
        loc = next(iter(f.get("atlocation", [("", "")])))[1]
        held = next((o for _, o in f.get("holds", [])), None)
        where: dict[str, str] = {}
        for o, r in sorted(f.get("inreceptacle", [])):
            if o != held and o not in where:
                where[o] = r
        props = {p: {a[0] for a in f.get(p, [])} for p in ("isclean", "ishot", "iscool")}
        toggled = {a[0] for a in f.get("istoggled", [])}
        opened = {a[0] for a in f.get("opened", [])}
        return _Sim(st, loc, opened, held, where, props, toggled)

    # ---------------------------------------------------------------- planning
    def plan(self) -> list[str]:
        """An optimal plan (admissible command strings) from the current state; ``[]`` if
        won. Raises ``RuntimeError`` if no plan exists."""
        env = self.env
        if env.won:
            return []
        if self.method == "fast_downward":
            return env.expert_plan()
        traj = env.game.get("traj_data", {})
        tt = traj.get("task_type")
        p = traj.get("pddl_params", {})
        s = self._sim()
        obj_t = (p.get("object_target", "") + "Type").lower()
        rec_t = (p.get("parent_target", "") + "Type").lower()
        if tt == "look_at_obj_in_light":
            plan = self._plan_look(s, obj_t, (p.get("toggle_target", "") + "Type").lower())
        elif tt == "pick_two_obj_and_place":
            plan = self._plan_two(s, obj_t, rec_t)
        elif tt in _PROPERTY or tt == "pick_and_place_simple":
            plan = self._plan_single(s, obj_t, rec_t, _PROPERTY.get(tt))
        else:
            raise KeyError(f"task {env.task_id!r}: unknown task type {tt!r}")
        if plan is None:
            raise RuntimeError(f"task {env.task_id!r}: no plan found from the current state")
        return plan

    def next_action(self) -> str | None:
        """First action of :meth:`plan` (``None`` when won)."""
        plan = self.plan()
        return plan[0] if plan else None

    # -- helpers
    @staticmethod
    def _can_hold(st: _Static, r: str, o: str) -> bool:
        return (st.rtype.get(r), st.otype.get(o)) in st.cancontain

    def _drops(self, s: _Sim) -> list[_Sim]:
        """States after putting the held object down somewhere (every possible place)."""
        st = s.st
        out = []
        for r in sorted(st.rec_loc):
            if self._can_hold(st, r, s.held):
                c = s.copy()
                c.put(r)
                out.append(c)
        return out

    def _deliver(self, s: _Sim, targets: list[str]) -> _Sim | None:
        best = None
        for r in targets:
            if not self._can_hold(s.st, r, s.held):
                continue
            if best is None or s.cost_put(r) < s.cost_put(best):
                best = r
        if best is None:
            return None
        c = s.copy()
        c.put(best)
        return c

    def _plan_single(self, s: _Sim, obj_t: str, rec_t: str, prop) -> list[str] | None:
        st = s.st
        targets = sorted(r for r, t in st.rtype.items() if t == rec_t)
        objs = sorted(o for o, t in st.otype.items() if t == obj_t and o in st.pickupable)
        appliances = sorted(r for r, t in st.rtype.items() if prop and t == prop[2])
        if prop:
            objs = [o for o in objs if o in st.able[_PROPERTY_ABLE[prop[0]]]]

        def finish(c: _Sim) -> _Sim | None:  # holding a target object
            cands = []
            if prop and c.held not in c.props.get(prop[0], set()):
                for a in appliances:
                    h = c.copy()
                    h.treat(prop[1], prop[0], a)
                    cands.append(self._deliver(h, targets))
            else:
                cands.append(self._deliver(c, targets))
            return min((x for x in cands if x is not None), key=lambda x: len(x.cmds), default=None)

        def from_empty(c: _Sim) -> list[_Sim]:
            out = []
            for o in objs:
                if o in c.where:
                    h = c.copy()
                    h.take(o)
                    out.append(finish(h))
            return out

        starts = [s]
        if s.held is not None:
            starts = self._drops(s)
        cands: list = []
        if s.held is not None and s.held in objs:
            cands.append(finish(s.copy()))
        for c in starts:
            cands.extend(from_empty(c))
        return _best(cands)

    def _plan_two(self, s: _Sim, obj_t: str, rec_t: str) -> list[str] | None:
        st = s.st
        objs = sorted(o for o, t in st.otype.items() if t == obj_t and o in st.pickupable)
        if not objs:
            return None
        targets = sorted(r for r, t in st.rtype.items() if t == rec_t and self._can_hold(st, r, objs[0]))
        held_is_target = s.held is not None and s.held in objs
        cands = []
        for r in targets:
            inside = [o for o in objs if s.where.get(o) == r]
            need = 2 - len(inside)
            if need <= 0:
                return []
            starts: list[tuple[_Sim, int]] = []
            if held_is_target:
                h = s.copy()
                h.put(r)
                starts.append((h, need - 1))
            if s.held is not None:
                starts.extend((c, need) for c in self._drops(s) if not (held_is_target and c.where[s.held] == r))
            else:
                starts.append((s.copy(), need))
            for c0, k in starts:
                if k <= 0:
                    cands.append(c0)
                    continue
                movable = [o for o in objs if o in c0.where and c0.where[o] != r]
                for seq in itertools.permutations(movable, k):
                    c = c0.copy()
                    for o in seq:
                        c.take(o)
                        c.put(r)
                    cands.append(c)
        return _best(cands)

    def _plan_look(self, s: _Sim, obj_t: str, lamp_t: str) -> list[str] | None:
        st = s.st
        objs = sorted(o for o, t in st.otype.items() if t == obj_t and o in st.pickupable)
        lamps = sorted(o for o, t in st.otype.items() if t == lamp_t and o in st.toggleable and o in s.where)
        cands = []
        for lamp in lamps:

            def end(c: _Sim) -> _Sim:
                c = c.copy()
                if lamp not in c.toggled:
                    c.toggle(lamp)
                else:
                    c.goto(c.where[lamp])
                return c

            if s.held is not None and s.held in objs:
                cands.append(end(s))
            # toggle first (possibly while holding something), then fetch
            pre = [s]
            if lamp not in s.toggled:
                t = s.copy()
                t.toggle(lamp)
                pre.append(t)
            for c0 in pre:
                starts = self._drops(c0) if c0.held is not None else [c0]
                for c in starts:
                    for o in objs:
                        if o in c.where:
                            h = c.copy()
                            h.take(o)
                            cands.append(end(h))
        return _best(cands)


def optimal_plan(env: "AlfworldEnv") -> list[str]:
    """Shortcut: ``Expert(env).plan()``."""
    return Expert(env).plan()
