"""Every profile of the two impossible-task chapters asks for no more tasks than the shipped
variant table keeps: the paper profile asked for 153 after the HumanEval audit had left 149
tasks with a conflicting variant, and `make paper` failed in cell 14 of impossible_cheating."""

from pathlib import Path

import pytest
import yaml

from agentstudies.envs.impossible import load_variant_table

PROFILES = yaml.safe_load((Path(__file__).resolve().parents[1] / "notebooks" / "profiles.yaml").read_text())["chapters"]


def _available() -> int:
    # counted from the raw table, not with load_tasks (the function that raised): unflagged
    # originals with a kept conflicting variant
    return sum(not t["flagged"] and any(v["kind"] == "conflicting" and v["kept"] for v in t["variants"])
               for t in load_variant_table()["tasks"])


@pytest.mark.parametrize("chapter", ["impossible_cheating", "impossible_workflows"])
@pytest.mark.parametrize("profile", ["quick", "paper", "smoke"])
@pytest.mark.parametrize("key", ["n_tasks", "n_recovery_tasks"])
def test_profile_asks_for_no_more_tasks_than_exist(chapter, profile, key):
    value = (PROFILES[chapter].get(profile) or {}).get(key)
    if value is None:
        pytest.skip(f"{chapter} {profile} sets no {key} (the notebook default applies)")
    assert value <= _available(), f"{chapter} {profile}: {key}={value} > {_available()} tasks with a conflicting variant"
