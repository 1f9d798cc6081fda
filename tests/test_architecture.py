"""The import graph of ``src/agentstudies``: no cycles, and every import follows the layers.

Layers (a module may import its own package and any layer listed for it; see
CONTRIBUTING.md "Layers"):

    base      agentstudies (root), results, parallel, _tolerances,
              specs, findings, episodes (the reader of Inspect logs)  -> base only
    envs      environments                                           -> base
    stats     statistics toolkit                                     -> base
    methods   sasst, handoff, recovery (take plain tables)           -> stats, base
    agents    policies, controllers                                  -> envs, base
    studies   one subpackage per study family (env + agent, or a DGP) -> envs, agents, methods, stats, base
    top       book (chapter, table, site, runner, cli, paper/, the pipeline) -> anything

Imports inside ``if TYPE_CHECKING:`` blocks are annotations only and are ignored; imports
inside functions count. A module outside every layer fails the test: place it in
``LAYER_OF`` (and CONTRIBUTING.md) when you add one. Implementation modules ``_x.py`` of a
package are imported only from inside that package (others import the package).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "agentstudies"

#: First dotted component under ``agentstudies`` -> layer.
LAYER_OF = {
    "": "base",  # the root package itself
    "results": "base",
    "parallel": "base",
    "_tolerances": "base",
    "specs": "base",
    "_data": "base",
    "findings": "base",
    "envs": "envs",
    "stats": "stats",
    "sasst": "methods",
    "handoff": "methods",
    "recovery": "methods",
    "agents": "agents",
    "studies": "studies",
    "episodes": "base",  # episode tables from the user's Inspect logs (imports results only)
    "book": "top",  # the book layer: chapter, table, site, runner, cli, paper/, and the pipeline
}

#: Layer -> layers it may import (besides its own package).
ALLOWED = {
    "base": {"base"},
    "envs": {"base"},
    "stats": {"base"},
    "methods": {"stats", "base"},
    "agents": {"envs", "base"},
    "studies": {"envs", "agents", "methods", "stats", "base"},
    "top": {"base", "envs", "stats", "methods", "agents", "studies", "top"},
}


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted((SRC / ROOT).rglob("*.py")):
        parts = list(p.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _resolve(name: str) -> str:
    """The longest module of ours that ``name`` (a module or module.attribute) lies in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(module: str, path: Path) -> set[str]:
    """Modules of ours that ``module`` imports (TYPE_CHECKING blocks excluded)."""
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and _is_type_checking(node)
            for stmt in node.body for n in ast.walk(stmt)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {_resolve(a.name) for a in node.names if a.name.split(".")[0] == ROOT}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                name = f"{base}.{node.module}" if node.module else base
            else:
                name = node.module or ""
            if name.split(".")[0] != ROOT:
                continue
            for a in node.names:
                sub = f"{name}.{a.name}"
                found.add(sub if sub in MODULES else _resolve(name))
    found.discard(module)
    found.discard("")
    return found


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_every_module_has_a_layer():
    unknown = sorted(m for m in MODULES if _top(m) not in LAYER_OF)
    assert not unknown, f"modules outside every layer (add them to LAYER_OF and CONTRIBUTING.md): {unknown}"


