"""agentstudies.book.warm (make setup's byte-code step): it must import what the chapters
import, write .pyc files even under PYTHONDONTWRITEBYTECODE, and fail loudly by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentstudies.book import warm

ROOT = Path(__file__).resolve().parents[1]


def test_failed_import_is_named_and_exit_status_is_1(capsys):
    assert warm.main(("json", "agentstudies_no_such_module_xyz")) == 1
    err = capsys.readouterr().err
    assert "agentstudies_no_such_module_xyz" in err and "ModuleNotFoundError" in err
    assert warm.main(("json",)) == 0


def test_writes_pyc_although_the_environment_forbids_it(tmp_path):
    pkg = tmp_path / "warmprobe_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("X = 1\n")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(tmp_path))
    code = "import sys; from agentstudies.book import warm; sys.exit(warm.main(('warmprobe_pkg',)))"
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=tmp_path)
    assert list((pkg / "__pycache__").glob("__init__.*.pyc")), "no .pyc written"


def test_every_study_module_a_chapter_imports_is_warmed():
    # the modules the notebooks import from agentstudies, found in their source
    wanted = set()
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            for line in "".join(cell["source"]).splitlines():
                words = line.split()
                if len(words) >= 2 and words[0] in ("from", "import") and words[1].startswith("agentstudies"):
                    wanted.add(words[1].rstrip(","))
    assert len(wanted) >= 10, wanted  # the notebooks import the package: the scan works
    code = ("import json, sys; from agentstudies.book import warm\n"
            "sys.dont_write_bytecode = True\n"
            "[__import__(m) for m in warm.WARM_MODULES]; print(json.dumps(sorted(sys.modules)))")
    loaded = set(json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                           text=True).stdout))
    missing = sorted(m for m in wanted if m not in loaded)
    assert not missing, f"add to agentstudies.book.warm.WARM_MODULES: {missing}"
