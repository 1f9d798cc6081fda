"""Parameter objects (agentstudies.specs): AgentSpec and BootstrapSpec check their fields,
name the bad one, and build exactly the LLMSpec the flat settings built before."""

from __future__ import annotations

import dataclasses

import pytest

from agentstudies.agents import LLMSpec, llm_spec
from agentstudies.specs import AgentSpec, BootstrapSpec, is_llm_agent


def test_agent_spec_defaults_to_the_simulated_agent_without_settings():
    a = AgentSpec()
    assert a.agent == "simulated" and not a.is_llm and a.model is None and a.llm_settings() == {}


def test_agent_spec_model_and_settings_leave_out_none():
    a = AgentSpec("llm:openai-api/local/qwen3-8b", base_url="http://127.0.0.1:8000/v1", temperature=0.0,
                  max_tokens=256)
    assert a.is_llm and a.model == "openai-api/local/qwen3-8b"
    # 0.0 is a value, not "unset": it must stay
    assert a.llm_settings() == {"base_url": "http://127.0.0.1:8000/v1", "temperature": 0.0, "max_tokens": 256}


def test_agent_spec_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        AgentSpec().agent = "llm:a/b"  # type: ignore[misc]


@pytest.mark.parametrize("kwargs, exc, field", [
    ({"agent": "gpt-4"}, ValueError, "agent"),
    ({"agent": "llm:nomodel"}, ValueError, "agent"),
    ({"agent": 3}, TypeError, "agent"),
    ({"agent": "llm:a/b", "temperature": -0.1}, ValueError, "temperature"),
    ({"agent": "llm:a/b", "temperature": float("nan")}, TypeError, "temperature"),
    ({"agent": "llm:a/b", "max_tokens": 0}, ValueError, "max_tokens"),
    ({"agent": "llm:a/b", "max_tokens": 2.5}, TypeError, "max_tokens"),
    ({"agent": "llm:a/b", "max_connections": True}, TypeError, "max_connections"),
    ({"agent": "llm:a/b", "top_p": 0.0}, ValueError, "top_p"),
    ({"agent": "llm:a/b", "top_p": 1.5}, ValueError, "top_p"),
    ({"agent": "llm:a/b", "timeout": 0}, ValueError, "timeout"),
    ({"agent": "llm:a/b", "base_url": " "}, ValueError, "base_url"),
    ({"agent": "simulated", "temperature": 0.5}, ValueError, "temperature"),
])
def test_agent_spec_errors_name_the_field(kwargs, exc, field):
    with pytest.raises(exc, match=field):
        AgentSpec(**kwargs)


def test_from_parameters_reads_a_chapters_flat_parameters():
    a = AgentSpec.from_parameters("llm:mockllm/model", {"base_url": None, "max_connections": 2},
                                  model_base_url="http://h/v1", temperature=None)
    assert a == AgentSpec("llm:mockllm/model", base_url="http://h/v1", max_connections=2)
    with pytest.raises(ValueError, match=r"unknown agent setting\(s\) \['temprature'\]"):
        AgentSpec.from_parameters("llm:a/b", temprature=0.2)


def test_llm_spec_equals_the_one_built_from_flat_settings():
    settings = {"base_url": "http://h/v1", "max_connections": 2, "temperature": 0.3, "max_tokens": 64}
    want = LLMSpec.from_agent("llm:openai-api/local/m", **settings)
    assert llm_spec("llm:openai-api/local/m", settings) == want
    assert llm_spec(AgentSpec("llm:openai-api/local/m", **settings)) == want
    assert llm_spec("simulated") is None and llm_spec(AgentSpec()) is None
    # a key and provider arguments are not part of the spec; they pass through as given
    got = llm_spec("llm:mockllm/model", {"api_key": "k", "model_args": {"x": 1}})
    assert (got.api_key, dict(got.model_args)) == ("k", {"x": 1})


def test_llm_spec_refuses_settings_twice_or_for_the_simulated_agent():
    with pytest.raises(ValueError, match="beside an AgentSpec"):
        llm_spec(AgentSpec("llm:a/b"), {"temperature": 0.1})
    with pytest.raises(ValueError, match="llm_settings"):
        llm_spec("simulated", {"temperature": 0.1})
    with pytest.raises(ValueError, match="llm_settings"):
        llm_spec("simulated", {"api_key": "k"})


