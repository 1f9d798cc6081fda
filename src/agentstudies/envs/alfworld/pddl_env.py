"""TextWorld's ``PddlEnv`` with per-game caches: the engine :class:`~.env.AlfworldEnv` drives.

One job: load a game into TextWorld's PDDL engine and gather the step infos exactly as
``textworld.envs.pddl.PddlEnv`` does, without redoing pure work.

* :func:`game_logic` -- the parsed ``GameLogic`` of a (domain, grammar) pair. TextWorld
  parses the grammar document with TatSu on every load (about 0.4-0.5 s of CPU a game,
  more than half of loading a game). Generated (and official) ALFWorld games share one
  grammar document up to the task sentence (the ``"task"`` rule's text), so the TatSu
  parse of the document with that sentence replaced by a placeholder is done once and
  kept (:data:`_SKELETONS`); a game's logic is then built from that parse by the same
  converter TextWorld uses, with the sentence put back into the grammar block before its
  JSON is read. Same actions, same grammar rules as ``GameLogic(domain, grammar)``
  (tests/test_alfworld_engine_memo.py compares them on every pooled game); a grammar
  without exactly one plain task sentence is parsed the ordinary way.
* :class:`PddlEnvCached` -- ``PddlEnv`` whose load/reset reuse the parsed logic and the
  SAS translation (:class:`engine.CachedPddlState`), render each grounded command text
  once per game and derive the intro text once per load.

TextWorld internals (``textworld==1.7.0``, pinned): ``PddlEnv.step`` is re-implemented
with the feedback memo, and the private ``_ModelConverter`` / ``_PARSER`` of
``textworld.envs.pddl.logic`` build the grammar; re-check when the pin moves.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections import OrderedDict
from typing import Mapping

from textworld.core import GameState
from textworld.envs.pddl import PddlEnv
from textworld.envs.pddl import logic as _pddl_logic
from textworld.envs.pddl.logic import GameLogic
from textworld.logic import TypeHierarchy

from agentstudies.envs.alfworld.engine import CachedPddlState

__all__ = ["PddlEnvCached", "game_logic", "template_placeholders"]

#: Parsed logic per sha256(domain, grammar), shared by every load of that game in the
#: process (cleared beyond 256 entries).
_LOGIC_CACHE: dict[str, GameLogic] = {}
#: TatSu model of a grammar document with its task sentence replaced by
#: :data:`_PLACEHOLDER`, per sha256 of that skeleton (cleared beyond 64 entries).
_SKELETONS: dict[str, object] = {}
_PLACEHOLDER = "AGENTSTUDIESTASKSENTENCEPLACEHOLDER"
#: The task rule of an ALFWorld grammar block: ``"task": [ { "rhs": "<sentence>" } ]``;
#: the sentence may not hold a quote, a backslash or a newline (then JSON escaping and
#: TextWorld's dedent cannot differ between the skeleton and the game).
_TASK_RULE = re.compile(r'("task"\s*:\s*\[\s*\{\s*"rhs"\s*:\s*")([^"\\\n]*)(")')


class _SentenceConverter(_pddl_logic._ModelConverter):
    """TextWorld's model converter, putting the task sentence back into code blocks."""

    def __init__(self, sentence: str):
        super().__init__()
        self._sentence = sentence

    def _unescape_block(self, string):  # noqa: D102
        return super()._unescape_block(string).replace(_PLACEHOLDER, self._sentence)


def _skeleton_of(grammar: str) -> tuple[str, str] | None:
    """``(skeleton, sentence)``: ``grammar`` with its one task sentence replaced by the
    placeholder; ``None`` when there is not exactly one task rule, or the placeholder
    already occurs."""
    found = list(_TASK_RULE.finditer(grammar))
    if len(found) != 1 or _PLACEHOLDER in grammar:
        return None
    m = found[0]
    return grammar[:m.start(2)] + _PLACEHOLDER + grammar[m.end(2):], m.group(2)


