"""Weights of the learned ALFWorld policy on disk: shipped checkpoints, checksums, hand-set weights.

One job: read and write ``data/alfworld/checkpoints/<name>.npy`` with its
``<name>.npy.sha256`` and ``<name>.json`` (meta: feature version, training provenance),
verifying the checksum and the feature version on every read
(:func:`load_weights`), and the small hand-set vector tests use (:func:`hand_set_weights`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from agentstudies.agents.alfworld._features import DIM_LOG2, FEATURE_VERSION, _h

__all__ = ["checkpoint_dir", "sha256_of", "weights_digest", "save_weights", "load_weights", "hand_set_weights"]


def checkpoint_dir() -> Path:
    """``<repo>/data/alfworld/checkpoints`` (the first parent holding ``pyproject.toml``)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file():
            return parent / "data" / "alfworld" / "checkpoints"
    return Path.cwd() / "data" / "alfworld" / "checkpoints"


def sha256_of(path: Path) -> str:
    """SHA-256 hex digest of a file."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def weights_digest(w: np.ndarray) -> str:
    """SHA-256 of the weight vector's float64 bytes (bitwise identity of two trainings)."""
    return hashlib.sha256(np.ascontiguousarray(w, dtype="<f8").tobytes()).hexdigest()


def save_weights(w: np.ndarray, name: str, directory: str | Path | None = None, meta: Mapping[str, Any] | None = None) -> Path:
    """Write ``<name>.npy``, ``<name>.npy.sha256`` and ``<name>.json`` (meta); returns the .npy path."""
    d = Path(directory) if directory else checkpoint_dir()
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{name}.npy"
    np.save(p, np.ascontiguousarray(w, dtype="<f8"), allow_pickle=False)
    (d / f"{name}.npy.sha256").write_text(f"{sha256_of(p)}  {name}.npy\n")
    m = {"name": name, "feature_version": FEATURE_VERSION, "dim_log2": int(round(np.log2(len(w))))}
    m.update(dict(meta or {}))
    (d / f"{name}.json").write_text(json.dumps(m, indent=1, sort_keys=True, default=str) + "\n")
    from agentstudies._data import record

    record(d / f"{name}.json")  # data/SHA256SUMS follows a retrain into data/ (else a no-op)
    return p


def load_weights(name: str, directory: str | Path | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Read ``<name>.npy`` after verifying ``<name>.npy.sha256``; returns ``(w, meta)``.

    Raises ``FileNotFoundError`` if a file is missing, ``ValueError`` on a checksum or
    feature-version mismatch.
    """
    d = Path(directory) if directory else checkpoint_dir()
    p = d / f"{name}.npy"
    sums = d / f"{name}.npy.sha256"
    if not p.is_file() or not sums.is_file():
        raise FileNotFoundError(f"checkpoint {name!r}: expected {p} and {sums}")
    expected = sums.read_text().split()[0]
    got = sha256_of(p)
    if got != expected:
        raise ValueError(f"checkpoint {name!r}: sha256 {got[:16]}... of {p} != recorded {expected[:16]}... in "
                         f"{sums.name}: the file was changed or truncated; restore it from the repository "
                         f"(git checkout -- {p} {sums})")
    meta_p = d / f"{name}.json"
    from agentstudies._data import read_json

    meta = read_json(meta_p) if meta_p.is_file() else {}
    if int(meta.get("feature_version", FEATURE_VERSION)) != FEATURE_VERSION:
        raise ValueError(
            f"checkpoint {name!r}: feature_version {meta.get('feature_version')} != {FEATURE_VERSION} of this code"
        )
    w = np.load(p, allow_pickle=False)
    meta["sha256"] = got
    return w, meta


def hand_set_weights(dim_log2: int = DIM_LOG2) -> np.ndarray:
    """A tiny hand-set weight vector (a placeholder before training; tests use it).

    Prefers unvisited receptacles whose class the goal names or that hold an object the
    goal names, taking goal objects, moving a held goal object to a goal receptacle and
    treating a held goal object; penalises repeats and idle commands.
    """
    w = np.zeros(1 << dim_log2)
    mask = (1 << dim_log2) - 1
    for key, val in {
        "go|visits=0": 1.0, "go|has_goal=1": 3.0, "go|has_goal=2+": 3.0, "go|rgoal=1|hold=goal": 4.0,
        "take|ogoal=1": 5.0, "move|ogoal=1|rgoal=1": 8.0, "open|recep=1": 2.0,
        "v=look": -3.0, "v=inventory": -3.0, "v=examine": -3.0, "v=close": -3.0, "v=use": -1.0,
        "use|ogoal=1": 6.0, "v=go|repeat=1": -3.0, "v=take|hold=none": 0.5,
    }.items():
        w[_h(key, mask)] += val
    return w
