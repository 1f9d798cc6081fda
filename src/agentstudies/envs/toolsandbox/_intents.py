"""One seeded builder per user-request type of the ToolSandbox-style scenarios: the
:class:`~agentstudies.envs.toolsandbox.Intent` (what the user says and the hidden facts)
with its milestones, gold calls and categories (a ``_Piece``).

Request types after ToolSandbox (Lu et al., 2024, Table 1); templates and texts are ours.
"""

from __future__ import annotations

from typing import Any, Mapping

from agentstudies.envs.toolsandbox._scenarios import Intent
from agentstudies.envs.toolsandbox._scoring import Constraint, Milestone, WorldRef
from agentstudies.envs.toolsandbox._tools import (
    FX_PER_USD,
    HOME,
    PLACES,
    STOCKS,
    UNITS,
    WEATHER,
    canonical_phone,
    format_number,
)
from agentstudies.envs.toolsandbox._world import (
    CONTENTS,
    LAST,
    PHONE_FORMATS,
    RELATIONS,
    UNIT_WORDS,
    UNKNOWN_CITIES,
    UNKNOWN_NAMES,
    UNKNOWN_STOCKS,
    _Piece,
    _World,
    _call,
    _decline,
    _dependency,
    _fmt_phone,
    _phone,
    _reply,
    _say,
    _setting_on,
    _time_gold,
    _trace,
    _when_text,
)

__all__: list[str] = []


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
    phone = WorldRef("CONTACT", target["person_id"], "phone_number")  # read from the world the episode runs in
    p.chain(Milestone("message sent", (Constraint("added", "MESSAGING", {"recipient_phone_number": phone, "content": content},
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
                   {"latitude": "close:0.5", "longitude": "close:0.5"}), _reply(refs, key=f"{row['temperature_c']:.1f}"))
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
    p.chain(_trace("search_stock", {"query": company}), _reply(refs, key=price))
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
    p.chain(_trace("convert_currency", {"amount": amount, "from_currency": str(a), "to_currency": str(b)}), _reply(refs, key=text))
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
    p.chain(_trace("unit_conversion", {"amount": amount, "from_unit": src, "to_unit": dst}), _reply(refs, key=text))
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
                    Milestone("price sent", (Constraint("added", "MESSAGING", {"recipient_phone_number": WorldRef("CONTACT", target["person_id"], "phone_number"),
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
        mine = [_trace("send_message_with_phone_number", {}, name="message sent without a known number")]
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
        mine = [_trace("add_reminder", {}, name="reminder added without a time")]
        return intent, p2, mine
    if kind == "no_number":
        intent, p2 = _intent_modify_contact(rng, w, PHONE_FORMATS[0], known=False)
        mine = [_trace("modify_contact", {}, name="number changed without a known number")]
        return intent, p2, mine
    raise ValueError(kind)

