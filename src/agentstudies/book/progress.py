"""Progress of a long run, printed by the runner (never by a notebook): a book run's elapsed
time, chapters done / total and an ETA from the chapters' expected wall times
(:class:`BookProgress`), and a heartbeat line while one chapter runs (:func:`heartbeat`).

Expected times come from the last run at the profile, else the shipped
``notebooks/durations.json`` (``agentstudies.book.schedule._last_seconds``). The ETA is the
expected time left of the chapters not done (a running chapter counts what it has left,
at least nothing), divided among the ``at_once`` slots. A chapter without a recorded time
counts the mean of the known ones (recorded, or measured in this run), and the ETA is
then marked rough; with no time known at all it is "?". Nothing here changes what runs or
any table.
"""

from __future__ import annotations

import math
import os
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Mapping, Sequence

__all__ = ["BookProgress", "heartbeat", "HEARTBEAT_ENV", "fmt_seconds"]

#: Seconds between heartbeat lines (default 30; the environment variable overrides it).
HEARTBEAT_ENV = "AGENTSTUDIES_HEARTBEAT_S"
_DEFAULT_HEARTBEAT_S = 30.0


def fmt_seconds(seconds: float) -> str:
    """``75.4`` -> ``"1m15s"``, ``3725`` -> ``"1h02m"``, ``9.2`` -> ``"9s"``; inf -> ``"?"``."""
    if not math.isfinite(seconds):
        return "?"
    s = int(round(max(seconds, 0.0)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def _interval() -> float:
    try:
        value = float(os.environ.get(HEARTBEAT_ENV, _DEFAULT_HEARTBEAT_S))
    except ValueError:
        return _DEFAULT_HEARTBEAT_S
    return value if value > 0 else _DEFAULT_HEARTBEAT_S


class BookProgress:
    """Done / total, elapsed time and ETA of a book run.

    Parameters
    ----------
    chapters : the chapters of the run, in any order.
    expected : chapter -> expected wall time in seconds (inf or missing: unknown).
    at_once : chapters run side by side (the ETA divides the time left among them).
    clock : seconds, monotonic (``time.perf_counter``; a test passes its own).
    """

    def __init__(self, chapters: Sequence[str], expected: Mapping[str, float], at_once: int = 1,
                 clock: Callable[[], float] = time.perf_counter):
        self.chapters = list(chapters)
        self.expected = {c: float(expected.get(c, math.inf)) for c in self.chapters}
        self.at_once = max(int(at_once), 1)
        self.clock = clock
        self.t0 = clock()
        self.started: dict[str, float] = {}
        self.done: list[str] = []
        self.took: dict[str, float] = {}

    def start(self, chapter: str) -> str:
        """Record that ``chapter`` started; the line to print."""
        self.started[chapter] = self.clock()
        last = self.expected[chapter]
        took = f"; last run took {fmt_seconds(last)}" if math.isfinite(last) else ""
        return f"started {chapter}{took} -- {self.status()}"

    def finish(self, chapter: str, seconds: float | None = None) -> str:
        """Record that ``chapter`` finished (in ``seconds``, default: since it started);
        the status to append to its result line."""
        if chapter not in self.done:
            self.done.append(chapter)
        self.took[chapter] = float(seconds) if seconds is not None else self.clock() - self.started.get(chapter, self.t0)
        return self.status()

    def _fill(self) -> float:
        """The time assumed for a chapter without a recorded one: the mean of the known
        expected times and of this run's measured ones (inf when none is known)."""
        known = [v for c, v in self.expected.items() if math.isfinite(v) and c not in self.took]
        known += list(self.took.values())
        return sum(known) / len(known) if known else math.inf

    def eta(self) -> float:
        """Seconds expected until every chapter is done (inf when a time is unknown)."""
        now = self.clock()
        left = 0.0
        for c in self.chapters:
            if c in self.done:
                continue
            exp = self.expected[c] if math.isfinite(self.expected[c]) else self._fill()
            if not math.isfinite(exp):
                return math.inf
            left += max(exp - (now - self.started[c]), 0.0) if c in self.started else exp
        return left / min(self.at_once, max(len(self.chapters) - len(self.done), 1))

    def status(self) -> str:
        """``"3/18 chapters done, elapsed 2m05s, ETA ~6m40s"`` (``"(rough)"`` when a
        chapter's time is assumed)."""
        eta = self.eta()
        rough = math.isfinite(eta) and any(not math.isfinite(self.expected[c]) for c in self.chapters
                                           if c not in self.done)
        return (f"{len(self.done)}/{len(self.chapters)} chapters done, elapsed {fmt_seconds(self.clock() - self.t0)}, "
                f"ETA ~{fmt_seconds(eta)}{' (rough)' if rough else ''}")

    def beat(self, chapter: str) -> str:
        """A heartbeat line for a running ``chapter``."""
        ran = self.clock() - self.started.get(chapter, self.t0)
        last = self.expected.get(chapter, math.inf)
        of = f" (last run {fmt_seconds(last)})" if math.isfinite(last) else ""
        return f"    ... {chapter} running for {fmt_seconds(ran)}{of}; {self.status()}"


@contextmanager
def heartbeat(echo: Callable[[str], None], line: Callable[[], str],
              interval: float | None = None) -> Iterator[None]:
    """Print ``line()`` through ``echo`` every ``interval`` seconds (default
    :data:`HEARTBEAT_ENV` or 30 s) while the block runs, from a daemon thread; an empty
    line is not printed."""
    every = _interval() if interval is None else float(interval)
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every):
            text = line()
            if text:  # nothing running: nothing to say
                echo(text)

    thread = threading.Thread(target=loop, name="agentstudies-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=1.0)
