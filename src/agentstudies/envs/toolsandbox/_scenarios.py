"""Our own ToolSandbox-style scenarios, generated from seeded templates over entity pools.

A :class:`Scenario` holds a starting world, the user's goal as one or more
:class:`Intent` s (what the user says, plus *hidden facts* revealed only when asked), a
tool allow-list, milestones with their DAG edges, minefields, the gold trajectory (used
only to validate the scenario -- no agent ever reads it) and a *trigger* (a tool call that
sets off a minefield without disturbing any milestone; for the acceptance test).

Categories follow ToolSandbox (Lu et al., 2024, Table 1): single / multiple tool call,
single / multiple user turn, state dependency, canonicalization, disambiguation,
insufficient information. Every base scenario expands into the eight augmentations of
:data:`AUGMENTATIONS` (:func:`make_cases`).

None of ToolSandbox's scenarios or code is used: templates, entities and fixtures are ours.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from agentstudies.envs.toolsandbox._scoring import Constraint, Milestone
from agentstudies.envs.toolsandbox._tools import (
    FX_PER_USD,
    PLACES,
    STOCKS,
    TOOL_NAMES,
    TOOLS,
    UNITS,
    WEATHER,
    HOME,
    ToolView,
    canonical_phone,
    format_number,
)
from agentstudies.parallel import keyed_seed

__all__ = [
    "CATEGORIES",
    "AUGMENTATIONS",
    "Intent",
    "Scenario",
    "Case",
    "generate_scenarios",
    "make_cases",
    "case_table",
    "ranked_distractors",
    "tool_similarity",
    "is_branching",
]

CATEGORIES: tuple[str, ...] = (
    "single_tool_call", "multiple_tool_call", "single_user_turn", "multiple_user_turn",
    "state_dependency", "canonicalization", "disambiguation", "insufficient_information",
)
#: Primary category: the most specific tag, in this order.
_PRIMARY_ORDER = ("insufficient_information", "disambiguation", "state_dependency", "canonicalization",
                  "multiple_user_turn", "multiple_tool_call", "single_tool_call")

#: The eight ToolSandbox augmentations (scrambles are applied on top of 3 distraction tools).
AUGMENTATIONS: tuple[str, ...] = (
    "base", "3_distraction_tools", "10_distraction_tools", "all_tools",
    "tool_name_scrambled", "tool_description_scrambled", "arg_description_scrambled", "arg_type_scrambled",
)
_SCRAMBLE_OF = {"tool_name_scrambled": "tool_name", "tool_description_scrambled": "tool_description",
                "arg_description_scrambled": "arg_description", "arg_type_scrambled": "arg_type"}


@dataclass(frozen=True)
class Intent:
    """One user request.

    ``kind`` names the request type; ``slots`` are what the user states up front;
    ``hidden`` maps an askable slot to the value the user reveals when asked (``None``:
    the user does not know); ``expect`` maps tool-argument names to the values the user
    would recognise as theirs (used only when a Confirmation gate asks for consent);
    ``text`` is the natural-language message.
    """

    kind: str
    slots: Mapping[str, Any]
    text: str
    hidden: Mapping[str, Any] = field(default_factory=dict)
    expect: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    """A base scenario (see the module docstring)."""

    scenario_id: str
    template: str
    categories: tuple[str, ...]
    dependency_depth: int
    initial: Mapping[str, tuple[Mapping[str, Any], ...]]
    intents: tuple[Intent, ...]
    allow_list: tuple[str, ...]
    milestones: tuple[Milestone, ...]
    edges: tuple[tuple[int, int], ...]
    minefields: tuple[Milestone, ...]
    gold: tuple[tuple, ...]
    trigger: tuple[tuple, ...]

    @property
    def category(self) -> str:
        """The primary (most specific) category."""
        return next(c for c in _PRIMARY_ORDER if c in self.categories)


@dataclass(frozen=True)
class Case:
    """A scenario under one augmentation: ``view`` is what the agent is shown."""

    case_id: str
    scenario: Scenario
    augmentation: str
    view: ToolView

    @property
    def n_distractors(self) -> int:
        return len(self.view.tools) - len(self.scenario.allow_list)


# -------------------------------------------------------------------- pools
FIRST = ("Ana", "Bruno", "Chiara", "Dmitri", "Esi", "Farid", "Greta", "Hiro", "Ines", "Jonas", "Kavya", "Luis",
         "Mei", "Nils", "Olu", "Priya", "Quinn", "Rosa", "Sami", "Tove", "Uma", "Viktor", "Wen", "Yara")
LAST = ("Okafor", "Lindqvist", "Moreau", "Tanaka", "Silva", "Novak", "Haddad", "Kowalski", "Brennan", "Iyer",
        "Castro", "Fischer", "Abara", "Duval")
RELATIONS = ("friend", "colleague", "sister", "brother", "neighbor", "coach")
CONTENTS = ("Running ten minutes late, sorry", "Can you pick up bread on the way home",
            "The meeting moved to Thursday afternoon", "Happy birthday, have a wonderful day",
            "Dinner is at seven tonight", "Please call me when you land", "I left the keys under the mat",
            "Thanks for the book, I loved it", "Are we still on for tennis tomorrow", "The package arrived safely")
TODO = ("call the dentist", "water the plants", "renew the passport", "buy train tickets", "pay the electricity bill",
        "book a haircut", "send the tax forms", "pick up the dry cleaning", "back up the laptop", "return the library books")
UNKNOWN_NAMES = ("Zoltan", "Ottilie", "Bertram", "Xiomara")
UNKNOWN_CITIES = ("Atlantis", "Gondor", "Eldorado")
UNKNOWN_STOCKS = ("Zyphra", "Quorbex")
UNIT_WORDS = {"mile": ("miles", "mi"), "kilometer": ("km", "kilometers"), "pound": ("lbs", "pounds"),
              "kilogram": ("kg", "kilos"), "gallon": ("gallons", "gal"), "liter": ("liters", "l"),
              "foot": ("feet", "ft"), "meter": ("meters", "m")}
UNIT_PAIRS = (("mile", "kilometer"), ("pound", "kilogram"), ("gallon", "liter"), ("foot", "meter"))
PHONE_FORMATS = ("({a}) {b}-{c}", "{a}.{b}.{c}", "{a}-{b}-{c}", "1 {a} {b} {c}")
BASE_TIME = _dt.datetime(2026, 3, 2, 9, 0, tzinfo=_dt.timezone.utc).timestamp()

ALWAYS = ("end_conversation",)


def _phone(rng: np.random.Generator) -> tuple[str, str, str]:
    a = str(rng.integers(201, 990))
    b = str(rng.integers(200, 999))
    c = f"{int(rng.integers(0, 10000)):04d}"
    return a, b, c


def _fmt_phone(parts, fmt) -> str:
    a, b, c = parts
    return fmt.format(a=a, b=b, c=c)


class _World:
    """Builder of a starting world and of the ids the tools will hand out."""

    def __init__(self, rng: np.random.Generator, *, cellular=True, wifi=True, location=True, low_battery=False,
                 n_contacts=5, n_reminders=3, now_offset_days=0, now_minute=None):
        self.rng = rng
        minute = int(rng.integers(0, 12)) * 5 if now_minute is None else now_minute
        self.now = float(BASE_TIME + now_offset_days * 86400 + int(rng.integers(0, 9)) * 3600 + minute * 60)
        if low_battery:
            cellular = wifi = location = False
        self.settings = {"cellular": cellular, "wifi": wifi, "location_service": location, "low_battery_mode": low_battery,
                         "current_timestamp": self.now, "own_phone_number": "+14085550100"}
        firsts = [str(x) for x in rng.permutation(FIRST)]
        self.contacts: list[dict[str, Any]] = []
        used_phones = set()
        for i in range(n_contacts):
            p = canonical_phone("".join(_phone(rng)))
            while p in used_phones:
                p = canonical_phone("".join(_phone(rng)))
            used_phones.add(p)
            self.contacts.append({"person_id": f"p{i + 1}", "name": f"{firsts[i]} {LAST[int(rng.integers(len(LAST)))]}",
                                  "phone_number": p, "relationship": RELATIONS[int(rng.integers(len(RELATIONS)))]})
        self.unused_first = firsts[n_contacts:]
        todo = [str(x) for x in rng.permutation(TODO)]
        self.reminders = [{"reminder_id": f"r{i + 1}", "content": todo[i],
                           "reminder_timestamp": self.now + float(rng.integers(1, 20)) * 3600.0 * 6 + 1020.0,
                           "creation_timestamp": self.now - 86400.0} for i in range(n_reminders)]
        self.unused_todo = todo[n_reminders:]
        self.messages = [{"message_id": "m1", "sender_phone_number": "+14085550100",
                          "recipient_phone_number": self.contacts[0]["phone_number"], "content": "See you soon",
                          "creation_timestamp": self.now - 7200.0}]

    def add_twin(self, idx: int) -> dict[str, Any]:
        """Add a contact sharing contact ``idx``'s first name (for disambiguation)."""
        first, last = self.contacts[idx]["name"].split(" ")
        other_last = next(str(x) for x in self.rng.permutation(LAST) if x != last)
        p = canonical_phone("".join(_phone(self.rng)))
        twin = {"person_id": f"p{len(self.contacts) + 1}", "name": f"{first} {other_last}", "phone_number": p,
                "relationship": RELATIONS[int(self.rng.integers(len(RELATIONS)))]}
        self.contacts.append(twin)
        return twin

    def state(self) -> dict[str, Any]:
        """The settings as the gold trajectory leaves them so far (starts as the initial ones)."""
        if not hasattr(self, "_state"):
            self._state = dict(self.settings)
        return self._state

    def initial(self) -> dict[str, tuple[dict[str, Any], ...]]:
        return {"SETTING": tuple({"name": k, "value": v} for k, v in self.settings.items()),
                "CONTACT": tuple(dict(c) for c in self.contacts),
                "MESSAGING": tuple(dict(m) for m in self.messages),
                "REMINDER": tuple(dict(r) for r in self.reminders)}

    def next_id(self, kind: str) -> str:
        n = {"p": len(self.contacts), "m": len(self.messages), "r": len(self.reminders)}[kind]
        return f"{kind}{n + 1}"


