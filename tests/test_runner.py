"""Tests of the book pipeline (agentstudies.book.runner, agentstudies.book.cli) on a throwaway tree.

Every test builds its own tiny repository under tmp_path (book/_toc.yml, profiles.yaml,
notebooks written with nbformat), so nothing here depends on the real chapters.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import nbformat as nbf
import pytest
import yaml

from agentstudies.book import cli, runner

REPO = Path(__file__).resolve().parents[1]

# A chapter-like notebook: writes the parameters it saw, its cwd and environment.
REPORT = """\
import json, os, pathlib
out = pathlib.Path(os.environ["AGENTSTUDIES_ARTIFACTS"]) / NAME
out.mkdir(parents=True, exist_ok=True)
seen = {k: v for k, v in globals().items() if k in PARAMS}
(out / "seen.json").write_text(json.dumps({
    "params": seen, "cwd": os.getcwd(), "mpl": os.environ.get("MPLBACKEND"),
    "artifacts": os.environ["AGENTSTUDIES_ARTIFACTS"]}))
"""


def make_notebook(path: Path, params: str | None, cells: list[str], *, tag: bool = True) -> Path:
    """Write a notebook: markdown title, a parameters cell (tagged unless tag=False), cells."""
    nb = nbf.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells.append(nbf.v4.new_markdown_cell(f"# {path.stem}"))
    if params is not None:
        cell = nbf.v4.new_code_cell(params)
        if tag:
            cell.metadata["tags"] = ["parameters"]
        nb.cells.append(cell)
    nb.cells += [nbf.v4.new_code_cell(src) for src in cells]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbf.write(nb, path)
    return path


def report_cells(name: str, params: list[str]) -> list[str]:
    return [f"NAME = {name!r}\nPARAMS = {params!r}\n" + REPORT]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A repository with chapters `good` (declares n_jobs), `nojobs`, `broken`, in that order."""
    root = tmp_path / "repo"
    (root / "book").mkdir(parents=True)
    shutil.copy(REPO / "book" / "_config.yml", root / "book" / "_config.yml")
    (root / "book" / "intro.md").write_text("# Test book\n\nA throwaway book.\n")
    toc = {
        "format": "jb-book", "root": "intro",
        "parts": [
            {"caption": "A", "chapters": [{"file": "chapters/good"}, {"file": "chapters/nojobs"}]},
            {"caption": "B", "chapters": [{"file": "chapters/broken"}]},
        ],
    }
    (root / "book" / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    nbs = root / "notebooks"
    make_notebook(
        nbs / "good.ipynb",
        "seed = 0  # master seed\nn_tasks: int = 20  # tasks per policy\n"
        "labels = ['a',\n          'b']\nn_jobs = 1\n",
        report_cells("good", ["seed", "n_tasks", "labels", "n_jobs"]),
    )
    make_notebook(nbs / "nojobs.ipynb", "seed = 0\nn = 5\n", report_cells("nojobs", ["seed", "n"]))
    make_notebook(nbs / "broken.ipynb", "seed = 0\n", ["x = 1", "raise ValueError(f'boom {seed}')", "y = 2"])
    profiles = {
        "chapters": {
            "good": {"quick": {}, "paper": {"n_tasks": 200}, "smoke": {"n_tasks": 2, "labels": ["z"]}},
            "nojobs": {"smoke": {"n": 1}},
        }
    }
    (nbs / "profiles.yaml").write_text(yaml.safe_dump(profiles))
    return root


def seen(root: Path, name: str) -> dict:
    return json.loads((root / "artifacts" / name / "seen.json").read_text())


@pytest.fixture(autouse=True)
def _no_artifacts_env(monkeypatch):
    monkeypatch.delenv("AGENTSTUDIES_ARTIFACTS", raising=False)


# ------------------------------------------------------------------ TOC and profiles
def test_toc_chapters_in_order_skipping_pages(tree):
    assert runner.toc_chapters(tree) == ["good", "nojobs", "broken"]


@pytest.mark.parametrize(
    "entries, match",
    [(["chapters/a", "chapters/a"], "listed twice"), (["chapters/a/b"], "chapters/<name>")],
)
def test_toc_rejects_bad_entries(tree, entries, match):
    toc = {"format": "jb-book", "root": "intro", "chapters": [{"file": e} for e in entries]}
    (tree / "book" / "_toc.yml").write_text(yaml.safe_dump(toc))
    with pytest.raises(runner.BookError, match=match):
        runner.toc_chapters(tree)


def test_profiles_missing_file_means_defaults(tree):
    (tree / "notebooks" / "profiles.yaml").unlink()
    assert runner.load_profiles(tree) == {}
    assert runner.resolve_parameters(tree / "notebooks" / "good.ipynb", "paper", root=tree) == {}


@pytest.mark.parametrize(
    "text, match",
    [
        ("chapters:\n  good:\n    papr: {n_tasks: 1}\n", "unknown profile.*papr"),
        ("chapter:\n  good: {}\n", "top-level key"),
        ("chapters:\n  good:\n    smoke: [1, 2]\n", "good.smoke must be a mapping"),
    ],
)
def test_profiles_malformed(tree, text, match):
    (tree / "notebooks" / "profiles.yaml").write_text(text)
    with pytest.raises(runner.ParameterError, match=match):
        runner.load_profiles(tree)


# ------------------------------------------------------------------------ parameters
def test_declared_parameters_multiline_and_help(tree):
    declared = runner.declared_parameters(tree / "notebooks" / "good.ipynb")
    assert list(declared) == ["seed", "n_tasks", "labels", "n_jobs"]
    assert declared["n_tasks"].default == "20"
    assert declared["n_tasks"].help == "tasks per policy"
    assert declared["labels"].default.replace(" ", "").replace("\n", "") == "['a','b']"


def test_untagged_parameters_cell_is_an_error(tree):
    nb = make_notebook(tree / "notebooks" / "untagged.ipynb", "seed = 0\n", [], tag=False)
    with pytest.raises(runner.ParameterError, match="untagged.*no code cell tagged 'parameters'"):
        runner.declared_parameters(nb)


def test_unknown_parameter_from_profile_names_everything(tree):
    prof = tree / "notebooks" / "profiles.yaml"
    prof.write_text("chapters:\n  good:\n    smoke: {n_task: 2}\n")
    with pytest.raises(runner.ParameterError) as info:
        runner.resolve_parameters(tree / "notebooks" / "good.ipynb", "smoke", root=tree)
    msg = str(info.value)
    assert "unknown parameter 'n_task' for notebook good" in msg
    assert "declared: seed, n_tasks, labels, n_jobs" in msg
    assert "profile 'smoke'" in msg


def test_unknown_explicit_parameter(tree):
    with pytest.raises(runner.ParameterError, match="unknown parameter 'n_jobs' for notebook nojobs"):
        runner.resolve_parameters(tree / "notebooks" / "nojobs.ipynb", None, {"n_jobs": 2})


def test_jobs_only_where_n_jobs_declared(tree):
    nbs = tree / "notebooks"
    assert runner.resolve_parameters(nbs / "good.ipynb", jobs=3, root=tree) == {"n_jobs": 3}
    assert runner.resolve_parameters(nbs / "nojobs.ipynb", jobs=3, root=tree) == {}


def test_precedence_profile_then_jobs_then_explicit(tree):
    (tree / "notebooks" / "profiles.yaml").write_text(
        "chapters:\n  good:\n    paper: {n_tasks: 200, seed: 7, n_jobs: 8}\n"
    )
    got = runner.resolve_parameters(
        tree / "notebooks" / "good.ipynb", "paper", {"seed": 1}, jobs=3, root=tree
    )
    assert got == {"n_tasks": 200, "seed": 1, "n_jobs": 3}
    assert runner.resolve_parameters(tree / "notebooks" / "good.ipynb", "quick", root=tree) == {}


def test_unknown_profile_name(tree):
    with pytest.raises(runner.ParameterError, match="unknown profile 'fast'"):
        runner.resolve_parameters(tree / "notebooks" / "good.ipynb", "fast", root=tree)


# ------------------------------------------------------------------------- execution
def test_run_notebook_injects_and_sets_environment(tree):
    result = runner.run_notebook("good", {"seed": 5}, profile="smoke", jobs=2, root=tree)
    assert result.output_path == tree / "book" / "chapters" / "good.ipynb"
    assert result.output_path.is_file()
    assert result.parameters == {"n_tasks": 2, "labels": ["z"], "n_jobs": 2, "seed": 5}
    got = seen(tree, "good")
    assert got["params"] == {"seed": 5, "n_tasks": 2, "labels": ["z"], "n_jobs": 2}
    assert Path(got["cwd"]) == tree / "notebooks"
    assert got["mpl"] == "module://matplotlib_inline.backend_inline"
    # the kernel writes into a staging folder under the artifacts root; swapped in on success
    assert Path(got["artifacts"]).parent == tree / "artifacts"
    assert sorted(p.name for p in (tree / "artifacts").iterdir()) == ["good"]
    assert result.seconds > 0


def test_a_kernel_that_dies_before_its_first_reply_is_started_once_more(tree, monkeypatch, capsys):
    """jupyter_client's start-up port race ("Kernel died before replying to kernel_info",
    no cell run) gets one more start; any other failure, or a second one, is not retried."""
    import papermill

    from agentstudies.book.execute import KERNEL_START_RACE

    real, calls = papermill.execute_notebook, []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError(KERNEL_START_RACE)
        return real(*args, **kwargs)

    monkeypatch.setattr(papermill, "execute_notebook", flaky)
    result = runner.run_notebook("good", {"seed": 5}, profile="smoke", root=tree)
    assert len(calls) == 2 and result.output_path.is_file()
    assert "starting it once more" in capsys.readouterr().err

    def always(*args, **kwargs):
        calls.append(1)
        raise RuntimeError(KERNEL_START_RACE)

    calls.clear()
    monkeypatch.setattr(papermill, "execute_notebook", always)
    with pytest.raises(RuntimeError, match="kernel_info"):
        runner.run_notebook("good", {"seed": 5}, profile="smoke", root=tree)
    assert len(calls) == 2


def test_figures_reach_the_executed_notebook(tree, monkeypatch):
    """With MPLBACKEND=Agg the book would have no figures; the runner overrides it."""
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = make_notebook(tree / "notebooks" / "fig.ipynb", "seed = 0\n",
                       ["import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([0, 1])"])
    out = runner.run_notebook(nb, {}, tree / "fig_out.ipynb", root=tree).output_path
    outputs = nbf.read(out, as_version=4).cells[-1].outputs
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert os.environ["MPLBACKEND"] == "Agg"  # the caller's environment is restored


def test_run_notebook_respects_existing_artifacts_env(tree, tmp_path, monkeypatch):
    """Without -o the environment variable chooses the folder; -o wins over it."""
    monkeypatch.setenv("AGENTSTUDIES_ARTIFACTS", str(tmp_path / "elsewhere"))
    runner.run_notebook("nojobs", {"n": 3}, root=tree)
    got = json.loads((tmp_path / "elsewhere" / "nojobs" / "seen.json").read_text())
    assert got["params"] == {"seed": 0, "n": 3}
    out = tmp_path / "out" / "nojobs_run.ipynb"
    res = runner.run_notebook(tree / "notebooks" / "nojobs.ipynb", {"n": 4}, out, root=tree)
    assert out.is_file() and res.artifacts == tmp_path / "out" / "nojobs_run.artifacts" / "nojobs"
    assert json.loads((res.artifacts / "seen.json").read_text())["params"] == {"seed": 0, "n": 4}
    assert json.loads((tmp_path / "elsewhere" / "nojobs" / "seen.json").read_text()) == got  # untouched


def test_two_o_runs_never_share_a_folder_and_a_failed_first_run_leaves_nothing(tree, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTSTUDIES_ARTIFACTS", str(tmp_path / "shared"))
    a = runner.run_notebook("nojobs", {"n": 1}, tmp_path / "a.ipynb", root=tree).artifacts
    b = runner.run_notebook("nojobs", {"n": 2}, tmp_path / "b.ipynb", root=tree).artifacts
    assert a.parent == tmp_path / "a.artifacts" and b.parent == tmp_path / "b.artifacts"
    assert not (tmp_path / "shared").exists()
    with pytest.raises(runner.NotebookExecutionError):
        runner.run_notebook("broken", {"seed": 1}, tmp_path / "new" / "c.ipynb", root=tree)
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["c.failed.ipynb"]  # no empty c.artifacts/


def test_failing_cell_names_notebook_and_cell(tree):
    out = tree / "book" / "chapters" / "broken.ipynb"
    out.parent.mkdir(parents=True)
    out.write_text("stale output of an earlier run")
    with pytest.raises(runner.NotebookExecutionError) as info:
        runner.run_notebook("broken", {"seed": 4}, root=tree)
    err = info.value
    # source cells: 0 markdown, 1 parameters, 2 "x = 1", 3 raise
    assert (err.notebook, err.cell_index, err.ename, err.evalue) == ("broken", 3, "ValueError", "boom 4")
    assert "notebook broken failed in cell 3 with ValueError: boom 4" in str(err)
    assert err.output_path == out.with_name("broken.failed.ipynb")
    kept = nbf.read(err.output_path, as_version=4)
    failing = [c for c in kept.cells if c.get("outputs") and c.outputs[0].get("ename")]
    assert [c.source for c in failing] == ["raise ValueError(f'boom {seed}')"]
    assert str(err.output_path) in str(err)
    # the earlier output is kept byte-identical (the failed run is beside it)
    assert out.read_text() == "stale output of an earlier run"


@pytest.mark.parametrize("bad", [1, 2, 3])
def test_failing_cell_index_is_the_source_index(tree, bad):
    """The injected-parameters cell and papermill's error banners must not shift the index."""
    cells = ["a = 1", "b = 2", "c = 3"]
    cells[bad - 1] = "1 / 0"
    nb = make_notebook(tree / "notebooks" / "zero.ipynb", "seed = 0\n", cells)
    with pytest.raises(runner.NotebookExecutionError) as info:
        runner.run_notebook(nb, {"seed": 1}, tree / "out.ipynb", root=tree)
    assert info.value.cell_index == bad + 1  # after the markdown and the parameters cell
    assert info.value.ename == "ZeroDivisionError"


def test_dead_kernel_is_reported_with_its_cell(tree):
    nb = make_notebook(tree / "notebooks" / "dead.ipynb", "seed = 0\n", ["a = 1", "import os; os._exit(3)", "b = 2"])
    with pytest.raises(runner.NotebookExecutionError) as info:
        runner.run_notebook(nb, {}, tree / "dead_out.ipynb", root=tree)
    assert (info.value.cell_index, info.value.ename) == (3, "DeadKernelError")
    assert info.value.output_path.is_file()


def test_relative_artifacts_env_is_relative_to_the_caller(tree, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTSTUDIES_ARTIFACTS", "rel_artifacts")
    runner.run_notebook("nojobs", {}, root=tree)  # no -o: the variable chooses the folder
    assert (tmp_path / "rel_artifacts" / "nojobs" / "seen.json").is_file()


def test_run_book_checks_all_parameters_before_running(tree):
    (tree / "notebooks" / "profiles.yaml").write_text("chapters:\n  broken:\n    smoke: {sed: 1}\n")
    with pytest.raises(runner.ParameterError, match="unknown parameter 'sed' for notebook broken"):
        runner.run_book("smoke", root=tree, echo=lambda msg: None)
    assert not (tree / "book" / "chapters" / "good.ipynb").exists()


def test_run_book_only_unknown_name_lists_chapters(tree):
    with pytest.raises(runner.UnknownChapterError, match="unknown chapter.*nope.*good, nojobs, broken"):
        runner.run_book("quick", only=["good", "nope"], root=tree)


def test_run_book_missing_notebook_is_clear(tree):
    (tree / "notebooks" / "nojobs.ipynb").unlink()
    with pytest.raises(runner.UnknownChapterError, match="notebook does not exist yet: nojobs"):
        runner.run_book("quick", root=tree)


def test_run_book_jobs_and_order(tree):
    lines: list[str] = []
    results = runner.run_book("smoke", only=["nojobs", "good"], jobs=3, root=tree, echo=lines.append)
    assert [r.name for r in results] == ["good", "nojobs"]  # TOC order, not --only order
    assert seen(tree, "good")["params"]["n_jobs"] == 3
    assert seen(tree, "nojobs")["params"] == {"seed": 0, "n": 1}
    assert sum(line.startswith("ok  ") for line in lines) == 2


def test_run_book_side_by_side_equals_one_at_a_time(tree):
    """at_once=2 runs chapters in child processes: same executed parameters (as the
    kernels saw them, in seen.json), results in TOC order, one "ok" line per chapter."""
    lines: list[str] = []
    one = runner.run_book("smoke", only=["good", "nojobs"], jobs=2, root=tree, echo=lambda m: None)
    first = {n: seen(tree, n)["params"] for n in ("good", "nojobs")}
    two = runner.run_book("smoke", only=["good", "nojobs"], jobs=2, root=tree, echo=lines.append, at_once=2)
    assert [r.name for r in two] == [r.name for r in one] == ["good", "nojobs"]
    assert [r.parameters for r in two] == [r.parameters for r in one]
    assert {n: seen(tree, n)["params"] for n in ("good", "nojobs")} == first
    assert all(r.output_path.is_file() for r in two)
    assert sum(line.startswith("ok  ") for line in lines) == 2


def test_run_book_side_by_side_raises_the_failure_and_keeps_the_others(tree):
    """The broken chapter's error reaches the caller with its cell; the chapters that ran
    beside it are executed and kept; a failed copy is left for inspection."""
    with pytest.raises(runner.NotebookExecutionError) as info:
        runner.run_book("smoke", root=tree, echo=lambda m: None, at_once=2)
    err = info.value
    assert (err.notebook, err.cell_index, err.ename, err.evalue) == ("broken", 3, "ValueError", "boom 0")
    chapters = tree / "book" / "chapters"
    assert (chapters / "good.ipynb").is_file() and (chapters / "nojobs.ipynb").is_file()
    assert not (chapters / "broken.ipynb").exists() and (chapters / "broken.failed.ipynb").is_file()
    with pytest.raises(runner.ParameterError, match="at_once must be >= 1"):
        runner.run_book("smoke", root=tree, at_once=0)


# ----------------------------------------------------------------------------- book
def test_build_book_refuses_unexecuted_chapters(tree):
    with pytest.raises(runner.BookBuildError, match="good: not executed yet"):
        runner.build_book(tree, echo=lambda msg: None)


def test_build_book_needs_root_page(tree, capsys):
    (tree / "book" / "intro.md").unlink()
    with pytest.raises(runner.BookBuildError, match="root page book/intro.md does not exist"):
        runner.build_book(tree)
    assert cli.main(["book", "--root", str(tree), "--only", "good"]) == 1  # fails before running
    assert "book/intro.md does not exist" in capsys.readouterr().err
    assert not (tree / "book" / "chapters" / "good.ipynb").exists()


@pytest.mark.slow
def test_book_end_to_end_offline(tree, capsys):
    """Execute two chapters and build the HTML with the real book/_config.yml."""
    toc = yaml.safe_load((tree / "book" / "_toc.yml").read_text())
    toc["parts"] = toc["parts"][:1]  # drop the broken chapter
    (tree / "book" / "_toc.yml").write_text(yaml.safe_dump(toc))
    assert cli.main(["book", "--root", str(tree), "--profile", "smoke", "--jobs", "2"]) == 0
    html = tree / "book" / "_build" / "html"
    assert (html / "index.html").is_file()
    page = (html / "chapters" / "good.html").read_text()
    assert "seen.json" in page  # the executed source is rendered
    assert "built the book" in capsys.readouterr().out


# ------------------------------------------------------------------------------ CLI
@pytest.mark.parametrize(
    "text, value",
    [
        ("3", 3), ("-4", -4), ("0.5", 0.5), ("1e3", 1000.0), ("True", True), ("false", False),
        ("None", None), ("null", None), ("no", "no"), ("on", "on"), ("2020-01-01", "2020-01-01"),
        ("[1, 2]", [1, 2]), ("{a: 1}", {"a": 1}), ("tau_retail", "tau_retail"), ("", ""),
    ],
)
def test_parse_value(text, value):
    got = cli.parse_value(text)
    assert got == value and type(got) is type(value)


def test_cli_run_with_parameters(tree, capsys, tmp_path):
    out = tmp_path / "o.ipynb"
    code = cli.main(["run", "good", "--root", str(tree), "-p", "n_tasks", "7", "-p", "seed", "12",
                     "-p", "labels", "[x, y]", "-o", str(out)])
    assert code == 0
    params = json.loads((tmp_path / "o.artifacts" / "good" / "seen.json").read_text())["params"]
    assert params == {"seed": 12, "n_tasks": 7, "labels": ["x", "y"], "n_jobs": 1}
    assert not (tree / "artifacts" / "good").exists()
    printed = capsys.readouterr().out
    assert out.is_file() and "ok  good" in printed
    # with -o, tables go beside the output notebook, not into the book's artifacts
    assert f"tables and figures: {tmp_path / 'o.artifacts' / 'good'}" in printed
    # -r passes the string unparsed: a string cannot stand for seed's int default
    assert cli.main(["run", "good", "--root", str(tree), "-r", "seed", "12", "-o", str(out)]) == 1
    assert "parameter 'seed' of notebook good expects int" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "good", "-p", "n_task", "1"], "unknown parameter 'n_task' for notebook good"),
        (["run", "good", "-p", "seed", "1", "-p", "seed", "2"], "'seed' is given twice"),
        (["run", "missing"], "does not exist"),
        (["book", "--only", "nope"], "unknown chapter(s) nope; chapters in book/_toc.yml: good"),
        (["run", "broken"], "notebook broken failed in cell 3 with ValueError: boom 0"),
        (["run", "good", "--local-llm"], "--local-llm: good declares no agent / model_base_url parameter"),
    ],
)
def test_cli_errors_exit_1(tree, capsys, args, message):
    assert cli.main([*args, "--root", str(tree)]) == 1
    assert message in capsys.readouterr().err


