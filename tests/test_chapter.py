"""Chapter provenance and artifacts: fresh folder per run, incomplete marker, hashes."""

import json

import numpy as np
import pandas as pd
import pytest

from agentstudies.book.chapter import INCOMPLETE, Chapter, beside_paper, hash_object


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
    from agentstudies.book.chapter import stack_paper

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
    # a figure glued directly (not through ch.figure) is closed too, and can still be saved
    fig2, _ = plt.subplots()
    assert ch.glue("fig_direct", fig2) is fig2 and not plt.fignum_exists(fig2.number)
    assert ch.save_figure(fig2, "direct").stat().st_size > 0


def test_compact_lets_headers_wrap_without_touching_values():
    from agentstudies.book.chapter import compact

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


# --------------------------------------------------------------------- the table renderer
def _parse_table(markup: str) -> dict:
    """Caption, header rows, body rows (cell texts) and notes of render_table's HTML."""
    from html.parser import HTMLParser

    class P(HTMLParser):
        def __init__(self):
            super().__init__()
            self.out = {"caption": "", "head": [], "body": [], "notes": []}
            self.where, self.row, self.cell = None, None, None

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "caption":
                self.where = "caption"
            elif tag in ("thead", "tbody"):
                self.part = "head" if tag == "thead" else "body"
            elif tag == "tr":
                self.row = []
            elif tag in ("td", "th"):
                self.cell = ""
                self.span = int(a.get("colspan", 1))
            elif tag == "p" and a.get("class") == "agentstudies-table-note":
                self.where = "note"
                self.out["notes"].append("")

        def handle_endtag(self, tag):
            if tag in ("caption", "p"):
                self.where = None
            elif tag in ("td", "th"):
                self.row += [self.cell] * self.span
                self.cell = None
            elif tag == "tr":
                self.out[self.part].append(self.row)

        def handle_data(self, data):
            if self.cell is not None:
                self.cell += data
            elif self.where == "caption":
                self.out["caption"] += data
            elif self.where == "note":
                self.out["notes"][-1] += data

    p = P()
    p.feed(markup)
    return p.out


def test_table_renders_integers_fixed_decimals_and_explains_missing_values():
    from agentstudies.book.chapter import MISSING_PAPER, MISSING_RUN, render_table, stack_paper

    ours = pd.DataFrame({"workflow": ["A", "B"], "rate": [0.51234, np.nan], "n": [60.0, 12.0],
                         "ratio": [np.inf, 3.3]})
    paper = pd.DataFrame({"workflow": ["A", "C"], "rate": [0.5, 0.7]})
    t = _parse_table(render_table(stack_paper(ours, paper, "workflow"), "Success by workflow",
                                  unit="share of tasks", number=4))
    assert t["caption"] == "Table 4. Success by workflow. Unit: share of tasks. n = 4 rows."
    assert t["head"] == [["workflow", "source", "rate", "n", "ratio"]]
    assert t["body"] == [["A", "this run", "0.512", "60", "∞"],
                         ["", "paper", "0.500", "–", "–"],     # the key is not repeated
                         ["B", "this run", "–", "12", "3.3"],  # never more decimals than stored
                         ["C", "paper", "0.700", "–", "–"]]
    assert sorted(t["notes"]) == sorted([f"– {MISSING_PAPER}.", f"– {MISSING_RUN}."])


def test_table_never_prints_nan_inf_na_or_none_and_hides_a_positional_index():
    from agentstudies.book.chapter import render_table

    df = pd.DataFrame({"a": [None, "x", np.nan], "b": pd.array([pd.NA, 1, 2], dtype="Int64"),
                       "c": [-np.inf, 0.00123, 0.5]})
    markup = render_table(df, "odd cells")
    t = _parse_table(markup)
    assert t["head"] == [["a", "b", "c"]]  # no 0..n-1 index column
    assert t["body"] == [["–", "–", "−∞"], ["x", "1", "0.001"], ["–", "2", "0.500"]]
    for bad in ("nan", "NaN", "<NA>", "None", "inf"):
        assert bad not in markup.replace("&lt;", "<")


