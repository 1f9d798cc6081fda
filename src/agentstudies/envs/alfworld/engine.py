"""Low-level helpers around the ALFWorld text engine (TextWorld ``PddlEnv`` + fast-downward).

* :func:`preserve_argv` -- fast-downward's translator overwrites ``sys.argv`` on every
  load/reset; every engine call made by this package runs inside this guard.
* :func:`enable_parse_cache` -- memoises the two TatSu parses TextWorld repeats on every
  step (grammar symbol strings and conjunctive queries) and replaces the deep copies of
  the derivation context by dict copies. Both are pure speed-ups: observations and
  admissible commands are unchanged (tested); a step becomes several times cheaper
  (about 50 ms -> 13-16 ms in a small room from the parse cache alone;
  ``benchmarks/bench_alfworld.py`` times it).
* :class:`CachedPddlState` -- a ``PddlState`` that reuses the PDDL->SAS translation of a
  problem it has already translated (the translation is the bulk of a reset); within
  one ``agentstudies run`` / ``book`` the translations are shared by every process
  through the run's scratch folder (:data:`SCRATCH_ENV`).
* :func:`atoms`, :func:`applicable_operators`, :func:`applicable_operator_ids` -- direct
  reads of the fast-downward state.

TextWorld's internals are used here and in :mod:`agentstudies.envs.alfworld.pddl_env`
only, as ``textworld==1.7.0`` (pinned) has them: the module functions the parse cache
replaces and the private tables of ``PddlState``; re-check both modules when the pin moves.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import itertools
import os
import pickle
import sys
import tempfile
import zlib
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import fast_downward
import numpy as np
import textworld.envs.pddl.textgen as _textgen
import textworld.logic as _twlogic
from textworld.envs.pddl.logic import Atom as _Atom
from textworld.envs.pddl.logic import PddlState

__all__ = [
    "preserve_argv",
    "enable_parse_cache",
    "disable_parse_cache",
    "parse_cache_enabled",
    "CachedPddlState",
    "atoms",
    "applicable_operators",
    "applicable_operator_ids",
]


@contextlib.contextmanager
def preserve_argv() -> Iterator[None]:
    """Save ``sys.argv`` (the list object and its content) and put it back afterwards."""
    saved_obj = sys.argv
    saved = list(sys.argv)
    try:
        yield
    finally:
        saved_obj[:] = saved
        sys.argv = saved_obj


# ----------------------------------------------------------------- parse cache
_ORIG_PARSE = _textgen._parse_and_convert
_ORIG_QUERY = _twlogic.Rule.__dict__["parse_conjunctive_query"]
_SYMBOLS: dict[tuple, object] = {}
_RULES: dict[str, object] = {}


def _cached_parse_and_convert(text, rule_name=None, **kwargs):
    if kwargs.get("trace"):
        return _ORIG_PARSE(text, rule_name=rule_name, **kwargs)
    key = (text, rule_name)
    hit = _SYMBOLS.get(key)
    if hit is None:
        hit = _ORIG_PARSE(text, rule_name=rule_name)
        _SYMBOLS[key] = hit
    # symbols are mutated (their ``context``) by the caller: hand out a private copy
    return copy_symbols(hit)


def _cached_query(cls, expr):
    hit = _RULES.get(expr)
    if hit is None:
        hit = _ORIG_QUERY.__func__(cls, expr)
        _RULES[expr] = hit
    return hit


_ORIG_COPY_CONTEXT = _textgen.copy_context


def _shallow_copy_context(context):
    # TextWorld deep-copies ``variables`` (EntityInfo values) and ``mapping`` (Placeholder ->
    # Variable) for every symbol; derivation only ever adds keys to these dicts and never
    # mutates their values, so copying the dicts is enough (identical text, tested).
    return {
        "state": context["state"],
        "facts": context["facts"],
        "variables": dict(context["variables"]),
        "mapping": dict(context["mapping"]),
        "entity_infos": context["entity_infos"],
    }


#: The grammar's symbol classes, whose instances :func:`copy_symbols` copies itself
#: (plain ``__dict__`` objects: no ``__slots__``, ``__deepcopy__`` or ``__reduce__`` of
#: their own).
_SYMBOL_CLASSES = frozenset({
    _textgen.Symbol, _textgen.TerminalSymbol, _textgen.NonterminalSymbol, _textgen.EvalSymbol,
    _textgen.ListSymbol, _textgen.ConditionalSymbol,
})


def copy_symbols(obj, memo: dict | None = None):
    """``copy.deepcopy(obj)`` for the grammar's symbol trees, without ``deepcopy``'s
    generic dispatch (``__reduce_ex__``, ``_reconstruct``), a sizeable part of the cost
    of deriving a text.

    Handles what the trees are made of exactly as ``deepcopy`` does -- strings and
    ``None`` are shared; lists, empty dicts (a parsed symbol's context) and instances of
    the grammar's symbol classes (:data:`_SYMBOL_CLASSES`: new instance, ``__dict__``
    copied) are copied once per object, with the same memo, so shared sub-objects stay
    shared -- and hands anything else (a non-empty context, an unknown type) to
    ``copy.deepcopy`` with that memo. Same copies as ``deepcopy`` (tested)."""
    if memo is None:
        memo = {}
    t = type(obj)
    if t is str or obj is None:
        return obj
    hit = memo.get(id(obj))
    if hit is not None:
        return hit
    if t is list:
        new = memo[id(obj)] = []
        new.extend([copy_symbols(x, memo) for x in obj])
        _keep_alive(obj, memo)
        return new
    if t is dict and not obj:
        new = memo[id(obj)] = {}
        _keep_alive(obj, memo)
        return new
    if t in _SYMBOL_CLASSES:
        new = memo[id(obj)] = t.__new__(t)
        state = obj.__dict__
        if state:
            new_state = memo[id(state)] = {}
            for k, v in state.items():
                new_state[k] = copy_symbols(v, memo)
            _keep_alive(state, memo)
            new.__dict__.update(new_state)
        _keep_alive(obj, memo)
        return new
    return copy.deepcopy(obj, memo)


def _keep_alive(obj, memo: dict) -> None:
    """As ``copy._keep_alive``: the originals live as long as the memo (their ids key it)."""
    try:
        memo[id(memo)].append(obj)
    except KeyError:
        memo[id(memo)] = [obj]


def enable_parse_cache() -> None:
    """Memoise TextWorld's grammar/query parsing for the whole process (idempotent).

    Patches ``textworld.envs.pddl.textgen._parse_and_convert`` (returns a copy of the
    cached symbol list, because derivation mutates symbols) and
    ``textworld.logic.Rule.parse_conjunctive_query`` (rules are not mutated); the
    derivation contexts are copied as dicts (:func:`_shallow_copy_context`) and the
    module's ``deepcopy`` of symbols (production right-hand sides, conditional
    expressions) is :func:`copy_symbols`. Undo with :func:`disable_parse_cache`.
    """
    _textgen._parse_and_convert = _cached_parse_and_convert
    _twlogic.Rule.parse_conjunctive_query = classmethod(_cached_query)
    _textgen.copy_context = _shallow_copy_context
    _textgen.deepcopy = copy_symbols
    _FLAGS.clear()
    _FLAGS.update({f: _ORIG_CHECK_FLAG(f) for f in _TEXTGEN_FLAGS})
    _textgen.check_flag = _read_flag


def disable_parse_cache() -> None:
    """Restore TextWorld's original (uncached) parsing functions."""
    _textgen._parse_and_convert = _ORIG_PARSE
    _twlogic.Rule.parse_conjunctive_query = _ORIG_QUERY
    _textgen.copy_context = _ORIG_COPY_CONTEXT
    _textgen.deepcopy = copy.deepcopy
    _textgen.check_flag = _ORIG_CHECK_FLAG


