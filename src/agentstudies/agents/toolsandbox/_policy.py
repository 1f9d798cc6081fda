"""Scripted tool-use agents for the ToolSandbox-style world (simulated).

The agent reads only what a model would see: the visible messages (the user's requests
arrive with a parsed ``act`` -- kind and stated slots -- standing in for a perfect
language-understanding front end), the tool results and errors, and the shown tool specs.
It never reads the scenario's gold trajectory, milestones, minefields or hidden facts.

It works from generic *skills* (how to send a message, set a reminder, ...) written in
canonical tool names; it finds each tool among the shown ones by name, or -- when names
are scrambled -- by its description. It is stateless over the message history (what is
done is read off successful tool results), so a solver can take over from any restored
snapshot (handoff); its random choices are memoised per decision.

Feature-dependent mistakes (probabilities in :class:`ToolAgentProfile`):

``dependency``     on an implicit-dependency error it fails to fix the state and gives up;
``canonicalization`` it keeps a phone number as written, shifts a date by a day / an
                   hour by 12, passes a unit word as a unit name;
``insufficient``   with a fact missing it invents one (a number, a time, a place, a price)
                   instead of asking / declining;
``disambiguation`` with several matching contacts it takes the first instead of asking;
``confusion``      it calls the wrong tool, more often among more tools and when names,
                   descriptions or argument descriptions are scrambled; with argument types
                   hidden it passes typed values as strings;
``paraphrase``     it shortens the message text (lower ROUGE-L).

After a Plan + verifier rejection or a declined consent it reconsiders once (fresh
decisions, and it asks instead of inventing); a second block on the same step ends its
attempt ("cannot").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping, Sequence

import numpy as np

from agentstudies.agents.base import SimulatedPolicyMixin
from agentstudies.envs.toolsandbox import TOOLS, Say, ToolCall, canonical_phone, format_number

__all__ = ["ToolAgentProfile", "PROFILES", "NEEDS", "get_profile", "ScriptedToolAgent", "rank_tools", "shown_text"]


@dataclass(frozen=True)
class ToolAgentProfile:
    """Mistake probabilities of a scripted agent (see the module docstring)."""

    name: str
    p_dependency_giveup: float = 0.3
    p_canonicalization: float = 0.25
    p_insufficient: float = 0.4
    p_disambiguation_guess: float = 0.4
    p_confuse: float = 0.03
    confuse_per_log_tool: float = 0.03
    confuse_name_scramble: float = 0.15
    confuse_description_scramble: float = 0.06
    confuse_arg_description_scramble: float = 0.03
    p_type_error: float = 0.3
    p_paraphrase: float = 0.2
    max_attempts: int = 3
    tool_choice: str = "reading"


#: What the agent wants from a tool, in its own words (never the tools' descriptions).
NEEDS: Mapping[str, str] = {
    "set_cellular_service_status": "turn set switch cellular mobile service on off",
    "set_wifi_status": "turn set switch wifi on off",
    "set_location_service_status": "turn set switch location service on off",
    "set_low_battery_mode_status": "turn set switch low battery mode on off",
    "get_current_location": "get where is the device current location latitude longitude city",
    "search_contacts": "search find look up contacts by name phone number",
    "add_contact": "add create save new contact name phone number",
    "modify_contact": "modify change update contact phone number person",
    "remove_contact": "remove delete contact person",
    "send_message_with_phone_number": "send text message sms to phone number content",
    "add_reminder": "add create set reminder content time timestamp",
    "search_reminder": "search find look up reminders content",
    "modify_reminder": "modify change move update reminder time timestamp",
    "remove_reminder": "remove delete reminder",
    "get_current_timestamp": "get current time now timestamp clock",
    "shift_timestamp": "shift add days hours minutes to timestamp",
    "timestamp_to_datetime_info": "timestamp to date year month day hour",
    "datetime_info_to_timestamp": "date year month day hour minute to timestamp",
    "unit_conversion": "convert amount units length mass volume",
    "convert_currency": "convert amount money currency",
    "search_places": "search find place city latitude longitude by name",
    "search_weather": "weather forecast temperature at latitude longitude days ahead",
    "search_stock": "stock share price of company",
}

#: Tool errors that say the agent called the wrong tool (it then reads the next-best one).
_WRONG_TOOL = ("unexpected argument", "missing required argument", "Unknown tool", "nothing to modify")


#: Maximal runs of ``str.isalnum`` characters (``\w`` is isalnum plus the underscore).
_WORD = re.compile(r"[^\W_]+")


def _words(text: str) -> dict[str, int]:
    """Word counts of ``text``: lower-cased maximal runs of alphanumeric characters."""
    out: dict[str, int] = {}
    for wd in _WORD.findall(str(text).lower()):
        out[wd] = out.get(wd, 0) + 1
    return out


@lru_cache(maxsize=4096)
def _text_words(text: str) -> tuple[Mapping[str, int], int]:
    """:func:`_words` of a shown tool's text and its squared norm, memoised: the agents of a
    grid read the same few hundred tool texts thousands of times (shared, so read-only)."""
    words = _words(text)
    return words, sum(v * v for v in words.values())


def _cosine(x: Mapping[str, int], y: Mapping[str, int], xx: int | None = None, yy: int | None = None) -> float:
    """Cosine of two word-count vectors; ``xx`` / ``yy``: their squared norms if known."""
    dot = sum(v * y.get(k, 0) for k, v in x.items())
    xx = sum(v * v for v in x.values()) if xx is None else xx
    yy = sum(v * v for v in y.values()) if yy is None else yy
    n = (xx * yy) ** 0.5
    return dot / n if n else 0.0


def shown_text(spec: Mapping[str, Any]) -> str:
    """What the agent reads of a shown tool: name words, description, argument names and descriptions."""
    parts = [str(spec["name"]).replace("_", " "), spec.get("description", "")]
    for a in spec.get("args", ()):
        parts += [a["name"].replace("_", " "), a.get("description", "")]
    return " ".join(parts)


def rank_tools(need: str, args: Sequence[str], specs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Shown tool names, best first, by cosine similarity of the need (plus the argument
    names the agent will pass) to each tool's shown text; ties keep the shown order."""
    want = _words(need + " " + " ".join(a.replace("_", " ") for a in args))
    ww = sum(v * v for v in want.values())
    scored = []
    for k, s in enumerate(specs):
        words, yy = _text_words(shown_text(s))
        scored.append((-_cosine(want, words, ww, yy), k, s["name"]))
    return [name for _, _, name in sorted(scored)]