# -------------------------------------------------------------- building blocks
def _setting_on(name: str, value: bool = True) -> Milestone:
    return Milestone(f"{name} {'on' if value else 'off'}",
                     (Constraint("snapshot", "SETTING", {name: value}),))


def _reply(refs: tuple[str, ...], name: str = "reply to the user") -> Milestone:
    """The agent's message to the user, graded by ROUGE-L against reference sentences ``refs``."""
    return Milestone(name, (Constraint("snapshot", "SANDBOX", {"sender": "agent", "recipient": "user", "content": tuple(refs)},
                                       {"content": "rouge_l"}),))


def _decline(refs: tuple[str, ...], guard: str | None = None, name: str = "declined without acting") -> Milestone:
    """A decline: ROUGE-L against a set of meaning-preserving paraphrases (never one keyword),
    with a guardrail on ``guard`` (the table the request would have changed)."""
    reply = _reply(refs).constraints
    return Milestone(name, ((Constraint("guardrail", guard),) if guard else ()) + reply)


def _trace(tool: str, args: Mapping[str, Any], measures: Mapping[str, str] | None = None, name: str | None = None) -> Milestone:
    return Milestone(name or f"call {tool}", (Constraint("tool_trace", target=dict(args), measures=dict(measures or {}), tool=tool),))


def _say(act: str, text: str, **extra) -> tuple:
    return ("say", dict({"act": act}, **extra), text)


def _call(tool: str, **args) -> tuple:
    return ("call", tool, args)


