"""τ²-bench retail and airline tasks, databases and tool specifications.

Everything here is read from the installed ``inspect_evals`` package
(``inspect_evals/tau2/data/domains/{retail,airline}/``: ``tasks.json``,
``split_tasks.json``, ``db.json.gz``) and loaded **once per process**.

Databases
---------
The package's ``DB.load`` writes an uncompressed temporary copy of the database on every
call and never deletes it, so it is not used: the gzip JSON is parsed directly and
validated with the package's own pydantic model (``RetailDB`` / ``FlightDB``), giving the
same object the package builds, without temp files.

An episode never touches that *pristine* database. Its database is a
:class:`CopyOnAccessTable` per top-level table (``products``/``users``/``orders`` for
retail, ``flights``/``users``/``reservations`` for airline): a shallow copy of the
pristine table whose entries are replaced by a private deep copy (unpickled from a cached
per-entry blob) the first time they are looked up by key (``table[key]``, ``get``,
``pop``, ``setdefault``). The tools of the package look entries up by key before every
mutation; the only iterations (``users.items()`` in the retail ``find_user_id_by_*`` tools,
``products.values()`` in ``list_all_product_types``, ``flights.values()`` in the airline
flight search) only read. Building an episode database therefore costs microseconds
instead of the 0.05 s (retail) / 0.2-0.3 s (airline) of unpickling a whole copy. The test
suite checks that the pristine databases are bit-identical (same SHA-256) after many
episodes with every kind of mistake, and that rewards agree with the package's scorer.
"""

from __future__ import annotations

import functools
import gzip
import json
import pickle
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

__all__ = [
    "DOMAINS",
    "WRITE_PREFIXES",
    "NON_DB_TOOLS",
    "is_write_tool",
    "GoldAction",
    "TauTask",
    "ToolSpec",
    "load_tasks",
    "get_task",
    "task_ids",
    "sample_task_ids",
    "split_task_id",
    "tool_specs",
    "policy_text",
    "pristine_db",
    "CopyOnAccessTable",
    "new_episode_db",
    "entry_json",
    "pristine_entry_json",
]

#: The two τ²-bench domains with state-changing tools that this module supports.
DOMAINS: tuple[str, ...] = ("retail", "airline")

#: Name prefixes of the state-changing (irreversible) tools. The package keeps no flag;
#: the split agrees with hashing the database around every gold call (a write tool changes
#: it, every other tool leaves it unchanged; ``tests/test_tau_env.py`` checks the lists).
WRITE_PREFIXES: tuple[str, ...] = (
    "cancel_",
    "modify_",
    "exchange_",
    "return_",
    "book_",
    "update_",
    "send_",
)

#: Tools that never touch the database; the package's gold replay skips them.
NON_DB_TOOLS: tuple[str, ...] = ("calculate", "transfer_to_human_agents")


def is_write_tool(name: str) -> bool:
    """True if ``name`` is a state-changing (declared irreversible) τ-bench tool.

    The rule is the name prefix (:data:`WRITE_PREFIXES`), which reproduces the write
    tools of both domains exactly (retail: 7 tools, airline: 6 tools).
    """
    if not isinstance(name, str):
        raise TypeError(f"tool name must be a string, got {type(name).__name__}")
    return name.startswith(WRITE_PREFIXES)


def _check_domain(domain: str) -> str:
    if domain not in DOMAINS:
        raise ValueError(f"unknown tau domain {domain!r}; expected one of {list(DOMAINS)}")
    return domain


def _tau2_dir() -> Any:
    from inspect_evals.tau2.utils import TAU2_DATA_DIR

    return TAU2_DATA_DIR / "domains"


# --------------------------------------------------------------------------- tasks
@dataclass(frozen=True)
class GoldAction:
    """One action of a task's gold action list (``evaluation_criteria.actions``).

    ``arguments`` is stored as canonical JSON so the object is immutable; use
    :meth:`args` for a fresh, mutable copy.
    """

    name: str
    arguments_json: str
    irreversible: bool

    def args(self) -> dict[str, Any]:
        """A fresh deep copy of the arguments (safe to hand to a tool)."""
        return json.loads(self.arguments_json)


