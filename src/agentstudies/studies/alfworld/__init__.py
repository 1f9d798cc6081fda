"""The ALFWorld studies, one subpackage per study on the real engine:

* :mod:`~agentstudies.studies.alfworld.handoff` -- checkpoint handoff (Reach x Solve);
* :mod:`~agentstudies.studies.alfworld.training` -- training the SFT and RL checkpoints
  (and the equal-footing SFT checkpoint);
* :mod:`~agentstudies.studies.alfworld.recovery` -- causal recovery (CIR): paired forks,
  the intervention router.

Importing this package imports none of them.
"""

__all__: list[str] = []