def _logic_from_skeleton(domain: str, skeleton: str, sentence: str) -> GameLogic:
    """``GameLogic(domain, grammar)`` built from the (cached) TatSu parse of the skeleton."""
    key = hashlib.sha256(skeleton.encode()).hexdigest()
    model = _SKELETONS.get(key)
    if model is None:
        if len(_SKELETONS) >= 64:
            _SKELETONS.clear()
        model = _SKELETONS[key] = _pddl_logic._PARSER.parse(skeleton, rule_name="pddlStart")
    actions, grammar = _SentenceConverter(sentence).walk(model)
    logic = GameLogic.__new__(GameLogic)  # GameLogic.__init__ minus the parse
    logic.domain = domain
    logic.grammar = _pddl_logic.ContextSensitiveGrammar()
    logic.actions = {}
    logic.types = TypeHierarchy()
    logic.actions.update(actions)
    logic.grammar.update(grammar)
    return logic


def game_logic(domain: str, grammar: str, *, share_parse: bool = True) -> GameLogic:
    """The ``GameLogic`` of a game (memoised per ``(domain, grammar)``; module docstring).

    ``share_parse=False`` parses the whole document as TextWorld does (the reference
    the shared parse is tested against).
    """
    key = hashlib.sha256((domain + "\0" + grammar).encode()).hexdigest()
    hit = _LOGIC_CACHE.get(key)
    if hit is None:
        if len(_LOGIC_CACHE) > 256:
            _LOGIC_CACHE.clear()
        split = _skeleton_of(grammar) if share_parse else None
        if split is None:
            hit = GameLogic(domain=domain, grammar=grammar)
        else:
            hit = _logic_from_skeleton(domain, *split)
        _LOGIC_CACHE[key] = hit
    return hit