#: TextWorld's grammar reads two debug flags from the environment on every derivation
#: step (``TW_CSG_TRACE``: trace the parser; ``TW_CSG_DEBUG``: print the derivation
#: stack), a sizeable part of deriving a text. They change what is printed, never the
#: derived text; :func:`enable_parse_cache` reads them once (:data:`_FLAGS`).
_TEXTGEN_FLAGS = ("TW_CSG_TRACE", "TW_CSG_DEBUG")
_ORIG_CHECK_FLAG = _textgen.check_flag
_FLAGS: dict[str, bool] = {}


def _read_flag(flag: str, default: bool = False) -> bool:
    hit = _FLAGS.get(flag)
    return _ORIG_CHECK_FLAG(flag, default) if hit is None else hit


def parse_cache_enabled() -> bool:
    """Whether :func:`enable_parse_cache` is in effect."""
    return _textgen._parse_and_convert is _cached_parse_and_convert


# ----------------------------------------------------------------- SAS cache
_SAS: "OrderedDict[str, tuple]" = OrderedDict()
_SAS_MAX = 256

#: The run's scratch folder (``agentstudies.book.runner.SCRATCH_ENV``: set by ``agentstudies run``
#: / ``book`` for the length of the run). Translations are also written to its
#: ``alfworld-sas/`` folder, so every worker process and chapter of the run translates
#: each problem once; unset, the memo is per process.
SCRATCH_ENV = "AGENTSTUDIES_SCRATCH"