@dataclass(frozen=True)
class TauTask:
    """One τ²-bench task, with the fields this package uses.

    Attributes
    ----------
    task_id:
        Global id ``"<domain>/<local id>"``, e.g. ``"retail/12"``.
    split:
        ``"train"`` or ``"test"`` from ``split_tasks.json``.
    scenario:
        ``str(task.user_scenario)``: the text the package's user simulator receives in
        its ``<scenario>`` block (never shown to the agent).
    reason_for_call:
        ``user_scenario.instructions.reason_for_call``.
    actions:
        The gold actions, in order.
    communicate_info:
        Strings that must appear in the agent's messages to the user.
    """

    task_id: str
    domain: str
    local_id: str
    split: str
    scenario: str
    reason_for_call: str
    actions: tuple[GoldAction, ...]
    communicate_info: tuple[str, ...]
    nl_assertions: tuple[str, ...]
    raw: Any = field(repr=False, compare=False)

    @property
    def write_actions(self) -> tuple[GoldAction, ...]:
        """Gold actions whose tool is state-changing."""
        return tuple(a for a in self.actions if a.irreversible)

    @property
    def transfer_expected(self) -> bool:
        """True if the gold actions include ``transfer_to_human_agents``."""
        return any(a.name == "transfer_to_human_agents" for a in self.actions)


def split_task_id(task_id: str) -> tuple[str, str]:
    """Split ``"retail/12"`` into ``("retail", "12")``.

    Raises
    ------
    KeyError
        If ``task_id`` is not of the form ``<domain>/<id>`` with a known domain.
    """
    if not isinstance(task_id, str) or task_id.count("/") != 1:
        raise KeyError(f"task id {task_id!r} is not of the form '<domain>/<id>', e.g. 'retail/12'")
    domain, local = task_id.split("/")
    if domain not in DOMAINS:
        raise KeyError(f"task id {task_id!r}: unknown domain {domain!r}; expected one of {list(DOMAINS)}")
    return domain, local


@functools.cache
def _domain_tasks(domain: str) -> dict[str, TauTask]:
    """All tasks of ``domain`` keyed by global task id (loaded once per process)."""
    from inspect_evals.tau2.data_model.tasks import Task

    root = _tau2_dir() / domain
    records = json.loads((root / "tasks.json").read_text(encoding="utf-8"))
    splits = json.loads((root / "split_tasks.json").read_text(encoding="utf-8"))
    split_of: dict[str, str] = {}
    for split in ("train", "test"):
        for local in splits[split]:
            split_of[str(local)] = split
    out: dict[str, TauTask] = {}
    for rec in records:
        task = Task.model_validate(rec)
        local = str(task.id)
        if local not in split_of:
            raise ValueError(f"{domain} task {local!r} is in neither the train nor the test split")
        crit = task.evaluation_criteria
        actions = tuple(
            GoldAction(
                name=a.name,
                arguments_json=json.dumps(a.arguments, sort_keys=True),
                irreversible=is_write_tool(a.name),
            )
            for a in ((crit.actions if crit else None) or [])
        )
        instr = task.user_scenario.instructions
        reason = instr if isinstance(instr, str) else instr.reason_for_call
        tid = f"{domain}/{local}"
        out[tid] = TauTask(
            task_id=tid,
            domain=domain,
            local_id=local,
            split=split_of[local],
            scenario=str(task.user_scenario),
            reason_for_call=reason,
            actions=actions,
            communicate_info=tuple((crit.communicate_info if crit else None) or []),
            nl_assertions=tuple((crit.nl_assertions if crit else None) or []),
            raw=task,
        )
    return dict(sorted(out.items(), key=lambda kv: int(kv[1].local_id)))


def load_tasks(domain: str | None = None) -> list[TauTask]:
    """Tasks of one domain (``"retail"``: 114, ``"airline"``: 50) or of both (164).

    Ordered by domain (retail first) then numeric local id. Loaded once per process.

    Raises
    ------
    ValueError
        If ``domain`` is not ``None``, ``"retail"`` or ``"airline"``.
    """
    domains = DOMAINS if domain is None else (_check_domain(domain),)
    return [t for d in domains for t in _domain_tasks(d).values()]


def task_ids(domain: str | None = None, split: str | None = None) -> list[str]:
    """Global task ids (``"retail/0"``, ...), optionally restricted to a domain/split.

    Raises
    ------
    ValueError
        If ``split`` is not ``None``, ``"train"`` or ``"test"``, or ``domain`` is unknown.
    """
    if split not in (None, "train", "test"):
        raise ValueError(f"unknown split {split!r}; expected 'train', 'test' or None")
    return [t.task_id for t in load_tasks(domain) if split is None or t.split == split]


def get_task(task_id: str) -> TauTask:
    """The task with global id ``task_id`` (e.g. ``"airline/7"``).

    Raises
    ------
    KeyError
        If the id is malformed or no such task exists.
    """
    domain, _ = split_task_id(task_id)
    tasks = _domain_tasks(domain)
    if task_id not in tasks:
        raise KeyError(
            f"no tau task {task_id!r}; {domain} has {len(tasks)} tasks with ids "
            f"{next(iter(tasks))} .. {next(reversed(tasks))}"
        )
    return tasks[task_id]


