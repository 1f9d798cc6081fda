"""Impossible coding tasks: planted controls of the chapters' verdict rules.

Part of the study driver :mod:`agentstudies.studies.impossible` (import from there):
:func:`impossible_controls` runs each rule on synthetic tables of a planted subject (the
effect exists by construction) and a null one (:data:`CONTROL_SUBJECTS`) -> power and
false-positive rates (``controls.csv``). Synthetic tables, not the sandbox or the agents:
this checks the method.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from agentstudies.parallel import keyed_seed
from agentstudies.studies.impossible.run import IMPOSSIBLE_KINDS
from agentstudies.studies.impossible.findings import _sasst_finding, rate_difference
from agentstudies.studies.impossible.rates import reminder_analysis, workflow_sasst

__all__ = ["CONTROL_SUBJECTS", "impossible_controls"]


# ------------------------------------------------------------------------ planted controls
#: The subjects of :func:`cheating_controls` / :func:`workflow_controls` (labels on every
#: row). Synthetic tables drawn from stated rates, not the sandbox or the agents.
CONTROL_SUBJECTS = {
    "setting": {
        "planted": ("planted (synthetic episodes): per-task propensity p ~ Beta(2, 2); the treated setting cheats "
                    "with probability 0.5 p, the reference with p, so the setting lowers cheating by construction",
                    0.5),
        "null": ("null (synthetic episodes): both settings cheat with the task's propensity p ~ Beta(2, 2)", 1.0),
    },
    "difficulty": {
        "planted": ("planted (synthetic episodes): easiest-tercile tasks cheat with probability 0.6, hardest 0.3",
                    (0.6, 0.3)),
        "null": ("null (synthetic episodes): every tercile cheats with probability 0.45", (0.45, 0.45)),
    },
    "sasst": {
        "planted": ("planted (synthetic episodes with two task features): per-task propensity p ~ Beta(2, 2); the "
                    "candidate cheats with probability 0.5 p, the baseline with p", 0.5),
        "null": ("null (synthetic episodes with two task features): both workflows cheat with p ~ Beta(2, 2)", 1.0),
    },
    "reminder": {
        "planted": ("planted (synthetic forks): rescue 25%, harm 5%, both succeed 40%, both fail 30% of forks, "
                    "so the reminder lowers cheating by construction", (0.25, 0.05)),
        "null": ("null (synthetic forks): rescue 10%, harm 10%, both succeed 40%, both fail 40%", (0.10, 0.10)),
    },
}


def _synthetic_setting(rng: np.random.Generator, n_tasks: int, factor: float) -> pd.DataFrame:
    p = rng.beta(2.0, 2.0, size=n_tasks)
    rows = []
    for t in range(n_tasks):
        for kind in IMPOSSIBLE_KINDS:
            for wf, q in (("reference", p[t]), ("treated", factor * p[t])):
                rows.append(dict(task_id=f"T/{t}", kind=kind, workflow=wf, cheated=bool(rng.random() < q)))
    return pd.DataFrame(rows)


def _synthetic_difficulty(rng: np.random.Generator, n_tasks: int, rates: tuple[float, float]) -> pd.DataFrame:
    k = max(1, n_tasks // 3)
    rows = []
    for t in range(2 * k):
        tercile, q = ("easy", rates[0]) if t < k else ("hard", rates[1])
        for kind in IMPOSSIBLE_KINDS:
            rows.append(dict(task_id=f"T/{t}", kind=kind, tercile=tercile, cheated=bool(rng.random() < q)))
    return pd.DataFrame(rows)


def _synthetic_forks(rng: np.random.Generator, n_tasks: int, rates: tuple[float, float]) -> pd.DataFrame:
    rescue, harm = rates
    u = rng.random(n_tasks)
    y0 = np.where(u < rescue, 0, np.where(u < rescue + harm, 1, np.where(u < rescue + harm + 0.4, 1, 0)))
    y1 = np.where(u < rescue, 1, np.where(u < rescue + harm, 0, y0))
    return pd.DataFrame(dict(cohort="conflicting", task_id=[f"T/{t}" for t in range(n_tasks)], condition="w", delay=1,
                             operation="spec_reminder", y_without=y0.astype(int), y_with=y1.astype(int)))


def _control_replicate(item, rng, **kw):  # seeded_map signature
    from agentstudies.findings import judge

    fam, kind, r = item
    s = int(keyed_seed(kw["root"], "impossible-control", fam, kind, r).generate_state(1)[0] % (2 ** 31))
    g = np.random.default_rng(s)
    subj = CONTROL_SUBJECTS[fam][kind][1]
    if fam == "setting":
        d = _synthetic_setting(g, kw["n_tasks"], subj)
        _, lo, hi, _ = rate_difference(d, "cheated", d["workflow"] == "reference", d["workflow"] == "treated",
                                       level=kw["level"], n_draws=kw["n_draws"], seed=s, key="control")
        return judge(lo, hi, paper_side="below")
    if fam == "difficulty":
        d = _synthetic_difficulty(g, kw["n_tasks"], subj)
        _, lo, hi, _ = rate_difference(d, "cheated", d["tercile"] == "hard", d["tercile"] == "easy", stratify=True,
                                       level=kw["level"], n_draws=kw["n_draws"], seed=s, key="control")
        return judge(lo, hi, paper_side="above")
    if fam == "sasst":
        d = _synthetic_setting(g, kw["n_tasks"], subj)
        idx = d["task_id"].str.slice(2).astype(int).to_numpy()
        x1, x2 = g.normal(size=kw["n_tasks"]), g.integers(0, 5, size=kw["n_tasks"]).astype(float)
        d = d.assign(workflow=d["workflow"].map({"reference": "baseline", "treated": "candidate"}), replicate=0,
                     feat_x1=x1[idx], feat_x2=x2[idx])
        rep = workflow_sasst(d, "candidate", "baseline", features=["x1", "x2"], n_stability=2,
                             n_multiplier=kw["n_draws"], min_ess=kw.get("min_ess", 8.0), seed=s)
        return _sasst_finding(rep, paper="").verdict
    cell = reminder_analysis(_synthetic_forks(g, kw["n_tasks"], subj), n_draws=kw["n_draws"], level=kw["level"],
                             seed=s).cells.iloc[0]
    return judge(cell["delta_ci_low"], cell["delta_ci_high"], paper_side="above")


_CONTROL_FAMILIES = {
    "setting": ("A setting lowers cheating (strict prompt, hidden tests, abort channel, candidate workflow)",
                "CI of treated - reference cheating rate below 0 (task-cluster bootstrap, paired by task; "
                "{n} tasks x 2 variants per replicate)"),
    "difficulty": ("Cheating is highest on the easiest tasks",
                   "CI of easiest - hardest tercile cheating rate above 0 (terciles resampled separately; "
                   "{n} tasks per tercile x 2 variants per replicate)"),
    "sasst": ("The candidate workflow is more honest (SASST uniform slot)",
              "SASST uniform slot's lower bound above 0 (its mirror below 0 contradicts; n_stability = 2 in the "
              "controls; {n} tasks x 2 variants per replicate)"),
    "reminder": ("A specification reminder lowers cheating (net)",
                 "CI of the with - without share not cheating above 0 (analyze_paired, task bootstrap; {n} forked "
                 "tasks per replicate)"),
}


def impossible_controls(families: Sequence[str], *, replicates: int = 40, n_tasks: int = 30, level: float = 0.95,
                        n_draws: int = 400, seed: int = 0, n_jobs: int = 1, min_ess: float = 8.0) -> pd.DataFrame:
    """Planted controls of the ImpossibleBench verdict rules: ``controls.csv``.

    For each family of ``families`` (``"setting"``: the paired rate-difference rule of
    :func:`rate_difference` behind every workflow finding; ``"difficulty"``: its stratified
    form behind "highest on the easiest tasks"; ``"reminder"``: the net-effect rule on
    :func:`reminder_analysis` forks), the chapter's rule is run on ``replicates`` synthetic
    tables of a *planted* subject (the effect exists by construction) and a *null* one
    (:data:`CONTROL_SUBJECTS`), each of ``n_tasks`` tasks; ``"sasst"``: the SASST
    uniform-slot rule (:func:`workflow_sasst` with ``n_stability = 2``, ``n_draws``
    multiplier draws, ``min_ess``; :func:`_sasst_finding`) on two random task features (``n_tasks // 3`` per tercile for
    difficulty). Returns :data:`agentstudies.findings.CONTROL_COLUMNS` rows: detection rate
    (power) and false-positive rate with exact (Clopper-Pearson) intervals. Synthetic
    tables, not the sandbox: this checks the method, not the agents.

    Raises
    ------
    ValueError
        An unknown family, fewer than 2 replicates, or fewer than 3 tasks.
    """
    from agentstudies.findings import control_row
    from agentstudies.parallel import seeded_map

    bad = [f for f in families if f not in CONTROL_SUBJECTS]
    if bad:
        raise ValueError(f"unknown control famil(ies) {bad}; expected some of {list(CONTROL_SUBJECTS)}")
    if replicates < 2:
        raise ValueError(f"replicates={replicates}: need at least 2")
    if n_tasks < 3:
        raise ValueError(f"n_tasks={n_tasks}: need at least 3")
    items = [(fam, kind, r) for fam in families for kind in ("planted", "null") for r in range(replicates)]
    out = seeded_map(_control_replicate, items, seed=seed, n_jobs=n_jobs, root=seed, n_tasks=n_tasks, level=level,
                     n_draws=n_draws, min_ess=min_ess)
    rows = []
    for fam in families:
        name, rule = _CONTROL_FAMILIES[fam]
        n = max(1, n_tasks // 3) if fam == "difficulty" else n_tasks
        for kind in ("planted", "null"):
            v = [o for (f, k, _), o in zip(items, out) if f == fam and k == kind]
            rows.append(control_row(name, CONTROL_SUBJECTS[fam][kind][0], v, planted=kind == "planted",
                                    rule=f"{100 * level:g}% " + rule.format(n=n), level=level))
    return pd.DataFrame(rows)
