"""One chapter of ``agentstudies book --at-once N`` in its own process.

``python -m agentstudies.book._child SPEC``: ``SPEC`` is JSON with ``chapter, profile,
jobs, root, log_output, result`` and optionally ``output`` and ``artifacts`` (passed to
``run_notebook`` as ``output_path`` / ``artifacts``; the test suite's smoke runs use them).
Runs :func:`agentstudies.book.execute.run_notebook` as the
book does (default output, staging and atomic swap) and writes the
:class:`~agentstudies.book.execute.RunResult`, or the error it raised, as JSON to ``result``.
SIGTERM unwinds like Ctrl-C (papermill shuts the kernel down), as in the CLI. Exit
status: 0 ok, 1 error, 130 interrupted.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from pathlib import Path
from typing import Any

from agentstudies.book.execute import run_notebook
from agentstudies.book.model import BookError, NotebookExecutionError
from agentstudies.book.cli import _first_interrupt, _silence_stderr


def _interrupt(signum: int, frame: Any) -> None:
    """Ctrl-C / SIGTERM: silence this process's stderr at once (the parent prints the one
    line; the kernel's shutdown and a second signal racing the first would otherwise print
    tracebacks while the run unwinds), then unwind as the CLI does."""
    _silence_stderr()
    _first_interrupt(signum, frame)


def _error_record(exc: BaseException) -> dict[str, Any]:
    rec: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, NotebookExecutionError):
        rec.update(notebook=exc.notebook, cell_index=exc.cell_index, ename=exc.ename, evalue=exc.evalue,
                   output_path=str(exc.output_path))
    return rec


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    out = Path(spec["result"])
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    if spec.get("log_output"):
        logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        res = run_notebook(spec["chapter"], None, spec.get("output"), spec["profile"], jobs=spec["jobs"],
                           root=spec["root"], log_output=bool(spec.get("log_output")),
                           artifacts=spec.get("artifacts"))
    except KeyboardInterrupt as exc:
        out.write_text(json.dumps({"error": _error_record(exc)}))
        _silence_stderr()  # the parent says it in one line; no kernel-shutdown tracebacks
        return 130
    except (BookError, FileNotFoundError) as exc:
        out.write_text(json.dumps({"error": _error_record(exc)}))
        return 1
    out.write_text(json.dumps({
        "name": res.name, "input_path": str(res.input_path), "output_path": str(res.output_path),
        "parameters": res.parameters, "seconds": res.seconds,
        "artifacts": str(res.artifacts) if res.artifacts is not None else None,
    }, default=str))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