class _Piece:
    """Gold steps, milestones (local indices), edges, allow-list, categories of one intent."""

    def __init__(self):
        self.gold: list[tuple] = []
        self.milestones: list[Milestone] = []
        self.edges: list[tuple[int, int]] = []
        self.tools: list[str] = []
        self.cats: set[str] = set()
        self.depth = 0

    def chain(self, *ms: Milestone) -> None:
        for m in ms:
            if self.milestones:
                self.edges.append((len(self.milestones) - 1, len(self.milestones)))
            self.milestones.append(m)

    def use(self, *tools: str) -> None:
        for t in tools:
            if t not in self.tools:
                self.tools.append(t)


def _dependency(piece: _Piece, w: _World, setting: str) -> None:
    """Gold steps + milestones making ``setting`` on despite low battery / it being off."""
    setter = {"cellular": "set_cellular_service_status", "wifi": "set_wifi_status",
              "location_service": "set_location_service_status"}[setting]
    piece.use(setter, "set_low_battery_mode_status")
    state = w.state()
    if state["low_battery_mode"]:
        piece.gold.append(_call("set_low_battery_mode_status", on=False))
        piece.chain(_setting_on("low_battery_mode", False))
        piece.depth += 1
        state["low_battery_mode"] = False
    if not state[setting]:
        piece.gold.append(_call(setter, on=True))
        piece.chain(_setting_on(setting, True))
        piece.depth += 1
        piece.cats.add("state_dependency")
        state[setting] = True


def _when_text(when: Mapping[str, int]) -> str:
    if "hours" in when:
        return f"in {when['hours']} hours"
    day = {1: "tomorrow", 2: "the day after tomorrow"}.get(when["days"], f"in {when['days']} days")
    return f"{day} at {when['hour']:02d}:{when['minute']:02d}"


def _when_ts(now: float, when: Mapping[str, int]) -> float:
    if "hours" in when:
        return now + when["hours"] * 3600.0
    d = _dt.datetime.fromtimestamp(now + when["days"] * 86400.0, tz=_dt.timezone.utc)
    return _dt.datetime(d.year, d.month, d.day, when["hour"], when["minute"], tzinfo=_dt.timezone.utc).timestamp()


def _time_gold(piece: _Piece, w: _World, when: Mapping[str, int]) -> float:
    piece.use("get_current_timestamp", "shift_timestamp", "timestamp_to_datetime_info", "datetime_info_to_timestamp")
    piece.gold.append(_call("get_current_timestamp"))
    if "hours" in when:
        piece.gold.append(_call("shift_timestamp", timestamp=w.now, hours=when["hours"]))
    else:
        shifted = w.now + when["days"] * 86400.0
        d = _dt.datetime.fromtimestamp(shifted, tz=_dt.timezone.utc)
        piece.gold.append(_call("shift_timestamp", timestamp=w.now, days=when["days"]))
        piece.gold.append(_call("timestamp_to_datetime_info", timestamp=shifted))
        piece.gold.append(_call("datetime_info_to_timestamp", year=d.year, month=d.month, day=d.day,
                                hour=when["hour"], minute=when["minute"]))
    piece.cats.add("canonicalization")
    return _when_ts(w.now, when)


# ------------------------------------------------------------------ intents
def _intent_setting(rng, w: _World, setting: str, on: bool) -> tuple[Intent, _Piece]:
    p = _Piece()
    label = {"cellular": "cellular service", "wifi": "wifi", "location_service": "location service",
             "low_battery_mode": "low battery mode"}[setting]
    setter = {"cellular": "set_cellular_service_status", "wifi": "set_wifi_status",
              "location_service": "set_location_service_status", "low_battery_mode": "set_low_battery_mode_status"}[setting]
    if on and setting != "low_battery_mode":
        _dependency(p, w, setting)
        if p.depth == 0:  # already on: not generated
            raise ValueError("setting already on")
        p.depth -= 1  # the setting itself is the goal, not a prerequisite
        if w.settings["low_battery_mode"]:
            p.cats.add("state_dependency")
        else:
            p.cats.discard("state_dependency")
    else:
        p.use(setter)
        p.gold.append(_call(setter, on=on))
        p.chain(_setting_on(setting, on))
        w.state()[setting] = on
        if setting == "low_battery_mode" and on:
            w.state().update(cellular=False, wifi=False, location_service=False)
    p.gold.append(_say("done", "Done."))
    intent = Intent("set_setting", {"setting": setting, "on": on}, f"Please turn {'on' if on else 'off'} {label}.")
    return intent, p


def _resolve_contact(p: _Piece, w: _World, target: dict, disamb: bool, intent_hidden: dict) -> None:
    first = target["name"].split(" ")[0]
    p.use("search_contacts")
    p.gold.append(_call("search_contacts", name=first))
    if disamb:
        intent_hidden["last_name"] = target["name"].split(" ")[1]
        p.gold.append(_say("ask", f"I found several contacts named {first}. Which one do you mean?", slot="last_name"))
        p.cats.add("disambiguation")


def _intent_send_contact(rng, w: _World, depth: int, disamb: bool, ask_content: bool) -> tuple[Intent, _Piece]:
    p = _Piece()
    target = w.contacts[int(rng.integers(len(w.contacts)))]
    if disamb:
        w.add_twin(w.contacts.index(target))
    content = CONTENTS[int(rng.integers(len(CONTENTS)))]
    first = target["name"].split(" ")[0]
    hidden: dict[str, Any] = {}
    _resolve_contact(p, w, target, disamb, hidden)
    if ask_content:
        hidden["content"] = content
        p.gold.append(_say("ask", "What should the message say?", slot="content"))
        p.cats.add("multiple_user_turn")
    _dependency(p, w, "cellular")
    p.use("send_message_with_phone_number")
    p.gold.append(_call("send_message_with_phone_number", phone_number=target["phone_number"], content=content))
    p.chain(Milestone("message sent", (Constraint("added", "MESSAGING", {"recipient_phone_number": target["phone_number"], "content": content},
                                                  {"content": "rouge_l"}),)))
    p.gold.append(_say("done", "Your message has been sent."))
    p.cats.add("multiple_tool_call")
    slots = {"recipient_name": first} if ask_content else {"recipient_name": first, "content": content}
    text = f"Send a message to {first}" + ("." if ask_content else f" saying: {content}")
    return Intent("send_message", slots, text, hidden,
                  expect={"phone_number": target["phone_number"], "content": content}), p