def test_table_keeps_a_styler_caption_percent_format_and_hidden_index():
    from agentstudies.book.chapter import Table, render_table

    df = pd.DataFrame({"w": ["A", "B"], "rate": [0.512, np.nan], "n": [60.0, 12.0]}, index=[5, 9])
    styled = df.style.format({"rate": "{:.1%}"}).hide(axis="index").set_caption("Rates (simulated)")
    t = _parse_table(render_table(Table(styled), number=1))
    assert t["caption"] == "Table 1. Rates (simulated). n = 2 rows."
    assert t["body"] == [["A", "51.2%", "60"], ["B", "–", "12"]]
    # a meaningful index (not 0..n-1) is shown when the Styler does not hide it
    t2 = _parse_table(render_table(Table(df.style), number=2))
    assert [r[0] for r in t2["body"]] == ["5", "9"]
    with pytest.raises(TypeError, match="DataFrame, Series or Styler"):
        Table([1, 2, 3])


def test_table_groups_beside_paper_headers_and_blames_the_paper_column():
    from agentstudies.book.chapter import MISSING_PAPER, render_table

    ours = pd.DataFrame({"k": ["A", "B"], "rate": [0.25, 0.5]})
    paper = pd.DataFrame({"k": ["A"], "rate": [0.75]})
    t = _parse_table(render_table(beside_paper(ours, paper, "k"), "beside"))
    assert t["head"] == [["", "this run", "paper"], ["k", "rate", "rate"]]
    assert t["body"] == [["A", "0.25", "0.75"], ["B", "0.50", "–"]]  # 0.25 carries two decimals
    assert t["notes"] == [f"– {MISSING_PAPER}."]


def test_chapter_numbers_every_displayed_table(artifacts):
    from IPython.core.interactiveshell import InteractiveShell

    from agentstudies.book.chapter import compact

    shell = InteractiveShell.instance()
    try:
        Chapter("demo", params={"seed": 0}, stage=False)
        fmt = shell.display_formatter.format
        first = _parse_table(fmt(compact(pd.DataFrame({"x_y": [1.0, 2.0]}), "First", unit="pp"))[0]["text/html"])
        second = _parse_table(fmt(pd.Series([0.5], name="share"))[0]["text/html"])
        assert first["caption"] == "Table 1. First. Unit: pp. n = 2 rows."
        assert first["head"] == [["x y"]] and first["body"] == [["1"], ["2"]]
        assert second["caption"].startswith("Table 2. share")
    finally:
        InteractiveShell.clear_instance()



def test_table_rounds_once_from_the_stored_value():
    """A value rounded upstream is not padded with a digit it no longer has; no -0; no tuple repr."""
    from agentstudies.book.chapter import render_table

    stored = pd.DataFrame({"rate": [0.2666667, 0.3333333, 0.5333333], "bias": [-0.00146, 0.0123, -0.00004]})
    shown = _parse_table(render_table(stored.round(2), "rounded upstream"))["body"]
    # 0.27 is 0.2667 to two decimals; "0.270" would claim a third digit the CSV contradicts
    assert [r[0] for r in shown] == ["0.27", "0.33", "0.53"]
    assert [r[1] for r in shown] == ["0.00", "0.01", "0.00"]  # -0.00004 -> "0.00", not "-0.00"
    raw = _parse_table(render_table(stored, "stored"))["body"]
    assert [r[0] for r in raw] == ["0.267", "0.333", "0.533"] and [r[1] for r in raw] == ["-0.001", "0.012", "0.000"]
    cells = _parse_table(render_table(pd.DataFrame({"check": [(True, "passed", None)]}), "a tuple cell"))["body"]
    assert cells == [["yes, passed, –"]]
    markup = render_table(stored, "classes")
    assert '<td class="num">0.267</td>' in markup
    words = pd.DataFrame({"expected": ["(False, True)"], "interval": ["1.00 [nan, nan]"], "step": ["a -> b"],
                          "run": ["gpt-5-2_sierra"]})
    assert _parse_table(render_table(words, "text cells"))["body"] == [
        ["no, yes", "1.00 [–, –]", "a → b", "gpt\u20115\u20112_sierra"]]  # one word: non-breaking hyphens
    assert render_table(pd.DataFrame({"reason": []}), "Infeasible tasks by reason") == (
        '<p class="agentstudies-table-note">No rows in this run: Infeasible tasks by reason.</p>')

