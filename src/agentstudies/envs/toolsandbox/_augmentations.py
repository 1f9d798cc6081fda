"""The eight ToolSandbox augmentations of a base scenario (:func:`make_cases`): distraction
tools ranked by name/description similarity to the allowed tools, the four scrambles on
top of three distractors, a seeded shown order; and the per-case table.

Source: ToolSandbox (Lu et al., 2024), Sec. 3 augmentations; similarity ranking as there.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from agentstudies.envs.toolsandbox._scenarios import AUGMENTATIONS, Case, Scenario, _SCRAMBLE_OF
from agentstudies.envs.toolsandbox._tools import TOOLS, TOOL_NAMES, ToolView, canonical_phone
from agentstudies.parallel import keyed_seed

__all__ = ["tool_similarity", "ranked_distractors", "is_branching", "make_cases", "case_table", "perturb_phones"]


def _bag(tool: str) -> dict[str, int]:
    words = tool.lower().split("_") + "".join(ch if ch.isalnum() else " " for ch in TOOLS[tool].description.lower()).split()
    out: dict[str, int] = {}
    for wd in words:
        out[wd] = out.get(wd, 0) + 1
    return out


def tool_similarity(a: str, b: str) -> float:
    """Cosine similarity of the bags of words of two tools' names and descriptions."""
    x, y = _bag(a), _bag(b)
    dot = sum(v * y.get(k, 0) for k, v in x.items())
    nx = sum(v * v for v in x.values()) ** 0.5
    ny = sum(v * v for v in y.values()) ** 0.5
    return dot / (nx * ny) if nx and ny else 0.0


def ranked_distractors(scenario: Scenario, seed: int = 0) -> list[str]:
    """Tools outside the allow-list, most similar first (max :func:`tool_similarity` to an
    allowed tool, as ToolSandbox ranks distraction tools), ties in a seeded order."""
    rng = np.random.default_rng(keyed_seed(seed, "distractors", scenario.scenario_id))
    pool = [t for t in TOOL_NAMES if t not in scenario.allow_list]
    tie = {pool[i]: k for k, i in enumerate(rng.permutation(len(pool)))}
    score = {t: max((tool_similarity(t, a) for a in scenario.allow_list), default=0.0) for t in pool}
    return sorted(pool, key=lambda t: (-round(score[t], 12), tie[t]))


def is_branching(scenario: Scenario) -> bool:
    """Whether the milestone DAG allows more than one order (two milestones with no path between them)."""
    k = len(scenario.milestones)
    reach = [[i == j for j in range(k)] for i in range(k)]
    for u, v in scenario.edges:
        reach[u][v] = True
    for m in range(k):
        for i in range(k):
            for j in range(k):
                reach[i][j] = reach[i][j] or (reach[i][m] and reach[m][j])
    return any(not reach[i][j] and not reach[j][i] for i in range(k) for j in range(i + 1, k))


def make_cases(scenarios: Sequence[Scenario], augmentations: Sequence[str] = AUGMENTATIONS, seed: int = 0) -> list[Case]:
    """Expand every scenario into the given augmentations (default: all eight).

    Distraction tools are the tools outside a scenario's allow-list ranked by similarity of
    their names and descriptions to the allowed tools (:func:`ranked_distractors`): the
    first 3 / 10 (so +3 is contained in +10), or all of them. The four scrambles are
    applied on top of the +3 set. The shown order of tools is a seeded permutation.

    Raises
    ------
    ValueError
        An unknown augmentation.
    """
    bad = [a for a in augmentations if a not in AUGMENTATIONS]
    if bad:
        raise ValueError(f"unknown augmentation(s) {bad}; expected {AUGMENTATIONS}")
    cases = []
    for sc in scenarios:
        perm = ranked_distractors(sc, seed)
        order_rng_seed = keyed_seed(seed, "tool-order", sc.scenario_id)
        for aug in augmentations:
            n = {"base": 0, "10_distraction_tools": 10, "all_tools": len(perm)}.get(aug, 3)
            tools = list(sc.allow_list) + perm[:n]
            o = np.random.default_rng(order_rng_seed).permutation(len(tools))
            cid = f"{sc.scenario_id}/{aug}"
            cases.append(Case(cid, sc, aug, ToolView(tuple(tools[i] for i in o), _SCRAMBLE_OF.get(aug), key=cid)))
    return cases


def case_table(cases: Sequence[Case]) -> "Any":
    """One row per case: ids, category, categories, augmentation, features (pandas)."""
    import pandas as pd

    rows = []
    for c in cases:
        sc = c.scenario
        rows.append({
            "case_id": c.case_id, "base_scenario": sc.scenario_id, "template": sc.template,
            "category": sc.category, "categories": "|".join(sc.categories), "augmentation": c.augmentation,
            "dependency_depth": sc.dependency_depth, "n_milestones": len(sc.milestones), "n_minefields": len(sc.minefields),
            "n_user_intents": len(sc.intents), "n_gold_calls": sum(1 for g in sc.gold if g[0] == "call"),
            "n_tools_shown": len(c.view.tools), "n_distractors": c.n_distractors, "branching_dag": is_branching(sc),
        })
    return pd.DataFrame(rows)


def perturb_phones(scenario: Scenario, seed: int = 0) -> Scenario:
    """``scenario`` with every contact's phone number redrawn (seeded, distinct, canonical
    ``+1`` numbers), in the starting world, in stored messages and in the gold steps.

    Milestone targets that name a contact's number are :class:`~agentstudies.envs.toolsandbox.
    WorldRef` s read from the world the episode runs in, so they follow the new numbers; the
    user's words carry no contact number. Used to check that targets come from the world.
    """
    import dataclasses

    rng = np.random.default_rng(keyed_seed(seed, "perturb-phones", scenario.scenario_id))
    old = [c["phone_number"] for c in scenario.initial["CONTACT"]]
    taken = set(old) | {r["value"] for r in scenario.initial["SETTING"] if r["name"] == "own_phone_number"}
    new: dict[str, str] = {}
    for ph in old:
        while True:
            cand = canonical_phone(f"{int(rng.integers(201, 990))}{int(rng.integers(200, 999))}{int(rng.integers(0, 10000)):04d}")
            if cand not in taken:
                break
        taken.add(cand)
        new[ph] = cand

    def swap(v):
        return new.get(v, v) if isinstance(v, str) else v

    initial = {ns: tuple({k: swap(v) for k, v in r.items()} for r in rows) for ns, rows in scenario.initial.items()}
    gold = tuple((g[0], g[1], {k: swap(v) for k, v in g[2].items()}) if g[0] == "call" else g for g in scenario.gold)
    return dataclasses.replace(scenario, initial=initial, gold=gold)