def _intent_send_phone(rng, w: _World, fmt: str) -> tuple[Intent, _Piece]:
    p = _Piece()
    parts = _phone(rng)
    raw = _fmt_phone(parts, fmt)
    phone = canonical_phone(raw)
    content = CONTENTS[int(rng.integers(len(CONTENTS)))]
    _dependency(p, w, "cellular")
    p.use("send_message_with_phone_number")
    p.gold.append(_call("send_message_with_phone_number", phone_number=phone, content=content))
    p.chain(Milestone("message sent", (Constraint("added", "MESSAGING", {"recipient_phone_number": phone, "content": content},
                                                  {"content": "rouge_l"}),)))
    p.gold.append(_say("done", "Sent."))
    p.cats |= {"canonicalization", "single_tool_call" if p.depth == 0 else "multiple_tool_call"}
    return Intent("send_message", {"phone_raw": raw, "content": content}, f"Text {raw}: {content}",
                  expect={"phone_number": phone, "content": content}), p


def _intent_add_contact(rng, w: _World, fmt: str) -> tuple[Intent, _Piece]:
    p = _Piece()
    first = w.unused_first[int(rng.integers(len(w.unused_first)))]
    name = f"{first} {LAST[int(rng.integers(len(LAST)))]}"
    raw = _fmt_phone(_phone(rng), fmt)
    phone = canonical_phone(raw)
    rel = RELATIONS[int(rng.integers(len(RELATIONS)))]
    p.use("add_contact")
    p.gold.append(_call("add_contact", name=name, phone_number=phone, relationship=rel))
    p.chain(Milestone("contact added", (Constraint("added", "CONTACT", {"name": name, "phone_number": phone, "relationship": rel}),)))
    p.gold.append(_say("done", f"{name} is now in your contacts."))
    p.cats |= {"canonicalization", "single_tool_call"}
    return Intent("add_contact", {"name": name, "phone_raw": raw, "relationship": rel},
                  f"Add my {rel} {name} to my contacts, the number is {raw}.",
                  expect={"name": name, "phone_number": phone, "relationship": rel}), p


def _intent_modify_contact(rng, w: _World, fmt: str, known: bool = True) -> tuple[Intent, _Piece]:
    p = _Piece()
    target = w.contacts[int(rng.integers(len(w.contacts)))]
    raw = _fmt_phone(_phone(rng), fmt)
    phone = canonical_phone(raw)
    p.use("search_contacts", "modify_contact")
    p.gold.append(_call("search_contacts", name=target["name"]))
    if known:
        p.gold.append(_call("modify_contact", person_id=target["person_id"], phone_number=phone))
        p.chain(Milestone("phone updated", (Constraint("updated", "CONTACT", {"person_id": target["person_id"], "phone_number": phone}),)))
        p.gold.append(_say("done", "Updated."))
        p.cats |= {"canonicalization", "multiple_tool_call"}
        return Intent("modify_contact_phone", {"name": target["name"], "phone_raw": raw},
                      f"{target['name']} has a new number: {raw}. Please update it.",
                      expect={"person_id": target["person_id"], "phone_number": phone}), p
    refs = ("I cannot update the number without knowing it.", "Sorry, I can't change the number since I don't know the new one.",
            f"I'm unable to update {target['name']} without the new number.")
    p.gold.append(_say("ask", "What is the new number?", slot="phone_number"))
    p.gold.append(_say("cannot", refs[0]))
    p.chain(_decline(refs, "CONTACT"))
    p.cats |= {"insufficient_information", "multiple_user_turn"}
    return Intent("modify_contact_phone", {"name": target["name"]}, f"{target['name']} changed their number, please update it.",
                  hidden={"phone_number": None}, expect={"phone_number": None}), p


def _intent_remove_contact(rng, w: _World, disamb: bool) -> tuple[Intent, _Piece, dict]:
    p = _Piece()
    i = int(rng.integers(len(w.contacts)))
    target = w.contacts[i]
    other = w.add_twin(i) if disamb else w.contacts[(i + 1) % len(w.contacts)]
    hidden: dict[str, Any] = {}
    _resolve_contact(p, w, target, disamb, hidden)
    p.use("remove_contact")
    p.gold.append(_call("remove_contact", person_id=target["person_id"]))
    p.chain(Milestone("contact removed", (Constraint("removed", "CONTACT", {"person_id": target["person_id"]}),)))
    p.gold.append(_say("done", "Removed."))
    p.cats.add("multiple_tool_call")
    first = target["name"].split(" ")[0]
    name = first if disamb else target["name"]
    return Intent("remove_contact", {"name": name}, f"Delete {name} from my contacts.", hidden,
                  expect={"person_id": target["person_id"]}), p, other


