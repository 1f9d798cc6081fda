"""A small learned ALFWorld policy that acts only on what it is shown.

:class:`LearnedAlfworldPolicy` is a **linear softmax scorer over hashed features** of
(goal text, a belief built from the observations the policy was shown, candidate
command). It is the policy behind the two trained checkpoints of the chapter
``alfworld_training`` (*SFT*: behaviour cloning; *RL*: SFT + on-policy REINFORCE), which
the handoff and recovery studies cross as reacher and solver.

Why a linear softmax over hashed features (and not an MLP)
    * The decision is a choice among a variable set of candidate commands; a softmax over
      per-candidate scores ``s(c) = w . phi(goal, belief, c)`` is the conditional-logit
      model of that choice (the same form as an LLM's distribution over its sampled
      action strings, restricted to the candidates), its log-likelihood is concave, so
      behaviour cloning has one optimum and is reproducible bit for bit from a fixed
      seed and data order.
    * ``grad log pi(a|h) = phi(a) - E_pi[phi]`` is exact and cheap, so REINFORCE needs no
      autograd and runs in numpy only; a step scores ~30 candidates in about a
      millisecond, so the engine, not the policy, sets the pace of training.
    * The interactions that matter (goal word x verb x class of the candidate's
      receptacle, e.g. *heat* x *go to* x *microwave*) are made explicit as conjunction
      features, which is what a hidden layer would otherwise have to discover from the
      small training budgets a 2-core machine affords. Feature hashing (CRC-32 into
      ``2**dim_log2`` slots) keeps the weight vector fixed-size for unseen words.

Inputs: only the text the agent is shown
    ``act(observation)`` takes either a string (the text shown) or a mapping, of which it
    reads **only** ``observation["goal"]`` (optional) and ``observation["observation"]``
    (the latest observation text) -- and, on the first call after ``reset`` only,
    ``observation["history"]``: a solver handed a clone is shown the reacher's visible
    history ``h_t = (o_0, a_0, ..., o_t)`` (paper Eq. 1), which it folds into its belief.
    A policy with ``admissible=True`` (the handoff paper's setting, and the default of the
    shipped ``SFT`` / ``RL`` checkpoints) also reads ``observation["admissible_commands"]``
    on every call; with ``admissible=False`` (the ``*-nolist`` checkpoints, an ablation)
    the list is never read. The expert plan and every other key are never read (a test
    perturbs them and checks identical actions). The shown text is ``goal + "\\n" +
    latest observation`` (at a handoff: the goal and the whole history).

Belief (built only from shown observations and the policy's own past commands)
    receptacles listed in the room description; where the agent is (from "You arrive at
    X." and from ALFWorld's raw ``look`` reply "You are facing the X.", which counts no
    visit); what it saw on / in
    each receptacle; which receptacles were seen closed / opened; what it holds; which
    objects it heated / cooled / cleaned; whether it switched a lamp on; objects it put
    into a receptacle of a goal class; the object it moved last; visit and command counts;
    whether the last command got "Nothing happens." and which of its commands ever did. A stale or missing observation misleads it exactly
    as it would mislead any agent that trusts its inputs.

Candidates
    With ``admissible=True``: the engine's admissible list as shown, each candidate with
    two extra atoms per verb (listed: 1; proposed by the belief below: 0/1). With
    ``admissible=False``: from the belief and the ALFWorld 0.4 grammar: ``look``, ``inventory``, ``go to R``
    for every known receptacle, ``open R`` / ``close R`` / ``examine R`` at the current
    receptacle, ``take O from R`` for objects seen there, ``move O to R`` (the 0.4 verb;
    the old ``put O in/on R`` is never produced), ``heat|cool|clean O with R`` while
    holding ``O``, ``use O`` for objects seen at the current receptacle, ``examine O``.
    A candidate the engine does not admit gets the engine's "Nothing happens." and costs
    one action like any other.

Decoding
    ``pi(c | h) = softmax(s(c) / temperature)`` sampled with the episode's random
    stream, or ``argmax`` with ``greedy=True`` (ties -> first candidate). The random
    stream of an episode is ``keyed_seed(base_seed, "episode", task_id, seed, role,
    checkpoint)``, so two checkpoints handed the same clone draw independent streams
    (paired by task, seed and role; keyed on the checkpoint as in the handoff paper).

Weights ship in ``data/alfworld/checkpoints/<name>.npy`` with ``<name>.npy.sha256``;
:meth:`LearnedAlfworldPolicy.load` verifies the checksum (``ValueError`` on mismatch).
"""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from agentstudies.parallel import keyed_seed

__all__ = [
    "LearnedAlfworldPolicy",
    "Belief",
    "candidate_commands",
    "candidate_features",
    "featurize",
    "shown_text",
    "checkpoint_dir",
    "load_weights",
    "save_weights",
    "hand_set_weights",
    "DIM_LOG2",
    "FEATURE_VERSION",
    "ROLES",
]

