"""Planted controls of the ALFWorld recovery study's verdict rules (``controls.csv``).

The chapter's rules -- :func:`agentstudies.recovery.analyze_paired` task-level bootstrap
intervals judged by :func:`agentstudies.findings.judge` -- run on synthetic paired tables
from a planted subject and a null subject (:data:`CONTROL_SUBJECTS`): power and
false-positive rate with exact intervals. Source: CIR paper, "Paired counterfactuals".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from agentstudies.parallel import keyed_seed, seeded_map

__all__ = ["CONTROL_SUBJECTS", "recovery_controls"]


#: The planted and null subjects of :func:`recovery_controls` (labels appear on every row).
CONTROL_SUBJECTS = {
    "planted": "planted (synthetic paired table): refresh rescues 40% of failing stale-2 and harms 15% of "
               "succeeding clean trajectories",
    "null": "null (synthetic paired table): refresh flips 10% of outcomes either way in both conditions; "
            "success 50%, so no effect",
}


def _control_table(kind: str, n_tasks: int, rng: np.random.Generator) -> pd.DataFrame:
    """One synthetic paired table (conditions clean / stale-2, delay 0, refresh) of a
    :data:`CONTROL_SUBJECTS` subject; ``cohort = "primary-complete"``."""
    rows = []
    for t in range(n_tasks):
        for cond in ("clean", "stale-2"):
            if kind == "planted":
                y0 = int(rng.random() < (0.8 if cond == "clean" else 0.5))
                u = rng.random()
                y1 = (1 if (y0 == 0 and u < 0.4) else y0) if cond == "stale-2" else (0 if (y0 == 1 and u < 0.15) else y0)
            else:
                y0 = int(rng.random() < 0.5)
                y1 = 1 - y0 if rng.random() < 0.1 else y0
            rows.append(dict(cohort="primary-complete", task_id=f"s{t:03d}", condition=cond, delay=0,
                             operation="refresh", y_without=y0, y_with=int(y1)))
    return pd.DataFrame(rows)


def _control_replicate(item, rng, **kw):  # seeded_map signature
    from agentstudies.findings import judge
    from agentstudies.recovery import analyze_paired

    kind, r = item
    tab = _control_table(kind, kw["n_tasks"], np.random.default_rng(keyed_seed(kw["root"], "control", kind, r)))
    res = analyze_paired(tab, level=kw["level"], n_draws=kw["n_draws"], seed=int(keyed_seed(kw["root"], "boot", kind, r)
                                                                                  .generate_state(1)[0]))
    c = res.cells.set_index(["condition"]).loc["clean"]
    k = res.contrasts.iloc[0]
    return (judge(c["delta_ci_low"], c["delta_ci_high"], paper_side="below"),
            judge(k["ci_low"], k["ci_high"], paper_side="above"))


def recovery_controls(*, replicates: int = 40, n_tasks: int = 60, level: float = 0.95, n_draws: int = 400,
                      seed: int = 0, n_jobs: int = 1) -> pd.DataFrame:
    """Planted controls of the recovery verdict rules: ``controls.csv``.

    Runs the chapter's own rules -- :func:`agentstudies.recovery.analyze_paired` task-level
    bootstrap intervals judged by :func:`agentstudies.findings.judge` -- on ``replicates``
    synthetic paired tables of ``n_tasks`` tasks from a *planted* subject (the paper's
    clean harm and stale rescue exist by construction) and a *null* subject (no effect;
    :data:`CONTROL_SUBJECTS`). Families: "immediate refresh harms clean trajectories"
    (Delta_clean CI below 0) and "stale − clean > 0" (contrast CI above 0). Returns
    :data:`agentstudies.findings.CONTROL_COLUMNS` rows: power (planted) and
    false-positive rate (null) with exact Clopper-Pearson ``level`` intervals.

    A synthetic paired table, not the ALFWorld engine: this checks the *method*, whose
    inputs are paired tables of any harness. Raises ``ValueError`` for fewer than 2
    replicates or tasks.
    """
    from agentstudies.findings import control_row

    if replicates < 2 or n_tasks < 2:
        raise ValueError(f"replicates={replicates}, n_tasks={n_tasks}: need at least 2 of each")
    items = [(kind, r) for kind in ("planted", "null") for r in range(replicates)]
    out = seeded_map(_control_replicate, items, seed=seed, n_jobs=n_jobs, n_tasks=n_tasks, level=level, root=seed,
                     n_draws=n_draws)
    fams = [("Immediate refresh harms clean trajectories", f"{100 * level:g}% CI of Δ(clean) below 0"),
            ("Stale − clean > 0", f"{100 * level:g}% CI of Δ(stale-2) − Δ(clean) above 0")]
    rows = []
    for j, (fam, rule) in enumerate(fams):
        for kind in ("planted", "null"):
            v = [o[j] for (kd, _), o in zip(items, out) if kd == kind]
            rows.append(control_row(fam, CONTROL_SUBJECTS[kind], v, planted=kind == "planted",
                                    rule=f"{rule}; {n_tasks} tasks per replicate", level=level))
    return pd.DataFrame(rows)