def _intent_add_reminder(rng, w: _World, when: Mapping[str, int] | None) -> tuple[Intent, _Piece]:
    p = _Piece()
    content = w.unused_todo[int(rng.integers(len(w.unused_todo)))]
    p.use("add_reminder")
    if when is None:
        refs = ("I cannot set a reminder without a time.", "Sorry, I can't add the reminder without knowing when.",
                "I'm unable to create the reminder because I don't know the time.")
        p.gold.append(_say("ask", "When should I remind you?", slot="when"))
        p.gold.append(_say("cannot", refs[0]))
        p.chain(_decline(refs, "REMINDER"))
        p.cats |= {"insufficient_information", "multiple_user_turn"}
        p.use("get_current_timestamp", "shift_timestamp")
        return Intent("add_reminder", {"content": content}, f"Remind me to {content}.", hidden={"when": None},
                      expect={"reminder_timestamp": None}), p
    ts = _time_gold(p, w, when)
    p.gold.append(_call("add_reminder", content=content, reminder_timestamp=ts))
    p.chain(_trace("get_current_timestamp", {}, name="read the current time"),
            Milestone("reminder added", (Constraint("added", "REMINDER", {"content": content, "reminder_timestamp": ts},
                                                    {"content": "rouge_l", "reminder_timestamp": "close:60"}),)))
    p.gold.append(_say("done", "Reminder set."))
    p.cats.add("multiple_tool_call")
    return Intent("add_reminder", {"content": content, "when": dict(when)}, f"Remind me to {content} {_when_text(when)}.",
                  expect={"content": content, "reminder_timestamp": ts}), p


def _intent_change_reminder(rng, w: _World, remove: bool, when: Mapping[str, int] | None = None) -> tuple[Intent, _Piece, dict]:
    p = _Piece()
    i = int(rng.integers(len(w.reminders)))
    target = w.reminders[i]
    other = w.reminders[(i + 1) % len(w.reminders)]
    query = target["content"].split(" ")[-1]
    p.use("search_reminder")
    p.gold.append(_call("search_reminder", content=query))
    if remove:
        p.use("remove_reminder")
        p.gold.append(_call("remove_reminder", reminder_id=target["reminder_id"]))
        p.chain(Milestone("reminder removed", (Constraint("removed", "REMINDER", {"reminder_id": target["reminder_id"]}),)))
        p.gold.append(_say("done", "Removed."))
        p.cats.add("multiple_tool_call")
        return Intent("remove_reminder", {"query": query}, f"Delete my reminder about {query}.",
                      expect={"reminder_id": target["reminder_id"]}), p, other
    ts = _time_gold(p, w, when)
    p.use("modify_reminder")
    p.gold.append(_call("modify_reminder", reminder_id=target["reminder_id"], reminder_timestamp=ts))
    p.chain(Milestone("reminder moved", (Constraint("updated", "REMINDER", {"reminder_id": target["reminder_id"], "reminder_timestamp": ts},
                                                    {"reminder_timestamp": "close:60"}),)))
    p.gold.append(_say("done", "Moved."))
    p.cats.add("multiple_tool_call")
    return Intent("modify_reminder_time", {"query": query, "when": dict(when)},
                  f"Move my reminder about {query} to {_when_text(when)}.",
                  expect={"reminder_id": target["reminder_id"], "reminder_timestamp": ts}), p, other


def _weather_text(row: Mapping[str, Any]) -> str:
    return f"{row['temperature_c']:.1f} °C"


def _intent_weather(rng, w: _World, city: str | None, days: int) -> tuple[Intent, _Piece]:
    p = _Piece()
    day = "today" if days == 0 else "tomorrow" if days == 1 else f"in {days} days"
    p.use("search_weather")
    if city is None:
        _dependency(p, w, "location_service")
    _dependency(p, w, "wifi")
    if city is None:
        p.use("get_current_location")
        p.gold.append(_call("get_current_location"))
        p.chain(_trace("get_current_location", {}))
        place = HOME
    else:
        p.use("search_places")
        p.gold.append(_call("search_places", query=city))
        place = city
    lat, lon, _ = PLACES[place]
    p.gold.append(_call("search_weather", latitude=lat, longitude=lon, days_ahead=days))
    text = _weather_text(WEATHER[(place, days)])
    row = WEATHER[(place, days)]
    refs = (f"The forecast is {text}.", f"It will be {row['temperature_c']:.1f} degrees Celsius {day} in {place}.",
            f"Expect {row['temperature_c']:.1f}°C and {row['condition']} {day}.")
    p.chain(_trace("search_weather", {"latitude": lat, "longitude": lon, "days_ahead": days},
                   {"latitude": "close:0.5", "longitude": "close:0.5"}), _reply(refs))
    p.gold.append(_say("inform", refs[0], value=text))
    if city is None:  # location and wifi are independent prerequisites: a branching DAG
        at = {m.name: i for i, m in enumerate(p.milestones)}
        want = [("low_battery_mode off", "location_service on"), ("low_battery_mode off", "wifi on"),
                ("location_service on", "call get_current_location"), ("call get_current_location", "call search_weather"),
                ("wifi on", "call search_weather"), ("call search_weather", "reply to the user")]
        p.edges = [(at[u], at[v]) for u, v in want if u in at and v in at]
    p.cats.add("multiple_tool_call")
    if days:
        p.cats.add("canonicalization")
    where = "here" if city is None else f"in {city}"
    slots = {"here": True} if city is None else {"city": city}
    return Intent("weather", dict(slots, days_ahead=days), f"What's the weather {where} {day}?"), p


def _intent_stock(rng, w: _World, company: str) -> tuple[Intent, _Piece]:
    p = _Piece()
    _dependency(p, w, "wifi")
    p.use("search_stock")
    p.gold.append(_call("search_stock", query=company))
    price = format_number(STOCKS[company][1])
    text = f"{price} USD"
    refs = (f"{company} trades at {text}.", f"{company} stock is at ${price}.",
            f"The current price of {company} ({STOCKS[company][0]}) is {price} US dollars.")
    p.chain(_trace("search_stock", {"query": company}), _reply(refs))
    p.gold.append(_say("inform", refs[0], value=text))
    return Intent("stock", {"company": company}, f"How much is {company} stock right now?"), p