def _translator_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fast_downward_textworld")
    except PackageNotFoundError:  # pragma: no cover - another build of the translator
        return "unknown"


_TRANSLATOR_VERSION = _translator_version()


def _disk_path(key: str) -> Path | None:
    folder = os.environ.get(SCRATCH_ENV)
    return Path(folder) / "alfworld-sas" / f"{key}.pkl.z" if folder else None


def _translate(domain: str, problem: str, optimize: bool = False):
    """PDDL -> SAS (memoised per (domain, problem, optimize)); returns ``(task, sas)``.

    The translation is a pure function of its inputs (about 0.3 s per problem, the bulk
    of a reset). It is kept in memory and, where :data:`SCRATCH_ENV` names a folder,
    on disk (zlib-compressed pickle, written atomically, keyed by the inputs and the
    translator's version); an unreadable file is ignored and the problem translated.
    Across builds it is kept in the user cache (:mod:`.usercache`: checksummed, keyed by
    the package and engine versions; a corrupt entry is reported and recomputed), looked
    up after memory and the scratch folder.
    """
    blob = "\0".join([_TRANSLATOR_VERSION, domain, problem, "opt" if optimize else ""])
    key = hashlib.sha256(blob.encode()).hexdigest()
    hit = _SAS.get(key)
    if hit is not None:
        _SAS.move_to_end(key)
        return hit
    from agentstudies.envs.alfworld import usercache

    path = _disk_path(key)
    from_scratch = False
    if path is not None and path.is_file():
        try:
            hit = pickle.loads(zlib.decompress(path.read_bytes()))
            from_scratch = True
        except Exception:  # noqa: BLE001 - a torn or foreign file: translate instead
            hit = None
    if hit is None and usercache.cache_folder() is not None:
        ukey = usercache.entry_key("alfworld-sas", domain, problem, "opt" if optimize else "")
        hit = usercache.get("alfworld-sas", ukey)
        if hit is None:
            with preserve_argv():
                hit = fast_downward.pddl2sas(domain, problem, optimize=optimize)
            usercache.put("alfworld-sas", ukey, hit)
    elif hit is None:
        with preserve_argv():
            hit = fast_downward.pddl2sas(domain, problem, optimize=optimize)
    if path is not None and not from_scratch:
        try:
            path.parent.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write(zlib.compress(pickle.dumps(hit, protocol=pickle.HIGHEST_PROTOCOL), 1))
            os.replace(tmp, path)
        except OSError:
            pass
    _SAS[key] = hit
    if len(_SAS) > _SAS_MAX:
        _SAS.popitem(last=False)
    return hit