#: log2 of the number of hashed feature slots.
DIM_LOG2 = 16
#: Version of the feature map (stored with the weights; a mismatch refuses to load).
FEATURE_VERSION = 3
#: Roles a policy plays in the handoff protocol.
ROLES = ("reacher", "solver", "train", "eval")

NOTHING = "Nothing happens."
_STOP = frozenset(
    "a an the some it in on and put them to with under of your task is by using at into".split()
)
_GOAL_RE = re.compile(r"Your task is to:\s*([^\n]*)")
_ENT = r"([a-z]+ \d+)"
_ARRIVE = re.compile(r"You arrive at (?:loc \d+\. )?([a-z]+ \d+)\.")
#: ALFWorld's own ``look`` reply at a receptacle ("You are facing the X[, and Y]. Next to
#: it, you see nothing."): where the agent is, without a visit (a look moves nothing).
_FACING = re.compile(r"You are facing the ([a-z]+ \d+)")
_ON = re.compile(r"On the ([a-z]+ \d+), you see (.*?)\.(?:\s|$)")
_IN = re.compile(r"(?:The|the) ([a-z]+ \d+) is open\. In it, you see (.*?)\.(?:\s|$)")
_CLOSED = re.compile(r"The ([a-z]+ \d+) is closed\.")
_OPEN = re.compile(r"You open the ([a-z]+ \d+)\.")
_CLOSE = re.compile(r"You close the ([a-z]+ \d+)\.")
_TAKE = re.compile(r"You pick up the ([a-z]+ \d+) from the ([a-z]+ \d+)\.")
_MOVE = re.compile(r"You (?:move|put) the ([a-z]+ \d+) (?:to|in|on|into) the ([a-z]+ \d+)\.")
_TREAT = re.compile(r"You (heat|cool|clean) the ([a-z]+ \d+) using the ([a-z]+ \d+)\.")
_USE = re.compile(r"You turn on the ([a-z]+ \d+)\.")
_ROOM = re.compile(r"Looking quickly around you, you see (.*?)\.(?:\s|$)")
_ITEM = re.compile(r"(?:and )?an? ([a-z]+ \d+)")
_TREAT_WORD = {"heat": "hot", "cool": "cool", "clean": "clean"}


def _cls(name: str) -> str:
    return name.rsplit(" ", 1)[0]


def _items(text: str) -> list[str]:
    if text.strip() == "nothing":
        return []
    return _ITEM.findall(text)


def shown_text(observation: str | Mapping[str, Any] | None) -> str:
    """The text an agent is shown for ``observation``: ``goal + "\\n" + latest text``.

    A string is taken as the shown text itself. A mapping contributes only its ``goal``
    (optional) and ``observation`` keys; ``None`` or a missing observation is shown as
    the empty string (the policy then acts on its belief alone).
    """
    if observation is None:
        return ""
    if isinstance(observation, str):
        return observation
    if not isinstance(observation, Mapping):
        raise TypeError(f"observation: expected str or mapping, got {type(observation).__name__}")
    goal = observation.get("goal") or ""
    text = observation.get("observation") or ""
    return f"{goal}\n{text}" if goal else str(text)


