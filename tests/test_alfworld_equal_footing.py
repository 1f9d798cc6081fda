"""The equal-footing SFT checkpoint: shipped with digests, verified on
load, trained on as many environment problems as RL."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from agentstudies.agents.alfworld import checkpoint_dir, weights_digest
from agentstudies.envs.alfworld.generate import TASK_TYPES
from agentstudies.studies.alfworld.training import equal_footing as eq
from agentstudies.studies.alfworld import training as tr


def test_equal_footing_checkpoint_digest_is_verified_on_load(tmp_path):
    shipped = eq.load_equal()
    d = checkpoint_dir()
    recorded = (d / "SFT-equal.npy.sha256").read_text().split()[0]
    assert shipped["meta"]["sha256"] == recorded and len(recorded) == 64
    assert shipped["w"].shape == (1 << shipped["meta"]["dim_log2"],) and np.abs(shipped["w"]).sum() > 0
    # its log's last step is the shipped weights (bitwise), so the log belongs to these weights
    assert shipped["sft_curve"]["weights_sha256"].iloc[-1] == weights_digest(shipped["w"])
    for name in ("SFT-equal.npy", "SFT-equal.npy.sha256", "SFT-equal.json"):
        shutil.copy(d / name, tmp_path / name)
    w = np.load(tmp_path / "SFT-equal.npy")
    w[123] += 1e-12  # one weight changed in its last bits
    np.save(tmp_path / "SFT-equal.npy", w)
    with pytest.raises(ValueError, match="SFT-equal.*sha256"):
        tr.load_weights(eq.EQUAL_NAME, tmp_path)


def test_equal_footing_trains_on_as_many_problems_as_rl():
    shipped = eq.load_equal()
    meta, demos = shipped["meta"], shipped["demonstrations"]
    rl_cfg = tr.load_shipped()["meta_rl"]["config"]
    n_rl = len(TASK_TYPES) * int(rl_cfg["train_tasks_per_type"])  # RL's training pool: every type
    assert n_rl == 120
    assert meta["n_problems"] == n_rl
    assert demos["task_id"].nunique() == n_rl and len(demos) == n_rl * int(meta["config"]["demo_seeds"])
    assert demos.groupby("task_type")["task_id"].nunique().to_dict() == {t: 20 for t in TASK_TYPES}
    idx = demos["task_id"].str.rsplit("-", n=1).str[1].astype(int)
    assert sorted(set(idx)) == list(range(int(rl_cfg["train_tasks_per_type"])))
    # generated as RL's problems are: same training seed and budget, and the shipped SFT's
    # 18 problems are among them with the same expert demonstration lengths
    for key in ("train_seed", "train_tasks_per_type", "budget", "admissible", "sft_steps", "sft_lr", "l2"):
        assert meta["config"][key] == rl_cfg[key], key
    assert meta["config"]["sft_tasks_per_type"] == rl_cfg["train_tasks_per_type"]
    small = tr.load_shipped()["demonstrations"]
    merged = small.merge(demos, on=["task_id", "seed"], suffixes=("", "_equal"))
    assert len(merged) == len(small) == 18
    assert (merged["n_actions"] == merged["n_actions_equal"]).all()
    assert meta["n_decisions"] > 5 * tr.load_shipped()["meta_sft"]["n_decisions"]


def test_equal_config_sets_demonstrations_to_the_rl_pool():
    cfg = eq.equal_config(tr.TrainingConfig(train_tasks_per_type=7, sft_tasks_per_type=2))
    assert cfg.sft_tasks_per_type == 7 and cfg.train_tasks_per_type == 7
    logged = json.loads((checkpoint_dir() / "SFT.json").read_text())["config"]
    assert eq.equal_config(logged).sft_tasks_per_type == logged["train_tasks_per_type"]
    assert isinstance(eq.load_equal()["sft_curve"], pd.DataFrame)