class CachedPddlState(PddlState):
    """``textworld.envs.pddl.logic.PddlState`` with the PDDL->SAS translation memoised.

    Identical to the parent except that ``fast_downward.pddl2sas`` runs once per distinct
    (domain, problem) pair, and the optimised translation the planner expert searches
    (``sas_replan``) is made only when :meth:`replan` is first called. The SAS text is
    still loaded into the library on every construction, so the C-side state starts
    fresh.
    """

    @property
    def sas_replan(self) -> str:  # noqa: D102
        if self._sas_replan is None:
            _, self._sas_replan = _translate(self._logic.domain, self.pddl_problem, optimize=True)
            self.downward_lib.load_sas_replan(self._sas_replan.encode("utf-8"))
        return self._sas_replan

    @sas_replan.setter
    def sas_replan(self, value) -> None:
        self._sas_replan = value

    def replan(self, infos):  # noqa: D102
        self.sas_replan  # make sure the optimised task is translated and loaded
        return super().replan(infos)


    def __init__(self, downward_lib, pddl_problem: str, logic):  # noqa: D107
        from collections import Counter, defaultdict

        import textworld

        self._facts = defaultdict(set)
        self._vars_by_name = {}
        self._vars_by_type = defaultdict(set)
        self._var_counts = Counter()
        self._logic = logic
        self.downward_lib = downward_lib
        self.pddl_problem = pddl_problem
        self.task, self.sas = _translate(logic.domain, pddl_problem)
        self._sas_replan = None
        self._actions = {a.name: a for a in self.task.actions}
        for type_ in self.task.types:
            try:
                self._logic.types.add(textworld.logic.Type(type_.name, type_.supertype_names))
            except ValueError:
                pass
        self.downward_lib.load_sas(self.sas.encode("utf-8"))
        self.name2type = {o.name: o.type_name for o in self.task.objects}
        key = (logic.domain, pddl_problem)
        memo = _INITIAL.get(key)
        if memo is None:
            self.add_facts(self._initial_facts())
            self.add_facts(self._initial_facts_of_library())
            memo = _INITIAL[key] = _Initial(_copy_tables(self), operators={})
            if len(_INITIAL) > _SAS_MAX:
                _INITIAL.popitem(last=False)
        else:
            _INITIAL.move_to_end(key)
            # the tables a fresh state builds, copied as snapshots are (same contents; tested)
            self._facts, self._vars_by_name, self._vars_by_type, self._var_counts = _copy_tables(memo.tables)
        self._op_memo = memo.operators
        self._atom_memo = memo.atoms

    @property
    def facts(self):
        """All the facts of the state, as TextWorld's ``State.facts`` (each signature's
        set in turn, lazily), iterated at C speed."""
        return itertools.chain.from_iterable(self._facts.values())

    def _initial_facts(self) -> list:
        """The first facts TextWorld's ``PddlState`` adds at construction: the problem's
        init atoms (less equalities, total-cost and distance relations)."""
        from textworld.logic import Proposition, Variable

        def _atom2proposition(atom):
            if isinstance(atom, fast_downward.translate.pddl.conditions.Atom):
                if atom.predicate == "=":
                    return None
                return Proposition(atom.predicate, [Variable(arg, self.name2type[arg]) for arg in atom.args])
            if isinstance(atom, fast_downward.translate.pddl.f_expression.Assign):
                if atom.fluent.symbol == "total-cost":
                    return None
                name = "{}".format(atom.expression.value)
                if str.isdigit(name):
                    return None
                return Proposition(name, [Variable(arg, self.name2type[arg]) for arg in atom.fluent.args])
            return None

        return list(filter(None, (_atom2proposition(a) for a in self.task.init)))

    def _initial_facts_of_library(self) -> list:
        """The facts it adds next: the positive atoms of the library's freshly loaded
        state (``get_state``, quadratic in the state size)."""
        from textworld.envs.pddl.logic import Atom

        size = self.downward_lib.get_state_size()
        buf = (Atom * size)()
        self.downward_lib.get_state(buf)
        facts = [a.get_fact(self.name2type) for a in buf]
        return [f for f in facts if not f.is_negation]

    def apply(self, action):
        """``PddlState.apply`` (textworld 1.7) with the facts of the effect atoms memoised
        per problem: an atom's fact is a pure function of its name and the problem's
        object types (``Atom.get_fact(name2type)``), so the fact and its negation are
        built once per (problem, atom) and shared (facts are immutable values); the same
        facts are removed and added in the same order. Returns the changes, as TextWorld."""
        op = self._operators[action.id]
        effects = (_Atom * op.nb_effect_atoms)()
        self.downward_lib.apply_operator(op.id, effects)
        memo = self._atom_memo
        changes = []
        for effect in effects:
            name = effect.name
            hit = memo.get(name)
            if hit is None:
                prop = effect.get_fact(self.name2type)
                hit = memo[name] = (prop, prop.negate())
            prop, negation = hit
            changes.append(prop)
            self.remove_fact(negation)
            self.add_fact(prop)
        return changes

    def all_applicable_actions(self):
        """``PddlState.all_applicable_actions`` with the per-operator work memoised.

        Same actions in the same order (one per distinct operator name, first
        occurrence kept; fresh ``Action`` objects, since callers set attributes on
        them), and the same ``_operators`` map. The operators' full names (bytes, one per
        action, same order) are left in :attr:`applicable_names` for the command cache of
        :class:`~agentstudies.envs.alfworld.pddl_env.PddlEnvCached`. What depends on the operator name only
        -- its decoded text, the action name and the placeholder -> variable mapping --
        is computed once per name and problem (:data:`_INITIAL`) instead of once per
        call; the mapping dict is copied for every action.
        """
        from textworld.logic import Action, Placeholder, Variable

        operators, arr = _operator_array(self.downward_lib)
        self._operators = {op.id: op for op in operators}
        ids, raw = arr["id"].tolist(), arr["name"].tolist()
        memo = self._op_memo
        protos = _ACTION_PROTOS
        actions = []
        seen = set()
        names = []
        for op_id, name_bytes in zip(ids, raw):
            if name_bytes in seen:
                continue
            seen.add(name_bytes)
            names.append(name_bytes)
            hit = memo.get(name_bytes)
            if hit is None:
                splits = name_bytes.decode("cp1252").split()
                name, arguments = splits[0], splits[1:]
                mapping = {Placeholder(p.name.strip("?"), p.type_name): Variable(arg, p.type_name)
                           for p, arg in zip(self._actions[name].parameters, arguments)}
                hit = memo[name_bytes] = (name, mapping)
            name, mapping = hit
            proto = protos.get(name)
            if proto is None:  # the attributes TextWorld's Action(name, [], []) starts with
                proto = protos[name] = vars(Action(name=name, preconditions=[], postconditions=[]))
            action = Action.__new__(Action)  # a copy of the fresh action, attribute order kept
            action.__dict__.update(proto)
            action.id = op_id
            action.mapping = dict(mapping)
            action.command_template = self._logic.actions[name].template
            action.feedback_rule = self._logic.actions[name].feedback_rule
            actions.append(action)
        self.applicable_names = names
        return actions


