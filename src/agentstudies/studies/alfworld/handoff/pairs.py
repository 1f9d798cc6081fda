"""Named checkpoint pairings of the handoff study and the training data behind each checkpoint.

The handoff paper crosses an SFT and an RL checkpoint of the same model (Section 4.1). Our
shipped SFT imitates the expert on ``sft_tasks_per_type`` of RL's ``train_tasks_per_type``
training problems per task type, so "RL vs SFT" mixes the learner with the amount of
data. The study therefore ships two pairings, each a base checkpoint crossed with RL:

* ``"SFT"`` -- the shipped SFT (behaviour cloning on 3 of RL's 20 problems per type);
* ``"SFT-equal"`` -- the equal-data SFT (behaviour cloning on every RL training problem:
  the same 120 problems; :mod:`agentstudies.studies.alfworld.training.equal_footing`).

:func:`training_data` states, from a checkpoint's meta (the ``<name>.json`` beside the
weights), what it was trained on; :func:`pair_episodes` keeps one pairing's rows of a study
run with several bases, so each pairing is analysed as its own 2 x 2 crossing (the rows of
a pairing do not depend on the other bases: every draw is keyed on its own checkpoint).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

__all__ = ["CHECKPOINT_PAIRS", "ONE_ESTIMAND", "training_data", "pair_episodes", "check_pairs", "equal_beside",
           "pairing_table"]

#: Base checkpoints crossed with RL, each with the one-line description of the pairing.
CHECKPOINT_PAIRS: dict[str, str] = {
    "SFT": "RL x SFT (SFT trained on 3 of RL's 20 problems per task type)",
    "SFT-equal": "RL x SFT-equal (SFT trained on the same 120 problems as RL)",
}

#: Number of ALFWorld task types (problems per checkpoint = per-type count x this).
N_TASK_TYPES = 6


def check_pairs(pairs: Sequence[str]) -> list[str]:
    """Validate a ``checkpoint_pairs`` parameter: a non-empty list of distinct names of
    :data:`CHECKPOINT_PAIRS` that contains ``"SFT"`` (the chapter's main tables).

    Raises ``ValueError`` naming the bad value and the allowed ones.
    """
    pairs = list(pairs)
    bad = [p for p in pairs if p not in CHECKPOINT_PAIRS]
    if bad or "SFT" not in pairs or len(set(pairs)) != len(pairs):
        raise ValueError(f"checkpoint_pairs={pairs!r}: expected distinct names from {sorted(CHECKPOINT_PAIRS)} "
                         "including 'SFT' (the base of the chapter's main tables), e.g. ['SFT', 'SFT-equal']")
    return pairs


def training_data(meta: Mapping[str, Any]) -> str:
    """One line saying what a trained checkpoint learned from, read from its meta.

    ``meta`` is a checkpoint's ``<name>.json`` (``LearnedAlfworldPolicy.meta``): ``name``,
    ``objective``, ``config`` (``sft_tasks_per_type``, ``train_tasks_per_type``,
    ``demo_seeds``), ``n_decisions`` (expert decisions imitated) and, for the equal-data
    SFT, ``n_problems``. Problems = per-type count x 6 task types. Behaviour cloning:
    "SFT: behaviour cloning on 18 problems (3 per task type; 108 expert decisions)"; RL:
    "RL: the SFT start + REINFORCE on 120 problems (20 per task type)".

    Raises ``KeyError`` naming the missing meta field.
    """
    for key in ("name", "objective", "config"):
        if key not in meta:
            raise KeyError(f"checkpoint meta lacks {key!r} (expected the <name>.json written beside the weights)")
    name, cfg = str(meta["name"]), meta["config"]
    if "REINFORCE" in str(meta["objective"]):
        per = int(cfg["train_tasks_per_type"])
        return (f"{name}: the SFT start + REINFORCE on {per * N_TASK_TYPES} problems ({per} per task type)")
    per = int(cfg["train_tasks_per_type"] if "n_problems" in meta else cfg["sft_tasks_per_type"])
    n = int(meta.get("n_problems", per * N_TASK_TYPES))
    dec = f"; {int(meta['n_decisions'])} expert decisions" if "n_decisions" in meta else ""
    return f"{name}: behaviour cloning on {n} problems ({per} per task type{dec})"


def pair_episodes(frame: pd.DataFrame, base: str, treated: str = "RL") -> pd.DataFrame:
    """The rows of one pairing: reacher (and solver, where the frame has one) in
    ``{base, treated}``. Works on the study's ``episodes``, ``trajectories``, ``steps``
    and ``actions`` tables (solver NA = a reacher row, kept).

    Raises ``KeyError`` if ``base`` or ``treated`` is not a reacher of ``frame``.
    """
    have = set(frame["reacher"])
    for ck in (base, treated):
        if ck not in have:
            raise KeyError(f"checkpoint {ck!r} is not a reacher of this table (reachers: {sorted(have)})")
    keep = frame["reacher"].isin([base, treated])
    if "solver" in frame.columns:
        keep &= frame["solver"].isna() | frame["solver"].isin([base, treated])
    return frame[keep].reset_index(drop=True)


#: Handoff findings judged on one estimand of :func:`agentstudies.handoff.analyze_handoff`
#: (finding -> estimand, the side the paper claims): the rows that show the equal-data
#: pairing's estimate beside them.
ONE_ESTIMAND: dict[str, tuple[str, str]] = {
    "Reach: RL arrives more often than SFT": ("reach_gap", "above"),
    "Interaction I (Eq. 4) is positive": ("interaction", "above"),
    "Reached-only estimate lies below the endpoint interaction": ("survivor_minus_endpoint", "below"),
    "RL solves better from identical states": ("delta_solve_all_states", "above"),
}


def equal_beside(equal, *, split: str, treated: str = "RL", equal_base: str = "SFT-equal") -> dict[str, str]:
    """For each finding of :data:`ONE_ESTIMAND`, the equal-data pairing's estimate as text:
    ``"+x.x pp [lo, hi] (verdict by the same directional rule)"`` -- the estimand of
    ``equal`` (an :func:`agentstudies.handoff.analyze_handoff` result of ``treated`` x
    ``equal_base``) on ``split`` in percentage points, its interval, and
    :func:`agentstudies.findings.judge` of that interval against the paper's side
    ("inconclusive (flagged)" when the empty-denominator rule flagged it).

    Raises ``KeyError`` if ``split`` or an estimand is not in ``equal.estimates``.
    """
    from agentstudies.findings import judge

    est = equal.estimates[equal.estimates["split"] == split].set_index("estimand")
    if est.empty:
        have = sorted(set(equal.estimates["split"]))
        raise KeyError(f"split {split!r} not in the equal-data result (splits: {have})")
    out = {}
    for finding, (key, side) in ONE_ESTIMAND.items():
        e = est.loc[key]
        flagged = bool(e["flagged"]) if "flagged" in e.index else False
        verdict = "inconclusive (flagged)" if flagged else judge(float(e["ci_low"]), float(e["ci_high"]),
                                                                  paper_side=side)
        out[finding] = (f"{_pp(e['estimate'])} pp [{_pp(e['ci_low'])}, {_pp(e['ci_high'])}] "
                        f"({verdict} by the same directional rule)")
    return out


#: The pairing table's interval columns: estimand of :func:`agentstudies.handoff.analyze_handoff`
#: -> column label (RL minus the pairing's base, percentage points).
PAIRING_GAPS = (("reach_gap", "Reach gap"), ("delta_solve_all_states", "Solve gap"), ("interaction", "I"))


def pairing_table(results: Mapping[str, Any], training: Mapping[str, str], splits: Sequence[str],
                  treated: str = "RL") -> pd.DataFrame:
    """One row per pairing and split: endpoint success of the four assignments and the
    Reach gap, same-state Solve gap and interaction with their intervals.

    ``results`` maps a base checkpoint name to its :class:`agentstudies.handoff.HandoffResult`
    (that base crossed with ``treated``); ``training`` maps checkpoint names to
    :func:`training_data` lines. Columns: ``pairing, split, base trained on``, then
    ``J(base,base), J(base,RL), J(RL,base), J(RL,RL)`` (percent; reacher first, solver
    second), then ``Reach gap (pp), Solve gap (pp), I (pp)`` as ``"+x.x [+lo, +hi]"`` strings.
    Source: handoff paper Eqs. 1-4 (Section 2), computed by the handoff library.

    Raises ``KeyError`` for a split or estimand the results lack.
    """
    rows = []
    for base, res in results.items():
        assign = res.assignments.set_index(["split", "reacher", "solver"])
        est = res.estimates.set_index(["split", "estimand"])
        role = {base: "base", treated: treated}
        for split in splits:
            row: dict[str, Any] = {"pairing": f"{treated} x {base}", "split": split,
                                   "base trained on": training.get(base, "").split(": ", 1)[-1]}
            for reacher, solver in ((base, base), (base, treated), (treated, base), (treated, treated)):
                row[f"J({role[reacher]},{role[solver]})"] = 100 * assign.loc[(split, reacher, solver), "endpoint"]
            for key, label in PAIRING_GAPS:
                x = est.loc[(split, key)]
                row[f"{label} (pp)"] = f"{_pp(x.estimate)} [{_pp(x.ci_low)}, {_pp(x.ci_high)}]"
            rows.append(row)
    return pd.DataFrame(rows)


def _pp(fraction: float) -> str:
    """A share as signed percentage points to one decimal; a value that rounds to zero is
    "0.0", never "-0.0"."""
    text = f"{100 * float(fraction):+.1f}"
    return "0.0" if text in ("+0.0", "-0.0") else text
