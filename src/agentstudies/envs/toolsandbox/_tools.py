"""Typed tools of the ToolSandbox-style world, their implicit state dependencies, and views.

34 tools across settings, contacts, messaging, reminders, time and dates, arithmetic, units
and currency, and web look-ups (weather, places, reverse geocoding, stocks, currency
conversion, exchange rates) served from the local fixtures below (no network). Dependencies
are *implicit*, as in ToolSandbox (Lu et al., 2024, Sec. 2.2): a tool's description does not
state them; calling it in the wrong world state raises a :class:`ToolError` with an
informative message, returned to the agent as a message:

- ``send_message_with_phone_number`` needs cellular service on;
- every web look-up (:data:`WEB_TOOLS`) needs wifi on;
- turning cellular / wifi / location service on is refused in low-battery mode (so a
  look-up in low-battery mode needs: low battery off -> wifi on -> look-up);
- ``get_current_location`` needs location service on.

Arguments are typed (``bool``, ``int``, ``float``, ``str``); a wrong type, a missing
required argument or an unknown argument is a :class:`ToolError` too.

:class:`ToolView` is what an agent sees of a tool allow-list: names, descriptions and
argument specs, optionally scrambled (tool name, tool description, argument description,
argument type -- ToolSandbox's four scramble augmentations).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from agentstudies.envs.toolsandbox._context import ExecutionContext

__all__ = [
    "ToolError",
    "Arg",
    "Tool",
    "TOOLS",
    "TOOL_NAMES",
    "MUTATING_TOOLS",
    "ToolView",
    "SCRAMBLES",
    "PLACES",
    "WEATHER",
    "STOCKS",
    "FX_PER_USD",
    "UNITS",
    "canonical_phone",
    "format_number",
    "execute_tool",
    "WEB_TOOLS",
]


class ToolError(Exception):
    """A tool refused the call; the message goes back to the agent."""


# ------------------------------------------------------------------ fixtures
#: Places: name -> (latitude, longitude, country).
PLACES: Mapping[str, tuple[float, float, str]] = {
    "Paris": (48.8566, 2.3522, "France"),
    "Tokyo": (35.6762, 139.6503, "Japan"),
    "Cupertino": (37.3230, -122.0322, "United States"),
    "Berlin": (52.5200, 13.4050, "Germany"),
    "Nairobi": (-1.2921, 36.8219, "Kenya"),
    "Lima": (-12.0464, -77.0428, "Peru"),
    "Oslo": (59.9139, 10.7522, "Norway"),
    "Sydney": (-33.8688, 151.2093, "Australia"),
    "Toronto": (43.6532, -79.3832, "Canada"),
    "Mumbai": (19.0760, 72.8777, "India"),
}

#: Device location (what ``get_current_location`` returns).
HOME = "Cupertino"


def _weather_row(name: str, day: int) -> dict[str, Any]:
    h = int(hashlib.blake2b(f"{name}:{day}".encode(), digest_size=4).hexdigest(), 16)
    lat = PLACES[name][0]
    base = 28 - abs(lat) * 0.35
    return {"temperature_c": round(base + (h % 90) / 10 - 4.0, 1),
            "condition": ("sunny", "cloudy", "rain", "windy", "snow" if abs(lat) > 45 else "fog")[h % 5]}


#: Weather fixture: (place, days ahead 0..6) -> {temperature_c, condition}.
WEATHER: Mapping[tuple[str, int], Mapping[str, Any]] = {(p, d): _weather_row(p, d) for p in PLACES for d in range(7)}

#: Stocks: company -> (symbol, price in USD).
STOCKS: Mapping[str, tuple[str, float]] = {
    "Apple": ("AAPL", 231.42), "Microsoft": ("MSFT", 418.07), "Nvidia": ("NVDA", 121.55),
    "Amazon": ("AMZN", 186.9), "Toyota": ("TM", 171.33), "Siemens": ("SIE", 174.48),
    "Netflix": ("NFLX", 689.12), "Adobe": ("ADBE", 512.6),
}

#: Exchange rates: units of currency per 1 USD.
FX_PER_USD: Mapping[str, float] = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "JPY": 151.3, "CAD": 1.37, "INR": 83.4, "CHF": 0.9}

#: Units: name -> (dimension, factor to the dimension's SI unit).
UNITS: Mapping[str, tuple[str, float]] = {
    "meter": ("length", 1.0), "kilometer": ("length", 1000.0), "mile": ("length", 1609.344),
    "foot": ("length", 0.3048), "inch": ("length", 0.0254),
    "kilogram": ("mass", 1.0), "pound": ("mass", 0.45359237), "ounce": ("mass", 0.028349523125), "gram": ("mass", 0.001),
    "liter": ("volume", 1.0), "gallon": ("volume", 3.785411784), "milliliter": ("volume", 0.001),
}


def canonical_phone(raw: str) -> str:
    """``"+1"`` + ten digits for a North-American number written in any common format."""
    digits = "".join(ch for ch in str(raw) if ch.isdigit())
    if len(digits) == 11 and digits.startswith("1"):
        digits = digits[1:]
    if len(digits) != 10:
        raise ValueError(f"not a ten-digit phone number: {raw!r}")
    return "+1" + digits


def format_number(x: float) -> str:
    """Two decimals, no thousands separator (how tools and agents print amounts)."""
    return f"{x:.2f}"


# ---------------------------------------------------------------------- specs
@dataclass(frozen=True)
class Arg:
    """One typed argument: name, Python type, required?, description."""

    name: str
    type: type
    required: bool
    description: str


@dataclass(frozen=True)
class Tool:
    """A tool: canonical name, description, arguments, whether it writes the world."""

    name: str
    description: str
    args: tuple[Arg, ...]
    mutating: bool
    fn: Callable[..., Any] = field(repr=False, compare=False)
    namespace: str = ""

    def check(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Typed arguments, or :class:`ToolError` naming the bad one."""
        if not isinstance(arguments, Mapping):
            raise ToolError(f"{self.name}: arguments must be a mapping, got {type(arguments).__name__}")
        known = {a.name: a for a in self.args}
        extra = sorted(set(arguments) - set(known))
        if extra:
            raise ToolError(f"{self.name}: unexpected argument(s) {extra}; accepted: {sorted(known)}")
        out: dict[str, Any] = {}
        for a in self.args:
            if a.name not in arguments or arguments[a.name] is None:
                if a.required:
                    raise ToolError(f"{self.name}: missing required argument {a.name!r} ({a.type.__name__})")
                continue
            v = arguments[a.name]
            ok = (isinstance(v, bool) if a.type is bool else
                  isinstance(v, (int, float)) and not isinstance(v, bool) if a.type is float else
                  isinstance(v, int) and not isinstance(v, bool) if a.type is int else isinstance(v, a.type))
            if not ok:
                raise ToolError(f"{self.name}: argument {a.name!r} must be {a.type.__name__}, got {type(v).__name__} {v!r}")
            out[a.name] = float(v) if a.type is float else v
        return out


