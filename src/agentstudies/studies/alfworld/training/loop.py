"""Training the two ALFWorld checkpoints: SFT (behaviour cloning) and RL (SFT + REINFORCE).

The handoff paper crosses released SFT and RL checkpoints of one model (SkillRL 7B). This
module makes a small-scale analogue on the real ALFWorld engine: two checkpoints of one
:class:`agentstudies.agents.alfworld.LearnedAlfworldPolicy` (a linear softmax over hashed
features of goal, belief and candidate command, which acts only on the text it is
shown). The problems come from :mod:`agentstudies.studies.alfworld.training.pools`.

Admissible list
    With ``admissible=True`` (the default, the handoff paper's setting) the policy's
    candidates in demonstrations, rollouts and evaluations are the engine's admissible
    list; ``admissible=False`` trains the no-list ablation (``*-nolist``).

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
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from agentstudies.agents.alfworld import (
    DIM_LOG2,
    Belief,
    LearnedAlfworldPolicy,
    MemoryAlfworldPolicy,
    candidate_commands,
    featurize,
    save_weights,
    shown_text,
    weights_digest,
)
from agentstudies.parallel import keyed_seed, seeded_map
from agentstudies.studies.alfworld.training.pools import _env, _load, dev_pool, sft_games, training_pool

__all__ = ["TrainingConfig", "TrainingRun", "Demonstrations", "EVAL_COLUMNS", "NOLIST_SUFFIX",
           "collect_demonstrations", "train_sft", "train_rl", "evaluate_checkpoint", "evaluate_checkpoints",
           "train_checkpoints"]

#: Name suffix of the checkpoints trained without the admissible list (the ablation):
#: ``SFT-nolist`` / ``RL-nolist`` and their logs ``sft_curve-nolist.csv`` etc.
NOLIST_SUFFIX = "-nolist"

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

    @classmethod
    def pack(cls, decisions: Sequence[tuple[np.ndarray, np.ndarray, int]], table: pd.DataFrame | None = None,
             examples: pd.DataFrame | None = None) -> "Demonstrations":
        """The sparse layout of ``decisions``: ``(idx, counts, target)`` per decision, with
        ``idx`` the int64 feature indices of its candidates in order, ``counts[j]`` how many
        belong to candidate ``j`` and ``target`` the labelled candidate's local index."""
        feat_ptr = np.concatenate([[0], np.cumsum(np.concatenate([d[1] for d in decisions]))]).astype(np.int64)
        cand_ptr = np.concatenate([[0], np.cumsum([len(d[1]) for d in decisions])]).astype(np.int64)
        return cls(np.concatenate([d[0] for d in decisions]), feat_ptr, cand_ptr,
                   np.asarray([d[2] for d in decisions], dtype=np.int64),
                   pd.DataFrame() if table is None else table, pd.DataFrame() if examples is None else examples)

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
    table = pd.DataFrame([row for _, row, _ in out],
                         columns=["split", "task_id", "task_type", "seed", "n_actions", "won", "uncovered"])
    examples = pd.DataFrame([e for _, _, ex in out for e in ex],
                            columns=["task_id", "step", "shown (end)", "n_candidates", "expert command"])
    return Demonstrations.pack([d for decisions, _, _ in out for d in decisions], table, examples)


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
    env = _env(budget)
    return [_episode(env, game, seed, ss, role, meta, w, name, temperature, budget, D, frontier, grad, admissible)
            for game, seed, ss, role, meta in chunk]


def _eval_chunk(chunk, rng, checkpoints, temperature: float, budget: int, D: int):
    """Evaluation rollouts of each (game, seed, checkpoint index) of ``chunk``; the
    checkpoints' ``(name, w, admissible, memory)`` in ``checkpoints``."""
    env = _env(budget)
    out = []
    for game, seed, k in chunk:
        name, w, admissible, memory = checkpoints[k]
        out.append(_episode(env, game, seed, None, "reacher", {"split": game.get("split", "")}, w, name,
                            temperature, budget, D, True, False, admissible, memory))
    return out


