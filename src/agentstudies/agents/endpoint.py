"""Reachability of a model endpoint: :func:`check_endpoint` (one short request before the
first episode) and :class:`EndpointUnreachable`, which ends a run whose endpoint is dead
(raised by :class:`agentstudies.agents.LLMClient` on construction, or after
:data:`MAX_CONSECUTIVE_FAILURES` calls in a row fail to connect).
"""

from __future__ import annotations

__all__ = ["EndpointUnreachable", "check_endpoint", "ENDPOINT_CHECK_TIMEOUT_S", "MAX_CONSECUTIVE_FAILURES"]


class EndpointUnreachable(ConnectionError):
    """The model endpoint cannot be reached: refused before the first episode, or after
    :data:`MAX_CONSECUTIVE_FAILURES` calls in a row failed to connect. Not an
    :class:`agentstudies.agents.LLMError`, so the episode drivers (which record an ``LLMError`` and go on)
    let it end the run; the message names the URL and the fix."""


#: Seconds the endpoint check before the first episode waits for any HTTP answer.
ENDPOINT_CHECK_TIMEOUT_S = 5.0
#: Model calls in a row that may fail to connect before the run stops.
MAX_CONSECUTIVE_FAILURES = 3


def check_endpoint(base_url: str, timeout: float = ENDPOINT_CHECK_TIMEOUT_S) -> None:
    """One short request (``GET <base_url>/models``) to a model endpoint before anything runs.

    Any HTTP answer (200, 401, 404, ...) means a server listens; only a failure to connect
    or no answer within ``timeout`` seconds is refused. Loopback and user-given URLs only:
    the package never contacts a host the user did not name.

    Raises
    ------
    EndpointUnreachable
        Naming the URL, the reason and the fix.
    """
    import urllib.error
    import urllib.request

    url = base_url.rstrip("/") + "/models"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="GET"), timeout=timeout):
            return
    except urllib.error.HTTPError:
        return  # the server answered
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise EndpointUnreachable(
            f"model endpoint {base_url} is unreachable (GET {url}: {type(reason).__name__}: {reason}); start the "
            f"server or fix the base URL (-p model_base_url / base_url). Nothing was run against it") from None
