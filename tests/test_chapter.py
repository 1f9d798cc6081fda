"""Chapter provenance and artifacts: fresh folder per run, incomplete marker, hashes."""

import json

import numpy as np
import pandas as pd
import pytest

from agentstudies.chapter import INCOMPLETE, Chapter, beside_paper, hash_object


@pytest.fixture
def artifacts(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTSTUDIES_ARTIFACTS", str(tmp_path))
    return tmp_path


def test_run_starts_from_an_empty_folder_and_marks_until_finished(artifacts):
    stale = artifacts / "demo"
    stale.mkdir()
    (stale / "old_table.csv").write_text("x\n1\n")
    ch = Chapter("demo", params={"seed": 3, "n": 2}, simulated="everything", stage=False)
    assert sorted(p.name for p in stale.iterdir()) == [INCOMPLETE]  # old table gone
    ch.hash_input("tasks", pd.DataFrame({"a": [1, 2]}))
    ch.save_table(pd.DataFrame({"v": [0.1 + 0.2]}), "t")
    assert (stale / "t.csv").read_text() == "v\n0.3\n"
    prov = ch.finish()
    assert not (stale / INCOMPLETE).exists()
    data = json.loads((stale / "provenance.json").read_text())
    assert data["parameters"] == {"seed": 3, "n": 2} and data["seed"] == 3
    assert data["outputs"] == ["t.csv"] and data["simulated"] == "everything"
    assert data["input_sha256"]["tasks"] == hash_object(pd.DataFrame({"a": [1, 2]}))
    page = prov._repr_html_()
    assert page.startswith("<details") and "<table" in page and "|" not in page  # a real table, collapsed
    assert "Provenance" in page and data["input_sha256"]["tasks"] in page  # full value, not cut


def test_hash_object_is_deterministic_and_sensitive():
    a = pd.DataFrame({"x": [1.0, 2.0]})
    assert hash_object(a) == hash_object(a.copy())
    assert hash_object(a) != hash_object(a.iloc[::-1])
    assert hash_object(np.arange(3)) != hash_object(np.arange(3.0))
    with pytest.raises(FileNotFoundError):
        from pathlib import Path

        hash_object(Path("/nonexistent/file"))


def test_beside_paper_keeps_rows_missing_on_either_side():
    ours = pd.DataFrame({"k": ["a", "b"], "v": [1, 2]})
    paper = pd.DataFrame({"k": ["b", "c"], "v": [20, 30]})
    out = beside_paper(ours, paper, on="k")
    assert list(out.index) == ["a", "b", "c"]
    assert np.isnan(out.loc["a", ("paper", "v")]) and np.isnan(out.loc["c", ("this run", "v")])
    with pytest.raises(KeyError, match="key column"):
        beside_paper(ours, paper.rename(columns={"k": "key"}), on="k")


def test_stack_paper_puts_the_paper_row_under_ours():
    from agentstudies.chapter import stack_paper

    ours = pd.DataFrame({"k": ["a", "b"], "v": [1.0, 2.0], "only_ours": [5, 6]})
    paper = pd.DataFrame({"k": ["b", "c"], "v": [20.0, 30.0]})
    out = stack_paper(ours, paper, on="k")
    assert list(out.index) == [("a", "this run"), ("b", "this run"), ("b", "paper"), ("c", "paper")]
    assert out.loc[("b", "paper"), "v"] == 20.0 and np.isnan(out.loc[("c", "paper"), "only_ours"])
    with pytest.raises(KeyError, match="lacks key"):
        stack_paper(ours, paper.rename(columns={"k": "x"}), on="k")


def test_figure_is_saved_glued_and_closed(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setenv("AGENTSTUDIES_ARTIFACTS", str(tmp_path))
    ch = Chapter("demo_fig", params={"seed": 0})
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    assert ch.figure("fig_demo", fig, "demo") is None
    assert (ch.artifacts / "demo.png").stat().st_size > 0
    assert not plt.fignum_exists(fig.number)  # closed: the inline backend will not show it twice
    assert ch.glue("x", np.float64(0.5)) == 0.5


def test_compact_lets_headers_wrap_without_touching_values():
    from agentstudies.chapter import compact

    df = pd.DataFrame({"key_col": ["a_b"], "abstention_or_failure": [0.5]}).set_index("key_col")
    out = compact(df)
    assert list(out.columns) == ["abstention or failure"] and out.index.name == "key col"
    assert list(out.index) == ["a b"] and out.iloc[0, 0] == 0.5
    assert list(df.columns) == ["abstention_or_failure"]  # the input is not modified
    multi = df.reset_index().assign(s=["this run"]).set_index(["key_col", "s"])
    assert list(compact(multi).index) == [("a b", "this run")]
    assert compact("x_y") == "x_y"


def test_outside_the_runner_a_chapter_stages_and_swaps_in_at_finish(artifacts, monkeypatch):
    """Plain papermill / Jupyter (no AGENTSTUDIES_RUN): the last good folder stays
    byte-identical until finish(); a run that never finishes leaves it untouched."""
    monkeypatch.delenv("AGENTSTUDIES_RUN", raising=False)
    book = artifacts / "demo"
    book.mkdir()
    (book / "old_table.csv").write_text("x\n1\n")
    before = {p.name: p.read_bytes() for p in book.iterdir()}
    failed = Chapter("demo", params={"seed": 1})
    failed.save_table(pd.DataFrame({"v": [1]}), "t")
    assert failed.artifacts != book and failed.artifacts.parent.name.startswith(".kernel-staging-demo-")
    assert {p.name: p.read_bytes() for p in book.iterdir()} == before  # untouched while running
    ch = Chapter("demo", params={"seed": 2})
    ch.save_table(pd.DataFrame({"v": [2]}), "t")
    assert {p.name: p.read_bytes() for p in book.iterdir()} == before
    prov = ch.finish()
    assert sorted(p.name for p in book.iterdir()) == ["provenance.json", "t.csv"]
    assert (book / "t.csv").read_text() == "v\n2\n" and prov.path == book / "provenance.json"
    assert not ch.artifacts.parent.name.startswith(".kernel-staging")
    # the unfinished run's staging folder is the only one left (removed at process exit)
    left = [p.name for p in artifacts.iterdir() if p.name.startswith(".kernel-staging")]
    assert left == [failed.artifacts.parent.name]


def test_stale_staging_of_a_dead_process_is_removed(artifacts, monkeypatch):
    import subprocess
    import sys

    monkeypatch.delenv("AGENTSTUDIES_RUN", raising=False)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    dead = artifacts / f".kernel-staging-demo-{proc.pid}-abcdef12"
    (dead / "demo").mkdir(parents=True)
    Chapter("demo", params={})
    assert not dead.exists()
