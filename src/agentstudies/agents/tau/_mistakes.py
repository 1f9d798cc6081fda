"""Mistakes of the scripted τ-bench policy: altered arguments and spurious writes.

These generate the *proposals* of a simulated agent; whether a proposal hurts is decided
only by the environment (the package's tools and reward), never here.

- :func:`alter_arguments` changes one argument of a state-changing gold call so that
  the tool usually still accepts it (a different reason, a neighbouring ZIP code, another
  variant of the same product, another of the user's payment methods or reservations,
  one more bag, a shifted date of birth, a larger certificate). Plausible values are read
  from the pristine database, as a model would read them from earlier tool results.
- :func:`spurious_write` is a write the task does not ask for: a gold write of another
  task of the same domain (acting on the wrong customer's order or reservation).
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

from agentstudies.envs.tau import load_tasks, pristine_db

__all__ = ["alter_arguments", "spurious_write", "ALTERABLE_TOOLS"]


def _pick(rng: np.random.Generator, options: list[Any]) -> Any:
    return options[int(rng.integers(len(options)))] if options else None


def _bump_zip(args: dict) -> dict | None:
    z = str(args.get("zip", ""))
    if not z or not z[-1].isdigit():
        return None
    out = dict(args)
    out["zip"] = z[:-1] + str((int(z[-1]) + 1) % 10)
    return out


def _retail_user_of_order(order_id: str) -> Any:
    db = pristine_db("retail")
    order = db.orders.get(order_id) if isinstance(order_id, str) else None
    return None if order is None else db.users.get(order.user_id)


def _retail_cancel(args: dict, rng: np.random.Generator) -> dict | None:
    other = {"no longer needed": "ordered by mistake", "ordered by mistake": "no longer needed"}
    if args.get("reason") not in other:
        return None
    return {**args, "reason": other[args["reason"]]}


def _retail_other_payment(args: dict, rng: np.random.Generator, key: str = "payment_method_id", gift_only: bool = False) -> dict | None:
    user = _retail_user_of_order(args.get("order_id"))
    if user is None:
        return None
    order = pristine_db("retail").orders[args["order_id"]]
    current = order.payment_history[0].payment_method_id if order.payment_history else None
    options = sorted(
        pid
        for pid, pm in user.payment_methods.items()
        if pid not in (args.get(key), current) and (not gift_only or pm.source == "gift_card")
    )
    choice = _pick(rng, options)
    return None if choice is None else {**args, key: choice}


def _retail_other_variant(args: dict, rng: np.random.Generator) -> dict | None:
    """Replace one new item by another available variant of the same product."""
    db = pristine_db("retail")
    order = db.orders.get(args.get("order_id"))
    new_ids = list(args.get("new_item_ids") or [])
    if order is None or not new_ids:
        return None
    candidates = []
    for j, (old, new) in enumerate(zip(args.get("item_ids") or [], new_ids)):
        item = next((it for it in order.items if it.item_id == old), None)
        if item is None or item.product_id not in db.products:
            continue
        for vid, variant in sorted(db.products[item.product_id].variants.items()):
            if variant.available and vid not in (old, new):
                candidates.append((j, vid))
    choice = _pick(rng, candidates)
    if choice is None:
        return None
    j, vid = choice
    new_ids[j] = vid
    return {**args, "new_item_ids": new_ids}


def _retail_items(args: dict, rng: np.random.Generator) -> dict | None:
    out = _retail_other_variant(args, rng)
    return out if out is not None else _retail_other_payment(args, rng)


def _retail_return(args: dict, rng: np.random.Generator) -> dict | None:
    items = list(args.get("item_ids") or [])
    if len(items) > 1:
        j = int(rng.integers(len(items)))
        return {**args, "item_ids": items[:j] + items[j + 1 :]}
    out = _retail_other_payment(args, rng, gift_only=True)
    if out is not None:
        return out
    order = pristine_db("retail").orders.get(args.get("order_id"))
    if order is None:
        return None
    others = sorted({it.item_id for it in order.items} - set(items))
    choice = _pick(rng, others)
    return None if choice is None else {**args, "item_ids": [choice]}


def _airline_user(user_id: str) -> Any:
    return pristine_db("airline").users.get(user_id) if isinstance(user_id, str) else None


def _airline_cancel(args: dict, rng: np.random.Generator) -> dict | None:
    db = pristine_db("airline")
    res = db.reservations.get(args.get("reservation_id"))
    user = None if res is None else _airline_user(res.user_id)
    if user is None:
        return None
    others = sorted(
        r for r in user.reservations if r != args["reservation_id"] and r in db.reservations and db.reservations[r].status != "cancelled"
    )
    choice = _pick(rng, others)
    return None if choice is None else {**args, "reservation_id": choice}


def _airline_other_payment(args: dict, rng: np.random.Generator) -> dict | None:
    res = pristine_db("airline").reservations.get(args.get("reservation_id"))
    user = None if res is None else _airline_user(res.user_id)
    if user is None:
        return None
    options = sorted(
        pid for pid, pm in user.payment_methods.items() if pid != args.get("payment_id") and pm.source == "credit_card"
    )
    choice = _pick(rng, options)
    return None if choice is None else {**args, "payment_id": choice}


def _plus_one(key: str, step: int = 1) -> Callable[[dict, np.random.Generator], dict | None]:
    def alter(args: dict, rng: np.random.Generator) -> dict | None:
        if not isinstance(args.get(key), int):
            return None
        return {**args, key: args[key] + step}

    return alter


def _airline_flights(args: dict, rng: np.random.Generator) -> dict | None:
    out = _airline_other_payment(args, rng)
    if out is not None:
        return out
    other_cabin = {"economy": "business", "business": "economy", "basic_economy": "economy"}
    cabin = args.get("cabin")
    return None if cabin not in other_cabin else {**args, "cabin": other_cabin[cabin]}


def _airline_passengers(args: dict, rng: np.random.Generator) -> dict | None:
    passengers = copy.deepcopy(list(args.get("passengers") or []))
    if not passengers or not isinstance(passengers[0], dict) or "dob" not in passengers[0]:
        return None
    j = int(rng.integers(len(passengers)))
    y, m, d = str(passengers[j]["dob"]).split("-")
    passengers[j]["dob"] = f"{y}-{m}-{(int(d) % 28) + 1:02d}"
    return {**args, "passengers": passengers}


_ALTER: dict[str, Callable[[dict, np.random.Generator], dict | None]] = {
    "cancel_pending_order": _retail_cancel,
    "modify_pending_order_address": lambda a, r: _bump_zip(a),
    "modify_user_address": lambda a, r: _bump_zip(a),
    "modify_pending_order_payment": _retail_other_payment,
    "modify_pending_order_items": _retail_items,
    "exchange_delivered_order_items": _retail_items,
    "return_delivered_order_items": _retail_return,
    "cancel_reservation": _airline_cancel,
    "send_certificate": _plus_one("amount", 50),
    "update_reservation_baggages": _plus_one("total_baggages"),
    "update_reservation_flights": _airline_flights,
    "update_reservation_passengers": _airline_passengers,
    "book_reservation": _plus_one("total_baggages"),
}

#: Write tools for which :func:`alter_arguments` knows a plausible alteration.
ALTERABLE_TOOLS: frozenset[str] = frozenset(_ALTER)


def alter_arguments(name: str, arguments: dict[str, Any], rng: np.random.Generator) -> dict[str, Any] | None:
    """Arguments of ``name`` with exactly one argument changed, or ``None`` if impossible.

    The returned dict is a new object and differs from ``arguments``; ``arguments`` is
    not modified. ``None`` means no plausible alteration exists for this call (for example
    a customer with a single reservation to cancel).

    Raises
    ------
    KeyError
        If ``name`` is not a state-changing tool of either domain.
    """
    if name not in _ALTER:
        raise KeyError(f"no alteration rule for tool {name!r}; known: {sorted(_ALTER)}")
    out = _ALTER[name](copy.deepcopy(arguments), rng)
    if out is None or out == arguments:
        return None
    return out


def spurious_write(task_id: str, domain: str, rng: np.random.Generator) -> tuple[str, dict[str, Any]] | None:
    """A write the task does not ask for: a gold write of another task of ``domain``.

    Returns ``(tool name, arguments)`` or ``None`` if the domain has no other write.
    """
    pool = [(t.task_id, a) for t in load_tasks(domain) if t.task_id != task_id for a in t.write_actions]
    if not pool:
        return None
    _, action = pool[int(rng.integers(len(pool)))]
    return action.name, action.args()
