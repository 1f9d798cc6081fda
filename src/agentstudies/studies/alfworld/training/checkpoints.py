"""The shipped ALFWorld checkpoints: loading them (checksums verified) and checking that
a retrain from scratch reproduces their behaviour-cloning log step by step."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

import numpy as np
import pandas as pd

from agentstudies.agents.alfworld import load_weights
from agentstudies.studies.alfworld.training.loop import (NOLIST_SUFFIX, TrainingConfig, collect_demonstrations,
                                                         train_sft)
from agentstudies.studies.alfworld.training.pools import training_pool

__all__ = ["RETRAIN_LOSS_RTOL", "config_digest", "load_shipped", "verify_retrain", "compare_curves"]

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