def test_cli_usage_errors_exit_2(tree):
    with pytest.raises(SystemExit) as info:
        cli.main(["book", "--jobs", "0", "--root", str(tree)])
    assert info.value.code == 2


def test_cli_list_never_reads_sys_argv(tree, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["fast_downward", "--translate", "bogus"])
    assert cli.main(["list", "--root", str(tree)]) == 0
    out = capsys.readouterr().out
    assert "1. good" in out and "tasks per policy" in out
    row = next(line.split() for line in out.splitlines() if line.strip().startswith("n_tasks"))
    assert row[:5] == ["n_tasks", "20", "-", "200", "2"]


def test_cli_list_reports_bad_profile(tree, capsys):
    (tree / "notebooks" / "profiles.yaml").write_text("chapters:\n  nojobs:\n    paper: {m: 1}\n")
    assert cli.main(["list", "--root", str(tree)]) == 1
    assert "unknown parameter 'm' for notebook nojobs" in capsys.readouterr().out


def test_parameter_types_follow_the_declared_defaults(tmp_path):
    """A value whose type cannot stand for the default's is refused before any run."""
    import nbformat

    from agentstudies.book import runner

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell('seed = 0\nrate = 0.5\nname = "x"\nflag = True\nitems = [1]\nopt = None\n')
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell]
    path = tmp_path / "typed.ipynb"
    nbformat.write(nb, path)
    ok = {"seed": 3, "rate": 2, "name": "y", "flag": False, "items": [], "opt": "anything"}
    assert runner.resolve_parameters(path, parameters=ok) == ok
    assert runner.resolve_parameters(path, parameters={"name": None}) == {"name": None}
    for key, bad in [("seed", "abc"), ("seed", 1.5), ("seed", True), ("rate", "x"), ("flag", "maybe"),
                     ("items", 3), ("name", 1)]:
        with pytest.raises(runner.ParameterError, match=f"parameter '{key}' of notebook typed expects"):
            runner.resolve_parameters(path, parameters={key: bad})