_NO_CONFUSION = dict(p_confuse=0.0, confuse_per_log_tool=0.0, confuse_name_scramble=0.0, confuse_description_scramble=0.0,
                     confuse_arg_description_scramble=0.0, p_type_error=0.0)
_TREATED = dict(p_dependency_giveup=0.08, p_canonicalization=0.1, p_insufficient=0.15, p_disambiguation_guess=0.15,
                p_confuse=0.02, confuse_per_log_tool=0.02, confuse_name_scramble=0.1, confuse_description_scramble=0.04,
                confuse_arg_description_scramble=0.02, p_type_error=0.15, p_paraphrase=0.1)

#: Profiles, all simulated. ``base`` (more mistakes) and ``treated`` (fewer) choose tools by
#: *reading* the shown names and descriptions (:func:`rank_tools`); no probability acts on
#: the augmentations, so scramble and distraction effects come from what they read.
#: ``reader``: reading only, every mistake probability 0. ``base_knobs`` / ``treated_knobs``:
#: the earlier agents, which find tools in the canonical registry and confuse
#: them with per-augmentation probabilities (kept as a named option for comparison).
PROFILES: Mapping[str, ToolAgentProfile] = {
    "base": ToolAgentProfile("base", **_NO_CONFUSION),
    "treated": ToolAgentProfile("treated", **dict(_TREATED, **_NO_CONFUSION)),
    "reader": ToolAgentProfile("reader", p_dependency_giveup=0.0, p_canonicalization=0.0, p_insufficient=0.0,
                               p_disambiguation_guess=0.0, p_paraphrase=0.0, **_NO_CONFUSION),
    "base_knobs": ToolAgentProfile("base_knobs", tool_choice="registry"),
    "treated_knobs": ToolAgentProfile("treated_knobs", tool_choice="registry", **_TREATED),
}


