"""The scenario template registry: which templates (and their keyword settings) make the
base scenarios, how intents are assembled into a scenario with milestones, DAG edges,
minefields and triggers, and :func:`generate_scenarios`.

Categories and mechanics after ToolSandbox (Lu et al., 2024); templates are ours.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from agentstudies.envs.toolsandbox._intents import (
    _intent_add_contact,
    _intent_add_reminder,
    _intent_change_reminder,
    _intent_currency,
    _intent_insufficient,
    _intent_modify_contact,
    _intent_remove_contact,
    _intent_send_contact,
    _intent_send_phone,
    _intent_setting,
    _intent_stock,
    _intent_stock_message,
    _intent_two_settings,
    _intent_units,
    _intent_weather,
)
from agentstudies.envs.toolsandbox._scenarios import CATEGORIES, Intent, Scenario
from agentstudies.envs.toolsandbox._scoring import Milestone
from agentstudies.envs.toolsandbox._tools import STOCKS
from agentstudies.envs.toolsandbox._world import PHONE_FORMATS, UNIT_PAIRS, _Piece, _World, _call
from agentstudies.parallel import keyed_seed

__all__ = ["generate_scenarios"]


# ----------------------------------------------------------------- scenarios
def _insufficient_trigger(kind: str, w: _World) -> tuple:
    """A step that sets off the insufficient-information minefield of ``kind`` (validation only)."""
    if kind == "unknown_contact":
        return (_call("send_message_with_phone_number", phone_number="+14085550199", content="hello"),)
    if kind == "unknown_city":
        return (_call("search_weather", latitude=0.0, longitude=0.0, days_ahead=0),)
    if kind == "unknown_stock":
        return (("say", {"act": "ask", "slot": "price"}, "Is it 100.00 USD?"),)
    if kind == "no_time":
        return (_call("add_reminder", content="something", reminder_timestamp=w.now + 3600.0),)
    if kind == "no_number":
        return (_call("modify_contact", person_id=w.contacts[0]["person_id"], phone_number="+14085550123"),)
    raise ValueError(kind)


def _assemble(sid: str, template: str, w: _World, parts: Sequence[tuple[Intent, _Piece]], minefields: list[Milestone],
              trigger: tuple, extra_tools: Sequence[str] = ()) -> Scenario:
    milestones: list[Milestone] = []
    edges: list[tuple[int, int]] = []
    gold: list[tuple] = []
    tools: list[str] = []
    cats: set[str] = set()
    depth = 0
    for j, (intent, p) in enumerate(parts):
        off = len(milestones)
        if j > 0 and milestones and p.milestones:
            edges.append((off - 1, off))
        milestones += p.milestones
        edges += [(u + off, v + off) for u, v in p.edges]
        gold += p.gold
        for t in p.tools:
            if t not in tools:
                tools.append(t)
        cats |= p.cats
        depth = max(depth, p.depth if "state_dependency" in p.cats else 0)
    for t in extra_tools:
        if t not in tools:
            tools.append(t)
    n_calls = sum(1 for g in gold if g[0] == "call")
    if len(parts) > 1 or any(g[0] == "say" and g[1]["act"] == "ask" for g in gold):
        cats.add("multiple_user_turn")
    else:
        cats.add("single_user_turn")
    cats.discard("single_tool_call" if n_calls > 1 else "multiple_tool_call")
    cats.add("multiple_tool_call" if n_calls > 1 else "single_tool_call")
    return Scenario(sid, template, tuple(c for c in CATEGORIES if c in cats), depth, w.initial(),
                    tuple(i for i, _ in parts), tuple(tools), tuple(milestones), tuple(edges), tuple(minefields),
                    tuple(gold), tuple(trigger))


def _recipes() -> list[tuple[str, dict]]:
    r: list[tuple[str, dict]] = []
    for s in ("wifi", "cellular", "location_service"):
        r.append(("setting", {"setting": s, "on": True, "low_battery": False}))
        r.append(("setting", {"setting": s, "on": True, "low_battery": True}))
        r.append(("setting", {"setting": s, "on": False, "low_battery": False}))
    r.append(("setting", {"setting": "low_battery_mode", "on": False, "low_battery": True}))
    r.append(("setting", {"setting": "low_battery_mode", "on": True, "low_battery": False}))
    for depth in (0, 1, 2):
        for disamb in (False, True):
            for ask in (False, True):
                for rep in range(2):
                    r.append(("send_contact", {"depth": depth, "disamb": disamb, "ask": ask, "rep": rep}))
    for k, fmt in enumerate(PHONE_FORMATS):
        r.append(("send_phone", {"fmt": fmt, "depth": 0}))
        r.append(("send_phone", {"fmt": fmt, "depth": 1 if k % 2 == 0 else 2}))
        r.append(("add_contact", {"fmt": fmt}))
        r.append(("modify_contact", {"fmt": fmt}))
    for disamb in (False, True):
        for rep in range(3):
            r.append(("remove_contact", {"disamb": disamb, "rep": rep}))
    for when in ({"days": 1, "hour": 17, "minute": 0}, {"days": 3, "hour": 9, "minute": 30}, {"hours": 2},
                 {"days": 2, "hour": 8, "minute": 15}, {"hours": 5}, {"days": 1, "hour": 7, "minute": 45},
                 {"days": 4, "hour": 18, "minute": 0}, {"hours": 1}):
        r.append(("add_reminder", {"when": when}))
    for when in ({"days": 1, "hour": 10, "minute": 0}, {"hours": 3}, {"days": 2, "hour": 16, "minute": 30}, {"hours": 6}):
        r.append(("modify_reminder", {"when": when}))
    for rep in range(4):
        r.append(("remove_reminder", {"rep": rep}))
    for city, days in (("Paris", 0), ("Tokyo", 1), ("Nairobi", 0), ("Oslo", 2), ("Lima", 1), ("Sydney", 0)):
        r.append(("weather_city", {"city": city, "days": days}))
    for low, days in ((False, 0), (False, 1), (True, 0), (True, 1)):
        r.append(("weather_here", {"low_battery": low, "days": days}))
    for company in ("Apple", "Nvidia", "Toyota", "Netflix"):
        r.append(("stock", {"company": company}))
    for rep in range(4):
        r.append(("currency", {"rep": rep}))
    for pair in UNIT_PAIRS:
        r.append(("units", {"pair": pair}))
    for kind, n in (("unknown_contact", 4), ("unknown_city", 3), ("unknown_stock", 2), ("no_time", 3), ("no_number", 2)):
        for rep in range(n):
            r.append(("insufficient", {"kind": kind, "rep": rep}))
    for first, second in (("setting", "stock"), ("currency", "add_reminder"), ("weather_city", "send_contact"),
                          ("stock", "remove_reminder"), ("units", "add_contact"), ("send_contact", "setting")):
        r.append(("two_requests", {"first": first, "second": second}))
    # look-ups behind wifi (and low battery), branching DAGs; appended so earlier ids stay
    for what, low, arg in (("stock", False, "Apple"), ("stock", True, "Nvidia"), ("stock", False, "Adobe"),
                           ("currency", False, None), ("currency", True, None), ("weather_city", False, ("Berlin", 0)),
                           ("weather_city", True, ("Toronto", 1)), ("weather_city", True, ("Mumbai", 0))):
        r.append(("lookup_offline", {"what": what, "low_battery": low, "arg": arg}))
    for a, b in (("wifi", "location_service"), ("cellular", "wifi"), ("location_service", "cellular")):
        for rep in range(2):
            r.append(("two_settings", {"a": a, "b": b, "rep": rep}))
    for company in ("Apple", "Microsoft", "Amazon", "Siemens", "Netflix", "Toyota"):
        r.append(("stock_message", {"company": company}))
    return r


def _simple_intent(kind: str, rng, w: _World):
    if kind == "setting":
        return _intent_setting(rng, w, "wifi", False)
    if kind == "stock":
        return _intent_stock(rng, w, sorted(STOCKS)[int(rng.integers(len(STOCKS)))])
    if kind == "currency":
        return _intent_currency(rng, w)
    if kind == "add_reminder":
        return _intent_add_reminder(rng, w, {"days": 1, "hour": 12, "minute": 0})
    if kind == "weather_city":
        return _intent_weather(rng, w, "Berlin", 0)
    if kind == "send_contact":
        return _intent_send_contact(rng, w, 0, False, False)
    if kind == "remove_reminder":
        i, p, _ = _intent_change_reminder(rng, w, True)
        return i, p
    if kind == "units":
        return _intent_units(rng, w, UNIT_PAIRS[0])
    if kind == "add_contact":
        return _intent_add_contact(rng, w, PHONE_FORMATS[1])
    raise ValueError(kind)


def _build(sid: str, template: str, kw: dict, rng: np.random.Generator) -> Scenario:
    """Scenario ``sid`` of ``template`` with recipe ``kw``, entities drawn from ``rng``.

    Length: one short branch per template (starting world, intents, minefields), kept
    together so that the full list of templates reads in one place.
    """
    if template == "setting":
        w = _World(rng, low_battery=kw["low_battery"], wifi=not kw["on"] if kw["setting"] == "wifi" else True,
                   cellular=not kw["on"] if kw["setting"] == "cellular" else True,
                   location=not kw["on"] if kw["setting"] == "location_service" else True)
        if kw["setting"] == "low_battery_mode" and kw["on"]:
            w.settings["low_battery_mode"] = False
        parts = [_intent_setting(rng, w, kw["setting"], kw["on"])]
        return _assemble(sid, template, w, parts, [], ())
    if template == "send_contact":
        w = _World(rng, cellular=kw["depth"] == 0, low_battery=kw["depth"] == 2)
        intent, p = _intent_send_contact(rng, w, kw["depth"], kw["disamb"], kw["ask"])
        return _assemble(sid, template, w, [(intent, p)], [], ())
    if template == "send_phone":
        w = _World(rng, cellular=kw["depth"] == 0, low_battery=kw["depth"] == 2)
        return _assemble(sid, template, w, [_intent_send_phone(rng, w, kw["fmt"])], [], ())
    if template == "add_contact":
        w = _World(rng)
        return _assemble(sid, template, w, [_intent_add_contact(rng, w, kw["fmt"])], [], ())
    if template == "modify_contact":
        w = _World(rng)
        intent, p = _intent_modify_contact(rng, w, kw["fmt"])
        return _assemble(sid, template, w, [(intent, p)], [], ())
    if template == "remove_contact":
        w = _World(rng)
        intent, p, _other = _intent_remove_contact(rng, w, kw["disamb"])
        return _assemble(sid, template, w, [(intent, p)], [], ())
    if template == "add_reminder":
        w = _World(rng)
        return _assemble(sid, template, w, [_intent_add_reminder(rng, w, kw["when"])], [], ())
    if template in ("modify_reminder", "remove_reminder"):
        w = _World(rng)
        intent, p, _other = _intent_change_reminder(rng, w, template == "remove_reminder", kw.get("when"))
        return _assemble(sid, template, w, [(intent, p)], [], (), extra_tools=("remove_reminder",))
    if template == "weather_city":
        w = _World(rng)
        return _assemble(sid, template, w, [_intent_weather(rng, w, kw["city"], kw["days"])], [], ())
    if template == "weather_here":
        w = _World(rng, location=False, low_battery=kw["low_battery"])
        return _assemble(sid, template, w, [_intent_weather(rng, w, None, kw["days"])], [], ())
    if template == "stock":
        w = _World(rng)
        return _assemble(sid, template, w, [_intent_stock(rng, w, kw["company"])], [], ())
    if template == "currency":
        w = _World(rng)
        return _assemble(sid, template, w, [_intent_currency(rng, w)], [], ())
    if template == "units":
        w = _World(rng)
        return _assemble(sid, template, w, [_intent_units(rng, w, kw["pair"])], [], ())
    if template == "insufficient":
        w = _World(rng)
        intent, p, mines = _intent_insufficient(rng, w, kw["kind"])
        return _assemble(sid, template, w, [(intent, p)], mines, _insufficient_trigger(kw["kind"], w))
    if template == "lookup_offline":
        w = _World(rng, wifi=False, low_battery=kw["low_battery"])
        if kw["what"] == "stock":
            part = _intent_stock(rng, w, kw["arg"])
        elif kw["what"] == "currency":
            part = _intent_currency(rng, w)
        else:
            part = _intent_weather(rng, w, *kw["arg"])
        return _assemble(sid, template, w, [part], [], ())
    if template == "two_settings":
        w = _World(rng, **{{"location_service": "location"}.get(k, k): False for k in (kw["a"], kw["b"])})
        return _assemble(sid, template, w, [_intent_two_settings(rng, w, kw["a"], kw["b"])], [], ())
    if template == "stock_message":
        w = _World(rng, cellular=False)
        return _assemble(sid, template, w, [_intent_stock_message(rng, w, kw["company"])], [], ())
    if template == "two_requests":
        w = _World(rng, wifi=True)
        parts = [_simple_intent(kw["first"], rng, w), _simple_intent(kw["second"], rng, w)]
        return _assemble(sid, template, w, parts, [], ())
    raise ValueError(f"unknown template {template!r}")


def generate_scenarios(seed: int = 0) -> list[Scenario]:
    """The base scenarios (currently 135), drawn from the templates with ``seed``.

    Scenario ``i`` uses ``keyed_seed(seed, "toolsandbox-scenario", i)``, so each scenario
    depends only on the seed and its position. Ids are ``"<template>-<i:03d>"``.
    """
    out = []
    for i, (template, kw) in enumerate(_recipes()):
        rng = np.random.default_rng(keyed_seed(seed, "toolsandbox-scenario", i))
        out.append(_build(f"{template}-{i:03d}", template, kw, rng))
    return out