# ------------------------------------------------------- runs that never damage the book
def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the book's executed chapters and artifacts, byte for byte."""
    files = {}
    for folder in (root / "book" / "chapters", root / "artifacts"):
        for p in sorted(folder.rglob("*")) if folder.exists() else []:
            if p.is_file() and not p.name.endswith(".failed.ipynb"):
                files[str(p.relative_to(root))] = p.read_bytes()
    return files


def test_failed_run_keeps_notebook_and_artifacts_byte_identical(tree):
    runner.run_notebook("good", {}, root=tree)
    before = _snapshot(tree)
    assert "artifacts/good/seen.json" in before
    bad = tree / "notebooks" / "good.ipynb"
    nb = nbf.read(bad, as_version=4)
    # an in-range value the notebook itself rejects (n_tasks = 0 is refused before the run)
    nb.cells.append(nbf.v4.new_code_cell("if n_tasks == 7:\n    raise ValueError('n_tasks must not be 7')"))
    nbf.write(nb, bad)
    with pytest.raises(runner.NotebookExecutionError, match="n_tasks must not be 7"):
        runner.run_notebook("good", {"n_tasks": 7}, root=tree)
    assert _snapshot(tree) == before
    assert (tree / "book" / "chapters" / "good.failed.ipynb").is_file()
    assert not [p for p in (tree / "artifacts").iterdir() if p.name.startswith(".")]  # no staging left


