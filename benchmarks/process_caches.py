"""Every process-wide cache in src/: module-level mutable containers (empty dict / list /
set / OrderedDict / threading.local at import) and functions decorated with
``functools.lru_cache`` / ``functools.cache``.

``python benchmarks/process_caches.py`` prints ``module | line | name | kind`` and the
count. Not timed: the inventory a cache's measured gain (``benchmarks/bench_*.py``) is
checked against.
"""

from __future__ import annotations

import ast
from pathlib import Path
SRC = Path(__file__).resolve().parents[1] / "src" / "agentstudies"
MUTABLE_CALLS = {"dict", "list", "set", "OrderedDict", "WeakKeyDictionary", "WeakValueDictionary", "local", "defaultdict", "deque", "Counter"}
out = []
for p in sorted(SRC.rglob("*.py")):
    tree = ast.parse(p.read_text())
    rel = p.relative_to(SRC.parent).as_posix()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            v = node.value
            empty = (isinstance(v, (ast.Dict, ast.List, ast.Set)) and not (getattr(v, "keys", None) or getattr(v, "elts", None)))
            call = isinstance(v, ast.Call) and (getattr(v.func, "id", None) or getattr(v.func, "attr", None)) in MUTABLE_CALLS and not v.args and not v.keywords
            if names and (empty or call) and names[0] != "__all__":
                out.append((rel, node.lineno, names[0], "module-level " + ast.unparse(v)[:40]))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                s = ast.unparse(d)
                if "lru_cache" in s or s.endswith("cache"):
                    out.append((rel, node.lineno, node.name, s))
        if isinstance(node, ast.Call) and "lru_cache" in ast.unparse(node.func) and isinstance(node.func, ast.Call):
            out.append((rel, node.lineno, "<lru_cache(...)(f)>", ast.unparse(node)[:50]))
for r in out: print(*r, sep=" | ")
print(len(out))
