"""The execution context of the ToolSandbox-style world: versioned tables and messages.

Design after ToolSandbox (Lu et al., 2024, Sec. 2.1; facts in ``shared/notes/toolsandbox.md``);
the code is our own. One table per namespace -- ``SETTING`` (one key/value row per device
setting), ``CONTACT``, ``MESSAGING``, ``REMINDER`` -- plus the message log ``SANDBOX``.
Every row carries ``sandbox_message_index``: the index of the message after which that
version of the table was written. A table therefore holds all its versions, and
:meth:`ExecutionContext.table` reads it back *as it stood after any message*.

Roles are ``system``, ``user``, ``agent`` and ``execution_environment``; every message has a
sender, a recipient and a visibility list (the roles that see it). A tool call is a message
agent -> execution environment; its result (or the tool's error, as text) is the next
message execution environment -> agent, and the call's writes are stamped with the index
of that result message.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

__all__ = [
    "Role",
    "ROLES",
    "NAMESPACES",
    "ID_COLUMNS",
    "Message",
    "ExecutionContext",
    "Snapshot",
    "MessageCapReached",
    "DEFAULT_MAX_MESSAGES",
]


class Role:
    """The four roles of the message log."""

    SYSTEM = "system"
    USER = "user"
    AGENT = "agent"
    EXECUTION_ENVIRONMENT = "execution_environment"


ROLES: tuple[str, ...] = (Role.SYSTEM, Role.USER, Role.AGENT, Role.EXECUTION_ENVIRONMENT)

#: Database namespaces (the message log ``SANDBOX`` is kept separately as messages).
NAMESPACES: tuple[str, ...] = ("SETTING", "CONTACT", "MESSAGING", "REMINDER")

#: The identifying column of each namespace (rows with the same id are the same entity).
ID_COLUMNS: Mapping[str, str] = {
    "SETTING": "name",
    "CONTACT": "person_id",
    "MESSAGING": "message_id",
    "REMINDER": "reminder_id",
    "SANDBOX": "index",
}

#: ToolSandbox caps a scenario at 30 messages.
DEFAULT_MAX_MESSAGES = 30

STAMP = "sandbox_message_index"


class MessageCapReached(RuntimeError):
    """Raised when a message would exceed the context's message cap."""


