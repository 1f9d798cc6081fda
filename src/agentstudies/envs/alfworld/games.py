"""Official ALFWorld game files on disk: find a split's games and read one with its trajectory.

The generated games of this package are dicts (:mod:`agentstudies.envs.alfworld.generate`);
an official game is a ``game.tw-pddl`` file with ``traj_data.json`` beside it
(``$ALFWORLD_DATA/json_2.1.1/<split>/<task>/<trial>/``). :class:`~.env.AlfworldEnv`
loads either.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["load_game_file", "official_game_files"]


def load_game_file(path: str | os.PathLike) -> dict[str, Any]:
    """Read an official ALFWorld game file (``game.tw-pddl``) and its ``traj_data.json``.

    Returns the game dict (``pddl_domain``, ``grammar``, ``pddl_problem``, ``traj_data``,
    ``task_id`` = the trial directory relative to the split, ``game_file``). Raises
    ``FileNotFoundError`` if either file is missing.
    """
    path = Path(path)
    with open(path) as fh:
        data = json.load(fh)
    traj_path = path.parent / "traj_data.json"
    with open(traj_path) as fh:
        traj = json.load(fh)
    data = dict(data)
    data["traj_data"] = traj
    data["task_id"] = f"{path.parent.parent.name}/{path.parent.name}"
    data["game_file"] = str(path)
    return data


def official_game_files(split: str, root: str | os.PathLike | None = None) -> list[Path]:
    """Game files of an official split under ``$ALFWORLD_DATA`` (sorted).

    ``split`` is ``valid_seen``, ``valid_unseen`` or ``train``; ``root`` defaults to the
    ``ALFWORLD_DATA`` environment variable. Raises ``KeyError`` when neither is set.
    The official data cannot be downloaded in this workplace; the path is tested on a small
    game written in the official layout (tests/test_alfworld_shared_location.py, two
    receptacles at one location).
    """
    root = root or os.environ.get("ALFWORLD_DATA")
    if not root:
        raise KeyError("ALFWORLD_DATA is not set: point it at the directory alfworld-download fills")
    base = Path(root) / "json_2.1.1" / split
    return sorted(p for p in base.glob("*/*/game.tw-pddl") if "movable" not in str(p) and "Sliced" not in str(p))
