"""Training the ALFWorld checkpoints (SFT: behaviour cloning; RL: SFT + REINFORCE; BC-memory: DAgger):
the public surface, one name per job, from these modules:

* :mod:`agentstudies.studies.alfworld.training.pools` -- the training and development
  splits, the held-out evaluation pools, and the digests that keep them apart;
* :mod:`agentstudies.studies.alfworld.training.loop` -- demonstrations, the SFT and RL
  objectives and optimisers, rollouts and :func:`evaluate_checkpoint`, the whole run
  (:func:`train_checkpoints` -> :class:`TrainingRun`);
* :mod:`agentstudies.studies.alfworld.training.checkpoints` -- the shipped weights
  (:func:`load_shipped`) and the retrain check (:func:`verify_retrain`);
* :mod:`agentstudies.studies.alfworld.training.report` -- held-out inference
  (:func:`setting_summary`, :func:`bootstrap_difference`), :func:`training_findings`,
  the learning-curve figures and :data:`PAPER_REFERENCE`;
* :mod:`agentstudies.studies.alfworld.training.equal_footing` -- the equal-footing SFT
  checkpoint (behaviour cloning on every RL training problem);
* :mod:`agentstudies.studies.alfworld.training.memory` -- the checkpoint with transcript
  memory, ``BC-memory`` (:func:`train_memory_checkpoint`: behaviour cloning with expert
  relabelling, DAgger).

Notebooks, tests and readers import from here (``from agentstudies.studies.alfworld
import training as tr``). Retrain both checkpoints with ``python -m
agentstudies.studies.alfworld.training``.
"""

from __future__ import annotations

from agentstudies.agents.alfworld import load_weights, save_weights, weights_digest
from agentstudies.studies.alfworld.training.checkpoints import (RETRAIN_LOSS_RTOL, compare_curves, config_digest,
                                                                load_shipped, verify_retrain)
from agentstudies.studies.alfworld.training.loop import (EVAL_COLUMNS, NOLIST_SUFFIX, Demonstrations, TrainingConfig,
                                                         TrainingRun, collect_demonstrations, evaluate_checkpoint,
                                                         evaluate_checkpoints,
                                                         train_checkpoints, train_rl, train_sft)
from agentstudies.studies.alfworld.training.memory import train_memory_checkpoint
from agentstudies.studies.alfworld.training.pools import (dev_pool, eval_pools, evaluation_digests, sft_games,
                                                          training_pool)
from agentstudies.studies.alfworld.training.report import (PAPER_REFERENCE, bootstrap_difference,
                                                           plot_heldout_curves, plot_learning_curves,
                                                           setting_summary, training_findings)

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
    "evaluate_checkpoints",
    "train_checkpoints",
    "bootstrap_difference",
    "eval_pools",
    "load_shipped",
    "sft_games",
    "verify_retrain",
    "plot_learning_curves",
    "plot_heldout_curves",
    "EVAL_COLUMNS",
    "setting_summary",
    "compare_curves",
    "dev_pool",
    "evaluation_digests",
    "training_findings",
    "train_memory_checkpoint",
]

#: Also importable from here (tests and scripts use them): weight files and their digest,
#: the retrain tolerance, a config's digest and the no-list checkpoints' name suffix.
_ = (load_weights, save_weights, weights_digest, RETRAIN_LOSS_RTOL, config_digest, NOLIST_SUFFIX)