def test_output_folder_is_refused_before_running(tree, tmp_path, capsys):
    folder = tmp_path / "outdir"
    folder.mkdir()
    assert cli.main(["run", "good", "--root", str(tree), "-o", str(folder)]) == 1
    assert "is a folder" in capsys.readouterr().err
    assert list(folder.iterdir()) == []
    with pytest.raises(runner.ParameterError, match="must be a .ipynb file"):
        runner.run_notebook("good", {}, tmp_path / "out.txt", root=tree)


def test_notebook_path_gets_its_own_artifacts(tree, tmp_path):
    variant = tmp_path / "variants" / "my_variant.ipynb"
    variant.parent.mkdir()
    shutil.copy(tree / "notebooks" / "good.ipynb", variant)
    result = runner.run_notebook(variant, {"seed": 3}, root=tree)
    assert result.output_path == variant.with_name("my_variant.executed.ipynb")
    assert result.output_path.is_file()
    assert result.artifacts is not None and result.artifacts.is_dir()
    assert result.artifacts.parent == variant.with_name("my_variant.executed.artifacts")
    assert not (tree / "artifacts").exists() and not (tree / "book" / "chapters").exists()
    assert str(result.artifacts) in result.summary()


def test_profile_with_a_notebook_path_is_honoured_or_refused(tree, tmp_path):
    plain = tmp_path / "plain.ipynb"
    shutil.copy(tree / "notebooks" / "good.ipynb", plain)
    with pytest.raises(runner.ParameterError, match="--profile smoke: notebook .*plain.ipynb is not a chapter"):
        runner.run_notebook(plain, {}, profile="smoke", root=tree)
    named = make_notebook(tmp_path / "named.ipynb", "seed = 0\nn_tasks = 20\nlabels = ['a']\nn_jobs = 1\n",
                          ["# Chapter.from_parameters('good', globals())\nresult = n_tasks"])
    result = runner.run_notebook(named, {}, tmp_path / "named_out.ipynb", profile="smoke", root=tree)
    assert result.parameters == {"n_tasks": 2, "labels": ["z"]}  # good's smoke profile


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_tasks": None}, "'n_tasks' .* expects int like its default; got None"),
        ({"labels": ["a", 3]}, "'labels' .* expects str like its default element \\[1\\]; got int 3"),
        ({"seed": -1}, "'seed' .* non-negative integer seed.*got -1"),
        ({"n_tasks": -5}, "'n_tasks' .* is a count and must be >= 0; got -5"),
        ({"n_jobs": 0}, "'n_jobs' .* got 0"),
    ],
)
def test_parameters_checked_up_front(tree, params, match):
    with pytest.raises(runner.ParameterError, match=match):
        runner.run_notebook("good", params, root=tree)
    assert not (tree / "book" / "chapters").exists()