class PddlEnvCached(PddlEnv):
    """``PddlEnv`` whose load/reset reuse a parsed ``GameLogic`` and SAS translation.

    With ``command_cache=True`` the text of each admissible command is rendered once per
    grounded operator (keyed by the action name and the arguments its template reads;
    found again by the operator's full name, :attr:`engine.CachedPddlState.applicable_names`,
    without rebuilding that key) and reused: in the ALFRED grammar a
    command template depends only on the action's arguments and static facts
    (``receptacleAtLocation``), so the text is identical to the engine's (tested against
    ``command_cache=False``). Everything else (feedback, ``won``, facts, order of the
    admissible list) is computed exactly as in ``PddlEnv._gather_infos``. With
    ``intro_cache=True`` (class attribute) the intro text is derived once per game.
    Both the command texts and the intro are kept across loads of a game (:data:`_RENDERED`).
    """

    command_cache: bool = True
    #: Derive the intro text (``#intro#``: the room and the task) once per loaded game and
    #: hand the same text to every reset: it is a pure function of the initial state, the
    #: entity names and the grammar, all fixed between loads (the grammar's derivation
    #: takes the first applicable production and reads no random state).
    intro_cache: bool = True

    def _gather_infos(self):  # noqa: D102
        if not self.command_cache:
            return super()._gather_infos()
        cache = self.__dict__.setdefault("_command_cache", {})
        if "_templates" not in self.__dict__:
            self._templates = sorted(set(a.template for a in self._logic.actions.values()))
        self.state["command_templates"] = list(self._templates)
        self.state["won"] = self._pddl_state.check_goal()
        self.state["lost"] = False
        self.state["_entity_infos"] = dict(self._entity_infos)
        self.state["_facts"] = list(self._pddl_state.facts)
        if self.request_infos.facts:
            self.state["facts"] = list(map(self._get_human_readable_fact, self.state["_facts"]))
        self.state["last_action"] = None
        self.state["_last_action"] = self._last_action
        self.state["_valid_actions"] = list(self._pddl_state.all_applicable_actions())
        refs = self.__dict__.setdefault("_template_refs", {})
        by_op = self.__dict__.setdefault("_command_by_op", {})
        op_names = getattr(self._pddl_state, "applicable_names", None)
        if op_names is None or len(op_names) != len(self.state["_valid_actions"]):
            op_names = [None] * len(self.state["_valid_actions"])
        mapping = None
        commands = []
        for action, op_name in zip(self.state["_valid_actions"], op_names):
            hit = by_op.get(op_name) if op_name is not None else None
            if hit is not None:  # this grounded operator's text was looked up before (same key below)
                action.command_template = hit[0]
                commands.append(hit[1])
                continue
            used = refs.get(action.name)
            if used is None:
                used = refs[action.name] = template_placeholders(self._logic.actions[action.name].template)
            key = (action.name,) + tuple(
                sorted((ph.name, var.name) for ph, var in action.mapping.items() if ph.name in used)
            )
            hit = cache.get(key)
            if hit is None:
                if mapping is None:
                    mapping = {k: info.name for k, info in self._entity_infos.items()}
                context = {
                    "state": self._pddl_state,
                    "facts": self.state["_facts"],
                    "variables": {ph.name: self._entity_infos[var.name] for ph, var in action.mapping.items()},
                    "mapping": action.mapping,
                    "entity_infos": self._entity_infos,
                }
                action.command_template = self._logic.grammar.derive(action.command_template, context)
                hit = (action.command_template, action.format_command(mapping))
                cache[key] = hit
            else:
                action.command_template = hit[0]
            if op_name is not None:
                by_op[op_name] = hit
            commands.append(hit[1])
        self.state["_valid_commands"] = commands
        self.state["admissible_commands"] = sorted(set(commands))
        if self.request_infos.moves:
            self.state["moves"] = self._moves
        if self.request_infos.policy_commands:
            self.state["policy_commands"] = self._pddl_state.replan(self._entity_infos)

    #: Memoise the feedback text of a step (:data:`_FEEDBACK`): TextWorld derives it from
    #: the action's feedback rule and mapping and the state after the action (the facts,
    #: which the grammar's queries walk in sorted order, and the variables by type, which
    #: they read for unconstrained placeholders), the game's grammar and entity names; it
    #: reads no random state and nothing else. A step whose game, rule, mapping, facts and
    #: variables all equal those of an earlier step gets that step's text.
    feedback_cache: bool = True

    def step(self, command: str):  # noqa: D102 - textworld 1.7's PddlEnv.step, feedback memoised
        if not self.feedback_cache:
            return super().step(command)
        command = command.strip()
        self.prev_state = self.state
        self.state = GameState()
        self.state.last_command = command
        self._last_action = None
        try:
            idx = self.prev_state["_valid_commands"].index(command)
            self._last_action = self.prev_state["_valid_actions"][idx]
            self._pddl_state.apply(self._last_action)
            self.state.feedback = self._feedback(self._last_action)
            self._moves += 1
        except ValueError:  # as TextWorld: a command outside the list changes nothing
            self.state.feedback = "Nothing happens."
        self.state.raw = self.state.feedback
        self._gather_infos()
        if "walkthrough" in self.request_infos.extras:
            self.state["extra.walkthrough"] = self.prev_state["extra.walkthrough"]
        self.state["score"] = 1 if self.state["won"] else 0
        self.state["done"] = self.state["won"] or self.state["lost"]
        return self.state, self.state["score"], self.state["done"]

    def _feedback(self, action) -> str:
        """The feedback text of ``action`` just applied (TextWorld's derivation, memoised
        in :data:`_FEEDBACK` by everything it reads; see :attr:`feedback_cache`)."""
        ps = self._pddl_state
        key = self._feedback_key(action)
        text = _FEEDBACK.get(key) if key[0] is not None else None
        if text is None:
            context = {
                "state": ps,
                "facts": list(ps.facts),
                "variables": {ph.name: self._entity_infos[var.name] for ph, var in action.mapping.items()},
                "mapping": action.mapping,
                "entity_infos": self._entity_infos,
            }
            text = self._logic.grammar.derive(action.feedback_rule, context)
            if key[0] is not None:
                if len(_FEEDBACK) >= _FEEDBACK_MAX:
                    _FEEDBACK.clear()
                _FEEDBACK[key] = text
        return text

    def _feedback_key(self, action) -> tuple:
        """What the feedback text of ``action`` just applied is a function of: the game
        (``None`` before a load through :meth:`load`: nothing is memoised), the feedback
        rule, the placeholder -> variable mapping, the state's facts and its variables."""
        ps = self._pddl_state
        return (self.__dict__.get("_game_key"), action.feedback_rule, frozenset(action.mapping.items()),
                frozenset(itertools.chain.from_iterable(ps._facts.values())),
                frozenset(itertools.chain.from_iterable(ps._vars_by_type.values())))

    def load(self, filename_or_data):  # noqa: D102
        if isinstance(filename_or_data, Mapping):
            data = filename_or_data
            self._game_file = None
        else:
            with open(filename_or_data) as fh:
                data = json.load(fh)
            self._game_file = str(filename_or_data)
        self._game_data = data
        self.walkthrough = data.get("walkthrough", None)
        self._logic = game_logic(data["pddl_domain"], data["grammar"])
        self._pddl_state = CachedPddlState(self.downward_lib, data["pddl_problem"], self._logic)
        self._entity_infos = self._get_entity_infos()
        rendered = _rendered_memo(data)
        self._game_key = rendered["key"]
        self._rendered = rendered
        self._command_cache = rendered["commands"]
        self._command_by_op = rendered["by_op"]
        self._template_refs = rendered["refs"]
        self._intro = rendered["intro"]

    def reset(self):  # noqa: D102
        self._pddl_state = CachedPddlState(self.downward_lib, self._game_data["pddl_problem"], self._logic)
        self.prev_state = None
        self.state = GameState()
        self._last_action = None
        self._moves = 0
        intro = self.__dict__.get("_intro") if self.intro_cache else None
        if intro is None:
            context = {
                "state": self._pddl_state,
                "facts": list(self._pddl_state.facts),
                "variables": {},
                "mapping": {},
                "entity_infos": self._entity_infos,
            }
            intro = self._intro = self._logic.grammar.derive("#intro#", context)
            rendered = self.__dict__.get("_rendered")
            if rendered is not None:
                rendered["intro"] = intro
        self.state.feedback = intro
        self.state.raw = self.state.feedback
        self._gather_infos()
        return self.state