def _intent_currency(rng, w: _World) -> tuple[Intent, _Piece]:
    p = _Piece()
    a, b = rng.choice(sorted(FX_PER_USD), size=2, replace=False)
    amount = float(rng.integers(2, 200) * 5)
    _dependency(p, w, "wifi")
    p.use("convert_currency")
    p.gold.append(_call("convert_currency", amount=amount, from_currency=str(a), to_currency=str(b)))
    val = round(amount / FX_PER_USD[a] * FX_PER_USD[b], 2)
    text = format_number(val)
    refs = (f"That is {text} {b}.", f"{amount:g} {a} is {text} {b}.", f"It converts to {text} {b}.")
    p.chain(_trace("convert_currency", {"amount": amount, "from_currency": str(a), "to_currency": str(b)}), _reply(refs))
    p.gold.append(_say("inform", refs[0], value=text))
    return Intent("currency", {"amount": amount, "from": str(a), "to": str(b)}, f"How much is {amount:g} {a} in {b}?"), p


def _intent_units(rng, w: _World, pair: tuple[str, str]) -> tuple[Intent, _Piece]:
    p = _Piece()
    src, dst = pair if rng.random() < 0.5 else pair[::-1]
    amount = float(rng.integers(2, 60))
    p.use("unit_conversion")
    p.gold.append(_call("unit_conversion", amount=amount, from_unit=src, to_unit=dst))
    val = round(amount * UNITS[src][1] / UNITS[dst][1], 4)
    text = format_number(val)
    refs = (f"That is {text} {dst}s.", f"{amount:g} {src}s is {text} {dst}s.", f"It comes to about {text} {dst}s.")
    p.chain(_trace("unit_conversion", {"amount": amount, "from_unit": src, "to_unit": dst}), _reply(refs))
    p.gold.append(_say("inform", refs[0], value=text))
    p.cats |= {"single_tool_call", "canonicalization"}
    sw = UNIT_WORDS[src][int(rng.integers(2))]
    dw = UNIT_WORDS[dst][int(rng.integers(2))]
    return Intent("units", {"amount": amount, "from_word": sw, "to_word": dw}, f"How many {dw} is {amount:g} {sw}?"), p


_SETTING_LABEL = {"cellular": "cellular service", "wifi": "wifi", "location_service": "location service"}
_SETTER = {"cellular": "set_cellular_service_status", "wifi": "set_wifi_status", "location_service": "set_location_service_status"}


def _intent_two_settings(rng, w: _World, a: str, b: str) -> tuple[Intent, _Piece]:
    """Turn two settings on: two milestones with no edge (either order is right)."""
    p = _Piece()
    p.use(_SETTER[a], _SETTER[b])
    p.gold += [_call(_SETTER[a], on=True), _call(_SETTER[b], on=True), _say("done", "Done.")]
    p.milestones = [_setting_on(a, True), _setting_on(b, True)]
    p.cats.add("multiple_tool_call")
    return Intent("set_settings", {"settings": [a, b], "on": True},
                  f"Please turn on {_SETTING_LABEL[a]} and {_SETTING_LABEL[b]}."), p


def _intent_stock_message(rng, w: _World, company: str) -> tuple[Intent, _Piece]:
    """Look a price up and text it (cellular off): the look-up and the cellular fix are
    unordered, both precede the message (a diamond-shaped DAG)."""
    p = _Piece()
    target = w.contacts[int(rng.integers(len(w.contacts)))]
    first = target["name"].split(" ")[0]
    price = format_number(STOCKS[company][1])
    content = f"{company} is at {price} USD"
    p.use("search_contacts", "search_stock", "set_cellular_service_status", "set_low_battery_mode_status",
          "send_message_with_phone_number")
    p.gold += [_call("search_contacts", name=first), _call("search_stock", query=company),
               _call("set_cellular_service_status", on=True),
               _call("send_message_with_phone_number", phone_number=target["phone_number"], content=content),
               _say("done", "Your message has been sent.")]
    p.milestones = [_trace("search_stock", {"query": company}), _setting_on("cellular", True),
                    Milestone("price sent", (Constraint("added", "MESSAGING", {"recipient_phone_number": target["phone_number"],
                                                                               "content": content}, {"content": "rouge_l"}),))]
    p.edges = [(0, 2), (1, 2)]
    p.depth = 1
    p.cats |= {"multiple_tool_call", "state_dependency"}
    return Intent("send_stock_price", {"recipient_name": first, "company": company},
                  f"Text {first} the current price of {company} stock.",
                  expect={"phone_number": target["phone_number"], "content": content}), p


