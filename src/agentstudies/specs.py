"""Parameter objects for the groups of settings that recur across study signatures.

Two groups travel together through many functions:

* :class:`AgentSpec` -- which agent acts and, for a model, where and how it samples:
  ``agent`` (``"simulated"`` or ``"llm:<provider>/<model>"``), ``base_url``,
  ``max_connections`` and the decoding settings ``temperature``, ``max_tokens``,
  ``top_p``, ``timeout``. :meth:`AgentSpec.llm_settings` gives the keyword arguments of
  :class:`agentstudies.agents.LLMSpec` (``None`` left out, so the model's defaults hold).
  The generation seed is not here: it derives from the study's ``seed`` per episode
  (``keyed_seed``), as every other random draw does.
* :class:`BootstrapSpec` -- how an interval is computed: ``n_draws`` (bootstrap or
  multiplier draws), ``level`` (confidence level, two-sided), ``seed``.

Both are frozen dataclasses that check their fields on construction and raise
``ValueError`` / ``TypeError`` naming the field. Chapters keep flat papermill parameters
(``agent``, ``model_base_url``, ``n_draws``, ``level``, ``seed``); the study builds the
spec from them (:meth:`AgentSpec.from_parameters`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass
from typing import Any, Mapping

__all__ = ["AGENT_PREFIX", "SIMULATED", "AgentSpec", "BootstrapSpec", "check_n_draws", "check_count",
           "check_probability", "check_seed", "check_share", "is_llm_agent", "min_draws"]

#: The scripted agents of the chapters.
SIMULATED = "simulated"
#: Prefix of an LLM agent parameter: ``"llm:<inspect model name>"``.
AGENT_PREFIX = "llm:"


def is_llm_agent(agent: str) -> bool:
    """True for ``"llm:<provider/model>"``, False for ``"simulated"``.

    Raises
    ------
    ValueError
        If ``agent`` is neither ``"simulated"`` nor ``"llm:<provider>/<model>"``.
    """
    if agent == SIMULATED:
        return False
    if isinstance(agent, str) and agent.startswith(AGENT_PREFIX) and "/" in agent[len(AGENT_PREFIX):]:
        return True
    raise ValueError(
        f"agent must be 'simulated' or 'llm:<provider>/<model>' (e.g. 'llm:openai-api/local/qwen3-8b', "
        f"'llm:mockllm/model'); got {agent!r}"
    )


def min_draws(level: float = 0.95, sides: int = 2) -> int:
    """The fewest resamples for which a percentile interval at ``level`` is defined.

    The rule, used by every resampled interval of the package: each tail outside the
    interval, of probability ``(1 - level) / sides``, must hold at least one resample, so
    that the interval's ends are not the extreme resamples themselves:
    ``n_draws >= sides / (1 - level)`` -- 40 for a two-sided 95 % interval, 200 at 99 %,
    20 for a one-sided 95 % bound. With fewer draws the "95 %" interval of one resample is
    that resample (``n_draws=1`` gave ``[0, 0]`` around an estimate of -0.083).

    Raises
    ------
    ValueError
        ``level`` outside (0, 1) or ``sides`` not 1 or 2.
    """
    if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0 < level < 1:
        raise ValueError(f"level must be a confidence level in (0, 1); got {level!r}")
    if sides not in (1, 2):
        raise ValueError(f"sides must be 1 or 2; got {sides!r}")
    return int(math.ceil(round(sides / (1.0 - float(level)), 6)))


def check_n_draws(n_draws: Any, level: float = 0.95, *, name: str = "n_draws", sides: int = 2,
                  allow_zero: bool = False, where: str = "") -> int:
    """``n_draws`` as an int, refused unless it is an integer >= :func:`min_draws` (``level``,
    ``sides``), or 0 where ``allow_zero`` (0 = no intervals).

    Raises
    ------
    TypeError
        Not an integer (``True`` and ``2.7`` are refused, never truncated).
    ValueError
        Fewer resamples than the rule of :func:`min_draws`, naming the input, the value,
        the minimum and the fix.
    """
    at = f"{where}: " if where else ""
    if isinstance(n_draws, bool) or not isinstance(n_draws, numbers.Integral):
        raise TypeError(f"{at}{name}={n_draws!r}: expected an integer number of resamples "
                        f"(>= {min_draws(level, sides)} at level {level:g}); got {type(n_draws).__name__}")
    low = min_draws(level, sides)
    if allow_zero and n_draws == 0:
        return 0
    if n_draws < low:
        zero = " (or 0 for no intervals)" if allow_zero else ""
        side = "two-sided" if sides == 2 else "one-sided"
        raise ValueError(
            f"{at}{name}={n_draws!r} is too few resamples for a {side} percentile interval at level {level:g}: "
            f"need {name} >= {sides}/(1 - level) = {low}{zero}, so that each tail outside the interval holds at "
            f"least one resample; use {name}=2000 or more (the papers use 2,000-100,000)")
    return int(n_draws)


def check_probability(name: str, value: Any, *, where: str = "") -> float:
    """``value`` as a float, refused unless it is a finite number in [0, 1].

    Raises
    ------
    TypeError
        Not a real number (``True`` is refused).
    ValueError
        Outside [0, 1] or NaN, naming the input, the value and the range.
    """
    at = f"{where}: " if where else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{at}{name}={value!r} must be a probability, a number in [0, 1]; got {type(value).__name__}")
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{at}{name}={value!r} must be a probability in [0, 1] (a share, not a percentage: "
                         f"write 0.5 for 50 %)")
    return float(value)


def check_count(name: str, value: Any, *, what: str, where: str = "") -> int:
    """``value`` as an int, refused unless it is a non-negative integer; ``what`` says what
    it counts (and what 0 means) in the message.

    Raises
    ------
    TypeError
        Not an integer (2.7 is refused, never cut to 2).
    ValueError
        Negative.
    """
    at = f"{where}: " if where else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{at}{name}={value!r} must be a non-negative integer ({what}); got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{at}{name}={value!r} must be a non-negative integer ({what})")
    return int(value)


def check_share(name: str, value: Any, *, include_one: bool = True, where: str = "") -> float:
    """``value`` as a float, refused unless it is a share in (0, 1] (``include_one``) or
    (0, 1).

    Raises
    ------
    ValueError
        Not a number, or outside the range (e.g. 5 for 5 %), naming the input and the range.
    """
    at = f"{where}: " if where else ""
    hi = "1]" if include_one else "1)"
    ok = (not isinstance(value, bool) and isinstance(value, numbers.Real)
          and (0.0 < float(value) < 1.0 or (include_one and float(value) == 1.0)))
    if not ok:
        raise ValueError(f"{at}{name}={value!r} must be a share in (0, {hi}, not a percentage (write 0.25 for 25 %)")
    return float(value)


def check_seed(seed: Any, *, name: str = "seed", where: str = "") -> int:
    """``seed`` as an int, refused unless it is a non-negative integer (numpy's generators
    and ``keyed_seed`` take no negative seed; a float such as 1.7 would be cut to 1).

    Raises
    ------
    TypeError
        Not an integer (``True`` and ``1.7`` are refused).
    ValueError
        Negative.
    """
    at = f"{where}: " if where else ""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"{at}{name}={seed!r} must be a non-negative integer seed (0, 1, 2, ...); "
                        f"got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"{at}{name}={seed!r} must be a non-negative integer seed (0, 1, 2, ...); "
                         f"use {-int(seed)} or any other integer >= 0")
    return int(seed)


def _check_int(name: str, value: Any, *, low: int, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer; got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}; got {value!r}")


def _check_float(name: str, value: Any, *, low: float, high: float | None = None, optional: bool = False,
                 open_low: bool = False, open_high: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise TypeError(f"{name} must be a finite number; got {value!r}")
    if value < low or (open_low and value == low) or (high is not None and (value > high or (open_high and value == high))):
        lo, hi = "(" if open_low else "[", ")" if open_high else "]"
        raise ValueError(f"{name} must be in {lo}{low}, {high if high is not None else 'inf'}{hi}; got {value!r}")


@dataclass(frozen=True)
class AgentSpec:
    """Which agent acts, and for a model: where and how it samples.

    Parameters
    ----------
    agent : str
        ``"simulated"`` (the scripted agents, no model) or ``"llm:<provider>/<model>"``
        (any model Inspect supports, e.g. ``"llm:openai-api/local/qwen3-8b"``).
    base_url : str, optional
        Endpoint of an OpenAI-compatible server (vLLM, Ollama, llama.cpp).
    max_connections : int, optional
        Concurrent requests to the provider (>= 1).
    temperature : float, optional
        Sampling temperature (>= 0).
    max_tokens : int, optional
        Most tokens per reply (>= 1).
    top_p : float, optional
        Nucleus sampling mass, in (0, 1].
    timeout : int, optional
        Seconds per model call (>= 1).

    ``None`` means "the model's / LLMSpec's default". Decoding settings with
    ``agent="simulated"`` are refused (a setting that would silently do nothing).

    Raises
    ------
    ValueError, TypeError
        Naming the field that is malformed or out of range.
    """

    agent: str = SIMULATED
    base_url: str | None = None
    max_connections: int | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    timeout: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.agent, str):
            raise TypeError(f"agent must be a string; got {self.agent!r}")
        is_llm_agent(self.agent)  # raises ValueError naming the agent
        if self.base_url is not None and (not isinstance(self.base_url, str) or not self.base_url.strip()):
            raise ValueError(f"base_url must be a non-empty string or None; got {self.base_url!r}")
        _check_int("max_connections", self.max_connections, low=1, optional=True)
        _check_float("temperature", self.temperature, low=0.0, optional=True)
        _check_int("max_tokens", self.max_tokens, low=1, optional=True)
        _check_float("top_p", self.top_p, low=0.0, high=1.0, optional=True, open_low=True)
        _check_int("timeout", self.timeout, low=1, optional=True)
        if not self.is_llm and self.llm_settings():
            raise ValueError(f"model settings (llm_settings) {sorted(self.llm_settings())} given but "
                             "agent='simulated'; set agent='llm:<provider>/<model>'")

    @property
    def is_llm(self) -> bool:
        """True when a model acts (``agent`` starts with ``"llm:"``)."""
        return is_llm_agent(self.agent)

    @property
    def model(self) -> str | None:
        """The Inspect model name (``"openai-api/local/qwen3-8b"``); None when simulated."""
        return self.agent[len(AGENT_PREFIX):] if self.is_llm else None

    def llm_settings(self) -> dict[str, Any]:
        """Keyword arguments of :class:`agentstudies.agents.LLMSpec` (``None`` left out)."""
        return {k: v for k, v in asdict(self).items() if k != "agent" and v is not None}

    @classmethod
    def from_parameters(cls, agent: str = SIMULATED, llm_settings: Mapping[str, Any] | None = None,
                        **settings: Any) -> "AgentSpec":
        """The spec from a chapter's flat parameters: ``agent`` plus either a settings
        mapping (``llm_settings``, the studies' present keyword) or keywords; ``None``
        values are dropped, and a chapter's ``model_base_url`` is read as ``base_url``.

        Raises
        ------
        ValueError
            A setting this spec does not know (named), a value out of range, or model
            settings with ``agent="simulated"``.
        """
        merged = {k: v for k, v in {**dict(llm_settings or {}), **settings}.items() if v is not None}
        if "model_base_url" in merged:
            if "base_url" in merged:
                raise ValueError("both base_url and model_base_url given; give one")
            merged["base_url"] = merged.pop("model_base_url")
        known = {f for f in cls.__dataclass_fields__ if f != "agent"}
        unknown = sorted(set(merged) - known)
        if unknown:
            raise ValueError(f"unknown agent setting(s) {unknown}; known: {sorted(known)}")
        return cls(agent=agent, **merged)


@dataclass(frozen=True)
class BootstrapSpec:
    """How an interval is computed: ``n_draws`` resamples at confidence ``level``.

    Parameters
    ----------
    n_draws : int
        Bootstrap (or multiplier) draws, >= :func:`min_draws` (``level``) (40 at 0.95).
        Default 2000.
    level : float
        Two-sided confidence level, in (0, 1). Default 0.95.
    seed : int
        Seed of the draws (child seeds via ``agentstudies.parallel.keyed_seed``), >= 0.

    Raises
    ------
    ValueError, TypeError
        Naming the field that is malformed or out of range.
    """

    n_draws: int = 2000
    level: float = 0.95
    seed: int = 0

    def __post_init__(self) -> None:
        _check_float("level", self.level, low=0.0, high=1.0, open_low=True, open_high=True)
        check_n_draws(self.n_draws, self.level)
        _check_int("seed", self.seed, low=0)

    @property
    def alpha(self) -> float:
        """``1 - level``."""
        return 1.0 - self.level

    def as_kwargs(self) -> dict[str, Any]:
        """``{"n_draws", "level", "seed"}`` for a function that still takes them flat."""
        return asdict(self)
