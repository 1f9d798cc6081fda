"""A small learned ALFWorld policy that acts only on what it is shown.

:class:`LearnedAlfworldPolicy` is a **linear softmax scorer over hashed features** of
(goal text, a belief built from the observations the policy was shown, candidate
command). It is the policy behind the two trained checkpoints of the chapter
``alfworld_training`` (*SFT*: behaviour cloning; *RL*: SFT + on-policy REINFORCE), which
the handoff and recovery studies cross as reacher and solver.

This module holds the policy (decoding, the episode's random stream, what it reads);
its parts are one module each: the belief and the candidate commands
(:mod:`._belief`), the hashed features and scores (:mod:`._features`), the weights on
disk (:mod:`._weights`); every name is re-exported here.

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

from typing import Any, Mapping
from pathlib import Path

import numpy as np

from agentstudies.agents.alfworld._belief import (  # noqa: F401 - re-exported
    NOTHING,
    Belief,
    candidate_commands,
    shown_text,
)
from agentstudies.agents.alfworld._features import (  # noqa: F401 - re-exported (tests read the memos)
    _FEATURE_CACHE,
    _READS_CACHE,
    DIM_LOG2,
    FEATURE_VERSION,
    _atoms,
    _context,
    _hashed_features,
    _reads,
    candidate_features,
    featurize,
    scores_of,
    softmax,
)
from agentstudies.agents.alfworld._weights import (  # noqa: F401 - re-exported
    checkpoint_dir,
    hand_set_weights,
    load_weights,
    save_weights,
    sha256_of,
    weights_digest,
)
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

#: Policy classes by the meta flag of the checkpoints they load (``"memory"``:
#: :class:`~agentstudies.agents.alfworld.MemoryAlfworldPolicy`, registered by its module).
_BY_META: dict[str, type] = {}

#: Roles a policy plays in the handoff protocol.
ROLES = ("reacher", "solver", "train", "eval")


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
        """The shipped checkpoint ``name`` (``"SFT"``, ``"RL"``, ``"SFT-equal"``, ``"BC-memory"``), checksum verified.

        ``name="hand"`` gives the untrained hand-set weights (:func:`hand_set_weights`).
        Whether the policy is shown the admissible list is read from the checkpoint's
        meta (``admissible``; absent = ``False``, the checkpoints trained without it). A
        checkpoint trained with transcript features (meta ``"memory": true``, e.g.
        ``"BC-memory"``) loads as :class:`~agentstudies.agents.alfworld.MemoryAlfworldPolicy`.
        Raises ``FileNotFoundError`` / ``ValueError`` as :func:`load_weights`.
        """
        if name == "hand":
            return cls(hand_set_weights(), "hand", temperature=temperature, greedy=greedy, base_seed=base_seed,
                       meta={"source": "hand-set"})
        w, meta = load_weights(name, directory)
        if meta.get("memory", False) and cls is LearnedAlfworldPolicy:
            if "memory" not in _BY_META:
                raise ValueError(f"checkpoint {name!r} needs the memory policy: import agentstudies.agents.alfworld")
            return _BY_META["memory"].load(name, temperature=temperature, greedy=greedy, base_seed=base_seed,
                                           directory=directory)
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