def test_list_elements_of_nested_lists_are_checked(tmp_path):
    nb = make_notebook(tmp_path / "nest.ipynb", "sim_seeds = [0, 1]\ndesigns = [[40, 20]]\nname = 'x'\n", [])
    with pytest.raises(runner.ParameterError, match="'sim_seeds' .* element \\[0\\]; got str 'a'"):
        runner.resolve_parameters(nb, parameters={"sim_seeds": ["a", "b"]})
    with pytest.raises(runner.ParameterError, match="'sim_seeds' .* non-negative"):
        runner.resolve_parameters(nb, parameters={"sim_seeds": [0, -2]})
    with pytest.raises(runner.ParameterError, match="'designs' .* element \\[0\\] element \\[1\\]"):
        runner.resolve_parameters(nb, parameters={"designs": [[40, "x"]]})
    assert runner.resolve_parameters(nb, parameters={"name": None}) == {"name": None}  # a str may be off


def test_unknown_chapter_lists_the_chapters(tree, capsys):
    assert cli.main(["run", "no_such_chapter", "--root", str(tree)]) == 1
    err = capsys.readouterr().err
    assert "no chapter named 'no_such_chapter'" in err and "good, nojobs, broken" in err


def test_non_profile_run_is_marked_on_page_and_in_metadata(tree):
    runner.run_notebook("good", {"n_tasks": 7, "n_jobs": 2}, root=tree)
    nb = nbf.read(tree / "book" / "chapters" / "good.ipynb", as_version=4)
    notes = [c for c in nb.cells if runner.NOTE_TAG in c.metadata.get("tags", [])]
    assert len(notes) == 1 and nb.cells.index(notes[0]) == 1  # right after the title
    assert "Non-profile run" in notes[0].source and "`n_tasks = 7`" in notes[0].source
    assert "n_jobs" not in notes[0].source  # n_jobs never changes a table
    assert nb.metadata["agentstudies"]["overrides"] == {"n_tasks": 7}
    lines = runner.overwrite_report(["good", "nojobs"], tree)
    assert "will overwrite 1 executed chapter" in lines[0]
    assert "NON-PROFILE run: n_tasks=7" in lines[1]
    # a run at the profile's own values carries no note
    runner.run_notebook("good", {"n_tasks": 20}, root=tree)
    nb = nbf.read(tree / "book" / "chapters" / "good.ipynb", as_version=4)
    assert not [c for c in nb.cells if runner.NOTE_TAG in c.metadata.get("tags", [])]
    assert "profile quick" in runner.overwrite_report(["good"], tree)[1]