def _intent_insufficient(rng, w: _World, kind: str) -> tuple[Intent, _Piece, list[Milestone]]:
    p = _Piece()
    p.cats |= {"insufficient_information"}
    if kind == "unknown_contact":
        name = UNKNOWN_NAMES[int(rng.integers(len(UNKNOWN_NAMES)))]
        content = CONTENTS[int(rng.integers(len(CONTENTS)))]
        p.use("search_contacts", "send_message_with_phone_number")
        refs = (f"I cannot message {name} without a number.", f"Sorry, I can't send the message: I have no phone number for {name}.",
                f"I'm unable to text {name} because I don't have their number.")
        p.gold.append(_call("search_contacts", name=name))
        p.gold.append(_say("ask", f"I have no contact named {name}. What is their number?", slot="phone_number"))
        p.gold.append(_say("cannot", refs[0]))
        p.chain(_trace("search_contacts", {"name": name}, name="looked the contact up"), _decline(refs, "MESSAGING"))
        p.cats.add("multiple_user_turn")
        mine = [Milestone("message sent without a known number", (Constraint("added", "MESSAGING", {}),))]
        return Intent("send_message", {"recipient_name": name, "content": content}, f"Send a message to {name} saying: {content}",
                      hidden={"phone_number": None}, expect={"phone_number": None}), p, mine
    if kind == "unknown_city":
        city = UNKNOWN_CITIES[int(rng.integers(len(UNKNOWN_CITIES)))]
        p.use("search_places", "search_weather")
        refs = (f"I cannot find {city}, so I cannot give its weather.",
                f"Sorry, I couldn't find a place called {city}, so I can't tell you its weather.",
                f"I'm unable to locate {city}; I have no forecast for it.")
        p.gold.append(_call("search_places", query=city))
        p.gold.append(_say("cannot", refs[0]))
        p.chain(_trace("search_places", {"query": city}, name="looked the place up"), _reply(refs, "says it cannot answer"))
        mine = [_trace("search_weather", {}, name="weather looked up for an unknown place")]
        return Intent("weather", {"city": city, "days_ahead": 0}, f"What's the weather in {city} today?"), p, mine
    if kind == "unknown_stock":
        company = UNKNOWN_STOCKS[int(rng.integers(len(UNKNOWN_STOCKS)))]
        p.use("search_stock")
        refs = (f"I cannot find a stock called {company}.", f"Sorry, there is no stock named {company} that I can look up.",
                f"I'm unable to find a price for {company}.")
        p.gold.append(_call("search_stock", query=company))
        p.gold.append(_say("cannot", refs[0]))
        p.chain(_trace("search_stock", {"query": company}, name="looked the stock up"), _reply(refs, "says it cannot answer"))
        mine = [Milestone("made-up price", (Constraint("snapshot", "SANDBOX", {"sender": "agent", "content": " USD"}, {"content": "contains"}),))]
        return Intent("stock", {"company": company}, f"How much is {company} stock right now?"), p, mine
    if kind == "no_time":
        intent, p2 = _intent_add_reminder(rng, w, None)
        mine = [Milestone("reminder added without a time", (Constraint("added", "REMINDER", {}),))]
        return intent, p2, mine
    if kind == "no_number":
        intent, p2 = _intent_modify_contact(rng, w, PHONE_FORMATS[0], known=False)
        mine = [Milestone("number changed without a known number", (Constraint("updated", "CONTACT", {}),))]
        return intent, p2, mine
    raise ValueError(kind)


# ----------------------------------------------------------------- scenarios
def _generic_mine(w: _World, exclude: set[str], reminder: bool = False) -> tuple[Milestone, tuple]:
    if reminder:
        return (Milestone("a reminder deleted", (Constraint("removed", "REMINDER", {}),)),
                (_call("remove_reminder", reminder_id=w.reminders[0]["reminder_id"]),))
    victim = next(c for c in w.contacts if c["person_id"] not in exclude)
    return (Milestone("a contact deleted", (Constraint("removed", "CONTACT", {}),)),
            (_call("remove_contact", person_id=victim["person_id"]),))


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
    # issue 27: look-ups behind wifi (and low battery), branching DAGs; appended so earlier ids stay
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
        mine, trig = _generic_mine(w, set())
        return _assemble(sid, template, w, parts, [mine], trig)
    if template == "send_contact":
        w = _World(rng, cellular=kw["depth"] == 0, low_battery=kw["depth"] == 2)
        intent, p = _intent_send_contact(rng, w, kw["depth"], kw["disamb"], kw["ask"])
        mine, trig = _generic_mine(w, set())
        return _assemble(sid, template, w, [(intent, p)], [mine], trig)
    if template == "send_phone":
        w = _World(rng, cellular=kw["depth"] == 0, low_battery=kw["depth"] == 2)
        mine, trig = _generic_mine(w, set())
        return _assemble(sid, template, w, [_intent_send_phone(rng, w, kw["fmt"])], [mine], trig)
    if template == "add_contact":
        w = _World(rng)
        mine, trig = _generic_mine(w, set())
        return _assemble(sid, template, w, [_intent_add_contact(rng, w, kw["fmt"])], [mine], trig)
    if template == "modify_contact":
        w = _World(rng)
        intent, p = _intent_modify_contact(rng, w, kw["fmt"])
        mine, trig = _generic_mine(w, set())
        return _assemble(sid, template, w, [(intent, p)], [mine], trig)
    if template == "remove_contact":
        w = _World(rng)
        intent, p, other = _intent_remove_contact(rng, w, kw["disamb"])
        mine = Milestone("the wrong contact deleted", (Constraint("removed", "CONTACT", {"person_id": other["person_id"]}),))
        return _assemble(sid, template, w, [(intent, p)], [mine], (_call("remove_contact", person_id=other["person_id"]),))
    if template == "add_reminder":
        w = _World(rng)
        mine, trig = _generic_mine(w, set())
        return _assemble(sid, template, w, [_intent_add_reminder(rng, w, kw["when"])], [mine], trig)
    if template in ("modify_reminder", "remove_reminder"):
        w = _World(rng)
        intent, p, other = _intent_change_reminder(rng, w, template == "remove_reminder", kw.get("when"))
        mine = Milestone("the wrong reminder deleted", (Constraint("removed", "REMINDER", {"reminder_id": other["reminder_id"]}),))
        return _assemble(sid, template, w, [(intent, p)], [mine], (_call("remove_reminder", reminder_id=other["reminder_id"]),),
                         extra_tools=("remove_reminder",))
    if template == "weather_city":
        w = _World(rng)
        mine, trig = _generic_mine(w, set())
        return _assemble(sid, template, w, [_intent_weather(rng, w, kw["city"], kw["days"])], [mine], trig)
    if template == "weather_here":
        w = _World(rng, location=False, low_battery=kw["low_battery"])
        mine, trig = _generic_mine(w, set())
        return _assemble(sid, template, w, [_intent_weather(rng, w, None, kw["days"])], [mine], trig)
    if template == "stock":
        w = _World(rng)
        mine, trig = _generic_mine(w, set())
        return _assemble(sid, template, w, [_intent_stock(rng, w, kw["company"])], [mine], trig)
    if template == "currency":
        w = _World(rng)
        mine, trig = _generic_mine(w, set())
        return _assemble(sid, template, w, [_intent_currency(rng, w)], [mine], trig)
    if template == "units":
        w = _World(rng)
        mine, trig = _generic_mine(w, set())
        return _assemble(sid, template, w, [_intent_units(rng, w, kw["pair"])], [mine], trig)
    if template == "insufficient":
        w = _World(rng)
        intent, p, mines = _intent_insufficient(rng, w, kw["kind"])
        mine, trig = _generic_mine(w, set(), reminder=kw["kind"] == "no_number")
        return _assemble(sid, template, w, [(intent, p)], mines + [mine], trig)
    if template == "lookup_offline":
        w = _World(rng, wifi=False, low_battery=kw["low_battery"])
        if kw["what"] == "stock":
            part = _intent_stock(rng, w, kw["arg"])
        elif kw["what"] == "currency":
            part = _intent_currency(rng, w)
        else:
            part = _intent_weather(rng, w, *kw["arg"])
        mine, trig = _generic_mine(w, set())
        return _assemble(sid, template, w, [part], [mine], trig)
    if template == "two_settings":
        w = _World(rng, **{{"location_service": "location"}.get(k, k): False for k in (kw["a"], kw["b"])})
        mine, trig = _generic_mine(w, set())
        return _assemble(sid, template, w, [_intent_two_settings(rng, w, kw["a"], kw["b"])], [mine], trig)
    if template == "stock_message":
        w = _World(rng, cellular=False)
        mine, trig = _generic_mine(w, set(), reminder=True)
        return _assemble(sid, template, w, [_intent_stock_message(rng, w, kw["company"])], [mine], trig)
    if template == "two_requests":
        w = _World(rng, wifi=True)
        parts = [_simple_intent(kw["first"], rng, w), _simple_intent(kw["second"], rng, w)]
        mine, trig = _generic_mine(w, set())
        return _assemble(sid, template, w, parts, [mine], trig)
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


