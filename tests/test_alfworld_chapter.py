"""The alfworld_handoff chapter's default checkpoint parameters are the package's profiles."""

import ast
import json
from pathlib import Path

from agentstudies.agents.alfworld import RL_PROFILE, SFT_PROFILE

NB = Path(__file__).resolve().parents[1] / "notebooks" / "alfworld_handoff.ipynb"


def test_chapter_defaults_equal_policy_profiles():
    cells = json.loads(NB.read_text())["cells"]
    src = next("".join(c["source"]) for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    values = {}
    for node in ast.parse(src).body:
        if isinstance(node, ast.Assign) and node.targets[0].id in ("sft_profile", "rl_profile"):
            values[node.targets[0].id] = ast.literal_eval(node.value)
    assert values["sft_profile"] == SFT_PROFILE.as_dict()
    assert values["rl_profile"] == RL_PROFILE.as_dict()