def test_book_says_what_it_overwrites(tree):
    runner.run_notebook("nojobs", {"n": 9}, root=tree)
    lines: list[str] = []
    runner.run_book("quick", only=["nojobs"], root=tree, echo=lines.append)
    text = "\n".join(lines)
    assert "will overwrite 1 executed chapter" in text and "NON-PROFILE run: n=9" in text


def test_build_command_only_builds(tree, capsys, monkeypatch):
    called = []
    monkeypatch.setattr(runner, "build_book", lambda root=None, **kw: called.append(root))
    monkeypatch.setattr(runner, "run_notebook", lambda *a, **k: pytest.fail("build must not execute"))
    assert cli.main(["build", "--root", str(tree)]) == 0
    assert called == [tree]


def test_relative_artifacts_env_one_rule_for_plain_papermill(tmp_path, monkeypatch):
    """chapter.artifacts_root resolves a relative folder against $PWD (the shell's folder,
    which papermill's kernel inherits even with --cwd), the CLI against its cwd: same."""
    from agentstudies.book.chapter import artifacts_root

    shell = tmp_path / "shell"
    (shell / "notebooks").mkdir(parents=True)
    monkeypatch.setenv("PWD", str(shell))
    monkeypatch.chdir(shell / "notebooks")  # the kernel's cwd under papermill --cwd notebooks
    monkeypatch.setenv("AGENTSTUDIES_ARTIFACTS", "rel")
    assert artifacts_root() == shell / "rel"
    assert runner.resolve_artifacts_env("rel", shell) == shell / "rel"