def _low_battery(ctx: ExecutionContext) -> bool:
    return bool(ctx.setting("low_battery_mode"))


def _setter(setting: str, label: str, refused_in_low_battery: bool):
    def fn(ctx: ExecutionContext, on: bool) -> dict[str, Any]:
        if on and refused_in_low_battery and _low_battery(ctx):
            raise ToolError(f"Cannot turn on {label} while low battery mode is on.")
        if setting == "low_battery_mode" and on:
            # entering low-battery mode switches radios and location off
            rows = ctx.table("SETTING")
            off = {"cellular", "wifi", "location_service"}
            ctx.write("SETTING", [dict(r, value=False) if r["name"] in off else (dict(r, value=True) if r["name"] == setting else r) for r in rows])
        else:
            ctx.set_setting(setting, on)
        return {setting: on}
    return fn


def _getter(setting: str):
    def fn(ctx: ExecutionContext) -> dict[str, Any]:
        return {setting: ctx.setting(setting)}
    return fn


def _current_location(ctx: ExecutionContext) -> dict[str, Any]:
    if not ctx.setting("location_service"):
        raise ToolError("Location service is off; cannot get the current location.")
    lat, lon, country = PLACES[HOME]
    return {"latitude": lat, "longitude": lon, "city": HOME, "country": country}


def _search_contacts(ctx, name=None, phone_number=None, relationship=None):
    out = []
    for r in ctx.table("CONTACT"):
        if name is not None and name.lower() not in r["name"].lower():
            continue
        if phone_number is not None and phone_number != r["phone_number"]:
            continue
        if relationship is not None and relationship.lower() != str(r.get("relationship", "")).lower():
            continue
        out.append(dict(r))
    return out


def _add_contact(ctx, name, phone_number, relationship=None):
    rows = ctx.table("CONTACT")
    pid = ctx.next_id("CONTACT", "p")
    row = {"person_id": pid, "name": name, "phone_number": phone_number, "relationship": relationship or ""}
    ctx.write("CONTACT", rows + [row])
    return {"person_id": pid}


