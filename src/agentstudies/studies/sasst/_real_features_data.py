"""The item pool and its embeddings for :mod:`agentstudies.studies.sasst.real_features`
(Study D): the WritingBench pool bundled with inspect_evals (checked by SHA-256), its
stressed subgroup, and the MiniLM embedding cache shipped in ``data/``. Every public name
here is re-exported by :mod:`~agentstudies.studies.sasst.real_features`.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import re
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from agentstudies.studies.sasst.geometry import informative_columns

#: The bundled item pool, relative to the installed ``inspect_evals`` package.
POOL_RESOURCE = ("writingbench", "benchmark_all.jsonl")
#: SHA-256 of ``benchmark_all.jsonl`` in inspect-evals 0.26.0 (checked on load).
POOL_SHA256 = "6399939db8e24b56c0e8063b4bc4ac30d6828204257a564ce9dd6a01282eb782"
#: ``domain2`` labels (all inside ``Politics & Law``) forming the 42-item stressed subgroup.
SUBGROUP_DOMAIN2 = ("Legal Consultation", "Legal Opinion", "Legal Agreement", "Litigation Documents")
#: The MiniLM embedding cache shipped in ``data/`` (float16; see :func:`write_embedding_cache`).
CACHE_NAME = "sasst_real_features_minilm.npz"


# ----------------------------------------------------------------------------- the pool
def pool_path() -> Path:
    """Path of the bundled WritingBench file inside the installed ``inspect_evals``."""
    res = importlib.resources.files("inspect_evals").joinpath(*POOL_RESOURCE)
    return Path(str(res))


_CJK = re.compile(r"[\u4e00-\u9fff]")


def load_item_pool(path: Path | str | None = None, *, check_sha256: bool = True) -> pd.DataFrame:
    """The 1,000 WritingBench items: index ``item_id`` (``wb0001``), columns ``text``,
    ``domain1``, ``domain2``, ``language`` (``zh`` if more than 20% of characters are CJK
    ideographs, else ``en``), ``subgroup`` (bool).

    Raises
    ------
    FileNotFoundError
        If the file does not exist. ``ValueError`` if its SHA-256 differs from
        :data:`POOL_SHA256` (``check_sha256``), a row lacks a field, or ids repeat.
    """
    p = Path(path) if path is not None else pool_path()
    if not p.is_file():
        raise FileNotFoundError(f"item pool {p} not found (is inspect-evals installed?)")
    raw = p.read_bytes()
    if check_sha256:
        digest = hashlib.sha256(raw).hexdigest()
        if digest != POOL_SHA256:
            raise ValueError(f"item pool {p} has SHA-256 {digest}; expected {POOL_SHA256} (inspect-evals 0.26.0)")
    rows = []
    for k, line in enumerate(raw.decode("utf-8").splitlines()):
        if not line.strip():
            continue
        r = json.loads(line)
        missing = [f for f in ("index", "domain1", "domain2", "query") if f not in r]
        if missing:
            raise ValueError(f"item pool line {k + 1} lacks field(s) {missing}")
        text = str(r["query"])
        rows.append({"item_id": f"wb{int(r['index']):04d}", "text": text, "domain1": r["domain1"],
                     "domain2": r["domain2"],
                     "language": "zh" if len(_CJK.findall(text)) > 0.2 * max(1, len(text)) else "en"})
    df = pd.DataFrame(rows).set_index("item_id")
    if df.index.has_duplicates:
        raise ValueError(f"item pool has duplicate ids: {list(df.index[df.index.duplicated()][:5])}")
    df["subgroup"] = subgroup_mask(df)
    return df


def subgroup_mask(pool: pd.DataFrame) -> np.ndarray:
    """Stressed subgroup membership: ``domain2`` in :data:`SUBGROUP_DOMAIN2` (bool (n,))."""
    if "domain2" not in pool.columns:
        raise KeyError("item pool lacks column 'domain2'")
    return pool["domain2"].isin(SUBGROUP_DOMAIN2).to_numpy()


# ----------------------------------------------------------------------------- embeddings
def _repo_data_dir() -> Path:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "data").is_dir():
            return parent / "data"
    return Path.cwd() / "data"


def _texts_sha256(texts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


def embed_pool(pool: pd.DataFrame, text_encoder: str, *, seed: int = 0) -> np.ndarray:
    """Embeddings (n, d) of the pool's texts with :func:`agentstudies.envs.tau.encode_texts`."""
    from agentstudies.envs.tau import encode_texts

    return np.array(encode_texts(list(pool["text"]), text_encoder, seed=seed))


def study_features(emb: np.ndarray) -> np.ndarray:
    """The embedding columns Study D uses: every dimension except numerically dead ones
    (:func:`~agentstudies.studies.sasst.geometry.informative_columns`)."""
    emb = np.asarray(emb, dtype=float)
    return emb[:, informative_columns(emb)]


def write_embedding_cache(pool: pd.DataFrame, emb: np.ndarray, path: Path | None = None) -> Path:
    """Write the MiniLM embeddings (float16) with the texts' hash, and a ``.sha256`` file."""
    path = Path(path) if path is not None else _repo_data_dir() / CACHE_NAME
    np.savez_compressed(path, embeddings=np.asarray(emb, dtype=np.float16), ids=np.asarray(pool.index, dtype=str),
                        texts_sha256=np.array(_texts_sha256(list(pool["text"]))))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    path.with_suffix(".npz.sha256").write_text(f"{digest}  {path.name}\n")
    return path


def load_cached_embeddings(pool: pd.DataFrame, path: Path | None = None) -> np.ndarray:
    """The cached MiniLM embeddings (float64, rows re-normalized), after checking the
    file's SHA-256 against its ``.sha256`` file and the texts' hash against the pool.

    Raises
    ------
    FileNotFoundError, ValueError
        Missing cache, checksum mismatch, or a cache made from other texts / ids.
    """
    path = Path(path) if path is not None else _repo_data_dir() / CACHE_NAME
    side = path.with_suffix(".npz.sha256")
    if not path.is_file() or not side.is_file():
        raise FileNotFoundError(f"embedding cache {path} (or its .sha256) not found")
    want = side.read_text().split()[0]
    got = hashlib.sha256(path.read_bytes()).hexdigest()
    if got != want:
        raise ValueError(f"embedding cache {path.name} has SHA-256 {got}; {side.name} says {want}")
    z = np.load(path)
    if str(z["texts_sha256"]) != _texts_sha256(list(pool["text"])) or list(z["ids"]) != list(pool.index):
        raise ValueError(f"embedding cache {path.name} was made from different texts or ids than this pool")
    emb = z["embeddings"].astype(np.float64)
    return emb / np.linalg.norm(emb, axis=1, keepdims=True)