@dataclass
class Belief:
    """What the policy believes, built only from shown texts and its own commands."""

    goal: str = ""
    goal_tokens: tuple[str, ...] = ()
    receptacles: list[str] = field(default_factory=list)
    at: str | None = None
    contents: dict[str, list[str]] = field(default_factory=dict)
    closed: set[str] = field(default_factory=set)
    opened: set[str] = field(default_factory=set)
    holding: str | None = None
    treated: dict[str, set[str]] = field(default_factory=dict)
    lamp_on: bool = False
    placed: set[str] = field(default_factory=set)
    visits: dict[str, int] = field(default_factory=dict)
    tried: dict[str, int] = field(default_factory=dict)
    last_command: str | None = None
    last_failed: bool = False
    failed: set[str] = field(default_factory=set)
    last_moved: str | None = None
    prev_at: str | None = None
    steps: int = 0
    #: ``(listed, own)`` while the engine's admissible list is shown (policy with
    #: ``admissible=True``): the commands of the shown list and the policy's own
    #: belief-generated candidates; ``None`` when no list is shown (features unchanged).
    shown_list: tuple[frozenset, frozenset] | None = None

    def update(self, text: str) -> None:
        """Fold one shown text (goal line and/or latest observation) into the belief."""
        text = text or ""
        m = _GOAL_RE.search(text)
        if m and not self.goal:
            goal = m.group(1).strip().rstrip(".").lower()
            self.goal = goal
            toks = [t for t in re.findall(r"[a-z]+", goal) if t not in _STOP]
            self.goal_tokens = tuple(dict.fromkeys(toks))
        self.last_failed = NOTHING in text
        if self.last_failed and self.last_command is not None:
            self.failed.add(self.last_command)
        self._read_location(text)
        for r, items in _ON.findall(text):
            self.contents[r] = _items(items)
        for r in _CLOSED.findall(text):
            self.closed.add(r)
            self.opened.discard(r)
        for r in _OPEN.findall(text):
            self.opened.add(r)
            self.closed.discard(r)
        for r, items in _IN.findall(text):
            self.contents[r] = _items(items)
            self.opened.add(r)
            self.closed.discard(r)
        for r in _CLOSE.findall(text):
            self.closed.add(r)
            self.opened.discard(r)
        for o, r in _TAKE.findall(text):
            self.holding = o
            if o in self.contents.get(r, []):
                self.contents[r] = [x for x in self.contents[r] if x != o]
            self.placed.discard(o)
        for o, r in _MOVE.findall(text):
            self.last_moved = o
            self.contents.setdefault(r, [])
            if o not in self.contents[r]:
                self.contents[r].append(o)
            if self.holding == o:
                self.holding = None
            if _cls(r) in self.goal_tokens:
                self.placed.add(o)
        for verb, o, _r in _TREAT.findall(text):
            self.treated.setdefault(o, set()).add(_TREAT_WORD[verb])
        if _USE.search(text):
            self.lamp_on = True
        if "You are not carrying anything." in text:
            self.holding = None
        m = re.search(r"You are carrying: an? ([a-z]+ \d+)\.", text)
        if m:
            self.holding = m.group(1)

    def _read_location(self, text: str) -> None:
        """The room's receptacles, and where the agent now is: an arrival ("You arrive at
        X") counts a visit; the raw ``look`` reply ("You are facing X") only places it."""
        m = _ROOM.search(text)
        if m:
            for r in _items(m.group(1)):
                if r not in self.receptacles:
                    self.receptacles.append(r)
        for r in _ARRIVE.findall(text):
            if r not in self.receptacles:
                self.receptacles.append(r)
            if r != self.at:
                self.prev_at = self.at
            self.at = r
            self.visits[r] = self.visits.get(r, 0) + 1
        for r in _FACING.findall(text):
            if r not in self.receptacles:
                self.receptacles.append(r)
            if r != self.at:
                self.prev_at = self.at
            self.at = r

    def record_command(self, command: str) -> None:
        """Remember a command the policy chose (counts only; effects come from texts)."""
        self.tried[command] = self.tried.get(command, 0) + 1
        self.last_command = command
        self.steps += 1


def candidate_commands(b: Belief) -> list[str]:
    """Candidate commands from the belief and the ALFWorld 0.4 grammar (module docstring)."""
    out = ["look", "inventory"]
    out += [f"go to {r}" for r in b.receptacles if r != b.at]
    if b.at is not None:
        r = b.at
        if r in b.closed:
            out.append(f"open {r}")
        if r in b.opened:
            out.append(f"close {r}")
        out.append(f"examine {r}")
        seen = b.contents.get(r, [])
        if b.holding is None:
            out += [f"take {o} from {r}" for o in seen]
        else:
            h = b.holding
            out.append(f"move {h} to {r}")
            out += [f"{v} {h} with {r}" for v in ("heat", "cool", "clean")]
        out += [f"use {o}" for o in seen if o != b.holding]
    if b.holding is not None:
        out.append(f"examine {b.holding}")
    return list(dict.fromkeys(out))


def _bucket(n: int) -> str:
    return "0" if n <= 0 else ("1" if n == 1 else "2+")


def _atoms(b: Belief, c: str) -> tuple[list[str], list[str], list[str]]:
    """(plain atoms, atoms also conjoined with every goal token, atoms used only conjoined
    with goal tokens) of candidate ``c``."""
    g = set(b.goal_tokens)
    words = c.split(" ")
    verb = words[0]
    hold = "none" if b.holding is None else ("goal" if _cls(b.holding) in g else "other")
    treat = sorted(b.treated.get(b.holding, ())) if b.holding else []
    common = [
        f"v={verb}",
        f"v={verb}|hold={hold}",
        f"v={verb}|tried={_bucket(b.tried.get(c, 0))}",
        f"v={verb}|repeat={int(c == b.last_command)}",
        f"v={verb}|failed={int(b.last_failed)}",
        f"v={verb}|known_failed={int(c in b.failed)}",
        f"v={verb}|placed={_bucket(len(b.placed))}",
        f"v={verb}|lamp={int(b.lamp_on)}",
    ]
    common += [f"v={verb}|held_{t}" for t in treat]
    common += [f"v={verb}|hold={hold}|held_{t}" for t in treat]
    if b.shown_list is not None:  # the admissible list is shown: membership as a feature
        listed, own = b.shown_list
        common += [f"v={verb}|listed={int(c in listed)}", f"v={verb}|own={int(c in own)}"]
    conj = list(common)
    plain: list[str] = []
    goal_only: list[str] = []
    if verb == "go":
        go_conj, goal_only = _go_atoms(b, c, g, hold, treat)
        conj += go_conj
    else:
        conj += _object_atoms(b, c, words, verb, g, hold, treat)
    return plain, conj, goal_only


