"""The linter configured in pyproject.toml ([tool.ruff]) passes on src/, and lines over
its ``line-length`` do not grow in number.

Ruff runs as ``python -m ruff`` from the environment (pinned in the ``dev`` extra and in
environment.yml; ``make setup`` installs it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: Lines of src/ longer than [tool.ruff] line-length (E501): the number when the linter
#: reached every branch. It may only fall; lower it when you shorten lines.
LONG_LINES = 277


def _ruff(*args: str) -> subprocess.CompletedProcess:
    try:
        import ruff  # noqa: F401
    except ImportError:  # pragma: no cover - an environment without the dev extra
        pytest.fail("ruff is not installed: run `make setup` (ruff==0.17.5 is pinned in the dev extra)")
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def test_ruff_passes_on_src():
    res = _ruff("check", "--no-cache", "src")
    assert res.returncode == 0, res.stdout + res.stderr


def test_long_lines_do_not_grow():
    res = _ruff("check", "--no-cache", "--select", "E501", "--output-format", "concise", "--exit-zero", "src")
    found = [line for line in res.stdout.splitlines() if " E501 " in line]
    assert len(found) <= LONG_LINES, (
        f"{len(found)} lines of src/ exceed [tool.ruff] line-length (budget {LONG_LINES}); shorten the new ones:\n"
        + "\n".join(found[-20:]))


def test_ruff_sees_a_violation(tmp_path):
    """The linter run here reports what it should: an unused import and an over-long line."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n" + "x = '" + "a" * 130 + "'\n")
    res = _ruff("check", "--no-cache", "--isolated", "--select", "F401,E501", "--line-length", "120",
                "--output-format", "concise", str(bad))
    assert "F401" in res.stdout and "E501" in res.stdout


def test_sandbox_harness_lints_as_the_one_program_it_runs_as():
    """The harness's two files are joined into one ``python -c`` source: lint that source
    (undefined names included, which each file alone must skip)."""
    from agentstudies.envs.impossible import _isolation

    res = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select", "F",
                          "--stdin-filename", "harness.py", "-"], cwd=REPO, input=_isolation._HARNESS,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
