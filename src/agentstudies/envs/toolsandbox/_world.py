"""Building blocks of the seeded ToolSandbox-style scenarios: entity pools, the starting
world of a scenario (contacts, messages, reminders, settings, clock), and the milestone /
gold-trajectory pieces an intent contributes (state dependencies, relative times).

Pools and fixtures are ours (not ToolSandbox's); mechanics after ToolSandbox (Lu et al., 2024).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Mapping

import numpy as np

from agentstudies.envs.toolsandbox._scoring import Constraint, Milestone
from agentstudies.envs.toolsandbox._tools import canonical_phone

__all__: list[str] = []


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


def _reply(refs: tuple[str, ...], name: str = "reply to the user", key: str | None = None) -> Milestone:
    """The agent's message to the user, graded by ROUGE-L against reference sentences ``refs``;
    with ``key`` also a second constraint that the message contains the key value (as
    ToolSandbox's multiple-tool scenarios pair a ``column_contains_similarity`` constraint
    with the ROUGE-L one)."""
    row = {"sender": "agent", "recipient": "user"}
    out = (Constraint("snapshot", "SANDBOX", dict(row, content=tuple(refs)), {"content": "rouge_l"}),)
    if key is not None:
        if any(key not in r for r in refs):
            raise ValueError(f"every reference sentence must contain the key value {key!r}: {refs}")
        out += (Constraint("snapshot", "SANDBOX", dict(row, content=key), {"content": "contains"}),)
    return Milestone(name, out)


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