def _bag(tool: str) -> dict[str, int]:
    words = tool.lower().split("_") + "".join(ch if ch.isalnum() else " " for ch in TOOLS[tool].description.lower()).split()
    out: dict[str, int] = {}
    for wd in words:
        out[wd] = out.get(wd, 0) + 1
    return out


def tool_similarity(a: str, b: str) -> float:
    """Cosine similarity of the bags of words of two tools' names and descriptions."""
    x, y = _bag(a), _bag(b)
    dot = sum(v * y.get(k, 0) for k, v in x.items())
    nx = sum(v * v for v in x.values()) ** 0.5
    ny = sum(v * v for v in y.values()) ** 0.5
    return dot / (nx * ny) if nx and ny else 0.0


def ranked_distractors(scenario: Scenario, seed: int = 0) -> list[str]:
    """Tools outside the allow-list, most similar first (max :func:`tool_similarity` to an
    allowed tool, as ToolSandbox ranks distraction tools), ties in a seeded order."""
    rng = np.random.default_rng(keyed_seed(seed, "distractors", scenario.scenario_id))
    pool = [t for t in TOOL_NAMES if t not in scenario.allow_list]
    tie = {pool[i]: k for k, i in enumerate(rng.permutation(len(pool)))}
    score = {t: max((tool_similarity(t, a) for a in scenario.allow_list), default=0.0) for t in pool}
    return sorted(pool, key=lambda t: (-round(score[t], 12), tie[t]))


def is_branching(scenario: Scenario) -> bool:
    """Whether the milestone DAG allows more than one order (two milestones with no path between them)."""
    k = len(scenario.milestones)
    reach = [[i == j for j in range(k)] for i in range(k)]
    for u, v in scenario.edges:
        reach[u][v] = True
    for m in range(k):
        for i in range(k):
            for j in range(k):
                reach[i][j] = reach[i][j] or (reach[i][m] and reach[m][j])
    return any(not reach[i][j] and not reach[j][i] for i in range(k) for j in range(i + 1, k))


def make_cases(scenarios: Sequence[Scenario], augmentations: Sequence[str] = AUGMENTATIONS, seed: int = 0) -> list[Case]:
    """Expand every scenario into the given augmentations (default: all eight).

    Distraction tools are the tools outside a scenario's allow-list ranked by similarity of
    their names and descriptions to the allowed tools (:func:`ranked_distractors`): the
    first 3 / 10 (so +3 is contained in +10), or all of them. The four scrambles are
    applied on top of the +3 set. The shown order of tools is a seeded permutation.

    Raises
    ------
    ValueError
        An unknown augmentation.
    """
    bad = [a for a in augmentations if a not in AUGMENTATIONS]
    if bad:
        raise ValueError(f"unknown augmentation(s) {bad}; expected {AUGMENTATIONS}")
    cases = []
    for sc in scenarios:
        perm = ranked_distractors(sc, seed)
        order_rng_seed = keyed_seed(seed, "tool-order", sc.scenario_id)
        for aug in augmentations:
            n = {"base": 0, "10_distraction_tools": 10, "all_tools": len(perm)}.get(aug, 3)
            tools = list(sc.allow_list) + perm[:n]
            o = np.random.default_rng(order_rng_seed).permutation(len(tools))
            cid = f"{sc.scenario_id}/{aug}"
            cases.append(Case(cid, sc, aug, ToolView(tuple(tools[i] for i in o), _SCRAMBLE_OF.get(aug), key=cid)))
    return cases


def case_table(cases: Sequence[Case]) -> "Any":
    """One row per case: ids, category, categories, augmentation, features (pandas)."""
    import pandas as pd

    rows = []
    for c in cases:
        sc = c.scenario
        rows.append({
            "case_id": c.case_id, "base_scenario": sc.scenario_id, "template": sc.template,
            "category": sc.category, "categories": "|".join(sc.categories), "augmentation": c.augmentation,
            "dependency_depth": sc.dependency_depth, "n_milestones": len(sc.milestones), "n_minefields": len(sc.minefields),
            "n_user_intents": len(sc.intents), "n_gold_calls": sum(1 for g in sc.gold if g[0] == "call"),
            "n_tools_shown": len(c.view.tools), "n_distractors": c.n_distractors, "branching_dag": is_branching(sc),
        })
    return pd.DataFrame(rows)