def _go_atoms(b: Belief, c: str, g: set, hold: str, treat: list[str]) -> tuple[list[str], list[str]]:
    """Atoms of a ``go to <receptacle>`` candidate: (conjoined, goal-only)."""
    r = c[6:]
    rc = _cls(r)
    seen = b.contents.get(r)
    goal_obj = sum(1 for o in (seen or []) if _cls(o) in g and o not in b.placed)
    conj = [
        f"go|cls={rc}",
        f"go|visits={_bucket(b.visits.get(r, 0))}",
        f"go|known={int(seen is not None)}",
        f"go|closed={int(r in b.closed)}",
        f"go|has_goal={_bucket(goal_obj)}",
        f"go|rgoal={int(rc in g)}",
        f"go|rgoal={int(rc in g)}|hold={hold}",
        f"go|prev={int(r == b.prev_at)}",
        f"go|has_goal={_bucket(goal_obj)}|hold={hold}",
        f"go|visits={_bucket(b.visits.get(r, 0))}|hold={hold}",
    ]
    conj += [f"go|cls={rc}|hold={hold}|held_{t}" for t in treat]
    return conj, [f"go|cls={rc}|hold={hold}"]


def _object_atoms(b: Belief, c: str, words: list[str], verb: str, g: set, hold: str,
                  treat: list[str]) -> list[str]:
    """Conjoined atoms of a candidate acting on a receptacle or object (open / close /
    examine, take, move, heat / cool / clean, use)."""
    conj: list[str] = []
    if verb in ("open", "close", "examine") and len(words) == 3:
        r = c.split(" ", 1)[1]
        rc = _cls(r)
        is_recep = r in b.receptacles
        conj += [
            f"{verb}|recep={int(is_recep)}",
            f"{verb}|cls={rc}",
            f"{verb}|rgoal={int(rc in g)}",
            f"{verb}|visits={_bucket(b.visits.get(r, 0))}",
        ]
    elif verb == "take":
        o, r = c[5:].split(" from ")
        oc = _cls(o)
        conj += [
            f"take|ogoal={int(oc in g)}",
            f"take|rgoal={int(_cls(r) in g)}",
            f"take|ogoal={int(oc in g)}|rgoal={int(_cls(r) in g)}",
            f"take|ocls={oc}",
            f"take|just_moved={int(o == b.last_moved)}",
        ]
    elif verb == "move":
        o, r = c[5:].split(" to ")
        oc, rc = _cls(o), _cls(r)
        conj += [
            f"move|ogoal={int(oc in g)}",
            f"move|rgoal={int(rc in g)}",
            f"move|ogoal={int(oc in g)}|rgoal={int(rc in g)}",
            f"move|rcls={rc}",
        ]
        conj += [f"move|ogoal={int(oc in g)}|rgoal={int(rc in g)}|held_{t}" for t in treat]
    elif verb in ("heat", "cool", "clean"):
        o, r = c[len(verb) + 1:].split(" with ")
        oc, rc = _cls(o), _cls(r)
        conj += [
            f"{verb}|rcls={rc}",
            f"{verb}|ogoal={int(oc in g)}",
            f"{verb}|done={int(_TREAT_WORD[verb] in treat)}",
        ]
    elif verb == "use":
        o = c[4:]
        oc = _cls(o)
        conj += [f"use|ocls={oc}", f"use|ogoal={int(oc in g)}", f"use|ocls={oc}|hold={hold}"]
    elif verb == "examine":
        conj += ["examine|held"]
    return conj


def _h(s: str, mask: int) -> int:
    return zlib.crc32(s.encode()) & mask


_ATOM_CACHE: dict[tuple, int] = {}
_GOAL_CACHE: dict[tuple, tuple] = {}


def _hc(key: str, mask: int) -> int:
    k = (key, mask)
    v = _ATOM_CACHE.get(k)
    if v is None:
        if len(_ATOM_CACHE) > 500_000:
            _ATOM_CACHE.clear()
        v = _ATOM_CACHE[k] = _h(key, mask)
    return v