#: Per action name, the attribute dict of a fresh ``Action(name, [], [])`` (its values are
#: immutable -- strings, ``None``, empty tuples and frozensets -- but for ``mapping``, which
#: every copy replaces).
_ACTION_PROTOS: dict[str, dict] = {}


def _copy_tables(ps) -> tuple:
    """Copies of a state's fact and variable tables (``_facts``, ``_vars_by_name``,
    ``_vars_by_type``, ``_var_counts``; from the state or from such a tuple), the one copy
    that resets, :meth:`env.AlfworldEnv.snapshot`, ``restore`` and the step cache use: the same keys in the same order and equal sets (a set's
    iteration order is not part of the state: it already varies between processes,
    since the facts hash by their strings)."""
    from collections import Counter, defaultdict

    if isinstance(ps, tuple):
        facts, vbn, vbt, vc = ps
    else:
        facts, vbn, vbt, vc = ps._facts, ps._vars_by_name, ps._vars_by_type, ps._var_counts
    return (defaultdict(set, {k: set(v) for k, v in facts.items()}), dict(vbn),
            defaultdict(set, {k: set(v) for k, v in vbt.items()}), Counter(vc))


@dataclass
class _Initial:
    """Memo entry of one (domain, problem): the tables of a freshly constructed state
    (:func:`_copy_tables`), ``operator name (bytes) -> (action name, mapping)`` for
    ``all_applicable_actions``, and ``effect atom name -> (fact, its negation)`` for
    :meth:`CachedPddlState.apply`."""

    tables: tuple
    operators: dict
    atoms: dict = field(default_factory=dict)


#: Per (domain, problem), the initial facts and operator memo of :class:`CachedPddlState`
#: (least recently used dropped beyond :data:`_SAS_MAX`).
_INITIAL: "OrderedDict[tuple, _Initial]" = OrderedDict()


# ----------------------------------------------------------------- direct reads
def atoms(lib) -> list[str]:
    """Positive atoms of the library's current state (``"Atom pred(a, b)"`` strings)."""
    size = lib.get_state_size()
    buf = (fast_downward.Atom * size)()
    lib.get_state(buf)
    return [a.name for a in buf if not a.name.startswith("NegatedAtom") and "<none of those>" not in a.name]


_OP_DTYPE = np.dtype([("id", "<i4"), ("name", "S1024"), ("nb", "<i4")])


def _operator_array(lib) -> tuple:
    """The library's applicable operators of its current state, in the library's order:
    the ctypes ``Operator`` array and a structured view of it (``id``, ``name`` bytes,
    ``nb``); both empty if there are none."""
    n = lib.get_applicable_operators_count()
    ops = (fast_downward.Operator * n)()
    if n == 0:
        return ops, np.zeros(0, dtype=_OP_DTYPE)
    lib.get_applicable_operators(ops)
    return ops, np.frombuffer(ops, dtype=_OP_DTYPE)


def applicable_operators(lib) -> list:
    """Applicable operators ``(id, name, n_effects)`` of the library's current state, one
    per distinct name, in the order the library lists them (the order
    ``PddlState.all_applicable_actions`` keeps). Names are decoded from cp1252."""
    _, arr = _operator_array(lib)
    seen = set()
    out = []
    for op_id, name, nb in zip(arr["id"].tolist(), arr["name"].tolist(), arr["nb"].tolist()):
        if name in seen:
            continue
        seen.add(name)
        out.append((op_id, name.decode("cp1252"), nb))
    return out


def applicable_operator_ids(lib) -> list[int]:
    """Ids of :func:`applicable_operators` (same operators, same order: one per distinct
    name, the first listed), without decoding the names -- for searches that only apply
    operators (:func:`frontier.frontier_check` below the first level)."""
    _, arr = _operator_array(lib)
    first: dict[bytes, int] = {}
    for op_id, name in zip(arr["id"].tolist(), arr["name"].tolist()):
        first.setdefault(name, op_id)
    return list(first.values())
