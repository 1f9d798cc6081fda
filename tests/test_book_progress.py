"""Progress of a book run: done / total, elapsed time, an ETA from the chapters' expected
times, and a heartbeat while a chapter runs (printed by the runner, never by a notebook)."""

from __future__ import annotations

import math
import time

import nbformat as nbf
import pytest
import yaml

from agentstudies.book.progress import BookProgress, fmt_seconds, heartbeat


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_eta_is_the_expected_time_left_hand_worked():
    clock = Clock()
    p = BookProgress(["a", "b", "c"], {"a": 10.0, "b": 20.0, "c": 30.0}, clock=clock)
    assert p.eta() == 60.0  # nothing started: 10 + 20 + 30
    p.start("a")
    clock.t += 4
    assert p.eta() == 56.0  # a has 10 - 4 left
    clock.t += 8  # a overran its expected time: nothing left of it, not negative
    assert p.eta() == 50.0
    assert p.finish("a") == "1/3 chapters done, elapsed 12s, ETA ~50s"
    p.start("b")
    clock.t += 5
    assert p.eta() == 45.0  # 15 + 30
    assert p.beat("b") == "    ... b running for 5s (last run 20s); 1/3 chapters done, elapsed 17s, ETA ~45s"


def test_eta_side_by_side_and_unknown():
    clock = Clock()
    two = BookProgress(["a", "b", "c"], {"a": 10.0, "b": 20.0, "c": 30.0}, at_once=2, clock=clock)
    assert two.eta() == 30.0  # 60 s of work on two slots
    two.finish("a")
    two.finish("b")
    assert two.eta() == 30.0  # one chapter left: one slot works
    none_known = BookProgress(["a", "b"], {}, clock=clock)
    assert math.isinf(none_known.eta()) and none_known.status().endswith("ETA ~?")
    none_known.start("a")
    clock.t += 40
    none_known.finish("a", 40.0)  # measured: the unknown b is assumed to take as long
    assert none_known.eta() == 40.0 and none_known.status().endswith("ETA ~40s (rough)")
    some = BookProgress(["a", "b", "c"], {"a": 10.0, "b": 30.0}, clock=clock)
    assert some.eta() == 60.0  # c assumed at the mean of the known, (10 + 30) / 2 = 20


def test_fmt_seconds():
    assert [fmt_seconds(x) for x in (9.2, 75.4, 3725.0, math.inf)] == ["9s", "1m15s", "1h02m", "?"]


def test_heartbeat_prints_while_the_block_runs_and_stops_after():
    lines: list[str] = []
    with heartbeat(lines.append, lambda: "beat", interval=0.02):
        time.sleep(0.15)
    n = len(lines)
    assert n >= 2 and set(lines) == {"beat"}
    time.sleep(0.06)
    assert len(lines) == n  # stopped with the block
    quiet: list[str] = []
    with heartbeat(quiet.append, lambda: "", interval=0.02):
        time.sleep(0.06)
    assert quiet == []  # an empty line is not printed


def _tiny_book(tmp_path):
    root = tmp_path / "repo"
    (root / "book").mkdir(parents=True)
    (root / "book" / "_toc.yml").write_text(yaml.safe_dump(
        {"format": "jb-book", "root": "intro", "chapters": [{"file": "chapters/alpha"}, {"file": "chapters/beta"}]}))
    (root / "notebooks").mkdir()
    for name, sleep in (("alpha", 0.6), ("beta", 0.0)):
        nb = nbf.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        cell = nbf.v4.new_code_cell("seed = 0\n")
        cell.metadata["tags"] = ["parameters"]
        nb.cells = [nbf.v4.new_markdown_cell(f"# {name}"), cell, nbf.v4.new_code_cell(f"import time; time.sleep({sleep})")]
        nbf.write(nb, root / "notebooks" / f"{name}.ipynb")
    (root / "notebooks" / "durations.json").write_text('{"quick": {"alpha": 90.0, "beta": 30.0}}')
    return root


@pytest.mark.parametrize("at_once", [1, 2])
def test_run_book_prints_done_total_elapsed_and_heartbeats(tmp_path, monkeypatch, at_once):
    from agentstudies.book.schedule import run_book

    root = _tiny_book(tmp_path)
    monkeypatch.setenv("AGENTSTUDIES_HEARTBEAT_S", "0.2")
    monkeypatch.setenv("AGENTSTUDIES_ARTIFACTS", str(tmp_path / "art"))
    lines: list[str] = []
    run_book("quick", root=root, echo=lines.append, at_once=at_once)
    text = "\n".join(lines)
    eta = "2m00s" if at_once == 1 else "1m00s"  # 90 + 30 s of work on one or two slots
    assert f"at profile quick{', 2 at once' if at_once == 2 else ''}: 0/2 chapters done, elapsed 0s, ETA ~{eta}" in text
    assert "started alpha; last run took 1m30s -- 0/2 chapters done" in text
    assert "... alpha running for " in text  # a heartbeat while alpha sleeps
    assert "1/2 chapters done" in text and "2/2 chapters done, elapsed " in text and text.rstrip().endswith(" s")


def test_agentstudies_run_prints_a_heartbeat_with_the_elapsed_time(tmp_path, monkeypatch, capsys):
    from agentstudies.book import cli

    root = _tiny_book(tmp_path)
    monkeypatch.setenv("AGENTSTUDIES_HEARTBEAT_S", "0.2")
    assert cli.main(["run", "alpha", "-o", str(tmp_path / "a.ipynb"), "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "    ... alpha running for " in out and out.index("... alpha running") < out.index("ok  alpha")


def test_book_scheduler_note_names_the_chapters_without_parallel_work(tmp_path, monkeypatch, capsys):
    """--scheduler with chapters that declare no n_jobs / backend: said, not silently ignored."""
    from agentstudies.book import cli
    from agentstudies.parallel import SCHEDULER_ENV

    root = _tiny_book(tmp_path)
    monkeypatch.setenv(SCHEDULER_ENV, "")
    monkeypatch.setenv("AGENTSTUDIES_ARTIFACTS", str(tmp_path / "art"))
    assert cli.main(["book", "--no-build", "--only", "beta", "--scheduler", "tcp://127.0.0.1:1", "--root", str(root)]) == 0
    assert "note: --scheduler is used only by chapters with parallel work; not by beta" in capsys.readouterr().out
