"""Dependencies are pinned exactly, and environment.yml mirrors pyproject.toml's pins."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]


def pyproject_requirements() -> list[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    return reqs


def pins(requirements: list[str], where: str) -> dict[str, str]:
    """``{canonical name: version}``; fails on an unpinned or duplicated requirement."""
    out: dict[str, str] = {}
    problems = []
    for text in requirements:
        req = Requirement(text)
        specs = list(req.specifier)
        name = canonicalize_name(req.name)
        if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
            problems.append(f"{text!r} is not pinned with == to one version")
        elif name in out:
            problems.append(f"{req.name} is listed twice")
        else:
            out[name] = specs[0].version
    assert not problems, f"{where}: " + "; ".join(problems)
    return out


def environment_pip_requirements() -> list[str]:
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    pip_lists = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip_lists) == 1, "environment.yml must have exactly one `pip:` list"
    # `-e .` installs the project itself; every other entry is a requirement
    return [r for r in pip_lists[0] if not str(r).startswith("-")]


def test_pyproject_pins_every_dependency():
    assert pins(pyproject_requirements(), "pyproject.toml")


def test_environment_yml_mirrors_pyproject():
    ours = pins(pyproject_requirements(), "pyproject.toml")
    env = pins(environment_pip_requirements(), "environment.yml")
    missing = sorted(set(ours) - set(env))
    extra = sorted(set(env) - set(ours))
    differ = sorted(f"{n} (pyproject {ours[n]}, environment.yml {env[n]})"
                    for n in set(ours) & set(env) if ours[n] != env[n])
    problems = [f"missing from environment.yml: {', '.join(missing)}"] if missing else []
    problems += [f"only in environment.yml: {', '.join(extra)}"] if extra else []
    problems += [f"different versions: {', '.join(differ)}"] if differ else []
    assert not problems, "; ".join(problems)
