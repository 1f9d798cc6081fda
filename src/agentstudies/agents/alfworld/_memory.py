"""An ALFWorld policy that remembers its transcript: the learned linear policy plus history features.

:class:`MemoryAlfworldPolicy` is :class:`~agentstudies.agents.alfworld._learned.LearnedAlfworldPolicy`
(same belief, candidates, decoding and random streams) whose score of a candidate adds
hashed features of the **transcript so far** (:func:`memory_atoms`), so that what it was
shown earlier keeps acting on later choices -- as for an LLM agent whose context holds the
whole transcript (CIR paper, "Agent"): a stale observation persists in the features until
it ages out, and an extra ``look`` turn (a refresh) changes them at any delay.

What the agent sees, exactly
    Per decision: the goal sentence, the latest shown observation text and (checkpoints
    trained with it) the admissible list shown with it -- as the learned policy -- plus
    its own transcript: every observation text it was shown since :meth:`reset`
    (including a handed-off clone's visible history, a stale or missing text, a
    refresh's ``look`` reply and a harness note) and every command it issued, in order.
    Never the expert plan, a gold answer, the engine's state or a sampled success.

Transcript features (:func:`memory_atoms`; each conjoined with the candidate's verb ``v``)
    * ``a1``, ``a2``: the verbs of its last two commands; ``same_a1..3``: the candidate
      equals its command 1, 2 or 3 turns back;
    * ``o0``, ``o1``: the kind of the last two shown observations (the first three words
      of their last line, e.g. ``you arrive at``, ``you are facing`` -- a ``look`` reply --,
      ``nothing happens.``);
    * per entity the candidate names (``apple 1``; position 0 / 1 in the command), a
      recency-weighted memory of where it was mentioned: the age (in shown observations,
      bucketed 0 / 1 / 2-3 / 4-7 / none within the last 8) of the newest observation that
      mentions it, and the number of those 8 that do (0 / 1 / 2+), each also conjoined
      with whether its class is a goal word.

The weights are hashed into the same ``2**dim_log2`` slots as the belief features
(:mod:`._features`, CRC-32 of ``"m|" + atom``). Weights ship as
``data/alfworld/checkpoints/<name>.npy`` like the other checkpoints, with
``"memory": true`` in their meta; :meth:`MemoryAlfworldPolicy.load` refuses a checkpoint
without it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from agentstudies.agents.alfworld._belief import shown_text
from agentstudies.agents.alfworld._features import _hc, scores_of
from agentstudies.agents.alfworld._learned import _BY_META, LearnedAlfworldPolicy
from agentstudies.agents.alfworld._weights import load_weights

__all__ = ["MemoryAlfworldPolicy", "memory_atoms", "memory_features", "MEMORY_WINDOW"]

#: How many of the latest shown observations the entity memory looks back over.
MEMORY_WINDOW = 8
_ENTITY = re.compile(r"\b([a-z]+) (\d+)\b")


def _age_bucket(age: int | None) -> str:
    if age is None:
        return "none"
    return "0" if age == 0 else "1" if age == 1 else "2-3" if age <= 3 else "4-7"


def _kind(text: str) -> str:
    """First three words of the last non-empty line (a refresh appends its reply as a line)."""
    lines = [ln for ln in text.strip().lower().splitlines() if ln.strip()]
    return " ".join(lines[-1].split()[:3]) if lines else "empty"


def memory_atoms(transcript: Sequence[tuple[str, str]], c: str, goal_tokens: Sequence[str] = ()) -> list[str]:
    """The transcript atoms of candidate ``c`` (module docstring), as strings.

    ``transcript``: ``("obs", text)`` / ``("act", command)`` pairs, oldest first (what
    :class:`MemoryAlfworldPolicy` keeps). ``goal_tokens``: the goal's words (class names).
    """
    v = c.split(" ", 1)[0]
    obs = [t.lower() for k, t in reversed(transcript) if k == "obs"][:MEMORY_WINDOW]
    acts = [t for k, t in reversed(transcript) if k == "act"]
    out = [f"v={v}|a1={acts[0].split(' ', 1)[0] if acts else 'none'}",
           f"v={v}|a2={acts[1].split(' ', 1)[0] if len(acts) > 1 else 'none'}",
           f"v={v}|o0={_kind(obs[0]) if obs else 'none'}",
           f"v={v}|o1={_kind(obs[1]) if len(obs) > 1 else 'none'}"]
    out += [f"v={v}|same_a{k + 1}" for k in range(3) if k < len(acts) and acts[k] == c]
    g = set(goal_tokens)
    for pos, m in enumerate(_ENTITY.finditer(c)):
        ent = m.group(0)
        pat = re.compile(rf"\b{re.escape(ent)}\b")
        hits = [i for i, t in enumerate(obs) if pat.search(t)]
        age = _age_bucket(hits[0] if hits else None)
        n = "0" if not hits else "1" if len(hits) == 1 else "2+"
        goal = int(m.group(1) in g)
        out += [f"v={v}|pos={pos}|age={age}", f"v={v}|pos={pos}|goal={goal}|age={age}",
                f"v={v}|pos={pos}|mentions={n}", f"v={v}|pos={pos}|goal={goal}|mentions={n}"]
    return out


def memory_features(transcript: Sequence[tuple[str, str]], cands: Sequence[str], goal_tokens: Sequence[str],
                    dim_log2: int) -> tuple[np.ndarray, np.ndarray]:
    """Hashed transcript features of every candidate: ``(idx, owner)`` as
    :func:`agentstudies.agents.alfworld.featurize` (int64 index into ``2**dim_log2``
    slots; ``owner`` the candidate number)."""
    mask = (1 << int(dim_log2)) - 1
    parts = [np.array([_hc("m|" + a, mask) for a in memory_atoms(transcript, c, goal_tokens)], dtype=np.int64)
             for c in cands]
    owner = np.repeat(np.arange(len(parts)), [len(p) for p in parts])
    idx = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return idx, owner


class MemoryAlfworldPolicy(LearnedAlfworldPolicy):
    """The learned linear policy with transcript features (module docstring).

    Same parameters as :class:`LearnedAlfworldPolicy`; :attr:`transcript` holds
    ``("obs", text)`` / ``("act", command)`` pairs since :meth:`reset`.
    """

    def reset(self, task_id: str, seed: int, role: str = "reacher") -> None:
        """As :meth:`LearnedAlfworldPolicy.reset`; empties the transcript."""
        super().reset(task_id, seed, role)
        self.transcript: list[tuple[str, str]] = []

    def reset_stream(self, ss: np.random.SeedSequence) -> None:
        """As :meth:`LearnedAlfworldPolicy.reset_stream`; empties the transcript."""
        super().reset_stream(ss)
        self.transcript = []

    def _remember(self, observation: str | Mapping[str, Any] | None) -> None:
        if not hasattr(self, "transcript"):
            self.transcript = []
        hist = observation.get("history") if isinstance(observation, Mapping) else None
        if not self.transcript and hist is not None and len(hist) > 1:
            self.transcript.extend(("act" if i % 2 else "obs", str(x)) for i, x in enumerate(hist))
            return
        text = observation.get("observation", "") if isinstance(observation, Mapping) else shown_text(observation)
        self.transcript.append(("obs", str(text or "")))

    def _fold(self, observation: str | Mapping[str, Any] | None) -> str:
        self._remember(observation)
        return super()._fold(observation)

    def observe_only(self, observation: str | Mapping[str, Any] | None) -> None:
        """As :meth:`LearnedAlfworldPolicy.observe_only`; the text joins the transcript."""
        self._remember(observation)
        super().observe_only(observation)

    def decide(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """Candidates, features (belief + transcript; ``idx`` grouped by candidate, ``owner``
        non-decreasing, as :func:`featurize`) and scores at the current state."""
        cands, idx, owner, _ = super().decide()
        midx, mown = memory_features(getattr(self, "transcript", []), cands, self.belief.goal_tokens, self.dim_log2)
        owner = np.concatenate([owner, mown])
        order = np.argsort(owner, kind="stable")  # grouped by candidate, as featurize's layout
        idx, owner = np.concatenate([idx, midx])[order], owner[order]
        return cands, idx, owner, scores_of(self.w, idx, owner, len(cands))

    def act(self, observation: str | Mapping[str, Any] | None) -> str:
        """As :meth:`LearnedAlfworldPolicy.act`; the command joins the transcript."""
        cmd = super().act(observation)
        self.transcript.append(("act", cmd))
        return cmd

    @property
    def label(self) -> str:
        """Display name, e.g. ``"BC-memory (linear policy with transcript memory)"``."""
        return f"{self.name} (linear policy with transcript memory)"

    @property
    def params(self) -> dict[str, Any]:
        """As :attr:`LearnedAlfworldPolicy.params` plus ``memory_window``."""
        return {**super().params, "memory": True, "memory_window": MEMORY_WINDOW}

    @classmethod
    def load(cls, name: str, *, temperature: float = 0.4, greedy: bool = False, base_seed: int = 2029,
             directory: str | Path | None = None) -> "MemoryAlfworldPolicy":
        """A shipped memory checkpoint, checksum verified. Raises ``ValueError`` if its
        meta lacks ``"memory": true`` (a checkpoint trained without transcript features),
        ``FileNotFoundError`` / ``ValueError`` as :func:`load_weights`."""
        w, meta = load_weights(name, directory)
        if not meta.get("memory", False):
            raise ValueError(f"checkpoint {name!r} was not trained with transcript features (meta 'memory' is not "
                             "true); load it with LearnedAlfworldPolicy.load")
        return cls(w, name, temperature=temperature, greedy=greedy, base_seed=base_seed, meta=meta,
                   admissible=bool(meta.get("admissible", False)))


_BY_META["memory"] = MemoryAlfworldPolicy  # LearnedAlfworldPolicy.load gives this class for a memory checkpoint