def sample_task_ids(n: int, seed: int, domain: str | None = None) -> list[str]:
    """A seeded sample of ``n`` task ids without replacement, stratified by domain.

    With both domains, the retail/airline counts are proportional to the pool sizes
    (114 : 50), rounded so that they add up to ``n``. The result is sorted in the order of
    :func:`load_tasks`.

    Raises
    ------
    ValueError
        If ``n`` is not between 1 and the pool size.
    """
    import numpy as np

    domains = DOMAINS if domain is None else (_check_domain(domain),)
    pools = {d: task_ids(d) for d in domains}
    total = sum(len(p) for p in pools.values())
    if not isinstance(n, (int, np.integer)) or not 1 <= n <= total:
        raise ValueError(f"n must be an integer in [1, {total}], got {n!r}")
    counts = {d: int(round(n * len(p) / total)) for d, p in pools.items()}
    counts[domains[0]] += n - sum(counts.values())
    children = np.random.SeedSequence(seed).spawn(len(domains))
    chosen: set[str] = set()
    for d, child in zip(domains, children):
        rng = np.random.default_rng(child)
        chosen.update(rng.choice(pools[d], size=counts[d], replace=False).tolist())
    return [t for d in domains for t in pools[d] if t in chosen]


# --------------------------------------------------------------------------- tools
@dataclass(frozen=True)
class ToolSpec:
    """An agent-facing tool: name, description and JSON-schema parameters, as the package
    exposes them to the model (``inspect_ai.tool.ToolDef`` of ``all_<domain>_tools``)."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    irreversible: bool

    @property
    def signature(self) -> str:
        """``name(arg: type, ...)`` built from the JSON schema (required arguments)."""
        props = self.parameters.get("properties", {})
        parts = []
        for arg, schema in props.items():
            typ = schema.get("type", "any") if isinstance(schema, Mapping) else "any"
            parts.append(f"{arg}: {typ}")
        return f"{self.name}({', '.join(parts)})"


@functools.cache
def policy_text(domain: str) -> str:
    """The domain policy an agent follows (``policy.txt`` shipped with τ²-bench).

    Raises
    ------
    ValueError
        If ``domain`` is unknown.
    """
    return (_tau2_dir() / _check_domain(domain) / "policy.txt").read_text(encoding="utf-8")


def tool_specs(domain: str) -> tuple[ToolSpec, ...]:
    """The tools an agent gets in ``domain`` (retail: 15, airline: 14), sorted by name.

    Built once per process (parsing the package's tool docstrings costs about 8 ms
    retail, 16 ms airline); every call returns fresh copies of the ``parameters``
    dicts, so a caller that edits them changes nothing for the next one.

    Raises
    ------
    ValueError
        If ``domain`` is unknown.
    """
    import copy

    return tuple(ToolSpec(s.name, s.description, copy.deepcopy(s.parameters), s.irreversible)
                 for s in _tool_specs(_check_domain(domain)))


def tool_names(domain: str) -> tuple[str, ...]:
    """The names of :func:`tool_specs` (same order), without copying the specs.

    Raises
    ------
    ValueError
        If ``domain`` is unknown.
    """
    return tuple(s.name for s in _tool_specs(_check_domain(domain)))


@functools.cache
def _tool_specs(domain: str) -> tuple[ToolSpec, ...]:
    # the package's ToolDefs, built once per process; callers get copies (tool_specs)
    from inspect_ai.tool import ToolDef

    if domain == "retail":
        from inspect_evals.tau2.retail.tools import all_retail_tools as tools
    else:
        from inspect_evals.tau2.airline.tools import all_airline_tools as tools
    specs = []
    for factory in tools:
        tdef = ToolDef(factory())
        specs.append(
            ToolSpec(
                name=tdef.name,
                description=tdef.description,
                parameters=tdef.parameters.model_dump(exclude_none=True),
                irreversible=is_write_tool(tdef.name),
            )
        )
    return tuple(sorted(specs, key=lambda s: s.name))


# ------------------------------------------------------------------------ databases
def _db_class(domain: str) -> Any:
    if domain == "retail":
        from inspect_evals.tau2.retail.data_model import RetailDB

        return RetailDB
    from inspect_evals.tau2.airline.data_model import FlightDB

    return FlightDB


def _tools_class(domain: str) -> Any:
    if domain == "retail":
        from inspect_evals.tau2.retail.RetailAgentTools import RetailAgentTools

        return RetailAgentTools
    from inspect_evals.tau2.airline.AirlineAgentTools import AirlineAgentTools

    return AirlineAgentTools


@functools.cache
def pristine_db(domain: str) -> Any:
    """The domain's initial database (``RetailDB`` / ``FlightDB``), loaded once per process.

    Never mutate it: episodes work on :func:`new_episode_db`. Parsed from ``db.json.gz``
    and validated with the package's model (the same object ``DB.load`` gives, without
    the temp file ``DB.load`` leaks).
    """
    _check_domain(domain)
    cls = _db_class(domain)
    with gzip.open(_tau2_dir() / domain / "db.json.gz", "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    db = cls.model_validate(data)
    for name in cls.model_fields:
        if not isinstance(getattr(db, name), dict):  # pragma: no cover - package change
            raise TypeError(f"{domain} DB field {name!r} is not a dict; copy-on-access needs dict tables")
    return db


@functools.cache
def _blob_cache(domain: str, table: str) -> dict[str, bytes]:
    return {}


@functools.cache
def _json_cache(domain: str, table: str) -> dict[str, str]:
    return {}


def entry_json(obj: Any) -> str:
    """Canonical JSON of one DB entry, exactly as it appears inside the package's DB hash
    (``json.dumps(db.model_dump(), sort_keys=True, default=str)``)."""
    return json.dumps(obj.model_dump(), sort_keys=True, default=str)


def pristine_entry_json(domain: str, table: str, key: str) -> str | None:
    """Cached :func:`entry_json` of a pristine entry, ``None`` if the key does not exist."""
    cache = _json_cache(domain, table)
    if key not in cache:
        pristine = getattr(pristine_db(domain), table)
        cache[key] = entry_json(pristine[key]) if key in pristine else None  # type: ignore[assignment]
    return cache[key]


class CopyOnAccessTable(dict):
    """A DB table that copies an entry from the pristine table on first keyed access.

    Behaves as a plain ``dict`` for the package's tools and for pydantic serialization
    (the underlying storage always holds the current state). ``touched`` holds every key
    looked up, written or removed in this episode; every other entry is the pristine
    object (identical content), which is what lets the reward compare databases entry by
    entry. Iterating (``values()``, ``items()``) yields pristine objects for untouched
    entries and is for reading only, as in every tool of the package.
    """

    __slots__ = ("domain", "table", "touched")

    def __init__(self, domain: str, table: str, pristine: Mapping[str, Any]):
        super().__init__(pristine)
        self.domain = domain
        self.table = table
        self.touched: set[str] = set()

    def _own(self, key: Any) -> None:
        if key in self.touched or not dict.__contains__(self, key):
            return
        blobs = _blob_cache(self.domain, self.table)
        blob = blobs.get(key)
        if blob is None:
            blob = pickle.dumps(getattr(pristine_db(self.domain), self.table)[key], protocol=pickle.HIGHEST_PROTOCOL)
            blobs[key] = blob
        dict.__setitem__(self, key, pickle.loads(blob))
        self.touched.add(key)

    def __getitem__(self, key: Any) -> Any:
        self._own(key)
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return self[key]
        return default

    def __setitem__(self, key: Any, value: Any) -> None:
        self.touched.add(key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        self.touched.add(key)
        dict.__delitem__(self, key)

    def pop(self, key: Any, *default: Any) -> Any:
        self._own(key)
        self.touched.add(key)
        return dict.pop(self, key, *default)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return self[key]
        self[key] = default
        return default

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def popitem(self) -> tuple[Any, Any]:  # pragma: no cover - unused by the tools
        raise NotImplementedError("CopyOnAccessTable does not support popitem()")

    def clear(self) -> None:  # pragma: no cover - unused by the tools
        raise NotImplementedError("CopyOnAccessTable does not support clear()")

    def __reduce__(self) -> Any:  # a plain dict when pickled or deep-copied
        return (dict, (dict(self),))


def new_episode_db(domain: str) -> Any:
    """A private database for one episode (copy-on-access view of the pristine DB).

    Returns the package's DB model (``RetailDB`` / ``FlightDB``) whose tables are
    :class:`CopyOnAccessTable` objects. Cost: one shallow dict copy per table.
    """
    cls = _db_class(domain)
    base = pristine_db(domain)
    tables = {name: CopyOnAccessTable(domain, name, getattr(base, name)) for name in cls.model_fields}
    return cls.model_construct(**tables)


def table_names(domain: str) -> tuple[str, ...]:
    """Top-level tables of the domain's DB, in model order."""
    return tuple(_db_class(_check_domain(domain)).model_fields)


def _iter_tables(db: Any, domain: str) -> Iterable[CopyOnAccessTable]:
    for name in table_names(domain):
        yield getattr(db, name)
