"""CONTRIBUTING.md's rules, checked.

* **Tolerances** live in ``agentstudies._tolerances``: no bare float literal of magnitude
  at most ``1e-5`` (what a tolerance, a clip or an epsilon looks like) in the code of a
  method module (``sasst/``, ``handoff/``, ``recovery/``, ``stats/``). Docstrings and
  comments are not code. Modules not yet converted are in :data:`ALLOWED` with their
  present count; the list only shrinks (a count that drops must be lowered).
* **No ``importorskip`` of our own package** in tests: an import error in
  ``agentstudies`` must fail, never skip.
* **No skip that depends on files left by an earlier run**: a test that needs a chapter's
  artifacts takes the ``smoke_runs`` fixture (tests/conftest.py), which builds them in the
  session; a test that reads ``artifacts_root()`` or ``artifacts/`` and skips is refused.
* **Public surfaces**: every package's ``__all__``, at every depth, stays within its
  budget in :data:`ALL_BUDGET` (present size where it cannot shrink yet; the target in a
  comment).
* **Module length**: no module in ``src/`` over :data:`MODULE_LIMIT` lines without a
  line starting ``Length:`` in its module docstring saying why it is one module.
* **Tests import public names**: a private module or name of ours imported by a test is
  listed in :data:`PRIVATE_IMPORTS` with the reason.

The function-length rule is tests/test_function_length.py; the layers are
tests/test_architecture.py.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "agentstudies"
TESTS = REPO / "tests"

METHODS = ("sasst", "handoff", "recovery", "stats")
#: A float literal this small (and not 0) is a tolerance, epsilon or clip.
TOLERANCE_LIKE = 1e-5

#: Method modules with bare tolerance-like literals, and how many, until they move to
#: agentstudies._tolerances; this list must reach {} (the test fails when a count rises,
#: and when it falls until lowered).
ALLOWED: dict[str, int] = {
    "sasst/_geometry.py": 2,  # sd > 1e-12, median > 1e-12 (DEGENERATE_TOL)
    "sasst/_planning.py": 1,  # covered >= -1e-12 (SUPPORT_TOL)
    "sasst/_slots.py": 1,     # tolerance: float = 1e-9
    "sasst/plots.py": 1,      # histogram edge + 1e-9
    "recovery/_models.py": 2,  # probability clip 1e-6 (x2)
    "recovery/_router.py": 2,  # harm <= eps + 1e-12 (x2)
    "recovery/_cate.py": 1,    # harm <= epsilon + 1e-12
}


def _tolerance_literals(path: Path) -> list[tuple[int, float]]:
    """(line, value) of every float constant with 0 < |value| <= TOLERANCE_LIKE in the code."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and type(node.value) is float
                  and 0 < abs(node.value) <= TOLERANCE_LIKE)


def _method_files() -> list[Path]:
    return sorted(p for pkg in METHODS for p in (SRC / pkg).rglob("*.py"))


