"""Alias of :mod:`agentstudies.book.cli`, kept for one release (see "Moved modules" in
:mod:`agentstudies`): console scripts installed before the move name
``agentstudies.cli:main``. New code imports :mod:`agentstudies.book.cli`."""

from agentstudies.book.cli import main

__all__ = ["main"]

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
