"""The learned ALFWorld policy's features and scores: hashed atoms of (goal, belief, candidate).

One job: ``phi(goal, belief, c)``, the hashed feature indices of a candidate command
(:func:`candidate_features`, :func:`featurize` for a whole candidate set, memoised), and
the linear scores and softmax over them (:func:`scores_of`, :func:`softmax`). The atoms
and why they are conjoined with goal tokens are described in
:mod:`agentstudies.agents.alfworld._learned`.
"""

from __future__ import annotations

import zlib
from typing import Sequence

import numpy as np

from agentstudies.agents.alfworld._belief import _TREAT_WORD, Belief, _cls

__all__ = ["candidate_features", "featurize", "scores_of", "softmax", "DIM_LOG2", "FEATURE_VERSION"]

#: log2 of the number of hashed feature slots.
DIM_LOG2 = 16
#: Version of the feature map (stored with the weights; a mismatch refuses to load).
FEATURE_VERSION = 3


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