def test_table_formats_a_transposed_mixed_column_value_by_value():
    from agentstudies.book.chapter import render_table

    t = pd.DataFrame({"tasks": [12.0, 12.0], "rate": [0.25, 0.5], "harms": [3, 1]},
                     index=pd.Index(["clean", "stale"], name="condition")).T.astype(object)
    body = _parse_table(render_table(t, "transposed"))["body"]
    assert body == [["tasks", "12", "12"], ["rate", "0.25", "0.5"], ["harms", "3", "1"]]


def test_a_warning_becomes_a_note_and_is_kept_in_the_provenance(artifacts):
    import warnings

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shown = []
    saved = warnings.showwarning
    try:
        import IPython.display

        real = IPython.display.display
        IPython.display.display = lambda obj, **kw: shown.append(obj.data)
        ch = Chapter("demo", params={"seed": 0}, stage=False)
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = warnings.showwarning  # catch_warnings restores ours afterwards
            warnings.warn_explicit("share of draws excluded", RuntimeWarning, "/tmp/xyz123/mod.py", 3)
            warnings.warn_explicit("cohorts resampled apart", UserWarning, "/tmp/ipykernel_42/4168618696.py", 1)
        assert ch.warnings == ["runtime warning in mod.py: share of draws excluded",
                               "user warning in this chapter's code: cohorts resampled apart"]
        assert len(shown) == 2 and "Note from this run" in shown[0] and "/tmp/xyz123" not in shown[0]
        assert "RuntimeWarning:" not in shown[0]
        assert ch.provenance()["warnings"] == ch.warnings
    finally:
        IPython.display.display = real
        warnings.showwarning = saved
        InteractiveShell.clear_instance()


def test_glued_markdown_math_becomes_a_mathjax_span():
    from markdown_it import MarkdownIt

    from agentstudies.book.chapter import _inline_math

    text = _inline_math("for every $k$ and $t_{0.95,N-1}/z_{0.95}$, at a cost of \\$5")
    # what a CommonMark parser (the inline {glue:md} role's) makes of it
    rendered = MarkdownIt("commonmark").renderInline(text)
    assert '<span class="math notranslate nohighlight">\\(k\\)</span>' in rendered
    assert "\\(t_{0.95,N-1}/z_{0.95}\\)" in rendered
    assert rendered.count("$") == 1 and rendered.endswith("$5")


def test_glued_bullet_list_stays_a_list_inline():
    from markdown_it import MarkdownIt

    from agentstudies.book.chapter import _inline_bullets

    text = _inline_bullets("- **A**: reappears\n  with a long line\n- **B**: inconclusive")
    rendered = MarkdownIt("commonmark").renderInline(text)
    assert rendered == "• <strong>A</strong>: reappears with a long line<br>• <strong>B</strong>: inconclusive"
    assert _inline_bullets("One sentence - with a dash.") == "One sentence - with a dash."


def test_identifier_in_a_cell_is_code_that_breaks_only_after_dot_or_underscore():
    """A built-in parameter's name in a findings cell is inline code with a break point
    after each '.' and '_' (so a phone-width column never splits a name's letters); e.g.
    and numbers stay text; markup in the cell stays escaped."""
    from agentstudies.book.chapter import render_table

    df = pd.DataFrame({"why": ["set by ToolAgentProfile.p_giveup, `rank_tools` e.g. 0.5 <b>"]})
    markup = render_table(df, "why")
    assert ('<code class="agentstudies-ident">ToolAgentProfile.<wbr>p_<wbr>giveup</code>, '
            '<code class="agentstudies-ident">rank_<wbr>tools</code> e.g. 0.5 &lt;b&gt;') in markup
    assert _parse_table(markup)["body"] == [["set by ToolAgentProfile.p_giveup, rank_tools e.g. 0.5 <b>"]]