def _hg(atom: str, goal: tuple, mask: int) -> tuple:
    k = (atom, goal, mask)
    v = _GOAL_CACHE.get(k)
    if v is None:
        if len(_GOAL_CACHE) > 500_000:
            _GOAL_CACHE.clear()
        v = _GOAL_CACHE[k] = tuple(_h(f"{atom}|g={t}", mask) for t in goal)
    return v


#: Memo of :func:`candidate_features`: the feature indices are a pure function of the
#: candidate's atoms, the goal tokens and the hash width (keyed by those, joined with
#: separators no atom contains); cleared when it holds :data:`_FEATURE_CACHE_MAX` entries.
_FEATURE_CACHE: dict[str, np.ndarray] = {}
_FEATURE_CACHE_MAX = 50_000


def _hashed_features(b: Belief, c: str, mask: int) -> np.ndarray:
    """The feature array of ``c`` built from its atom strings (memoised per atoms)."""
    plain, conj, goal_only = _atoms(b, c)
    g = b.goal_tokens
    key = "\x1f".join(("\x1e".join(plain), "\x1e".join(conj), "\x1e".join(goal_only), "\x1e".join(g), str(mask)))
    hit = _FEATURE_CACHE.get(key)
    if hit is None:
        out = [_hc(k, mask) for k in plain]
        out += [_hc(k, mask) for k in conj]
        for a in conj:
            out.extend(_hg(a, g, mask))
        for a in goal_only:
            out.extend(_hg(a, g, mask))
        hit = np.array(out, dtype=np.int64)
        hit.setflags(write=False)
        if len(_FEATURE_CACHE) >= _FEATURE_CACHE_MAX:
            _FEATURE_CACHE.clear()
        _FEATURE_CACHE[key] = hit
    return hit


#: Memo of :func:`candidate_features` keyed by what the atoms *read* instead of the atom
#: strings themselves: per belief context (:func:`_context`), a dict from the
#: candidate's own reads (:func:`_reads`) to its feature array. Building the atom strings
#: was most of a decision's cost; equal reads give equal atoms, so the arrays are those
#: of :func:`_hashed_features` (tested on every decision of real episodes). Cleared when
#: it holds :data:`_READS_CACHE_MAX` contexts.
_READS_CACHE: dict[tuple, dict[tuple, np.ndarray]] = {}
_READS_CACHE_MAX = 20_000


def _context(b: Belief, mask: int) -> tuple:
    """What :func:`_atoms` reads from the belief for every candidate alike: the held
    object's relation to the goal and its treatments, the last failure, the placed
    bucket, the lamp, the goal tokens (and the hash width)."""
    if b.holding is None:
        hold, treat = "none", ()
    else:
        hold = "goal" if _cls(b.holding) in b.goal_tokens else "other"
        treat = tuple(sorted(b.treated.get(b.holding, ())))
    return (hold, treat, b.last_failed, _bucket(len(b.placed)), b.lamp_on, b.goal_tokens, mask,
            b.shown_list is not None)


def _reads(b: Belief, c: str) -> tuple:
    """What :func:`_atoms` reads for candidate ``c`` beyond :func:`_context` (mirrors its
    dispatch on the verb: go / open-close-examine a receptacle / take / the rest)."""
    words = c.split(" ")
    verb = words[0]
    own = (c, _bucket(b.tried.get(c, 0)), c == b.last_command, c in b.failed)
    if b.shown_list is not None:
        own = own + (c in b.shown_list[0], c in b.shown_list[1])
    if verb == "go":
        r = c[6:]
        seen = b.contents.get(r)
        g = b.goal_tokens
        goal_obj = sum(1 for o in (seen or []) if _cls(o) in g and o not in b.placed)
        return own + (_bucket(b.visits.get(r, 0)), seen is not None, r in b.closed, _bucket(goal_obj),
                      r == b.prev_at)
    if verb in ("open", "close", "examine") and len(words) == 3:
        r = c.split(" ", 1)[1]
        return own + (r in b.receptacles, _bucket(b.visits.get(r, 0)))
    if verb == "take":
        return own + (c[5:].split(" from ")[0] == b.last_moved,)
    return own


def _features_in(b: Belief, c: str, memo: dict, mask: int) -> np.ndarray:
    key = _reads(b, c)
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = _hashed_features(b, c, mask)
    return hit


def _context_memo(b: Belief, mask: int) -> dict:
    ctx = _context(b, mask)
    memo = _READS_CACHE.get(ctx)
    if memo is None:
        if len(_READS_CACHE) >= _READS_CACHE_MAX:
            _READS_CACHE.clear()
        memo = _READS_CACHE[ctx] = {}
    return memo