def test_no_import_cycles():
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(GRAPH.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_imports_follow_the_layers():
    bad = []
    for m, targets in GRAPH.items():
        src = LAYER_OF.get(_top(m))
        for t in targets:
            if _package(t) == _package(m) and _top(m) != "":
                continue  # inside one package
            dst = LAYER_OF.get(_top(t))
            if src is None or dst is None or dst not in ALLOWED[src]:
                bad.append(f"{m} ({src}) imports {t} ({dst})")
    assert not bad, "imports against the layer order:\n" + "\n".join(sorted(bad))


def test_private_modules_are_imported_only_inside_their_package():
    bad = []
    for m, targets in GRAPH.items():
        for t in targets:
            parts = t.split(".")
            private = [i for i, p in enumerate(parts) if p.startswith("_") and i > 0]
            if not private:
                continue
            owner = ".".join(parts[: private[0]])
            if not (m == owner or m.startswith(owner + ".")):
                bad.append(f"{m} imports {t} (import {owner} instead)")
    assert not bad, "\n".join(sorted(bad))


def test_the_scanner_sees_lazy_imports_and_skips_type_checking(tmp_path):
    """Function-level imports count; ``if TYPE_CHECKING:`` imports do not; relative imports
    resolve against the package."""
    f = tmp_path / "mod.py"
    f.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from agentstudies.book.chapter import Chapter\n"
        "def g():\n    from agentstudies.agents import controllers\n"
        "from ._engine import SASST\n"
    )
    got = _imports("agentstudies.sasst.mod", f)
    assert got == {"agentstudies.agents.controllers", "agentstudies.sasst._engine"}
    assert LAYER_OF[_top("agentstudies.agents.controllers")] not in ALLOWED["methods"]


#: Other libraries whose private names this package uses -> (pinned version, the modules
#: that may use them). Each listed module names ``library==version`` in its text; a
#: private name of another library used anywhere else fails.
PRIVATE_API: dict[str, tuple[str, tuple[str, ...]]] = {
    "inspect_ai": ("0.3.285", ("agentstudies/agents/_inspect_internals.py",)),
    "inspect_evals": ("0.26.0", ("agentstudies/envs/tau/_env.py",)),
    # the parse-cache patches and PddlState's tables in engine, the PddlEnv subclass in pddl_env
    "textworld": ("1.7.0", ("agentstudies/envs/alfworld/engine.py", "agentstudies/envs/alfworld/pddl_env.py")),
}


def _private_uses(tree: ast.AST) -> set[str]:
    """Top-level names of other (non-stdlib) libraries whose private names ``tree`` imports
    or reads as a module attribute (``from lib._x import y``, ``from lib.m import _y``,
    ``import lib.m as m; m._y``)."""
    import sys

    aliases: dict[str, str] = {}
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name.split(".")[0]
                if any(p.startswith("_") and not p.startswith("__") for p in a.name.split(".")[1:]):
                    found.add(a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            top = node.module.split(".")[0]
            for a in node.names:
                aliases[a.asname or a.name] = top
            if (any(p.startswith("_") and not p.startswith("__") for p in node.module.split(".")[1:])
                    or any(a.name.startswith("_") for a in node.names)):
                found.add(top)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.add(aliases[node.value.id])
    return {lib for lib in found if lib != ROOT and lib not in sys.stdlib_module_names}


def test_private_names_of_other_libraries_stay_in_their_module():
    import re

    pins = dict(re.findall(r'"([A-Za-z0-9_.\-]+)==([^"]+)"', (SRC.parent / "pyproject.toml").read_text()))
    bad = []
    for module, path in MODULES.items():
        rel = path.relative_to(SRC).as_posix()
        for lib in _private_uses(ast.parse(path.read_text())):
            allowed = PRIVATE_API.get(lib, ("", ()))[1]
            if rel not in allowed:
                bad.append(f"{rel} uses private names of {lib} (allowed only in {allowed or 'no module'})")
    for lib, (version, paths) in PRIVATE_API.items():
        assert pins.get(lib.replace("_", "-"), pins.get(lib)) == version, f"{lib} is not pinned =={version} in pyproject"
        for rel in paths:
            assert f"{lib}=={version}" in (SRC / rel).read_text(), f"{rel} does not name {lib}=={version}"
    assert not bad, "\n".join(bad)


def test_private_use_scanner(tmp_path):
    tree = ast.parse("import textworld.envs.pddl.textgen as tg\nfrom inspect_ai.util._store import x\n"
                     "import os\nfrom pandas import DataFrame\ntg._parse = 1\nos._exit\nDataFrame._x\n")
    assert _private_uses(tree) == {"textworld", "inspect_ai", "pandas"}