def _modify_contact(ctx, person_id, name=None, phone_number=None, relationship=None):
    rows = ctx.table("CONTACT")
    if not any(r["person_id"] == person_id for r in rows):
        raise ToolError(f"No contact with person_id {person_id!r}.")
    upd = {k: v for k, v in (("name", name), ("phone_number", phone_number), ("relationship", relationship)) if v is not None}
    if not upd:
        raise ToolError("modify_contact: nothing to modify; give name, phone_number or relationship.")
    ctx.write("CONTACT", [dict(r, **upd) if r["person_id"] == person_id else r for r in rows])
    return {"person_id": person_id, **upd}


def _remove_contact(ctx, person_id):
    rows = ctx.table("CONTACT")
    if not any(r["person_id"] == person_id for r in rows):
        raise ToolError(f"No contact with person_id {person_id!r}.")
    ctx.write("CONTACT", [r for r in rows if r["person_id"] != person_id])
    return {"removed": person_id}


def _send_message(ctx, phone_number, content):
    if not ctx.setting("cellular"):
        raise ToolError("Cellular service is off; cannot send a message.")
    rows = ctx.table("MESSAGING")
    mid = ctx.next_id("MESSAGING", "m")
    ts = ctx.setting("current_timestamp")
    ctx.write("MESSAGING", rows + [{"message_id": mid, "sender_phone_number": ctx.setting("own_phone_number"),
                                    "recipient_phone_number": phone_number, "content": content, "creation_timestamp": ts}])
    return {"message_id": mid}


def _search_messages(ctx, recipient_phone_number=None, content=None):
    out = []
    for r in ctx.table("MESSAGING"):
        if recipient_phone_number is not None and r["recipient_phone_number"] != recipient_phone_number:
            continue
        if content is not None and content.lower() not in r["content"].lower():
            continue
        out.append(dict(r))
    return out


def _add_reminder(ctx, content, reminder_timestamp):
    rows = ctx.table("REMINDER")
    rid = ctx.next_id("REMINDER", "r")
    ctx.write("REMINDER", rows + [{"reminder_id": rid, "content": content, "reminder_timestamp": float(reminder_timestamp),
                                   "creation_timestamp": ctx.setting("current_timestamp")}])
    return {"reminder_id": rid}


def _search_reminder(ctx, content=None):
    return [dict(r) for r in ctx.table("REMINDER") if content is None or content.lower() in r["content"].lower()]


def _modify_reminder(ctx, reminder_id, content=None, reminder_timestamp=None):
    rows = ctx.table("REMINDER")
    if not any(r["reminder_id"] == reminder_id for r in rows):
        raise ToolError(f"No reminder with reminder_id {reminder_id!r}.")
    upd = {k: v for k, v in (("content", content), ("reminder_timestamp", reminder_timestamp)) if v is not None}
    if not upd:
        raise ToolError("modify_reminder: nothing to modify; give content or reminder_timestamp.")
    ctx.write("REMINDER", [dict(r, **upd) if r["reminder_id"] == reminder_id else r for r in rows])
    return {"reminder_id": reminder_id, **upd}


def _remove_reminder(ctx, reminder_id):
    rows = ctx.table("REMINDER")
    if not any(r["reminder_id"] == reminder_id for r in rows):
        raise ToolError(f"No reminder with reminder_id {reminder_id!r}.")
    ctx.write("REMINDER", [r for r in rows if r["reminder_id"] != reminder_id])
    return {"removed": reminder_id}


def _now(ctx):
    return {"timestamp": float(ctx.setting("current_timestamp"))}


def _shift(ctx, timestamp, days=0, hours=0, minutes=0):
    return {"timestamp": float(timestamp) + days * 86400.0 + hours * 3600.0 + minutes * 60.0}


def _ts_info(ctx, timestamp):
    d = _dt.datetime.fromtimestamp(float(timestamp), tz=_dt.timezone.utc)
    return {"year": d.year, "month": d.month, "day": d.day, "hour": d.hour, "minute": d.minute,
            "weekday": d.strftime("%A")}


def _info_ts(ctx, year, month, day, hour=0, minute=0):
    try:
        d = _dt.datetime(year, month, day, hour, minute, tzinfo=_dt.timezone.utc)
    except ValueError as exc:
        raise ToolError(f"datetime_info_to_timestamp: invalid date: {exc}") from None
    return {"timestamp": float(d.timestamp())}