def _episode(env, game, seed: int, ss, role: str, meta: Mapping[str, Any], w: np.ndarray, name: str,
             temperature: float, budget: int, D: int, frontier: bool, grad: bool, admissible: bool,
             memory: bool = False) -> dict:
    """One rollout of the policy ``w`` on ``game`` from ``reset(seed, budget)``: its row
    (``meta`` plus task, outcome, arrival and action counts; with ``grad`` the sparse
    score-function terms ``g_idx`` / ``g_w``). Raises ``ValueError`` when ``frontier``
    and the start state lies on ``F_D``."""
    _load(env, game)
    env.reset(seed, budget)
    cls = MemoryAlfworldPolicy if memory else LearnedAlfworldPolicy  # memory: transcript features too
    pol = cls(w, name, temperature=temperature, admissible=admissible)
    if ss is None:
        pol.reset(env.task_id, seed, role)
    else:
        pol.reset_stream(ss)
    arrived_at = None
    memo: dict[int, bool] = {}
    if frontier:
        if _on_frontier(env, D):
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
                hit = memo[sid] = _on_frontier(env, D)
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
    return res


def _on_frontier(env, D: int) -> bool:
    """``sigma in F_D`` at the env's state (:func:`~agentstudies.envs.alfworld.frontier.frontier_check`).
    An episode asks once per state it reaches (a state revisited within the episode is
    answered from the episode's own memo)."""
    from agentstudies.envs.alfworld.frontier import frontier_check

    return frontier_check(env, D).on_frontier


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


def evaluate_checkpoints(
    checkpoints: Sequence[tuple], games: Sequence[Mapping[str, Any]], seeds: Sequence[int], *,
    temperature: float = 0.4, budget: int = 48, D: int = 2, n_jobs: int = 1, phase: str = "final", step: int = 0,
) -> list[pd.DataFrame]:
    """:func:`evaluate_checkpoint` of several checkpoints on one pool, game by game: each
    game is loaded once for all of them instead of once per checkpoint (a load is ~35 ms
    of CPU, measured; an evaluation episode ~0.1-0.2 s).

    ``checkpoints``: ``(name, w, admissible)`` per checkpoint, or ``(name, w, admissible,
    memory)`` where ``memory=True`` runs :class:`~agentstudies.agents.alfworld.MemoryAlfworldPolicy`
    (weights trained with transcript features, e.g. ``BC-memory``). Returns one frame per
    checkpoint, in that order, each equal to ``evaluate_checkpoint(w, name, games, seeds,
    admissible=admissible, ...)`` (same rows, order, dtypes; every episode starts from a
    reset and a fresh policy, so the interleaving changes nothing). Raises ``ValueError``
    for an empty checkpoint list or a start state on ``F_D``.
    """
    cks = [(str(c[0]), c[1], bool(c[2]), bool(c[3]) if len(c) > 3 else False) for c in checkpoints]
    if not cks:
        raise ValueError("checkpoints is empty: expected (name, w, admissible) tuples")
    items = [(g, int(s), k) for g in games for s in seeds for k in range(len(cks))]
    chunks = _chunks(items, max(1, n_jobs) * 2 if n_jobs != 1 else 1)
    res = seeded_map(_eval_chunk, chunks, seed=0, n_jobs=n_jobs, checkpoints=cks, temperature=temperature,
                     budget=budget, D=D)
    rows = [r for c in res for r in c]
    frames = []
    for k, (name, *_) in enumerate(cks):
        df = pd.DataFrame(rows[k::len(cks)])
        df.insert(0, "phase", phase)
        df.insert(1, "step", int(step))
        df.insert(2, "checkpoint", name)
        df["arrival_step"] = df["arrival_step"].astype("Int64")
        frames.append(df[EVAL_COLUMNS])
    return frames


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