def test_scanner_finds_tolerances_in_code_not_in_docstrings(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('"""Doc: 1e-12 is fine here."""\nX = 0.5\n\ndef g(a):\n    # 1e-9 in a comment\n'
                 '    return a > 1e-12 or a < -2.5e-7 or a == 1e-3\n')
    # -2.5e-7 is UnaryOp(-, 2.5e-7): the constant is 2.5e-7; 1e-3 and 0.5 are not tolerance-like
    assert _tolerance_literals(f) == [(6, 1e-12), (6, 2.5e-07)]  # by line, then value


def test_no_bare_tolerance_in_method_modules():
    found = {p.relative_to(SRC).as_posix(): _tolerance_literals(p) for p in _method_files()}
    over = {rel: lits for rel, lits in found.items() if len(lits) > ALLOWED.get(rel, 0)}
    assert not over, (
        "bare tolerance-like float literals in method modules: name them in "
        f"agentstudies/_tolerances.py and import them: {over}")
    stale = {rel: (n, len(found.get(rel, []))) for rel, n in ALLOWED.items() if len(found.get(rel, [])) < n}
    assert not stale, f"ALLOWED counts above what the files hold now, lower them (allowed, found): {stale}"


def _test_files() -> list[Path]:
    return sorted(TESTS.glob("*.py"))


def test_no_importorskip_of_our_own_package():
    pattern = re.compile(r"importorskip\(\s*[\"']agentstudies\b")
    found = [f"{p.name}:{i}" for p in _test_files()
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert not found, f"importorskip of agentstudies (an import error must fail, not skip): {found}"


def _skips_on_earlier_artifacts(source: str) -> list[str]:
    """Names of test functions that skip and read artifacts left on disk by another run."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = ast.get_source_segment(source, node) or ""
        skips = re.search(r"pytest\.skip\(|pytest\.mark\.skipif|importorskip\(", body)
        reads = re.search(r"artifacts_root\(\)|[\"']artifacts[\"']|/\s*[\"']artifacts/|book/chapters", body)
        if skips and reads and "smoke_runs" not in body:
            out.append(node.name)
    return out


def test_skip_detector_flags_only_skips_on_earlier_artifacts():
    bad = ('def test_x():\n    path = artifacts_root() / "ch" / "t.csv"\n'
           '    if not path.is_file():\n        pytest.skip("not run")\n')
    ok = ('def test_y(smoke_runs):\n    smoke_runs.get("ch")\n    path = smoke_runs.artifacts / "ch"\n'
          '    if not path.is_dir():\n        pytest.skip("no")\n')
    unrelated = 'def test_z():\n    pytest.skip("no chromium")\n'
    assert _skips_on_earlier_artifacts(bad + ok + unrelated) == ["test_x"]


def test_no_skip_that_depends_on_an_earlier_run():
    found = [f"{p.name}::{name}" for p in _test_files() if p.name != Path(__file__).name
             for name in _skips_on_earlier_artifacts(p.read_text(encoding="utf-8"))]
    assert not found, ("tests that skip unless an earlier run left artifacts (take the smoke_runs "
                       f"fixture and build them at smoke scale): {found}")


#: Package -> most names its ``__all__`` may hold, for every package at every depth: the
#: present size, with the target in a comment where the package must shrink. A package
#: without ``__all__`` counts as 0 names (envs: subpackages imported on demand).
ALL_BUDGET = {
    "agentstudies": 1,             # __version__
    "agentstudies.sasst": 16,      # engine, results, design, data, pre-registration, STATUSES, SharedWork (the engine's shared= argument); rules, geometry, planning, statuses, plots are public submodules
    "agentstudies.agents": 14,     # protocol, LLM settings/client, controllers, llm_spec, local server + its model name; one subpackage per env
    "agentstudies.agents.alfworld": 21,
    "agentstudies.agents.impossible": 11,
    "agentstudies.agents.tau": 23,
    "agentstudies.agents.toolsandbox": 16,
    "agentstudies.book": 0,        # one job per module (chapter, table, site, runner, cli, the pipeline)
    "agentstudies.book.paper": 0,  # map, compare, runs
    "agentstudies.envs": 0,
    "agentstudies.findings": 32,   # the verdict/basis vocabulary, the row builders and gates, Findings, controls
    "agentstudies.envs.alfworld": 17,    # lazy: names resolved from the modules on first use
    "agentstudies.envs.impossible": 42,  # target ~20: sandbox internals to a submodule
    "agentstudies.envs.tau": 37,         # target ~20
    "agentstudies.envs.toolsandbox": 55,  # target ~25: tool catalogue and milestones to submodules
    "agentstudies.handoff": 30,    # target ~20: validators and plot helpers to submodules
    "agentstudies.recovery": 25,
    "agentstudies.stats": 24,
    "agentstudies.studies": 3,     # paper values; one subpackage per study family
    "agentstudies.studies.alfworld": 0,              # handoff, training, recovery
    "agentstudies.studies.alfworld.handoff": 20,
    "agentstudies.studies.alfworld.recovery": 34,    # target ~15: constants to the harness module
    "agentstudies.studies.alfworld.training": 25,    # target ~15
    "agentstudies.studies.impossible": 41,           # target ~15: notebooks to import run/rates/findings/plots
    "agentstudies.studies.inspect": 3,
    "agentstudies.studies.sasst": 0,                 # one public module per chapter or job
    "agentstudies.studies.tau": 0,                   # one public module per chapter or job
    "agentstudies.studies.toolsandbox": 24,          # target ~12: the study's run module split by job
}


def _literal(node: ast.expr, known: dict[str, object]) -> object:
    """``node`` as a Python value: a literal, a name bound to one earlier, or
    ``sorted(...)`` / ``list(...)`` / ``tuple(...)`` of those (``__all__ = sorted(_EXPORTS)``)."""
    if isinstance(node, ast.Name) and node.id in known:
        return known[node.id]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("sorted", "list", "tuple")
            and len(node.args) == 1 and not node.keywords):
        value = list(_literal(node.args[0], known))
        return sorted(value) if node.func.id == "sorted" else value
    return ast.literal_eval(node)


def _all_of(init: Path) -> list[str] | None:
    """The ``__all__`` of a package ``__init__`` (None if it defines none), read without
    importing it."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    names = None
    known: dict[str, object] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        if getattr(node, "value", None) is None:
            continue
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            value = _literal(node.value, known)
            names = list(value) if not isinstance(node, ast.AugAssign) else (names or []) + list(value)
        elif isinstance(node, ast.Assign) and len(targets) == 1 and isinstance(targets[0], ast.Name):
            try:
                known[targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return names


def test_all_reader_follows_a_sorted_dict(tmp_path):
    f = tmp_path / "__init__.py"
    f.write_text('_EXPORTS = {"b": "m", "a": "n"}\n__all__ = sorted(_EXPORTS)\n__all__ += ["c"]\n')
    assert _all_of(f) == ["a", "b", "c"]


def _packages() -> list[str]:
    """Every package under src/agentstudies, at every depth."""
    return sorted("agentstudies" + "".join(f".{p}" for p in init.parent.relative_to(SRC).parts)
                  for init in SRC.rglob("__init__.py"))


@pytest.mark.parametrize("package", sorted(ALL_BUDGET))
def test_public_surface_within_budget(package):
    init = SRC.parent / Path(*package.split(".")) / "__init__.py"
    assert init.is_file(), f"{package} in ALL_BUDGET is no package any more: remove its entry"
    names = _all_of(init) or []
    assert len(names) == len(set(names)), f"{package}.__all__ lists a name twice"
    assert len(names) <= ALL_BUDGET[package], (
        f"{package}.__all__ holds {len(names)} names, budget {ALL_BUDGET[package]}: export less "
        "(a submodule, or a name users do not call)")


def test_every_package_has_a_budget():
    packages = _packages()
    assert "agentstudies.studies.alfworld.recovery" in packages  # the walk reaches every depth
    missing = sorted(set(packages) - set(ALL_BUDGET))
    assert not missing, f"packages without an __all__ budget in ALL_BUDGET: {missing}"


#: Lines (physical, as ``wc -l`` counts them) a module in src/ may hold without saying why.
MODULE_LIMIT = 700

def _module_length_problem(path: Path, limit: int = MODULE_LIMIT) -> int | None:
    """The line count of ``path`` if it is over ``limit`` and its module docstring has no
    line starting ``Length:``; else None."""
    text = path.read_text(encoding="utf-8")
    n = len(text.splitlines())
    if n <= limit:
        return None
    doc = ast.get_docstring(ast.parse(text)) or ""
    return None if any(line.strip().startswith("Length:") for line in doc.splitlines()) else n


def _long_modules() -> dict[str, int]:
    return {p.relative_to(SRC).as_posix(): n for p in sorted(SRC.rglob("*.py"))
            if (n := _module_length_problem(p)) is not None}


def test_module_length_detector(tmp_path):
    body = "x = 1\n" * 699
    short = tmp_path / "short.py"
    short.write_text('"""Doc."""\n' + body)  # 700 lines: at the limit
    long = tmp_path / "long.py"
    long.write_text('"""Doc."""\n' + body + "y = 2\n")  # 701 lines
    said = tmp_path / "said.py"
    said.write_text('"""Doc.\n\nLength: one state machine; split, it loses its invariant.\n"""\n' + body)
    comment = tmp_path / "comment.py"  # a Length: comment outside the docstring does not count
    comment.write_text('"""Doc."""\n# Length: not in the docstring\n' + body + "y = 2\n")
    assert _module_length_problem(short) is None
    assert _module_length_problem(long) == 701
    assert _module_length_problem(said) is None
    assert _module_length_problem(comment) == 702


def test_no_module_over_the_length_rule_without_a_reason():
    over = _long_modules()
    assert not over, (
        f"modules over {MODULE_LIMIT} lines: split them into modules with one job each, or add a "
        f"line starting 'Length:' to the module docstring saying why it is one module: {over}")


#: Private modules and names of ours that tests import, module -> why a test needs it. A
#: test otherwise imports what a user imports; this list only shrinks (an entry no test
#: uses any more fails until it is removed).
PRIVATE_IMPORTS: dict[str, str] = {
    "agentstudies": "the _data module (checked reads of data/): the checksum tests call it directly",
    "agentstudies._data": "DataFileError, the checked reader's error (base module without a public package)",
    "agentstudies._tolerances": "the tolerance a test compares against is the one the code uses",
    "agentstudies.agents.alfworld": "the learned policy's feature module, tested on hand-built beliefs",
    "agentstudies.agents.alfworld._learned": "candidate features and atoms, checked against hand-worked states",
    "agentstudies.agents.impossible": "the scripted policy module, for its speed-up equivalence test",
    "agentstudies.agents.toolsandbox": "the episode driver and policy modules, for the scoring oracles",
    "agentstudies.agents.toolsandbox._policy": "the word splitters, against ToolSandbox's own tokenisation",
    "agentstudies.book.chapter": "the markdown helpers of glued sentences, on hand-written inputs",
    "agentstudies.book.execute": "the run lock: a test holds it while a second run of the same output must be refused",
    "agentstudies.book.site": "the builder-inited check of unexecuted chapters, called without a Sphinx build",
    "agentstudies.book.runner": "the duration record the scheduler orders chapters by",
    "agentstudies.book.schedule": "conftest reads a side-by-side child's result as the book does",
    "agentstudies.book.execute": "the run lock and the incomplete-run marker, exercised directly",
    "agentstudies.envs.alfworld._testing": "small generated games: the fixtures of the engine tests",
    "agentstudies.envs.alfworld.engine": "the operator array, compared with TextWorld's own grounding",
    "agentstudies.envs.alfworld.env": "the engine class, to count parses and swap the memo out",
    "agentstudies.envs.impossible": "the sandbox's isolation layers, runner, verdict cache and classifier, each "
                                    "attacked or checked on its own",
    "agentstudies.envs.impossible._sandbox": "SandboxFault, the error a broken sandbox raises",
    "agentstudies.envs.impossible._verify": "the variant table's data folder, to rebuild it in a temp dir",
    "agentstudies.envs.tau": "the τ feature module, checked feature by feature",
    "agentstudies.envs.tau._audit": "one audit episode, run on a hand-picked task",
    "agentstudies.envs.toolsandbox._env": "the read-only views the environment hands out",
    "agentstudies.envs.toolsandbox._scoring": "ToolSandbox's scoring pieces, each against the peer's formula",
    "agentstudies.episodes": "one sample's row and the sample reader, on hand-made Inspect logs",
    "agentstudies.parallel": "the chunking seeded_map uses, for its order and sizes",
    "agentstudies.sasst": "the resampling and rules modules, for the exact speed-up checks",
    "agentstudies.sasst._engine": "the selection and radius screen, against brute force",
    "agentstudies.sasst._geometry": "sorted-support W1 helpers, against scipy.stats.wasserstein_distance",
    "agentstudies.sasst._plan": "the plan's ratio and softmax, against closed forms",
    "agentstudies.sasst._resample": "the resampled selections, against a direct loop",
    "agentstudies.sasst._results": "the result fingerprint's fields, for the speed-cache key",
    "agentstudies.sasst._support": "the support screen, against brute force",
    "agentstudies.studies": "the paper-values module, whose data files the checksum test lists",
    "agentstudies.studies._paper": "the paper-values folder and index, checked against data/paper/README.md",
    "agentstudies.studies.alfworld.handoff.run": "the model-agent wiring of the study, with a scripted chat server",
    "agentstudies.studies.sasst._common": "the simulation studies' shared trial pieces, against closed forms",
}


def _private_imports() -> dict[str, set[str]]:
    """Module -> test files that import a private module or name of ours from it."""
    found: dict[str, set[str]] = {}
    for p in _test_files():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "agentstudies":
                private_module = any(part.startswith("_") for part in node.module.split(".")[1:])
                if private_module or any(a.name.startswith("_") for a in node.names):
                    found.setdefault(node.module, set()).add(p.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    parts = a.name.split(".")
                    if parts[0] == "agentstudies" and any(part.startswith("_") for part in parts[1:]):
                        found.setdefault(a.name, set()).add(p.name)
    return found


def test_tests_import_public_names():
    found = _private_imports()
    unlisted = {m: sorted(files) for m, files in found.items() if m not in PRIVATE_IMPORTS}
    assert not unlisted, ("tests import private names of these modules; import the public name, or list the "
                          f"module in PRIVATE_IMPORTS with the reason: {unlisted}")
    stale = sorted(set(PRIVATE_IMPORTS) - set(found))
    assert not stale, f"PRIVATE_IMPORTS lists modules no test imports privately any more (remove them): {stale}"