def get_profile(profile: str | ToolAgentProfile) -> ToolAgentProfile:
    """A profile by name (KeyError naming the known ones) or the profile itself."""
    if isinstance(profile, ToolAgentProfile):
        return profile
    if profile not in PROFILES:
        raise KeyError(f"unknown agent profile {profile!r}; known: {sorted(PROFILES)}")
    return PROFILES[profile]


_DEP_FIX = {
    "low battery mode is on": ("set_low_battery_mode_status", False),
    "Cellular service is off": ("set_cellular_service_status", True),
    "Location service is off": ("set_location_service_status", True),
    "Wifi is off": ("set_wifi_status", True),
}
_UNIT_NAMES = {"miles": "mile", "mi": "mile", "km": "kilometer", "kilometers": "kilometer", "lbs": "pound",
               "pounds": "pound", "kg": "kilogram", "kilos": "kilogram", "gallons": "gallon", "gal": "gallon",
               "liters": "liter", "l": "liter", "feet": "foot", "ft": "foot", "meters": "meter", "m": "meter"}


class _Act(Exception):
    """Raised inside a skill to emit an action."""

    def __init__(self, action):
        self.action = action


def _same_args(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    if set(a) != set(b):
        return False
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool) and not isinstance(y, bool):
            if float(x) != float(y):
                return False
        elif x != y:
            return False
    return True