def candidate_features(b: Belief, c: str, dim_log2: int = DIM_LOG2) -> np.ndarray:
    """Hashed feature indices ``phi(goal, belief, c)`` (int64; may repeat; read-only).

    The keys are the plain atoms, the conjoinable atoms, then every conjoinable atom
    ``|g=`` every goal token, then the goal-only atoms (e.g. the class of a receptacle to
    go to while holding a goal object, which only means something given the goal)
    ``|g=`` every goal token, each hashed by CRC-32 into ``2**dim_log2`` slots (hashes are
    memoised; the order of the keys is fixed, so scores are summed in a fixed order).
    The resulting array is memoised per (atoms, goal tokens, ``dim_log2``) and per what
    the atoms read from the belief: beliefs that differ only in what this candidate's
    atoms do not read share one array.
    """
    mask = (1 << dim_log2) - 1
    return _features_in(b, c, _context_memo(b, mask), mask)


def featurize(b: Belief, cands: Sequence[str], dim_log2: int = DIM_LOG2) -> tuple[np.ndarray, np.ndarray]:
    """Features of all candidates: ``(idx, owner)`` -- feature index and candidate number."""
    mask = (1 << dim_log2) - 1
    memo = _context_memo(b, mask)
    parts = [_features_in(b, c, memo, mask) for c in cands]
    owner = np.repeat(np.arange(len(parts)), [len(p) for p in parts])
    idx = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return idx, owner