def test_kernel_gets_one_blas_thread_unless_the_caller_sets_it(monkeypatch):
    """The kernel environment pins BLAS/OpenMP to one thread (as seeded_map's workers do);
    a value the caller set is kept; everything is restored afterwards."""
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    with runner._quiet_progress():
        assert os.environ["OPENBLAS_NUM_THREADS"] == "1" and os.environ["MKL_NUM_THREADS"] == "1"
        assert os.environ["OMP_NUM_THREADS"] == "3"
        assert os.environ["TQDM_DISABLE"] == "1"
    assert "OPENBLAS_NUM_THREADS" not in os.environ and "MKL_NUM_THREADS" not in os.environ
    assert os.environ["OMP_NUM_THREADS"] == "3"


def test_side_by_side_order_prefers_the_same_profiles_last_run(tmp_path):
    from agentstudies.book.runner import DURATIONS_FILE, _last_seconds, _record_seconds

    chapters = tmp_path / "book" / "chapters"
    chapters.mkdir(parents=True)
    (chapters / "a.ipynb").write_text(json.dumps({"metadata": {"papermill": {"duration": 12.5}}}))
    assert _last_seconds(tmp_path, "a", "paper") == 12.5  # no record yet: the executed copy
    assert _last_seconds(tmp_path, "b", "paper") == float("inf")  # never run: first
    _record_seconds(tmp_path, "paper", "a", 301.04)
    _record_seconds(tmp_path, "quick", "a", 40.0)
    _record_seconds(tmp_path, "paper", "b", 7.0)
    assert _last_seconds(tmp_path, "a", "paper") == 301.0 and _last_seconds(tmp_path, "a", "quick") == 40.0
    assert _last_seconds(tmp_path, "b", "paper") == 7.0
    assert json.loads((tmp_path / DURATIONS_FILE).read_text()) == {"paper": {"a": 301.0, "b": 7.0},
                                                                   "quick": {"a": 40.0}}
    (tmp_path / DURATIONS_FILE).write_text("{torn")  # unreadable: ignored, then rewritten
    assert _last_seconds(tmp_path, "a", "paper") == 12.5
    _record_seconds(tmp_path, "paper", "a", 5.0)
    assert _last_seconds(tmp_path, "a", "paper") == 5.0