class ScriptedToolAgent(SimulatedPolicyMixin):
    """A scripted (simulated) tool-use agent implementing the shared policy protocol.

    ``reset(task_id, seed, role="agent")`` then ``act(observation) -> ToolCall | Say``.
    The observation is :meth:`ToolSandboxEnv.observation` plus ``last_outcome``
    (``"executed"``, ``"blocked"``, ``"declined"`` or ``None``) from the controller loop.
    """

    def __init__(self, profile: str | ToolAgentProfile = "base"):
        self.profile = get_profile(profile)
        self.name = self.profile.name
        self.rng = np.random.default_rng(0)
        self._memo: dict[Any, Any] = {}
        self.task_id = ""
        self.role = "agent"

    def reset(self, task_id: str, seed: Any, role: str = "agent") -> None:
        """Start an episode (or take over one, ``role="solver"``) of ``task_id``."""
        self.task_id = str(task_id)
        self.role = role
        self.rng = np.random.default_rng(seed)
        self._memo = {"attempts": {}, "blocks": {}, "pending": None, "draws": {}}

    # ----------------------------------------------------------------- helpers
    def _draw(self, key: Any, p: float) -> bool:
        d = self._memo["draws"]
        if key not in d:
            d[key] = bool(self.rng.random() < p)
        return d[key]

    def _read_map(self, specs: Sequence[Mapping[str, Any]], msgs: Sequence[Mapping[str, Any]]) -> dict[str, str]:
        """Need -> shown name, by reading (:func:`rank_tools`), skipping a shown tool that
        answered a call made for that need with a wrong-tool error."""
        chosen = self._memo.setdefault("chosen", {})
        failed: dict[str, set] = {}
        for j, m in enumerate(msgs):
            tc = m.get("tool_call")
            if m["sender"] == "agent" and tc and j + 1 < len(msgs):
                err = msgs[j + 1].get("error") or ""
                if any(p in err for p in _WRONG_TOOL):
                    need = chosen.get((tc["name"], tuple(sorted(tc["arguments"]))))
                    if need is not None:
                        failed.setdefault(need, set()).add(tc["name"])
        self._failed = failed
        return {}

    def _pick(self, canonical: str, args: Mapping[str, Any]) -> str | None:
        if self.profile.tool_choice != "reading":
            return self._map.get(canonical)
        ranked = [n for n in rank_tools(NEEDS.get(canonical, canonical.replace("_", " ")), list(args), self._specs)
                  if n not in self._failed.get(canonical, set())]
        if not ranked:
            return None
        self._memo.setdefault("chosen", {})[(ranked[0], tuple(sorted(args)))] = canonical
        return ranked[0]

    def _intended(self, shown: str, args: Mapping[str, Any], canonical: str) -> str | None:
        """The need a call was made for: our own record, else (a call made before a takeover)
        the need whose reading ranks that tool first."""
        key = (shown, tuple(sorted(args)))
        chosen = self._memo.get("chosen", {})
        if key in chosen:
            return chosen[key]
        ranked = rank_tools(NEEDS.get(canonical, canonical.replace("_", " ")), list(args), self._specs)
        return canonical if ranked and ranked[0] == shown else None

    def _tool_map(self, specs: Sequence[Mapping[str, Any]]) -> dict[str, str]:
        shown = {s["name"]: s for s in specs}
        out: dict[str, str] = {}
        for canon, tool in TOOLS.items():
            if canon in shown:
                out[canon] = canon
                continue
            for s in specs:
                if s["description"] and s["description"] == tool.description:
                    out[canon] = s["name"]
                    break
        return out

    def _confusion(self, specs) -> tuple[float, float]:
        pr = self.profile
        names_known = sum(1 for s in specs if s["name"] in TOOLS)
        p = pr.p_confuse + pr.confuse_per_log_tool * math.log1p(max(0, len(specs) - 3))
        if names_known == 0 and specs:
            p += pr.confuse_name_scramble
        if specs and all(not s["description"] for s in specs):
            p += pr.confuse_description_scramble
        if specs and all(not a["description"] for s in specs for a in s["args"]) and any(s["args"] for s in specs):
            p += pr.confuse_arg_description_scramble
        p_type = pr.p_type_error if specs and any(a["type"] == "unknown" for s in specs for a in s["args"]) else 0.0
        return min(p, 0.9), p_type

    # --------------------------------------------------------------- protocol
    def act(self, observation: Mapping[str, Any]) -> ToolCall | Say:
        msgs = list(observation["messages"])
        specs = list(observation["tools"])
        pending = self._memo["pending"]
        if pending is not None and observation.get("last_outcome") in ("blocked", "declined"):
            self._memo["blocks"][pending] = self._memo["blocks"].get(pending, 0) + 1
        self._memo["pending"] = None
        self._specs = specs
        if self.profile.tool_choice == "reading":
            self._map = self._read_map(specs, msgs)
        else:
            self._map = self._tool_map(specs)
            self._failed = {}
        self._rev = {v: k for k, v in self._map.items()}
        self._p_confuse, self._p_type = self._confusion(specs)
        k = max((i for i, m in enumerate(msgs) if m["sender"] == "user" and (m.get("act") or {}).get("act") == "intent"), default=None)
        if k is None:
            return Say("How can I help?", {"act": "ask", "slot": "request"})
        intent = msgs[k]["act"]
        self._since = msgs[k + 1:]
        self._intent_no = intent["index"]
        try:
            skill = getattr(self, f"_skill_{intent['kind']}")
            skill(dict(intent["slots"]))
        except _Act as a:
            return a.action
        return Say("Done.", {"act": "done"})

    # ------------------------------------------------------------ primitives
    def _key(self, *parts) -> tuple:
        return (self._intent_no, *parts)

    def _calls(self, canonical: str):
        """(index, arguments, result, error) of the agent's calls of ``canonical`` since the request."""
        out = []
        for j, m in enumerate(self._since):
            tc = m.get("tool_call")
            if m["sender"] == "agent" and tc:
                shown = tc["name"]
                intended = self._rev.get(shown) if self.profile.tool_choice != "reading" else \
                    self._intended(shown, tc["arguments"], canonical)
                if intended == canonical:
                    reply = self._since[j + 1] if j + 1 < len(self._since) else None
                    if reply is not None and reply["sender"] == "execution_environment":
                        out.append((m["index"], dict(tc["arguments"]), reply.get("result"), reply.get("error")))
        return out

    def _answer(self, slot: str):
        """(asked?, value) of the user's answer to our question about ``slot``."""
        asked = any(m["sender"] == "agent" and (m.get("act") or {}).get("act") == "ask" and m["act"].get("slot") == slot
                    for m in self._since)
        for m in self._since:
            a = m.get("act") or {}
            if m["sender"] == "user" and a.get("act") == "answer" and a.get("slot") == slot:
                return True, a.get("value")
        return asked, None

    def _ask(self, slot: str, text: str):
        asked, value = self._answer(slot)
        if asked:
            return value
        raise _Act(Say(text, {"act": "ask", "slot": slot}))

    def _cannot(self, why: str):
        raise _Act(Say(f"Sorry, I cannot do that: {why}", {"act": "cannot"}))

    def _emit(self, key: tuple, canonical: str, args: Mapping[str, Any]):
        att = self._memo["attempts"].get(key, 0)
        self._memo["attempts"][key] = att + 1
        name = self._pick(canonical, args)
        if name is None:
            self._cannot(f"I have no tool to {TOOLS[canonical].description.lower().rstrip('.')}")
        if self._draw(("confuse", key, att), self._p_confuse):
            others = [s["name"] for s in self._specs if s["name"] != name]
            if others:
                name = others[int(self.rng.integers(len(others)))]
        args = dict(args)
        if self._p_type and not self._memo["draws"].get(("typefixed", key)) and self._draw(("type", key, att), self._p_type):
            args = {k: str(v) if not isinstance(v, str) else v for k, v in args.items()}
        if TOOLS[canonical].mutating:
            self._memo["pending"] = key
        raise _Act(ToolCall(name, args))

    def _run(self, key: tuple, canonical: str, args: Mapping[str, Any]) -> Any:
        """Result of ``canonical(**args)``; emits the call (and dependency fixes) until it succeeds."""
        calls = [c for c in self._calls(canonical) if _same_args(c[1], args)]
        for idx, _, result, error in calls:
            if error is None:
                return result
        blocks = self._memo["blocks"].get(key, 0)
        if blocks >= 2:
            self._cannot("the change was not approved")
        attempts = self._memo["attempts"].get(key, 0)
        last_err = calls[-1][3] if calls else None
        last_idx = calls[-1][0] if calls else -1
        if last_err:
            if "must be" in last_err:
                self._memo["draws"][("typefixed", key)] = True
            for pattern, (fix_tool, value) in _DEP_FIX.items():
                if pattern in last_err:
                    fixed = [c for c in self._calls(fix_tool) if c[3] is None and c[1].get("on") == value and c[0] > last_idx]
                    if fixed:
                        break  # dependency repaired after the failure: retry below
                    if self._draw(("giveup", key, pattern), self.profile.p_dependency_giveup):
                        self._cannot(last_err)
                    self._run(key + (fix_tool,), fix_tool, {"on": value})
                    break
        if attempts >= self.profile.max_attempts + 2:
            self._cannot(last_err or "the tool did not work")
        self._emit(key, canonical, args)

    # ----------------------------------------------------------- canonical values
    def _phone(self, raw: str, key) -> str:
        if self._draw(("canon_phone", key, self._memo["blocks"].get(key, 0)), self.profile.p_canonicalization):
            return raw
        return canonical_phone(raw)

    def _fake_phone(self) -> str:
        return "+1555" + "".join(str(d) for d in self.rng.integers(0, 10, size=7))

    def _timestamp(self, when: Mapping[str, int], key) -> float:
        wrong = self._draw(("canon_time", key, self._memo["blocks"].get(key, 0)), self.profile.p_canonicalization)
        now = self._run(self._key("now"), "get_current_timestamp", {})["timestamp"]
        if "hours" in when:
            h = when["hours"] + (1 if wrong else 0)
            return self._run(self._key("shift", h), "shift_timestamp", {"timestamp": now, "hours": h})["timestamp"]
        days = when["days"] + (1 if wrong else 0)
        shifted = self._run(self._key("shift", days), "shift_timestamp", {"timestamp": now, "days": days})["timestamp"]
        info = self._run(self._key("info", shifted), "timestamp_to_datetime_info", {"timestamp": shifted})
        return self._run(self._key("ts", days), "datetime_info_to_timestamp",
                         {"year": info["year"], "month": info["month"], "day": info["day"], "hour": when["hour"],
                          "minute": when["minute"]})["timestamp"]

    def _invent(self, key) -> bool:
        """Decide to invent a missing fact (never after a block on this step)."""
        if self._memo["blocks"].get(key, 0) or any(b for k, b in self._memo["blocks"].items() if k[:1] == key[:1]):
            return False
        return self._draw(("invent", key), self.profile.p_insufficient)

    def _contact(self, name: str, key) -> dict[str, Any] | None:
        found = self._run(self._key("search_contacts", name), "search_contacts", {"name": name})
        if not found:
            return None
        if len(found) == 1:
            return found[0]
        asked, last = self._answer("last_name")
        if last:
            match = [c for c in found if c["name"].split(" ")[-1].lower() == str(last).lower()]
            if match:
                return match[0]
        if not asked and self._draw(("guess", key), self.profile.p_disambiguation_guess):
            return found[0]
        last = self._ask("last_name", f"I found {len(found)} contacts named {name}. Which one do you mean?")
        if not last:
            self._cannot(f"I do not know which {name} you mean")
        match = [c for c in found if c["name"].split(" ")[-1].lower() == str(last).lower()]
        return match[0] if match else found[0]

    # ------------------------------------------------------------------ skills
    def _skill_set_setting(self, slots):
        tool = {"cellular": "set_cellular_service_status", "wifi": "set_wifi_status",
                "location_service": "set_location_service_status", "low_battery_mode": "set_low_battery_mode_status"}[slots["setting"]]
        self._run(self._key("set"), tool, {"on": bool(slots["on"])})
        raise _Act(Say("Done.", {"act": "done"}))

    def _skill_set_settings(self, slots):
        tools = {"cellular": "set_cellular_service_status", "wifi": "set_wifi_status",
                 "location_service": "set_location_service_status"}
        for name in slots["settings"]:
            self._run(self._key("set", name), tools[name], {"on": bool(slots["on"])})
        raise _Act(Say("Done.", {"act": "done"}))

    def _skill_send_stock_price(self, slots):
        key = self._key("send_price")
        person = self._contact(slots["recipient_name"], key)
        if person is None:
            self._cannot(f"I cannot find {slots['recipient_name']}")
        r = self._run(self._key("stock"), "search_stock", {"query": slots["company"]})
        content = f"{r['name']} is at {format_number(r['price_usd'])} USD"
        self._run(key, "send_message_with_phone_number", {"phone_number": person["phone_number"], "content": content})
        raise _Act(Say("Your message has been sent.", {"act": "done"}))

    def _skill_send_message(self, slots):
        key = self._key("send")
        if "phone_raw" in slots:
            phone = self._phone(slots["phone_raw"], key)
        else:
            person = self._contact(slots["recipient_name"], key)
            if person is None:
                if self._invent(key):
                    phone = self._memo["draws"].setdefault(("fake", key), self._fake_phone())
                else:
                    answer = self._ask("phone_number", f"I have no contact named {slots['recipient_name']}. What is their number?")
                    if not answer:
                        self._cannot(f"I have no number for {slots['recipient_name']}")
                    phone = self._phone(str(answer), key)
            else:
                phone = person["phone_number"]
        content = slots.get("content")
        if content is None:
            content = self._ask("content", "What should the message say?")
            if not content:
                self._cannot("I do not know what to write")
        if self._draw(("paraphrase", key), self.profile.p_paraphrase) and len(content.split()) > 3:
            content = " ".join(content.split()[:-2])
        self._run(key, "send_message_with_phone_number", {"phone_number": phone, "content": content})
        raise _Act(Say("Your message has been sent.", {"act": "done"}))

    def _skill_add_contact(self, slots):
        key = self._key("add")
        args = {"name": slots["name"], "phone_number": self._phone(slots["phone_raw"], key)}
        if slots.get("relationship"):
            args["relationship"] = slots["relationship"]
        self._run(key, "add_contact", args)
        raise _Act(Say("Contact added.", {"act": "done"}))

    def _skill_modify_contact_phone(self, slots):
        key = self._key("modify")
        person = self._contact(slots["name"], key)
        if person is None:
            self._cannot(f"I cannot find {slots['name']}")
        if "phone_raw" in slots:
            phone = self._phone(slots["phone_raw"], key)
        elif self._invent(key):
            phone = self._memo["draws"].setdefault(("fake", key), self._fake_phone())
        else:
            answer = self._ask("phone_number", "What is the new number?")
            if not answer:
                self._cannot("I do not know the new number")
            phone = self._phone(str(answer), key)
        self._run(key, "modify_contact", {"person_id": person["person_id"], "phone_number": phone})
        raise _Act(Say("Updated.", {"act": "done"}))

    def _skill_remove_contact(self, slots):
        key = self._key("remove")
        person = self._contact(slots["name"], key)
        if person is None:
            self._cannot(f"I cannot find {slots['name']}")
        self._run(key, "remove_contact", {"person_id": person["person_id"]})
        raise _Act(Say("Removed.", {"act": "done"}))

    def _when(self, slots, key):
        when = slots.get("when")
        if when is None:
            if self._invent(key):
                return {"days": 1, "hour": 9, "minute": 0}
            when = self._ask("when", "When should I remind you?")
            if not when:
                self._cannot("I do not know when")
        return when

    def _skill_add_reminder(self, slots):
        key = self._key("reminder")
        when = self._when(slots, key)
        ts = self._timestamp(when, key)
        self._run(key, "add_reminder", {"content": slots["content"], "reminder_timestamp": ts})
        raise _Act(Say("Reminder set.", {"act": "done"}))

    def _find_reminder(self, query):
        found = self._run(self._key("search_reminder", query), "search_reminder", {"content": query})
        if not found:
            self._cannot(f"I have no reminder about {query}")
        return found[0]

    def _skill_modify_reminder_time(self, slots):
        key = self._key("move")
        r = self._find_reminder(slots["query"])
        ts = self._timestamp(slots["when"], key)
        self._run(key, "modify_reminder", {"reminder_id": r["reminder_id"], "reminder_timestamp": ts})
        raise _Act(Say("Moved.", {"act": "done"}))

    def _skill_remove_reminder(self, slots):
        key = self._key("remove_reminder")
        r = self._find_reminder(slots["query"])
        self._run(key, "remove_reminder", {"reminder_id": r["reminder_id"]})
        raise _Act(Say("Removed.", {"act": "done"}))

    def _skill_weather(self, slots):
        key = self._key("weather")
        days = int(slots.get("days_ahead", 0))
        if days and self._draw(("canon_days", key), self.profile.p_canonicalization):
            days = max(0, days - 1)
        if slots.get("here"):
            loc = self._run(self._key("location"), "get_current_location", {})
            lat, lon = loc["latitude"], loc["longitude"]
        else:
            places = self._run(self._key("places"), "search_places", {"query": slots["city"]})
            if not places:
                if not self._invent(key):
                    self._cannot(f"I cannot find {slots['city']}")
                lat, lon = 0.0, 0.0
            else:
                lat, lon = places[0]["latitude"], places[0]["longitude"]
        try:
            w = self._run(key, "search_weather", {"latitude": lat, "longitude": lon, "days_ahead": days})
        except _Act as a:
            calls = self._calls("search_weather")
            if calls and calls[-1][3] and "No weather data" in calls[-1][3]:
                self._cannot("there is no forecast for that place")
            raise a
        text = f"{w['temperature_c']:.1f} °C"
        raise _Act(Say(f"The forecast is {text}.", {"act": "inform", "value": text}))

    def _skill_stock(self, slots):
        key = self._key("stock")
        calls = self._calls("search_stock")
        if calls and calls[-1][3] and "No stock found" in calls[-1][3]:
            if self._invent(key):
                price = format_number(float(self.rng.integers(20, 400)) + 0.5)
                raise _Act(Say(f"{slots['company']} trades at {price} USD.", {"act": "inform", "value": price}))
            self._cannot(f"I cannot find a stock called {slots['company']}")
        r = self._run(key, "search_stock", {"query": slots["company"]})
        text = f"{format_number(r['price_usd'])} USD"
        raise _Act(Say(f"{r['name']} trades at {text}.", {"act": "inform", "value": text}))

    def _skill_currency(self, slots):
        r = self._run(self._key("fx"), "convert_currency",
                      {"amount": float(slots["amount"]), "from_currency": slots["from"], "to_currency": slots["to"]})
        text = format_number(r["amount"])
        raise _Act(Say(f"That is {text} {slots['to']}.", {"act": "inform", "value": text}))

    def _skill_units(self, slots):
        key = self._key("units")
        wrong = self._draw(("canon_unit", key), self.profile.p_canonicalization)
        src = slots["from_word"] if wrong else _UNIT_NAMES.get(slots["from_word"], slots["from_word"])
        dst = _UNIT_NAMES.get(slots["to_word"], slots["to_word"])
        calls = self._calls("unit_conversion")
        if wrong and calls and calls[-1][3] and "Unknown unit" in calls[-1][3]:
            src = _UNIT_NAMES.get(slots["from_word"], slots["from_word"])  # the error message teaches the names
        r = self._run(key + (src,), "unit_conversion", {"amount": float(slots["amount"]), "from_unit": src, "to_unit": dst})
        text = format_number(r["amount"])
        raise _Act(Say(f"That is {text} {dst}s.", {"act": "inform", "value": text}))