def _units(ctx, amount, from_unit, to_unit):
    if from_unit not in UNITS or to_unit not in UNITS:
        raise ToolError(f"Unknown unit; known units: {sorted(UNITS)}")
    (d1, f1), (d2, f2) = UNITS[from_unit], UNITS[to_unit]
    if d1 != d2:
        raise ToolError(f"Cannot convert {d1} ({from_unit}) to {d2} ({to_unit}).")
    return {"amount": round(amount * f1 / f2, 4), "unit": to_unit}


def _fx(ctx, amount, from_currency, to_currency):
    if from_currency not in FX_PER_USD or to_currency not in FX_PER_USD:
        raise ToolError(f"Unknown currency code; known: {sorted(FX_PER_USD)}")
    return {"amount": round(amount / FX_PER_USD[from_currency] * FX_PER_USD[to_currency], 2), "currency": to_currency}


def _web(name: str, fn):
    """``fn`` behind the wifi dependency (ToolSandbox: web tools need a connection)."""
    def wrapped(ctx, **kw):
        if not ctx.setting("wifi"):
            raise ToolError(f"Wifi is off; {name} needs an internet connection.")
        return fn(ctx, **kw)
    return wrapped


def _rate(ctx, from_currency, to_currency):
    if from_currency not in FX_PER_USD or to_currency not in FX_PER_USD:
        raise ToolError(f"Unknown currency code; known: {sorted(FX_PER_USD)}")
    return {"rate": round(FX_PER_USD[to_currency] / FX_PER_USD[from_currency], 6)}


def _lat_lon(ctx, latitude, longitude):
    best = min(PLACES, key=lambda p: math.hypot(PLACES[p][0] - latitude, PLACES[p][1] - longitude))
    lat, lon, country = PLACES[best]
    if math.hypot(lat - latitude, lon - longitude) > 1.0:
        raise ToolError(f"No place known near latitude {latitude}, longitude {longitude}.")
    return {"name": best, "country": country}


def _weekday(ctx, year, month, day):
    try:
        return {"weekday": _dt.date(year, month, day).strftime("%A")}
    except ValueError as exc:
        raise ToolError(f"get_weekday: invalid date: {exc}") from None