#: Per game (SHA-256 of its domain, grammar and problem): the texts rendered for it --
#: command texts (by template key and by operator name) and the intro -- kept across
#: loads of that game in this process (least recently used dropped beyond 256 games).
#: They are functions of the game alone (the entity names come from the problem, the
#: demangler does not shuffle, a derivation reads no random state), so a reload renders
#: nothing it rendered before.
_RENDERED: "OrderedDict[str, dict]" = OrderedDict()
_RENDERED_MAX = 256


def _rendered_memo(data: Mapping) -> dict:
    """The :data:`_RENDERED` entry of the game ``data`` (created empty if new)."""
    key = hashlib.sha256("\0".join((data["pddl_domain"], data["grammar"], data["pddl_problem"])).encode()).hexdigest()
    hit = _RENDERED.get(key)
    if hit is None:
        hit = _RENDERED[key] = {"commands": {}, "by_op": {}, "refs": {}, "intro": None, "key": key}
        if len(_RENDERED) > _RENDERED_MAX:
            _RENDERED.popitem(last=False)
    else:
        _RENDERED.move_to_end(key)
    return hit


#: Feedback texts of steps (:attr:`PddlEnvCached.feedback_cache`), keyed by the game
#: (SHA-256 of its domain, grammar and problem, as :data:`_RENDERED`), the action's
#: feedback rule and mapping, and the frozen facts and variables of the state after the
#: action; emptied when it holds :data:`_FEEDBACK_MAX` entries (a key holds the state's
#: few hundred facts: about 29 KB an entry by tracemalloc, so at most about 60 MB).
#: ``benchmarks/bench_memos.py`` measures what it saves against deriving every text.
_FEEDBACK: dict = {}
_FEEDBACK_MAX = 2048


_PH_BRACE = re.compile(r"\{\s*([A-Za-z_][A-Za-z0-9_]*)")
_PH_TYPED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*:\s*[A-Za-z_]+")


def template_placeholders(template: str) -> frozenset:
    """Placeholder names a command template reads (``{r}``, ``{r.name | ...}``, ``lend:location``)."""
    return frozenset(m.lower() for m in _PH_BRACE.findall(template) + _PH_TYPED.findall(template))