def scores_of(w: np.ndarray, idx: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """Candidate scores ``s(c) = w . phi(c)`` (float64, length ``n``)."""
    return np.bincount(owner, weights=w[idx], minlength=n)


def softmax(s: np.ndarray, temperature: float) -> np.ndarray:
    """Softmax of ``s / temperature`` (stable)."""
    z = s / temperature
    z = z - z.max()
    e = np.exp(z)
    return e / e.sum()


# ------------------------------------------------------------------ weights on disk
def checkpoint_dir() -> Path:
    """``<repo>/data/alfworld/checkpoints`` (the first parent holding ``pyproject.toml``)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file():
            return parent / "data" / "alfworld" / "checkpoints"
    return Path.cwd() / "data" / "alfworld" / "checkpoints"


def sha256_of(path: Path) -> str:
    """SHA-256 hex digest of a file."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def weights_digest(w: np.ndarray) -> str:
    """SHA-256 of the weight vector's float64 bytes (bitwise identity of two trainings)."""
    return hashlib.sha256(np.ascontiguousarray(w, dtype="<f8").tobytes()).hexdigest()


def save_weights(w: np.ndarray, name: str, directory: str | Path | None = None, meta: Mapping[str, Any] | None = None) -> Path:
    """Write ``<name>.npy``, ``<name>.npy.sha256`` and ``<name>.json`` (meta); returns the .npy path."""
    d = Path(directory) if directory else checkpoint_dir()
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{name}.npy"
    np.save(p, np.ascontiguousarray(w, dtype="<f8"), allow_pickle=False)
    (d / f"{name}.npy.sha256").write_text(f"{sha256_of(p)}  {name}.npy\n")
    m = {"name": name, "feature_version": FEATURE_VERSION, "dim_log2": int(round(np.log2(len(w))))}
    m.update(dict(meta or {}))
    (d / f"{name}.json").write_text(json.dumps(m, indent=1, sort_keys=True, default=str) + "\n")
    from agentstudies._data import record

    record(d / f"{name}.json")  # data/SHA256SUMS follows a retrain into data/ (else a no-op)
    return p


def load_weights(name: str, directory: str | Path | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Read ``<name>.npy`` after verifying ``<name>.npy.sha256``; returns ``(w, meta)``.

    Raises ``FileNotFoundError`` if a file is missing, ``ValueError`` on a checksum or
    feature-version mismatch.
    """
    d = Path(directory) if directory else checkpoint_dir()
    p = d / f"{name}.npy"
    sums = d / f"{name}.npy.sha256"
    if not p.is_file() or not sums.is_file():
        raise FileNotFoundError(f"checkpoint {name!r}: expected {p} and {sums}")
    expected = sums.read_text().split()[0]
    got = sha256_of(p)
    if got != expected:
        raise ValueError(f"checkpoint {name!r}: sha256 {got[:16]}... of {p} != recorded {expected[:16]}... in "
                         f"{sums.name}: the file was changed or truncated; restore it from the repository "
                         f"(git checkout -- {p} {sums})")
    meta_p = d / f"{name}.json"
    from agentstudies._data import read_json

    meta = read_json(meta_p) if meta_p.is_file() else {}
    if int(meta.get("feature_version", FEATURE_VERSION)) != FEATURE_VERSION:
        raise ValueError(
            f"checkpoint {name!r}: feature_version {meta.get('feature_version')} != {FEATURE_VERSION} of this code"
        )
    w = np.load(p, allow_pickle=False)
    meta["sha256"] = got
    return w, meta


def hand_set_weights(dim_log2: int = DIM_LOG2) -> np.ndarray:
    """A tiny hand-set weight vector (a placeholder before training; tests use it).

    Prefers unvisited receptacles whose class the goal names or that hold an object the
    goal names, taking goal objects, moving a held goal object to a goal receptacle and
    treating a held goal object; penalises repeats and idle commands.
    """
    w = np.zeros(1 << dim_log2)
    mask = (1 << dim_log2) - 1
    for key, val in {
        "go|visits=0": 1.0, "go|has_goal=1": 3.0, "go|has_goal=2+": 3.0, "go|rgoal=1|hold=goal": 4.0,
        "take|ogoal=1": 5.0, "move|ogoal=1|rgoal=1": 8.0, "open|recep=1": 2.0,
        "v=look": -3.0, "v=inventory": -3.0, "v=examine": -3.0, "v=close": -3.0, "v=use": -1.0,
        "use|ogoal=1": 6.0, "v=go|repeat=1": -3.0, "v=take|hold=none": 0.5,
    }.items():
        w[_h(key, mask)] += val
    return w


# ------------------------------------------------------------------ the policy
class LearnedAlfworldPolicy:
    """Linear softmax ALFWorld policy acting only on shown text (module docstring).

    Parameters
    ----------
    weights:
        Weight vector of length ``2**dim_log2`` (float64).
    name:
        Checkpoint label (``"SFT"``, ``"RL"``); part of the random-stream key.
    temperature:
        Softmax temperature ``> 0`` (paper, Appendix A: 0.4).
    greedy:
        Take the highest-scoring candidate instead of sampling.
    base_seed:
        Root of the per-episode streams ``keyed_seed(base_seed, "episode", task_id, seed,
        role, name)``.
    admissible:
        Show the policy the engine's admissible list (the handoff paper's setting, §3.1:
        both solvers get "identical history, admissible actions"): the candidate set is
        the list ``observation["admissible_commands"]`` in the order shown, and each
        candidate's features add whether it is listed and whether the policy's own
        belief proposes it (:func:`candidate_commands`). ``False`` (the no-list ablation):
        the candidates are the belief's own and the list is never read. A list-trained
        checkpoint given an observation without a list raises ``ValueError``.
    meta:
        Provenance of the weights (training parameters, checksum).

    Raises ``ValueError`` for a non-positive temperature or a weight vector whose length
    is not a power of two.
    """

    simulated = False

    def __init__(
        self,
        weights: np.ndarray,
        name: str = "learned",
        *,
        temperature: float = 0.4,
        greedy: bool = False,
        base_seed: int = 2029,
        meta: Mapping[str, Any] | None = None,
        admissible: bool = False,
    ):
        w = np.asarray(weights, dtype=np.float64)
        n = len(w)
        if w.ndim != 1 or n < 2 or n & (n - 1):
            raise ValueError(f"weights: expected a 1-d vector of length 2**k, got shape {w.shape}")
        if not (float(temperature) > 0):
            raise ValueError(f"temperature={temperature!r}: expected a positive number")
        self.w = w
        self.dim_log2 = int(n).bit_length() - 1
        self.name = str(name)
        self.temperature = float(temperature)
        self.greedy = bool(greedy)
        self.base_seed = int(base_seed)
        self.meta = dict(meta or {})
        self.admissible = bool(admissible)
        self._listed: list[str] | None = None
        self._rng: np.random.Generator | None = None
        self.belief = Belief()
        self.last_log: dict[str, Any] = {}
        self.task_id: str | None = None
        self.seed: int | None = None
        self.role: str | None = None

    @classmethod
    def load(
        cls,
        name: str,
        *,
        temperature: float = 0.4,
        greedy: bool = False,
        base_seed: int = 2029,
        directory: str | Path | None = None,
    ) -> "LearnedAlfworldPolicy":
        """The shipped checkpoint ``name`` (``"SFT"`` or ``"RL"``), checksum verified.

        ``name="hand"`` gives the untrained hand-set weights (:func:`hand_set_weights`).
        Whether the policy is shown the admissible list is read from the checkpoint's
        meta (``admissible``; absent = ``False``, the checkpoints trained without it).
        Raises ``FileNotFoundError`` / ``ValueError`` as :func:`load_weights`.
        """
        if name == "hand":
            return cls(hand_set_weights(), "hand", temperature=temperature, greedy=greedy, base_seed=base_seed,
                       meta={"source": "hand-set"})
        w, meta = load_weights(name, directory)
        return cls(w, name, temperature=temperature, greedy=greedy, base_seed=base_seed, meta=meta,
                   admissible=bool(meta.get("admissible", False)))

    @property
    def label(self) -> str:
        """Display name, e.g. ``"RL (linear policy)"``."""
        return f"{self.name} (linear policy)"

    @property
    def params(self) -> dict[str, Any]:
        """Decoding parameters and weight checksum (provenance)."""
        return {
            "name": self.name, "temperature": self.temperature, "greedy": self.greedy,
            "base_seed": self.base_seed, "weights_sha256": weights_digest(self.w),
            "feature_version": FEATURE_VERSION, "dim_log2": self.dim_log2, "admissible": self.admissible,
        }

    def __repr__(self) -> str:
        return (f"LearnedAlfworldPolicy(name={self.name!r}, temperature={self.temperature}, greedy={self.greedy}, "
                f"weights={weights_digest(self.w)[:12]})")

    def reset(self, task_id: str, seed: int, role: str = "reacher") -> None:
        """Start an episode: empty belief; random stream ``keyed_seed(base_seed, "episode",
        task_id, seed, role, name)``. Raises ``ValueError`` for an unknown role."""
        if role not in ROLES:
            raise ValueError(f"role={role!r}: expected one of {ROLES}")
        self.task_id, self.seed, self.role = str(task_id), int(seed), role
        self._rng = np.random.default_rng(keyed_seed(self.base_seed, "episode", str(task_id), int(seed), role, self.name))
        self.belief = Belief()
        self._listed = None
        self._started = False
        self.last_log = {}

    def reset_stream(self, ss: np.random.SeedSequence) -> None:
        """Start an episode with an explicit random stream (training rollouts)."""
        self._rng = np.random.default_rng(ss)
        self.belief = Belief()
        self._listed = None
        self._started = False
        self.last_log = {}

    def _fold(self, observation: str | Mapping[str, Any] | None) -> str:
        """Fold what is shown into the belief; returns the shown text.

        On the first call after :meth:`reset`, a mapping's ``history`` (the visible
        history ``(o_0, a_0, ..., o_t)`` of a handed-off clone) is what the agent is
        shown: every observation is folded in and every action counted as a command of
        this episode. Afterwards only ``goal`` + ``observation`` are read.
        """
        if self.admissible:
            listed = observation.get("admissible_commands") if isinstance(observation, Mapping) else None
            if listed is None:
                raise ValueError(f"checkpoint {self.name!r} acts on the admissible list (admissible=True), but the "
                                 "observation has no 'admissible_commands'; pass env.observe() or a mapping with it")
            self._listed = [str(c) for c in listed]
            if not self._listed:
                raise ValueError(f"checkpoint {self.name!r}: the shown admissible list is empty")
        hist = observation.get("history") if isinstance(observation, Mapping) else None
        if self.belief.steps == 0 and not self._started and hist is not None and len(hist) > 1:
            goal = observation.get("goal") or ""
            parts = [goal] if goal else []
            for i, item in enumerate(hist):
                if i % 2 == 0:
                    self.belief.update(f"{goal}\n{item}" if goal else str(item))
                else:
                    self.belief.record_command(str(item))
                parts.append(("> " if i % 2 else "") + str(item))
            self._started = True
            return "\n".join(parts)
        self._started = True
        text = shown_text(observation)
        self.belief.update(text)
        return text

    def observe_only(self, observation: str | Mapping[str, Any] | None) -> None:
        """Fold a shown text into the belief without acting (e.g. a replayed prefix)."""
        self.belief.update(shown_text(observation))

    def decide(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """Candidates, their feature (idx, owner) and scores at the current belief."""
        own = candidate_commands(self.belief)
        if self.admissible and self._listed is not None:
            cands = list(dict.fromkeys(self._listed))
            self.belief.shown_list = (frozenset(cands), frozenset(own))
        else:
            cands = own
            self.belief.shown_list = None
        idx, owner = featurize(self.belief, cands, self.dim_log2)
        return cands, idx, owner, scores_of(self.w, idx, owner, len(cands))

    def act(self, observation: str | Mapping[str, Any] | None) -> str:
        """Fold the shown text into the belief and return the next command.

        ``observation``: the text shown (str), or a mapping of which only ``goal`` and
        ``observation`` are read. Sets :attr:`last_log` (``shown``, ``candidates``,
        ``scores``, ``probs``, ``command``, ``index``). Raises ``RuntimeError`` before
        :meth:`reset`.
        """
        if self._rng is None:
            raise RuntimeError("call reset(task_id, seed, role) before act()")
        text = self._fold(observation)
        cands, idx, owner, s = self.decide()
        p = softmax(s, self.temperature)
        if self.greedy:
            k = int(np.argmax(s))
        else:
            k = int(self._rng.choice(len(cands), p=p))
        cmd = cands[k]
        self.belief.record_command(cmd)
        self.last_log = {
            "shown": text,
            "candidates": list(cands),
            "scores": [float(x) for x in s],
            "probs": [float(x) for x in p],
            "command": cmd,
            "index": k,
        }
        self._last_feat = (idx, owner, p, k)
        return cmd