def _calculate(ctx, expression):
    import ast
    import operator

    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.USub: operator.neg, ast.UAdd: operator.pos}

    def ev(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in ops:
            return ops[type(node.op)](ev(node.operand))
        raise ToolError(f"calculate: only numbers, + - * / and parentheses are allowed; got {expression!r}")
    try:
        return {"result": round(ev(ast.parse(expression, mode="eval").body), 6)}
    except (SyntaxError, ZeroDivisionError) as exc:
        raise ToolError(f"calculate: cannot evaluate {expression!r}: {exc}") from None


def _contact_by_id(ctx, person_id):
    for r in ctx.table("CONTACT"):
        if r["person_id"] == person_id:
            return dict(r)
    raise ToolError(f"No contact with person_id {person_id!r}.")


def _own_number(ctx):
    return {"phone_number": ctx.setting("own_phone_number")}


def _places(ctx, query):
    return [{"name": p, "latitude": lat, "longitude": lon, "country": c}
            for p, (lat, lon, c) in PLACES.items() if query.lower() in p.lower()]


def _weather(ctx, latitude, longitude, days_ahead=0):
    if not 0 <= days_ahead <= 6:
        raise ToolError("days_ahead must lie in 0..6")
    for p, (lat, lon, _) in PLACES.items():
        if math.hypot(lat - latitude, lon - longitude) < 0.5:
            return dict(WEATHER[(p, days_ahead)], place=p, days_ahead=days_ahead)
    raise ToolError(f"No weather data near latitude {latitude}, longitude {longitude}.")


def _stock(ctx, query):
    for name, (sym, price) in STOCKS.items():
        if query.lower() in (name.lower(), sym.lower()):
            return {"name": name, "symbol": sym, "price_usd": price}
    raise ToolError(f"No stock found for {query!r}.")


def _t(name, desc, args, fn, mutating=False, ns=""):
    return Tool(name, desc, tuple(Arg(*a) for a in args), mutating, fn, ns)


_B = [("on", bool, True, "True to turn it on, False to turn it off")]
TOOLS: Mapping[str, Tool] = {t.name: t for t in [
    _t("set_cellular_service_status", "Turn the cellular service on or off.", _B, _setter("cellular", "cellular service", True), True, "SETTING"),
    _t("get_cellular_service_status", "Whether the cellular service is on.", [], _getter("cellular")),
    _t("set_wifi_status", "Turn wifi on or off.", _B, _setter("wifi", "wifi", True), True, "SETTING"),
    _t("get_wifi_status", "Whether wifi is on.", [], _getter("wifi")),
    _t("set_location_service_status", "Turn the location service on or off.", _B, _setter("location_service", "location service", True), True, "SETTING"),
    _t("get_location_service_status", "Whether the location service is on.", [], _getter("location_service")),
    _t("set_low_battery_mode_status", "Turn low battery mode on or off.", _B, _setter("low_battery_mode", "low battery mode", False), True, "SETTING"),
    _t("get_low_battery_mode_status", "Whether low battery mode is on.", [], _getter("low_battery_mode")),
    _t("get_current_location", "The device's current latitude, longitude and city.", [], _current_location),
    _t("search_contacts", "Search contacts by name (substring), phone number or relationship.",
       [("name", str, False, "part of the contact's name"), ("phone_number", str, False, "exact phone number"),
        ("relationship", str, False, "relationship, e.g. friend")], _search_contacts),
    _t("add_contact", "Add a contact.", [("name", str, True, "full name"), ("phone_number", str, True, "phone number"),
                                        ("relationship", str, False, "relationship")], _add_contact, True, "CONTACT"),
    _t("modify_contact", "Change a contact's name, phone number or relationship.",
       [("person_id", str, True, "id from search_contacts"), ("name", str, False, "new name"),
        ("phone_number", str, False, "new phone number"), ("relationship", str, False, "new relationship")], _modify_contact, True, "CONTACT"),
    _t("remove_contact", "Delete a contact.", [("person_id", str, True, "id from search_contacts")], _remove_contact, True, "CONTACT"),
    _t("send_message_with_phone_number", "Send a text message to a phone number.",
       [("phone_number", str, True, "recipient phone number"), ("content", str, True, "message text")], _send_message, True, "MESSAGING"),
    _t("search_messages", "Search sent messages by recipient phone number or content.",
       [("recipient_phone_number", str, False, "recipient phone number"), ("content", str, False, "part of the text")], _search_messages),
    _t("add_reminder", "Add a reminder at a UNIX timestamp.",
       [("content", str, True, "what to be reminded of"), ("reminder_timestamp", float, True, "UNIX timestamp, seconds")], _add_reminder, True, "REMINDER"),
    _t("search_reminder", "Search reminders by content.", [("content", str, False, "part of the content")], _search_reminder),
    _t("modify_reminder", "Change a reminder's content or time.",
       [("reminder_id", str, True, "id from search_reminder"), ("content", str, False, "new content"),
        ("reminder_timestamp", float, False, "new UNIX timestamp")], _modify_reminder, True, "REMINDER"),
    _t("remove_reminder", "Delete a reminder.", [("reminder_id", str, True, "id from search_reminder")], _remove_reminder, True, "REMINDER"),
    _t("get_current_timestamp", "The current UNIX timestamp (UTC).", [], _now),
    _t("shift_timestamp", "Add days, hours and minutes to a timestamp.",
       [("timestamp", float, True, "UNIX timestamp"), ("days", int, False, "days to add"), ("hours", int, False, "hours to add"),
        ("minutes", int, False, "minutes to add")], _shift),
    _t("timestamp_to_datetime_info", "Year, month, day, hour, minute and weekday (UTC) of a timestamp.",
       [("timestamp", float, True, "UNIX timestamp")], _ts_info),
    _t("datetime_info_to_timestamp", "UNIX timestamp of a UTC date and time.",
       [("year", int, True, "year"), ("month", int, True, "month 1-12"), ("day", int, True, "day of month"),
        ("hour", int, False, "hour 0-23"), ("minute", int, False, "minute 0-59")], _info_ts),
    _t("get_weekday", "Day of the week of a date.", [("year", int, True, "year"), ("month", int, True, "month 1-12"),
                                                     ("day", int, True, "day of month")], _weekday),
    _t("calculate", "Evaluate an arithmetic expression with + - * / and parentheses.",
       [("expression", str, True, "arithmetic expression, e.g. (2 + 3) * 4")], _calculate),
    _t("get_contact_by_id", "A contact's name, phone number and relationship by person_id.",
       [("person_id", str, True, "id from search_contacts")], _contact_by_id),
    _t("get_own_phone_number", "The phone number of this device.", [], _own_number),
    _t("unit_conversion", "Convert an amount between units of length, mass or volume.",
       [("amount", float, True, "amount"), ("from_unit", str, True, "unit name, e.g. mile"), ("to_unit", str, True, "unit name")], _units),
    _t("convert_currency", "Convert an amount between currencies (ISO codes).",
       [("amount", float, True, "amount"), ("from_currency", str, True, "ISO code"), ("to_currency", str, True, "ISO code")],
       _web("convert_currency", _fx)),
    _t("get_exchange_rate", "Exchange rate between two currencies (ISO codes).",
       [("from_currency", str, True, "ISO code"), ("to_currency", str, True, "ISO code")], _web("get_exchange_rate", _rate)),
    _t("search_places", "Find places by name; returns latitude and longitude.", [("query", str, True, "place name")],
       _web("search_places", _places)),
    _t("search_lat_lon", "Name of the place at a latitude/longitude.",
       [("latitude", float, True, "latitude"), ("longitude", float, True, "longitude")], _web("search_lat_lon", _lat_lon)),
    _t("search_weather", "Weather forecast near a latitude/longitude, days ahead 0-6.",
       [("latitude", float, True, "latitude"), ("longitude", float, True, "longitude"), ("days_ahead", int, False, "0 = today")],
       _web("search_weather", _weather)),
    _t("search_stock", "Current stock price by company name or symbol.", [("query", str, True, "company name or symbol")],
       _web("search_stock", _stock)),
]}

#: Web look-ups: each needs wifi on (an informative ToolError otherwise).
WEB_TOOLS: frozenset[str] = frozenset({"convert_currency", "get_exchange_rate", "search_places", "search_lat_lon",
                                       "search_weather", "search_stock"})

TOOL_NAMES: tuple[str, ...] = tuple(TOOLS)
MUTATING_TOOLS: frozenset[str] = frozenset(n for n, t in TOOLS.items() if t.mutating)


def execute_tool(ctx: ExecutionContext, name: str, arguments: Mapping[str, Any]) -> Any:
    """Run canonical tool ``name`` on ``ctx`` (writes stamped with the current message index).

    Raises
    ------
    ToolError
        Unknown tool, bad arguments, or a violated state dependency.
    """
    if name not in TOOLS:
        raise ToolError(f"Unknown tool {name!r}.")
    tool = TOOLS[name]
    return tool.fn(ctx, **tool.check(arguments))


#: The four scramble augmentations of ToolSandbox.
SCRAMBLES: tuple[str, ...] = ("tool_name", "tool_description", "arg_description", "arg_type")


@dataclass(frozen=True)
class ToolView:
    """What an agent sees of a set of tools, and the map back to canonical names.

    Parameters
    ----------
    tools : canonical tool names shown (allow-list plus distraction tools), in order
    scramble : one of :data:`SCRAMBLES` or ``None``
    key : str, salt of the scrambled names (the case id)

    ``specs`` is a tuple of dicts ``{"name", "description", "args": [{"name", "type",
    "required", "description"}]}``; scrambled names are ``"tool_<6 hex>"``, scrambled
    descriptions are empty, scrambled argument types read ``"unknown"``.
    """

    tools: tuple[str, ...]
    scramble: str | None = None
    key: str = ""

    def __post_init__(self) -> None:
        bad = [t for t in self.tools if t not in TOOLS]
        if bad:
            raise KeyError(f"unknown tool(s) {bad}")
        if self.scramble is not None and self.scramble not in SCRAMBLES:
            raise ValueError(f"unknown scramble {self.scramble!r}; expected one of {SCRAMBLES} or None")

    def shown_name(self, canonical: str) -> str:
        """The name shown for canonical tool ``canonical``."""
        if self.scramble != "tool_name":
            return canonical
        return "tool_" + hashlib.blake2b(f"{self.key}:{canonical}".encode(), digest_size=3).hexdigest()

    def canonical(self, shown: str) -> str | None:
        """Canonical name of shown name ``shown`` (None if not shown)."""
        for t in self.tools:
            if self.shown_name(t) == shown:
                return t
        return None

    @property
    def specs(self) -> tuple[dict[str, Any], ...]:
        out = []
        for t in self.tools:
            tool = TOOLS[t]
            out.append({
                "name": self.shown_name(t),
                "description": "" if self.scramble == "tool_description" else tool.description,
                "args": [{"name": a.name,
                          "type": "unknown" if self.scramble == "arg_type" else a.type.__name__,
                          "required": a.required,
                          "description": "" if self.scramble == "arg_description" else a.description} for a in tool.args],
            })
        return tuple(out)
