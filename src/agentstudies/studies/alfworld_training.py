"""Training the two ALFWorld checkpoints: SFT (behaviour cloning) and RL (SFT + REINFORCE).

The handoff paper crosses released SFT and RL checkpoints of one model (SkillRL 7B). This
module makes a small-scale analogue on the real ALFWorld engine: two checkpoints of one
:class:`agentstudies.agents.alfworld.LearnedAlfworldPolicy` (a linear softmax over hashed
features of goal, belief and candidate command, which acts only on the text it is
shown).

Training pool
    ``train`` problems are generated like the evaluation pools
    (:mod:`agentstudies.envs.alfworld.generate`) in the ALFRED *training* floor plans, with
    their own seed and split key, so no training problem equals a ``valid_seen`` or
    ``valid_unseen`` problem (checked by digest) and no training room is a
    ``valid_unseen`` room (as in the official ALFWorld release, ``valid_seen`` problems
    reuse training rooms). A problem is kept when the analytic expert's optimal plan at
    the start has 4--14 actions and wins when executed (no planner call).

Development split and admissible list
    The learning curves are evaluated on a separate development split (:func:`dev_pool`,
    split key ``"dev"``, training floor plans, seed ``dev_seed``), checked by digest to
    hold no training problem and no problem of any evaluation pool the handoff and
    recovery studies load (:func:`evaluation_digests`); nothing in training reads an
    evaluation pool. With ``admissible=True`` (the default, the handoff paper's setting)
    the policy's candidates in demonstrations, rollouts and evaluations are the engine's
    admissible list; ``admissible=False`` trains the no-list ablation (``*-nolist``).

SFT -- behaviour cloning (the objective)
    Demonstrations are trajectories of the analytic optimal expert
    (:class:`agentstudies.envs.alfworld.expert.Expert`, which reads the engine state: it
    knows where every object is). At each expert step the policy's own belief is built
    from the text shown so far and its candidates are generated; the loss is the mean
    negative log-likelihood of the expert's command among the candidates plus an L2
    penalty, ``L(w) = -1/N sum_i log softmax(w . phi_i)[a_i] + lambda/2 |w|^2``,
    minimised by full-batch Adam for ``sft_steps`` steps from ``w = 0``. Expert steps
    whose command is not among the candidates are counted (``uncovered``) and skipped.
    The expert sees what the policy cannot (hidden object locations), the classic source
    of the imitation gap; nothing else is engineered into the SFT checkpoint.

RL -- on-policy REINFORCE with a baseline
    From the SFT weights, each iteration samples ``rl_batch / rl_group`` training problems
    and rolls the policy out ``rl_group`` times on each (independent streams) at
    ``temperature`` for at most ``budget`` actions, and takes one Adam step along
    ``1/n sum_e (R_e - b_e) sum_t grad log pi(a_t | h_t)``, with reward
    ``R = won x gamma^T`` (the engine's flag, discounted by ``gamma = 0.95`` per action of
    the ``T`` the episode took, so a shorter win is worth more) and baseline ``b_e`` the mean reward of the other rollouts of the same
    problem (leave-one-out, as in RLOO / GRPO). ``grad log pi(a|h) = (phi(a) -
    E_pi[phi]) / temperature``.

Randomness: ``seed`` only, through :func:`agentstudies.parallel.keyed_seed`; rollouts run
through :func:`agentstudies.parallel.seeded_map` in fixed chunks, and gradients are
summed in episode order, so results do not depend on ``n_jobs``.

Paper reference values (Section 4.3, Table 2; *paper*, SkillRL 7B on official games):
:data:`PAPER_REFERENCE`.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.agents.alfworld import (
    DIM_LOG2,
    Belief,
    LearnedAlfworldPolicy,
    candidate_commands,
    featurize,
    load_weights,
    save_weights,
    shown_text,
    weights_digest,
)
from agentstudies.parallel import keyed_seed, seeded_map

__all__ = [
    "TrainingConfig",
    "TrainingRun",
    "Demonstrations",
    "PAPER_REFERENCE",
    "training_pool",
    "collect_demonstrations",
    "train_sft",
    "train_rl",
    "evaluate_checkpoint",
    "train_checkpoints",
    "bootstrap_difference",
    "eval_pools",
    "load_shipped",
    "sft_games",
    "verify_retrain",
    "plot_learning_curves",
    "plot_heldout_curves",
    "EVAL_COLUMNS",
    "NOLIST_SUFFIX",
    "setting_summary",
    "compare_curves",
    "dev_pool",
    "evaluation_digests",
    "training_findings",
]

#: Name suffix of the checkpoints trained without the admissible list (the ablation):
#: ``SFT-nolist`` / ``RL-nolist`` and their logs ``sft_curve-nolist.csv`` etc.
NOLIST_SUFFIX = "-nolist"

#: Paper values (handoff paper, Section 4.3 / Table 2 / Table 1, ALFWorld valid_unseen).
PAPER_REFERENCE = {
    "arrival_SFT": 0.133, "arrival_RL": 0.825,
    "endpoint_SFT_SFT": 0.058, "endpoint_RL_RL": 0.792,
}

EVAL_COLUMNS = [
    "phase", "step", "checkpoint", "split", "task_id", "task_type", "seed", "won", "arrived", "arrival_step",
    "n_actions", "n_invalid",
]


@dataclass(frozen=True)
class TrainingConfig:
    """Budgets of one training run (the chapter's parameters)."""

    seed: int = 0
    train_tasks_per_type: int = 20
    sft_tasks_per_type: int = 3
    demo_seeds: int = 1
    sft_steps: int = 150
    sft_lr: float = 0.05
    l2: float = 1e-4
    rl_iters: int = 30
    rl_batch: int = 32
    rl_group: int = 4
    rl_lr: float = 0.02
    rl_temperature: float = 1.0
    gamma: float = 0.95
    temperature: float = 0.4
    budget: int = 48
    eval_every_sft: int = 75
    eval_every_rl: int = 10
    eval_tasks_per_type: int = 2
    eval_seeds: tuple[int, ...] = (0,)
    D: int = 2
    train_seed: int = 4093  # seed of the generated training problems
    admissible: bool = True  # show the engine's admissible list (the paper's setting); False: the ablation
    dev_seed: int = 4099  # seed of the generated development problems (learning-curve evaluations)

    def as_dict(self) -> dict[str, Any]:
        """Plain dict (provenance)."""
        d = dict(self.__dict__)
        d["eval_seeds"] = list(self.eval_seeds)
        return d


# ------------------------------------------------------------------ worker env
_WORKER: dict[str, Any] = {}


def _env(budget: int):
    from agentstudies.envs.alfworld.env import AlfworldEnv

    env = _WORKER.get("env")
    if env is None:
        env = AlfworldEnv(budget=budget)
        _WORKER["env"] = env
    env.budget = budget
    return env


def _load(env, game: Mapping[str, Any]) -> None:
    if _WORKER.get("game_id") != (game.get("split"), game["task_id"], game.get("attempt")):
        env.load_game(game)
        _WORKER["game_id"] = (game.get("split"), game["task_id"], game.get("attempt"))


# ------------------------------------------------------------------ training pool
def _check_train_game(item, rng, budget: int):
    from agentstudies.envs.alfworld.expert import Expert
    from agentstudies.envs.alfworld.generate import generate_game

    tt, k, seed, split = item
    env = _env(budget)
    for attempt in range(25):
        game = generate_game(split, tt, k, seed, check=False, attempt=attempt)
        env.load_game(game)
        _WORKER["game_id"] = None
        env.reset(0)
        try:
            plan = Expert(env).plan()
        except RuntimeError:
            continue
        if not (4 <= len(plan) <= 14):
            continue
        for a in plan:
            env.step(a)
        if env.won:
            game["expert_plan"] = list(plan)
            return game
    raise RuntimeError(f"{split} pool: no usable problem for {tt} index {k}")


def evaluation_digests() -> dict[str, str]:
    """SHA-256 digest -> task id of every problem in the evaluation pools the handoff and
    recovery studies draw from: every pool of the embedded manifest
    (``data/alfworld/pools.json``: ``valid_seen`` / ``valid_unseen`` at every recorded
    size), taken from the manifest without regenerating."""
    from agentstudies.envs.alfworld.pools import load_manifest

    out: dict[str, str] = {}
    for entry in load_manifest().values():
        for t in entry["tasks"]:
            out[str(t["sha256"])] = str(t["task_id"])
    return out


def training_pool(tasks_per_type: int, seed: int = 4093, *, n_jobs: int = 1, budget: int = 48,
                  split: str = "train") -> list[dict[str, Any]]:
    """``tasks_per_type`` generated problems per task type of split ``"train"`` (training
    problems) or ``"dev"`` (development problems: learning-curve evaluations and any
    checkpoint selection; see :func:`dev_pool`).

    Deterministic in ``(tasks_per_type, seed, split)``; a smaller pool is a prefix of a
    larger one per type. Raises ``ValueError`` if a problem's digest equals one of the
    evaluation problems (:func:`evaluation_digests`), ``KeyError`` for another split.
    """
    from agentstudies.envs.alfworld.generate import TASK_TYPES, pool_digest

    if split not in ("train", "dev"):
        raise KeyError(f"split={split!r}: expected 'train' or 'dev' (evaluation pools come from pools.load_pool)")
    items = [(tt, k, int(seed), split) for tt in TASK_TYPES for k in range(int(tasks_per_type))]
    games = seeded_map(_check_train_game, items, seed=0, n_jobs=n_jobs, budget=budget)
    held = evaluation_digests()
    for tid, dig in pool_digest(games).items():
        if dig in held:
            raise ValueError(f"{split} problem {tid!r} equals evaluation problem {held[dig]!r} (sha256 {dig[:12]})")
    return games


def dev_pool(tasks_per_type: int, seed: int = 4099, *, train: Sequence[Mapping[str, Any]] = (), n_jobs: int = 1,
             budget: int = 48) -> list[dict[str, Any]]:
    """The development split: ``tasks_per_type`` generated problems per type (split key
    ``"dev"``, training floor plans), used for the learning-curve evaluations during
    training and never for the handoff / recovery evaluation pools.

    Raises ``ValueError`` if a development problem equals an evaluation problem or one of
    the training problems ``train`` (by digest)."""
    from agentstudies.envs.alfworld.generate import pool_digest

    games = training_pool(tasks_per_type, seed, n_jobs=n_jobs, budget=budget, split="dev")
    tr_dig = {d: t for t, d in pool_digest(list(train)).items()} if train else {}
    for tid, dig in pool_digest(games).items():
        if dig in tr_dig:
            raise ValueError(f"dev problem {tid!r} equals training problem {tr_dig[dig]!r} (sha256 {dig[:12]})")
    return games


# ------------------------------------------------------------------ demonstrations
@dataclass(frozen=True)
class Demonstrations:
    """Expert decisions as sparse features: for decision ``i`` the candidate rows
    ``cand_ptr[i]:cand_ptr[i+1]``; for candidate ``j`` the features
    ``idx[feat_ptr[j]:feat_ptr[j+1]]``; ``target[i]`` the expert's candidate (local index)."""

    idx: np.ndarray
    feat_ptr: np.ndarray
    cand_ptr: np.ndarray
    target: np.ndarray
    table: pd.DataFrame  # one row per demonstration trajectory
    examples: pd.DataFrame  # a few decisions as text (for the chapter)

    @property
    def n_decisions(self) -> int:
        """Number of expert decisions covered by the candidates."""
        return len(self.target)


def _demo_task(item, rng, budget: int, dim_log2: int, admissible: bool = False):
    from agentstudies.envs.alfworld.expert import Expert

    game, seed = item
    env = _env(budget)
    _load(env, game)
    env.reset(seed)
    ex = Expert(env)
    b = Belief()
    decisions = []
    uncovered = 0
    examples = []
    b.update(shown_text(env.observe()))
    while not env.done:
        a = ex.plan()[0]
        own = candidate_commands(b)
        if admissible:  # the policy's candidates are the shown admissible list (LearnedAlfworldPolicy)
            cands = list(dict.fromkeys(env.admissible))
            b.shown_list = (frozenset(cands), frozenset(own))
        else:
            cands = own
            b.shown_list = None
        if a in cands:
            idx, owner = featurize(b, cands, dim_log2)
            counts = np.bincount(owner, minlength=len(cands))
            decisions.append((idx, counts, cands.index(a)))
            if len(examples) < 3:
                examples.append((env.task_id, len(env.actions) + 1, shown_text(env.observe())[-160:], len(cands), a))
        else:
            uncovered += 1
        b.record_command(a)
        env.step(a)
        b.update(shown_text(env.observe()))
    row = (game.get("split", "train"), env.task_id, env.task_type, seed, len(env.actions), bool(env.won), uncovered)
    return decisions, row, examples


def collect_demonstrations(
    games: Sequence[Mapping[str, Any]], seeds: Sequence[int], *, n_jobs: int = 1, budget: int = 48,
    dim_log2: int = DIM_LOG2, admissible: bool = False,
) -> Demonstrations:
    """Expert demonstrations on ``games`` x ``seeds`` as sparse policy features; with
    ``admissible`` the candidates at each step are the engine's admissible list (the
    expert's command is always among them), else the policy's own candidates."""
    items = [(g, int(s)) for g in games for s in seeds]
    out = seeded_map(_demo_task, items, seed=0, n_jobs=n_jobs, budget=budget, dim_log2=dim_log2,
                     admissible=bool(admissible))
    idx_parts, fcounts, ccounts, target = [], [], [], []
    rows, ex = [], []
    for decisions, row, examples in out:
        rows.append(row)
        ex.extend(examples)
        for idx, counts, a in decisions:
            idx_parts.append(idx)
            fcounts.append(counts)
            ccounts.append(len(counts))
            target.append(a)
    feat_ptr = np.concatenate([[0], np.cumsum(np.concatenate(fcounts))]).astype(np.int64)
    cand_ptr = np.concatenate([[0], np.cumsum(ccounts)]).astype(np.int64)
    table = pd.DataFrame(rows, columns=["split", "task_id", "task_type", "seed", "n_actions", "won", "uncovered"])
    examples = pd.DataFrame(ex, columns=["task_id", "step", "shown (end)", "n_candidates", "expert command"])
    return Demonstrations(np.concatenate(idx_parts), feat_ptr, cand_ptr, np.asarray(target, dtype=np.int64), table,
                          examples)


class _Adam:
    def __init__(self, n: int, lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
        self.m = np.zeros(n)
        self.v = np.zeros(n)
        self.t = 0
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps

    def step(self, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        self.t += 1
        self.m = self.b1 * self.m + (1 - self.b1) * g
        self.v = self.b2 * self.v + (1 - self.b2) * g * g
        mh = self.m / (1 - self.b1 ** self.t)
        vh = self.v / (1 - self.b2 ** self.t)
        return w - self.lr * mh / (np.sqrt(vh) + self.eps)


def _bc_loss_grad(w: np.ndarray, d: Demonstrations, l2: float) -> tuple[float, np.ndarray, float]:
    n_c = len(d.feat_ptr) - 1
    owner = np.repeat(np.arange(n_c), np.diff(d.feat_ptr))
    s = np.bincount(owner, weights=w[d.idx], minlength=n_c)
    dec = np.repeat(np.arange(len(d.target)), np.diff(d.cand_ptr))
    mx = np.maximum.reduceat(s, d.cand_ptr[:-1])
    e = np.exp(s - mx[dec])
    z = np.add.reduceat(e, d.cand_ptr[:-1])
    p = e / z[dec]
    tgt = d.cand_ptr[:-1] + d.target
    nll = -(s[tgt] - mx - np.log(z))
    n = len(d.target)
    # d loss / d s_j = (p_j - 1[j = target]) / n
    gs = p.copy()
    gs[tgt] -= 1.0
    gs /= n
    g = np.bincount(d.idx, weights=gs[owner], minlength=len(w)) + l2 * w
    ge = np.add.reduceat((s >= s[tgt][dec]).astype(np.int64), d.cand_ptr[:-1])
    acc = float(np.mean(ge == 1))  # the expert's command strictly ranked first
    return float(nll.mean() + 0.5 * l2 * float(w @ w)), g, acc


def train_sft(
    demos: Demonstrations, steps: int, lr: float, l2: float, *, dim_log2: int = DIM_LOG2,
    callback=None, every: int = 0,
) -> tuple[np.ndarray, pd.DataFrame]:
    """Behaviour cloning by full-batch Adam from ``w = 0`` (module docstring).

    Returns ``(w, curve)`` with one curve row per step: ``step, loss, accuracy`` (expert
    command ranked first) and ``weights_sha256`` (bitwise identity of a retrain).
    ``callback(step, w)`` is called every ``every`` steps (learning-curve evaluations).
    """
    w = np.zeros(1 << dim_log2)
    opt = _Adam(len(w), lr)
    rows = []
    for t in range(1, int(steps) + 1):
        loss, g, acc = _bc_loss_grad(w, demos, l2)
        w = opt.step(w, g)
        rows.append((t, loss, acc, weights_digest(w)))
        if callback is not None and every and (t % every == 0 or t == steps):
            callback(t, w)
    return w, pd.DataFrame(rows, columns=["step", "loss", "accuracy", "weights_sha256"])


# ------------------------------------------------------------------ rollouts
def _rollout_chunk(chunk, rng, w: np.ndarray, temperature: float, budget: int, D: int, frontier: bool,
                   grad: bool, name: str, admissible: bool = False):
    """Roll the policy out on each (game, seed, SeedSequence | None, role) of ``chunk``."""
    from agentstudies.envs.alfworld.frontier import frontier_check

    env = _env(budget)
    out = []
    for game, seed, ss, role, meta in chunk:
        _load(env, game)
        env.reset(seed, budget)
        pol = LearnedAlfworldPolicy(w, name, temperature=temperature, admissible=admissible)
        if ss is None:
            pol.reset(env.task_id, seed, role)
        else:
            pol.reset_stream(ss)
        arrived_at = None
        memo: dict[int, bool] = {}
        if frontier:
            start = frontier_check(env, D)
            if start.on_frontier:
                raise ValueError(f"task {env.task_id!r}: the start state lies on F_{D}; a reacher could arrive "
                                 "without acting -- use problems with longer plans")
        g_idx, g_w = [], []
        while not env.done:
            a = pol.act(env.observe())
            if grad:
                idx, owner, p, k = pol._last_feat
                coef = -p[owner]
                coef[owner == k] += 1.0
                g_idx.append(idx)
                g_w.append(coef / temperature)
            env.step(a)
            if frontier and arrived_at is None and env.valid[-1] and not env.done:
                sid = env.state_id()
                hit = memo.get(sid)
                if hit is None:
                    hit = memo[sid] = frontier_check(env, D).on_frontier
                if hit:
                    arrived_at = len(env.actions)
        res = dict(meta, task_id=env.task_id, task_type=env.task_type, seed=seed, won=bool(env.won),
                   arrived=arrived_at is not None or (bool(env.won) and not frontier),
                   arrival_step=arrived_at, n_actions=len(env.actions), n_invalid=int(sum(not v for v in env.valid)))
        if frontier and arrived_at is None and env.won:  # pragma: no cover - a win passes through F_D
            res["arrived"] = True
        if grad:
            res["g_idx"] = np.concatenate(g_idx) if g_idx else np.zeros(0, np.int64)
            res["g_w"] = np.concatenate(g_w) if g_w else np.zeros(0)
        out.append(res)
    return out


def _chunks(items: list, n: int) -> list[list]:
    n = max(1, min(n, len(items)))
    size = -(-len(items) // n)
    return [items[i:i + size] for i in range(0, len(items), size)]


def _run_chunks(items, w, temperature, budget, D, frontier, grad, name, n_jobs, admissible=False):
    chunks = _chunks(items, max(1, n_jobs) * 2 if n_jobs != 1 else 1)
    res = seeded_map(_rollout_chunk, chunks, seed=0, n_jobs=n_jobs, w=w, temperature=temperature, budget=budget,
                     D=D, frontier=frontier, grad=grad, name=name, admissible=bool(admissible))
    return [r for c in res for r in c]


def evaluate_checkpoint(
    w: np.ndarray, name: str, games: Sequence[Mapping[str, Any]], seeds: Sequence[int], *, temperature: float = 0.4,
    budget: int = 48, D: int = 2, n_jobs: int = 1, phase: str = "final", step: int = 0, admissible: bool = False,
) -> pd.DataFrame:
    """Natural rollouts of checkpoint ``w`` on held-out ``games`` x ``seeds``.

    Each episode uses the handoff protocol's reacher stream (``reset(task_id, seed,
    "reacher")``) and runs to a win or ``budget`` actions; ``arrived`` is the first valid
    action after which the state lies on ``F_D`` (the start state is checked too and must
    not be). ``admissible``: the policy is shown the admissible list (must match how
    ``w`` was trained). Returns a frame with :data:`EVAL_COLUMNS`.
    """
    items = [(g, int(s), None, "reacher", {"split": g.get("split", "")}) for g in games for s in seeds]
    rows = _run_chunks(items, w, temperature, budget, D, True, False, name, n_jobs, admissible)
    df = pd.DataFrame(rows)
    df.insert(0, "phase", phase)
    df.insert(1, "step", int(step))
    df.insert(2, "checkpoint", name)
    df["arrival_step"] = df["arrival_step"].astype("Int64")
    return df[EVAL_COLUMNS]


def train_rl(
    w0: np.ndarray, games: Sequence[Mapping[str, Any]], cfg: TrainingConfig, *, n_jobs: int = 1, callback=None,
    iters: int | None = None, log=None,
) -> tuple[np.ndarray, pd.DataFrame]:
    """REINFORCE with a leave-one-out baseline from ``w0`` (module docstring).

    Returns ``(w, curve)``: per iteration ``iteration, train_success, mean_actions,
    invalid_share, weights_sha256``.
    """
    w = np.array(w0, dtype=np.float64)
    opt = _Adam(len(w), cfg.rl_lr)
    n_games = len(games)
    rows = []
    n_it = cfg.rl_iters if iters is None else int(iters)
    t_start = time.perf_counter()
    for it in range(1, n_it + 1):
        ss = keyed_seed(cfg.seed, "rl", "batch", it)
        k = max(1, cfg.rl_batch // cfg.rl_group)
        pick = np.random.default_rng(ss).choice(n_games, size=k, replace=n_games < k)
        items = [
            (games[int(gi)], 1000 + it, keyed_seed(cfg.seed, "rl", "episode", it, j, m), "train", {"group": j})
            for j, gi in enumerate(pick) for m in range(cfg.rl_group)
        ]
        res = _run_chunks(items, w, cfg.rl_temperature, cfg.budget, cfg.D, False, True, "train", n_jobs,
                          cfg.admissible)
        won = np.array([float(r["won"]) for r in res])
        R = won * cfg.gamma ** np.array([r["n_actions"] for r in res], dtype=float)
        n = len(R)
        grp = np.array([r["group"] for r in res])
        gsum = np.bincount(grp, weights=R)[grp]
        gn = np.bincount(grp)[grp]
        base = np.where(gn > 1, (gsum - R) / np.maximum(gn - 1, 1), (R.sum() - R) / max(n - 1, 1))
        g = np.zeros_like(w)
        for r, adv in zip(res, R - base):
            if adv != 0.0 and len(r["g_idx"]):
                g += np.bincount(r["g_idx"], weights=r["g_w"] * adv, minlength=len(w))
        g = -g / n + cfg.l2 * w  # ascent on J = descent on -J
        w = opt.step(w, g)
        rows.append((it, float(won.mean()), float(np.mean([r["n_actions"] for r in res])),
                     float(sum(r["n_invalid"] for r in res) / max(1, sum(r["n_actions"] for r in res))),
                     weights_digest(w)))
        if log is not None:
            log(f"  RL iteration {it}: batch success {won.mean():.3f} ({time.perf_counter() - t_start:.0f} s)")
        if callback is not None and cfg.eval_every_rl and (it % cfg.eval_every_rl == 0 or it == n_it):
            callback(it, w)
    return w, pd.DataFrame(rows, columns=["iteration", "train_success", "mean_actions", "invalid_share",
                                          "weights_sha256"])


# ------------------------------------------------------------------ whole run
def sft_games(games: Sequence[Mapping[str, Any]], per_type: int) -> list[Mapping[str, Any]]:
    """The first ``per_type`` training problems of each task type (the SFT data)."""
    return [g for g in games if int(str(g["task_id"]).rsplit("-", 1)[1]) < int(per_type)]


#: Relative agreement of a retrained step's loss with the logged one, where the weight
#: hashes differ: numpy's vectorised ``exp``/``log`` are chosen by CPU (AVX-512, AVX2,
#: scalar) and may differ in the last bit, so bitwise identity holds on the CPU kind that
#: trained the shipped weights and agreement to rounding error on any other.
RETRAIN_LOSS_RTOL = 1e-9


def verify_retrain(cfg: TrainingConfig | Mapping[str, Any], sft_curve: pd.DataFrame, *, steps: int = 10,
                   n_jobs: int = 1) -> pd.DataFrame:
    """Re-run the first ``steps`` behaviour-cloning steps from scratch (regenerating the
    SFT problems and demonstrations) and compare each step with the shipped log
    ``sft_curve``. ``cfg`` is the configuration the shipped weights were trained with
    (``load_shipped()["meta_sft"]["config"]``).

    Returns one row per step: ``step, shipped, retrained`` (weight SHA-256), ``matches``
    (bitwise identical weights), ``loss_shipped, loss_retrained`` and ``agrees``: the
    weights are bitwise identical, or the loss agrees to :data:`RETRAIN_LOSS_RTOL`
    relative (numpy's SIMD ``exp`` differs in the last bit between CPU kinds). Empty for
    ``steps=0``. A retrain on other problems or demonstrations moves the loss far beyond
    rounding error, so ``agrees`` still detects one."""
    if not isinstance(cfg, TrainingConfig):
        c = dict(cfg)
        c["eval_seeds"] = tuple(c.get("eval_seeds", (0,)))
        c.setdefault("admissible", False)  # configs logged before the field existed trained without the list
        cfg = TrainingConfig(**c)
    if steps <= 0:
        return pd.DataFrame(columns=["step", "shipped", "retrained", "matches", "loss_shipped", "loss_retrained",
                                     "agrees"])
    games = training_pool(cfg.sft_tasks_per_type, cfg.train_seed, n_jobs=n_jobs, budget=cfg.budget)
    demos = collect_demonstrations(games, list(range(cfg.demo_seeds)), n_jobs=n_jobs, budget=cfg.budget,
                                   admissible=cfg.admissible)
    _, curve = train_sft(demos, steps, cfg.sft_lr, cfg.l2)
    return compare_curves(curve, sft_curve)


def compare_curves(curve: pd.DataFrame, shipped: pd.DataFrame) -> pd.DataFrame:
    """Step-by-step comparison of a behaviour-cloning log ``curve`` (this run) with the
    shipped log ``shipped`` (both with ``step, loss, weights_sha256``): the columns of
    :func:`verify_retrain` (``matches`` bitwise, ``agrees`` bitwise or loss to
    :data:`RETRAIN_LOSS_RTOL` relative). A step missing from the shipped log disagrees."""
    cols = ["step", "shipped", "retrained", "matches", "loss_shipped", "loss_retrained", "agrees"]
    sft_curve = shipped
    log = sft_curve.set_index("step")
    out = curve[["step", "weights_sha256", "loss"]].rename(
        columns={"weights_sha256": "retrained", "loss": "loss_retrained"})
    out.insert(1, "shipped", [str(log["weights_sha256"].get(int(t), "")) for t in out["step"]])
    out["matches"] = out["shipped"] == out["retrained"]
    out["loss_shipped"] = [float(log["loss"].get(int(t), np.nan)) for t in out["step"]]
    close = np.isclose(out["loss_retrained"], out["loss_shipped"], rtol=RETRAIN_LOSS_RTOL, atol=0.0)
    out["agrees"] = out["matches"] | close
    return out[cols]


def plot_learning_curves(sft_curve: pd.DataFrame, rl_curve: pd.DataFrame, *, label: str = ""):
    """Figure: behaviour-cloning loss / top-1 agreement by step; RL batch success by iteration."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(8.5, 3.2))
    a.plot(sft_curve["step"], sft_curve["loss"], color="#4C72B0", label="NLL + L2")
    a.set_xlabel("SFT step (full-batch Adam)")
    a.set_ylabel("loss")
    a2 = a.twinx()
    a2.plot(sft_curve["step"], 100 * sft_curve["accuracy"], color="#DD8452", label="expert command ranked first (%)")
    a2.set_ylabel("ranked first (%)")
    a.set_title("SFT: behaviour cloning", fontsize=10)
    r = rl_curve["train_success"].rolling(5, min_periods=1).mean()
    b.plot(rl_curve["iteration"], 100 * rl_curve["train_success"], color="#bbbbbb", lw=1, label="batch")
    b.plot(rl_curve["iteration"], 100 * r, color="#DD8452", label="5-iteration mean")
    b.set_xlabel("RL iteration")
    b.set_ylabel("training success (%)")
    b.set_ylim(0, 100)
    b.legend(frameon=False, fontsize=8)
    b.set_title("RL: REINFORCE from the SFT weights", fontsize=10)
    if label:
        fig.suptitle(f"Learning curves ({label})", fontsize=10)
    fig.tight_layout()
    return fig


def plot_heldout_curves(evals: pd.DataFrame, *, label: str = ""):
    """Figure: held-out success and arrival by task type over training (SFT steps then
    RL iterations on one axis of training stages)."""
    import matplotlib.pyplot as plt

    e = evals.copy()
    stages = e[["phase", "step"]].drop_duplicates().reset_index(drop=True)
    stages["stage"] = [f"{p}\n{s}" for p, s in zip(stages["phase"], stages["step"])]
    e = e.merge(stages, on=["phase", "step"])
    order = list(stages["stage"])
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for ax, col, title in zip(axes, ("won", "arrived"), ("success", "arrival at F_2")):
        g = e.groupby(["task_type", "stage"])[col].mean().unstack("stage").reindex(columns=order)
        for tt, row in g.iterrows():
            ax.plot(range(len(order)), 100 * row.to_numpy(), marker="o", ms=3, lw=1, label=tt.replace("_", " "))
        tot = e.groupby("stage")[col].mean().reindex(order)
        ax.plot(range(len(order)), 100 * tot.to_numpy(), color="black", lw=2.2, label="all types")
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels(order, fontsize=7)
        ax.set_title(f"held-out {title}", fontsize=10)
        ax.set_ylim(0, 100)
    axes[0].set_ylabel("% of episodes")
    axes[1].legend(frameon=False, fontsize=7, loc="center left", bbox_to_anchor=(1, 0.5))
    if label:
        fig.suptitle(f"Held-out success and arrival over training ({label})", fontsize=10)
    fig.tight_layout()
    return fig

@dataclass(frozen=True)
class TrainingRun:
    """Result of :func:`train_checkpoints`: weights, curves, held-out evaluations, timing."""

    w_sft: np.ndarray
    w_rl: np.ndarray
    sft_curve: pd.DataFrame
    rl_curve: pd.DataFrame
    evals: pd.DataFrame
    demos: pd.DataFrame
    demo_examples: pd.DataFrame
    config: Mapping[str, Any]
    timing: Mapping[str, float] = field(default_factory=dict)
    n_decisions: int = 0

    def save(self, directory=None) -> None:
        """Write ``SFT``/``RL`` weights (with sha256 files) and ``training_log`` tables."""
        from agentstudies.agents.alfworld import checkpoint_dir

        d = directory or checkpoint_dir()
        meta = {"config": dict(self.config), "timing": dict(self.timing), "n_decisions": self.n_decisions}
        adm = bool(self.config.get("admissible", False))
        suffix = "" if adm else NOLIST_SUFFIX
        meta["admissible"] = adm
        save_weights(self.w_sft, "SFT" + suffix, d, meta={**meta, "objective": "behaviour cloning"})
        save_weights(self.w_rl, "RL" + suffix, d,
                     meta={**meta, "objective": f"SFT + REINFORCE (reward = won x {self.config.get('gamma', 0.95)}^T)"})
        from pathlib import Path

        d = Path(d)
        from agentstudies._data import record

        tables = {"sft_curve": self.sft_curve, "rl_curve": self.rl_curve, "training_evals": self.evals,
                  "demonstrations": self.demos}
        for name, table in tables.items():  # a no-list run never touches the list checkpoints' logs
            table.to_csv(d / f"{name}{suffix}.csv", index=False)
            record(d / f"{name}{suffix}.csv")  # data/SHA256SUMS follows a retrain into data/ (else a no-op)


def eval_pools(tasks_per_type: int) -> list[dict[str, Any]]:
    """Held-out pools ``valid_seen`` + ``valid_unseen`` (embedded manifest), per type."""
    from agentstudies.envs.alfworld.pools import load_pool

    return load_pool("valid_seen", tasks_per_type) + load_pool("valid_unseen", tasks_per_type)


def train_checkpoints(cfg: TrainingConfig, *, n_jobs: int = 1, evaluate: bool = True, log=print) -> TrainingRun:
    """Train SFT then RL from scratch with budgets ``cfg``; learning-curve evaluations on
    the development split (:func:`dev_pool`, ``eval_tasks_per_type`` per type; never an
    evaluation problem) every ``eval_every_*`` steps (``evaluate=False`` skips them)."""
    t0 = time.perf_counter()
    games = training_pool(cfg.train_tasks_per_type, cfg.train_seed, n_jobs=n_jobs, budget=cfg.budget)
    t_pool = time.perf_counter() - t0
    demos = collect_demonstrations(sft_games(games, cfg.sft_tasks_per_type), list(range(cfg.demo_seeds)),
                                   n_jobs=n_jobs, budget=cfg.budget, admissible=cfg.admissible)
    t_demo = time.perf_counter() - t0 - t_pool
    held = dev_pool(cfg.eval_tasks_per_type, cfg.dev_seed, train=games, n_jobs=n_jobs, budget=cfg.budget) \
        if evaluate else []
    evals: list[pd.DataFrame] = []

    def ev(phase):
        def cb(step, w):
            if evaluate:
                e = evaluate_checkpoint(w, phase, held, cfg.eval_seeds, temperature=cfg.temperature,
                                        budget=cfg.budget, D=cfg.D, n_jobs=n_jobs, phase=phase, step=step,
                                        admissible=cfg.admissible)
                evals.append(e)
                log(f"  eval {phase} step {step}: success {e['won'].mean():.3f} arrival {e['arrived'].mean():.3f}")
        return cb

    w_sft, sft_curve = train_sft(demos, cfg.sft_steps, cfg.sft_lr, cfg.l2, callback=ev("SFT"), every=cfg.eval_every_sft)
    t_sft = time.perf_counter() - t0 - t_pool - t_demo
    log(f"SFT done: loss {sft_curve['loss'].iloc[-1]:.3f} acc {sft_curve['accuracy'].iloc[-1]:.3f}")
    w_rl, rl_curve = train_rl(w_sft, games, cfg, n_jobs=n_jobs, callback=ev("RL"), log=log)
    t_rl = time.perf_counter() - t0 - t_pool - t_demo - t_sft
    timing = {"pool_seconds": t_pool, "demo_seconds": t_demo, "sft_seconds": t_sft, "rl_seconds": t_rl,
              "total_seconds": time.perf_counter() - t0}
    ev_df = pd.concat(evals, ignore_index=True) if evals else pd.DataFrame(columns=EVAL_COLUMNS)
    return TrainingRun(w_sft, w_rl, sft_curve, rl_curve, ev_df, demos.table, demos.examples, cfg.as_dict(), timing,
                       demos.n_decisions)


# ------------------------------------------------------------------ inference
def setting_summary(ev: pd.DataFrame, *, level: float = 0.95, n_draws: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Success, arrival and inadmissible commands per episode by ``setting`` (with / without
    the admissible list), checkpoint and split, with intervals (issue 26 item 1 ablation).

    ``ev``: rows of :func:`evaluate_checkpoint` plus a ``setting`` column. Success and
    arrival: share of episodes with the exact Clopper-Pearson ``level`` interval
    (:func:`agentstudies.findings.binomial_interval`); inadmissible commands per episode:
    mean with a percentile bootstrap over tasks (``n_draws`` draws). Returns one row per
    (setting, checkpoint, split): ``n_episodes``, ``success``, ``success_lo``,
    ``success_hi``, ``arrival``, ``arrival_lo``, ``arrival_hi`` (shares),
    ``inadmissible``, ``inadmissible_lo``, ``inadmissible_hi`` (commands per episode).
    Raises ``KeyError`` naming a missing column.
    """
    from agentstudies.findings import binomial_interval

    for c in ("setting", "checkpoint", "split", "task_id", "won", "arrived", "n_invalid"):
        if c not in ev.columns:
            raise KeyError(f"setting_summary: missing column {c!r}")
    rows = []
    a = (1 - level) / 2
    for (st, ck, sp), g in ev.groupby(["setting", "checkpoint", "split"], sort=False):
        n = len(g)
        s, slo, shi = binomial_interval(int(g["won"].astype(bool).sum()), n, level=level)
        r, rlo, rhi = binomial_interval(int(g["arrived"].astype(bool).sum()), n, level=level)
        per = g.groupby("task_id")["n_invalid"].mean().to_numpy(dtype=float)
        rng = np.random.default_rng(keyed_seed(seed, "inadmissible", st, ck, sp))
        draws = per[rng.integers(0, len(per), size=(n_draws, len(per)))].mean(axis=1)
        rows.append(dict(setting=st, checkpoint=ck, split=sp, n_episodes=n, success=s, success_lo=slo, success_hi=shi,
                         arrival=r, arrival_lo=rlo, arrival_hi=rhi, inadmissible=float(g["n_invalid"].mean()),
                         inadmissible_lo=float(np.quantile(draws, a)), inadmissible_hi=float(np.quantile(draws, 1 - a))))
    return pd.DataFrame(rows)


def bootstrap_difference(
    df: pd.DataFrame, column: str, *, base: str = "SFT", treated: str = "RL", n_draws: int = 2000, seed: int = 0,
    level: float = 0.95,
) -> dict[str, float]:
    """Treated minus base mean of ``column`` with a task-stratified paired bootstrap.

    ``df`` has one row per (checkpoint, split, task_id, seed) with ``task_type``. Tasks
    are resampled within task type (all seeds and both checkpoints of a task kept
    together). Returns ``estimate, ci_low, ci_high, n_tasks``. Raises ``KeyError`` for a
    missing column, ``ValueError`` when a checkpoint is missing.
    """
    for c in ("checkpoint", "split", "task_id", "task_type", column):
        if c not in df.columns:
            raise KeyError(f"bootstrap_difference: missing column {c!r}")
    per = (df.assign(v=df[column].astype(float))
           .pivot_table(index=["split", "task_id", "task_type"], columns="checkpoint", values="v", aggfunc="mean"))
    for c in (base, treated):
        if c not in per.columns:
            raise ValueError(f"bootstrap_difference: no rows of checkpoint {c!r}")
    diff = (per[treated] - per[base]).reset_index()
    est = float(diff[0].mean())
    rng = np.random.default_rng(keyed_seed(seed, "bootstrap", column))
    groups = [g[0].to_numpy() for _, g in diff.groupby("task_type")]
    n = sum(len(g) for g in groups)
    draws = np.zeros(n_draws)
    for g in groups:
        k = len(g)
        pick = rng.integers(0, k, size=(n_draws, k))
        draws += g[pick].sum(axis=1)
    draws /= n
    a = (1 - level) / 2
    return {"estimate": est, "ci_low": float(np.quantile(draws, a)), "ci_high": float(np.quantile(draws, 1 - a)),
            "n_tasks": int(n)}


def config_digest(cfg: TrainingConfig) -> str:
    """Short digest of a config (which shipped log a retrain is compared with)."""
    return hashlib.sha256(json.dumps(cfg.as_dict(), sort_keys=True).encode()).hexdigest()[:16]


def load_shipped(directory=None, *, admissible: bool = True) -> dict[str, Any]:
    """Shipped weights (checksums verified) and training logs: the checkpoints shown the
    admissible list (``SFT`` / ``RL``) or, with ``admissible=False``, the no-list
    ablation (``SFT-nolist`` / ``RL-nolist``, logs ``*-nolist.csv``)."""
    import io
    from pathlib import Path

    from agentstudies._data import read_bytes
    from agentstudies.agents.alfworld import checkpoint_dir

    d = Path(directory or checkpoint_dir())
    suffix = "" if admissible else NOLIST_SUFFIX
    w_sft, m_sft = load_weights("SFT" + suffix, d)
    w_rl, m_rl = load_weights("RL" + suffix, d)
    out = {"w_sft": w_sft, "w_rl": w_rl, "meta_sft": m_sft, "meta_rl": m_rl}
    for name in ("sft_curve", "rl_curve", "training_evals", "demonstrations"):
        p = d / f"{name}{suffix}.csv"  # checked against data/SHA256SUMS (names the file on a mismatch)
        out[name] = pd.read_csv(io.BytesIO(read_bytes(p))) if p.is_file() else None
    return out


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - maintenance script
    """Train both checkpoints from scratch and write them (with logs) to
    ``data/alfworld/checkpoints``: ``python -m agentstudies.studies.alfworld_training``."""
    import argparse

    ap = argparse.ArgumentParser(description="Train the SFT and RL ALFWorld checkpoints")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-eval", action="store_true")
    ap.add_argument("--no-list", action="store_true", help="train without the admissible list (the ablation)")
    for f in ("seed", "train_tasks_per_type", "sft_tasks_per_type", "sft_steps", "rl_iters", "rl_batch",
              "eval_every_sft", "eval_every_rl", "eval_tasks_per_type"):
        ap.add_argument("--" + f.replace("_", "-"), type=int, default=None)
    for f in ("sft_lr", "rl_lr", "l2", "temperature"):
        ap.add_argument("--" + f.replace("_", "-"), type=float, default=None)
    args = ap.parse_args(argv)
    kw = {k: v for k, v in vars(args).items() if k in TrainingConfig.__dataclass_fields__ and v is not None}
    kw["admissible"] = not args.no_list
    cfg = TrainingConfig(**kw)
    run = train_checkpoints(cfg, n_jobs=args.n_jobs, evaluate=not args.no_eval,
                            log=lambda m: print(m, flush=True))
    run.save(args.out)
    print(json.dumps(dict(run.timing), indent=1), flush=True)


if __name__ == "__main__":  # pragma: no cover
    main()


def training_findings(ev: pd.DataFrame, *, n_draws: int = 2000, seed: int = 0, level: float = 0.95,
                      informative_range: tuple[float, float] = (0.05, 0.95)):
    """The training chapter's findings (issue 25 item 1) from the held-out episodes.

    - *RL arrives at the frontier more often than SFT*: the task-stratified paired
      bootstrap interval (:func:`bootstrap_difference`, column ``arrived``) of RL − SFT
      lies above 0 (paper: arrival 13.3 % vs 82.5 %, :data:`PAPER_REFERENCE`);
    - *RL succeeds more often than SFT at the endpoint*: the same on ``won`` (paper: 5.8 %
      vs 79.2 %);
    - *both checkpoints are informative*: each checkpoint's exact (Clopper-Pearson)
      interval of held-out success lies inside ``informative_range`` (the book's
      criterion for checkpoints the handoff study can use; reappears when both do,
      contradicted when an interval lies wholly outside, else inconclusive).

    Parameters
    ----------
    ev : held-out episodes (:func:`evaluate_checkpoint` rows of both checkpoints).

    Returns
    -------
    :class:`agentstudies.findings.Findings` (estimates in percentage points / shares).

    Raises
    ------
    KeyError / ValueError
        As :func:`bootstrap_difference` (a missing column or checkpoint).
    """
    from agentstudies.findings import Finding, Findings, binomial_interval, interval_finding

    ref = PAPER_REFERENCE
    rows = []
    for col, name, paper in (
        ("arrived", "RL arrives at the frontier more often than SFT",
         f"arrival SFT {100 * ref['arrival_SFT']:.1f}% vs RL {100 * ref['arrival_RL']:.1f}% (handoff paper, valid_unseen)"),
        ("won", "RL succeeds more often than SFT at the endpoint",
         f"success SFT {100 * ref['endpoint_SFT_SFT']:.1f}% vs RL {100 * ref['endpoint_RL_RL']:.1f}% "
         "(handoff paper, Table 1)"),
    ):
        d = bootstrap_difference(ev, col, n_draws=n_draws, seed=seed, level=level)
        rows.append(interval_finding(name, paper, 100 * d["estimate"], 100 * d["ci_low"], 100 * d["ci_high"],
                                     d["n_tasks"], paper_side="above", level=level,
                                     quantity=f"RL − SFT {col} (pp, task-stratified paired bootstrap)", fmt="+.1f"))
    lo_r, hi_r = informative_range
    verdicts, parts = [], []
    for ck in ("SFT", "RL"):
        w = ev.loc[ev["checkpoint"] == ck, "won"].astype(bool)
        if not len(w):
            raise ValueError(f"training_findings: no held-out episodes of checkpoint {ck!r}")
        rate, lo, hi = binomial_interval(int(w.sum()), len(w), level=level)
        inside = lo > lo_r and hi < hi_r
        outside = hi < lo_r or lo > hi_r
        verdicts.append("reappears" if inside else ("contradicted" if outside else "inconclusive"))
        parts.append(f"{ck} {rate:.3f} [{lo:.3f}, {hi:.3f}]")
    verdict = ("contradicted" if "contradicted" in verdicts else
               "reappears" if all(v == "reappears" for v in verdicts) else "inconclusive")
    rows.append(Finding("both checkpoints are informative", "endpoint success neither near 0 nor near 1 "
                        "(the paper's checkpoints: 5.8% and 79.2%)", float("nan"), float("nan"), float("nan"),
                        float(len(ev)), verdict,
                        f"{100 * level:g}% exact CI of each checkpoint's held-out success inside "
                        f"({lo_r:g}, {hi_r:g}); ours: {'; '.join(parts)}",
                        why="contradicted when one interval lies wholly outside the range", level=level))
    return Findings.build(rows, seed=seed, title="alfworld_training findings", n_draws=n_draws, level=level)