def test_a_fresh_clone_orders_its_first_run_by_the_shipped_durations(tmp_path):
    from agentstudies.book.runner import REFERENCE_DURATIONS_FILE, _last_seconds, _record_seconds, toc_chapters

    (tmp_path / "notebooks").mkdir()
    (tmp_path / REFERENCE_DURATIONS_FILE).write_text(json.dumps({"paper": {"a": 200.0, "b": 30.0}}))
    executed = tmp_path / "book" / "chapters"
    executed.mkdir(parents=True)
    (executed / "a.ipynb").write_text(json.dumps({"metadata": {"papermill": {"duration": 4.0}}}))
    # no record of this checkout's own: the shipped time at the profile beats a quick-run copy
    assert _last_seconds(tmp_path, "a", "paper") == 200.0 and _last_seconds(tmp_path, "b", "paper") == 30.0
    assert _last_seconds(tmp_path, "a", "quick") == 4.0  # not shipped for quick: the executed copy
    assert _last_seconds(tmp_path, "c", "paper") == float("inf")
    _record_seconds(tmp_path, "paper", "b", 500.0)  # this checkout's own run wins
    assert _last_seconds(tmp_path, "b", "paper") == 500.0
    (tmp_path / REFERENCE_DURATIONS_FILE).write_text('{"paper": [1, 2]}')  # malformed: ignored
    assert _last_seconds(tmp_path, "a", "paper") == 4.0

    # the shipped file names real chapters, each with a positive time
    shipped = json.loads((Path(__file__).resolve().parents[1] / REFERENCE_DURATIONS_FILE).read_text())
    toc = set(toc_chapters(Path(__file__).resolve().parents[1]))
    assert set(shipped) == {"paper", "quick"}
    for profile in ("paper", "quick"):
        assert set(shipped[profile]) == toc, f"give {REFERENCE_DURATIONS_FILE} each TOC chapter's {profile} time"
        assert all(v > 0 for v in shipped[profile].values())


def test_confidence_levels_are_checked_up_front(tmp_path):
    nb = make_notebook(tmp_path / "lv.ipynb", "level = 0.95\nalpha = 0.05\nci_level = 0.9\n", [])
    for name, bad in (("level", 1.5), ("level", 0), ("alpha", 1), ("ci_level", -0.1)):
        with pytest.raises(runner.ParameterError, match=f"'{name}' .* strictly between 0 and 1; got {bad}"):
            runner.resolve_parameters(nb, parameters={name: bad})
    assert runner.resolve_parameters(nb, parameters={"level": 0.9, "alpha": 0.1}) == {"level": 0.9, "alpha": 0.1}


def test_the_book_model_imports_alone_without_papermill():
    """book.chapter, book.site and book.paper.runs read the TOC and parameters through
    agentstudies.book.model: importing it loads no other pipeline module and no papermill, counted in a fresh interpreter."""
    import subprocess

    code = ("import sys, agentstudies.book.model; "
            "print(sorted(m for m in sys.modules if m.startswith(('agentstudies', 'papermill', 'nbclient'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.replace("'", '"')) == ["agentstudies", "agentstudies.book", "agentstudies.book.model"]


def test_find_root_outside_the_repository_falls_back_to_the_source_tree(tmp_path, monkeypatch):
    """From a folder with no book/_toc.yml above it, the root is the tree the package was
    installed from (editable install), located from the model module's own path."""
    from agentstudies.book import model

    monkeypatch.chdir(tmp_path)
    assert model.find_root() == REPO
    assert runner.find_root(tmp_path) == REPO


def test_runner_reexports_the_pipeline_modules_public_names():
    """runner stays the public entry point: every public name of the book modules is
    reachable from it, as the very same object."""
    from agentstudies.book import build, execute, kernel, model, schedule

    for module in (model, kernel, execute, schedule, build):
        for name in module.__all__:
            assert getattr(runner, name) is getattr(module, name), f"{module.__name__}.{name}"