@dataclass(frozen=True)
class Message:
    """One message of the log.

    ``tool_call`` is ``{"name", "arguments"}`` on agent -> environment (and user ->
    environment ``end_conversation``) messages; ``result`` / ``error`` are set on the
    environment's reply; ``act`` is a structured payload (the simulated user's parsed
    intent, the agent's dialogue act) that the scripted agents read instead of free text.
    """

    sender: str
    recipient: str
    content: str = ""
    visible_to: tuple[str, ...] = ()
    tool_call: Mapping[str, Any] | None = None
    result: Any = None
    error: str | None = None
    act: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        for role in (self.sender, self.recipient, *self.visible_to):
            if role not in ROLES:
                raise ValueError(f"unknown role {role!r}; expected one of {ROLES}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict of every field."""
        return {
            "sender": self.sender,
            "recipient": self.recipient,
            "content": self.content,
            "visible_to": list(self.visible_to),
            "tool_call": None if self.tool_call is None else dict(self.tool_call, arguments=dict(self.tool_call["arguments"])),
            "result": self.result,
            "error": self.error,
            "act": None if self.act is None else dict(self.act),
        }


@dataclass(frozen=True)
class Snapshot:
    """An exact copy of a context's tables and messages (:meth:`ExecutionContext.snapshot`)."""

    rows: Mapping[str, tuple[dict[str, Any], ...]]
    messages: tuple[Message, ...]
    max_messages: int
    state_hash: str


def _canon(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return value  # keep floats as floats; json writes 1.0
    return value


@dataclass
class ExecutionContext:
    """Versioned world tables plus the message log.

    Parameters
    ----------
    initial : mapping namespace -> iterable of rows (dicts without the stamp column)
        The starting world, stamped with message index 0 (the system message).
    max_messages : int
        Cap on the number of messages (ToolSandbox: 30); :meth:`add_message` raises
        :class:`MessageCapReached` beyond it.

    Raises
    ------
    KeyError
        An unknown namespace in ``initial``.
    """

    initial: Mapping[str, Iterable[Mapping[str, Any]]] = field(default_factory=dict)
    max_messages: int = DEFAULT_MAX_MESSAGES

    def __post_init__(self) -> None:
        unknown = [ns for ns in self.initial if ns not in NAMESPACES]
        if unknown:
            raise KeyError(f"unknown namespace(s) {unknown}; expected {NAMESPACES}")
        if self.max_messages < 2:
            raise ValueError(f"max_messages must be >= 2; got {self.max_messages}")
        self._rows: dict[str, list[dict[str, Any]]] = {ns: [] for ns in NAMESPACES}
        for ns in NAMESPACES:
            for row in self.initial.get(ns, ()):
                r = {k: _canon(v) for k, v in dict(row).items()}
                r[STAMP] = 0
                self._rows[ns].append(r)
        self.messages: list[Message] = []
        self.initial = {}

    # ------------------------------------------------------------ messages
    @property
    def last_index(self) -> int:
        """Index of the last message (-1 when the log is empty)."""
        return len(self.messages) - 1

    def add_message(self, message: Message) -> int:
        """Append ``message`` and return its index.

        Raises
        ------
        MessageCapReached
            If the log already holds ``max_messages`` messages.
        """
        if len(self.messages) >= self.max_messages:
            raise MessageCapReached(f"message cap of {self.max_messages} reached")
        self.messages.append(message)
        return len(self.messages) - 1

    # --------------------------------------------------------------- tables
    def _version_index(self, ns: str, after: int | None) -> int | None:
        stamps = [r[STAMP] for r in self._rows[ns] if after is None or r[STAMP] <= after]
        return max(stamps) if stamps else None

    def _version_indices(self, ns: str, n: int) -> list[int | None]:
        """``[_version_index(ns, a) for a in range(n)]`` in one pass over the sorted stamps."""
        stamps = sorted(r[STAMP] for r in self._rows[ns])
        out: list[int | None] = []
        v, j = None, 0
        for after in range(n):
            while j < len(stamps) and stamps[j] <= after:
                v, j = stamps[j], j + 1
            out.append(v)
        return out

    def table(self, ns: str, after: int | None = None, *, stamped: bool = False) -> list[dict[str, Any]]:
        """Rows of namespace ``ns`` as they stood after message ``after`` (default: now).

        Returns copies (without the stamp column unless ``stamped``), in insertion order.

        Raises
        ------
        KeyError
            Unknown namespace.
        """
        if ns == "SANDBOX":
            upto = self.messages if after is None else self.messages[: after + 1]
            return [dict(m.to_dict(), index=i) for i, m in enumerate(upto)]
        if ns not in self._rows:
            raise KeyError(f"unknown namespace {ns!r}; expected {NAMESPACES} or 'SANDBOX'")
        v = self._version_index(ns, after)
        if v is None:
            return []
        out = [dict(r) for r in self._rows[ns] if r[STAMP] == v]
        if not stamped:
            for r in out:
                r.pop(STAMP)
        # an all-deleted table is stored as one tombstone row
        return [r for r in out if not r.get("__empty__")]

    def write(self, ns: str, rows: Iterable[Mapping[str, Any]]) -> None:
        """Write a new version of table ``ns``, stamped with the current message index.

        Two writes after the same message replace each other (the later one wins).
        """
        if ns not in self._rows:
            raise KeyError(f"unknown namespace {ns!r}; expected {NAMESPACES}")
        k = max(self.last_index, 0)
        new = [dict({kk: _canon(vv) for kk, vv in dict(r).items()}, **{STAMP: k}) for r in rows]
        if not new:
            new = [{"__empty__": True, STAMP: k}]
        self._rows[ns] = [r for r in self._rows[ns] if r[STAMP] != k] + new

    def setting(self, name: str, after: int | None = None) -> Any:
        """Value of device setting ``name`` (KeyError if absent)."""
        for r in self.table("SETTING", after):
            if r["name"] == name:
                return r["value"]
        raise KeyError(f"no setting {name!r}")

    def set_setting(self, name: str, value: Any) -> None:
        """Write a new SETTING version with ``name`` set to ``value``."""
        rows = self.table("SETTING")
        if not any(r["name"] == name for r in rows):
            raise KeyError(f"no setting {name!r}")
        self.write("SETTING", [dict(r, value=value) if r["name"] == name else r for r in rows])

    def next_id(self, ns: str, prefix: str) -> str:
        """A fresh id ``prefix<n>`` for namespace ``ns``: one above every id ever stored."""
        col = ID_COLUMNS[ns]
        n = 0
        for r in self._rows[ns]:
            v = r.get(col)
            if isinstance(v, str) and v.startswith(prefix) and v[len(prefix):].isdigit():
                n = max(n, int(v[len(prefix):]))
        return f"{prefix}{n + 1}"

    # ------------------------------------------------------ snapshot / hash
    def state_dict(self) -> dict[str, Any]:
        """Every stored row of every namespace (all versions) and every message."""
        return {
            "rows": {ns: [dict(r) for r in self._rows[ns]] for ns in NAMESPACES},
            "messages": [m.to_dict() for m in self.messages],
            "max_messages": self.max_messages,
        }

    def namespace_hash(self, ns: str) -> str:
        """SHA-256 of every version of one namespace (``"SANDBOX"``: the message log)."""
        obj = [m.to_dict() for m in self.messages] if ns == "SANDBOX" else self._rows[ns]
        return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()

    def state_hash(self) -> str:
        """SHA-256 of :meth:`state_dict` (equal hashes = identical worlds and logs)."""
        return hashlib.sha256(json.dumps(self.state_dict(), sort_keys=True, default=str).encode()).hexdigest()

    def snapshot(self, after: int | None = None) -> Snapshot:
        """An exact copy of the context, or of its state as it stood after message ``after``.

        ``after`` keeps the messages ``0..after`` and the table versions stamped ``<= after``
        (what a handoff restores).
        """
        if after is None:
            rows = {ns: tuple(copy.deepcopy(self._rows[ns])) for ns in NAMESPACES}
            msgs = tuple(self.messages)
        else:
            if not -1 <= after <= self.last_index:
                raise ValueError(f"after={after} outside the log 0..{self.last_index}")
            rows = {ns: tuple(copy.deepcopy([r for r in self._rows[ns] if r[STAMP] <= after])) for ns in NAMESPACES}
            msgs = tuple(self.messages[: after + 1])
        tmp = ExecutionContext(max_messages=self.max_messages)
        tmp._rows = {ns: [dict(r) for r in rows[ns]] for ns in NAMESPACES}
        tmp.messages = list(msgs)
        return Snapshot(rows, msgs, self.max_messages, tmp.state_hash())

    def restore(self, snap: Snapshot) -> None:
        """Replace tables and messages by ``snap`` (exact: the state hash equals ``snap``'s)."""
        self._rows = {ns: copy.deepcopy(list(snap.rows[ns])) for ns in NAMESPACES}
        self.messages = list(snap.messages)
        self.max_messages = snap.max_messages

    @classmethod
    def from_snapshot(cls, snap: Snapshot) -> "ExecutionContext":
        """A new context holding ``snap``."""
        ctx = cls(max_messages=snap.max_messages)
        ctx.restore(snap)
        return ctx