def test_is_llm_agent_is_one_rule():
    from agentstudies.agents import is_llm_agent as from_agents

    assert from_agents is is_llm_agent
    assert is_llm_agent("llm:a/b") and not is_llm_agent("simulated")


def test_bootstrap_spec_defaults_and_alpha():
    b = BootstrapSpec()
    assert (b.n_draws, b.level, b.seed) == (2000, 0.95, 0)
    assert b.alpha == pytest.approx(0.05)
    assert BootstrapSpec(500, 0.9, 7).as_kwargs() == {"n_draws": 500, "level": 0.9, "seed": 7}


@pytest.mark.parametrize("kwargs, exc, field", [
    ({"n_draws": 0}, ValueError, "n_draws"),
    ({"n_draws": 10.0}, TypeError, "n_draws"),
    ({"level": 1.0}, ValueError, "level"),
    ({"level": 0.0}, ValueError, "level"),
    ({"level": "0.95"}, TypeError, "level"),
    ({"seed": -1}, ValueError, "seed"),
    ({"seed": None}, TypeError, "seed"),
])
def test_bootstrap_spec_errors_name_the_field(kwargs, exc, field):
    with pytest.raises(exc, match=field):
        BootstrapSpec(**kwargs)


def test_a_study_method_names_the_bad_bootstrap_field():
    """studies.tau.workflow.seed_flip_rates takes its interval settings through BootstrapSpec."""
    import pandas as pd

    from agentstudies.studies.tau.workflow import seed_flip_rates

    ep = pd.DataFrame({"profile": "a", "workflow": "ReAct", "task_id": ["t1", "t1", "t2", "t2"],
                       "seed": [0, 1, 0, 1], "reward": [1.0, 0.0, 1.0, 1.0]})
    with pytest.raises(ValueError, match="level"):
        seed_flip_rates(ep, level=1.5)
    with pytest.raises(ValueError, match="n_draws"):
        seed_flip_rates(ep, n_draws=0)
    got = seed_flip_rates(ep, n_draws=200, level=0.9, seed=3)
    # t1 flips (1 -> 0), t2 does not: share 1/2, computed by hand
    assert got[["tasks", "flips", "share", "level"]].iloc[0].tolist() == [2, 1, 0.5, 0.9]


def test_impossible_rate_methods_name_the_bad_bootstrap_field():
    """cheating_rates / legit_pass_rates / rate_difference check their group through
    BootstrapSpec before touching the table."""
    import pandas as pd

    from agentstudies.studies.impossible import cheating_rates, legit_pass_rates, rate_difference

    ep = pd.DataFrame({"kind": ["original"], "task_id": ["t"], "passed": [1], "cheated": [0]})
    with pytest.raises(ValueError, match="level"):
        cheating_rates(ep, level=0.0)
    with pytest.raises(ValueError, match="n_draws"):
        legit_pass_rates(ep, n_draws=0)
    with pytest.raises(ValueError, match="seed"):
        rate_difference(ep, "passed", [True], [True], seed=-2)


@pytest.mark.parametrize("level, sides, want", [(0.95, 2, 40), (0.99, 2, 200), (0.9, 2, 20), (0.95, 1, 20),
                                                (0.8, 2, 10)])
def test_min_draws_puts_a_resample_beyond_each_end(level, sides, want):
    """n_draws >= sides / (1 - level): each tail of probability (1 - level) / sides holds at
    least one resample (hand-worked: 2 / 0.05 = 40, 2 / 0.01 = 200, 1 / 0.05 = 20)."""
    from agentstudies.specs import check_n_draws, min_draws

    assert min_draws(level, sides) == want
    assert want * (1 - level) / sides == pytest.approx(1.0)
    assert check_n_draws(want, level, sides=sides) == want
    with pytest.raises(ValueError, match=f"need n_draws >= {sides}/\\(1 - level\\) = {want}"):
        check_n_draws(want - 1, level, sides=sides)
    assert check_n_draws(0, level, sides=sides, allow_zero=True) == 0
    with pytest.raises(TypeError, match="expected an integer"):
        check_n_draws(float(want), level, sides=sides)

