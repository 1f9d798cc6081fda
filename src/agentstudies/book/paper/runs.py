"""Paper-profile runs kept in the repository, so a quick-profile book can quote them honestly.

A chapter that discusses what happens at the papers' scale must not type those numbers,
nor present the quick run's. Instead:

1. run the chapter at the paper profile (``make paper``, or
   ``agentstudies book --profile paper --only NAME``), which writes
   ``artifacts/<chapter>/`` with its ``provenance.json``;
2. archive that run: ``python -m agentstudies.book.paper.runs archive NAME`` copies the
   chapter's CSV tables and provenance into ``data/paper_runs/<chapter>/`` and writes
   ``SHA256SUMS`` (one ``<sha256>  <file>`` line per file) — commit that folder;
3. in the chapter, read it back and glue what is shown::

       from agentstudies.book.paper.runs import load_run
       prun = load_run("sasst_calibration")       # verifies every checksum
       ch.glue("prun_label", prun.label)         # "paper-profile run of 2026-11-30, 41.2 min"
       t4 = prun.table("table4")                 # a DataFrame, glue values from it

   and in markdown, a labelled box::

       ```{admonition} Paper-profile run
       :class: note
       {glue:text}`prun_label`: coverage {glue:text}`prun_cov:.1%` ...
       ```

Only an unmodified paper-profile run can be archived: its provenance must exist, record
``run.profile == "paper"`` with no non-profile parameters (``run.overrides``), and the run
must have finished (no ``INCOMPLETE`` marker). :attr:`PaperRun.label` states the profile
the provenance records, so an archive that is not a paper-profile run never reads as one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

__all__ = ["PaperRun", "archive_run", "load_run", "runs_dir", "ChecksumError"]

SUMS = "SHA256SUMS"


class ChecksumError(ValueError):
    """An archived file is missing, unlisted, or does not match its recorded SHA-256."""


def runs_dir(root: Path | str | None = None) -> Path:
    """``<root>/data/paper_runs`` (root: the repository root, found from the cwd by default)."""
    if root is None:
        from agentstudies.book.model import find_root

        root = find_root()
    return Path(root) / "data" / "paper_runs"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def archive_run(chapter: str, artifacts: Path | str, dest: Path | str, *, parquet: bool = False) -> Path:
    """Copy a finished run's CSV tables and provenance to ``dest/<chapter>/`` with checksums.

    ``artifacts`` is the artifacts root (holding ``<chapter>/``). With ``parquet=True``
    episode tables (``*.parquet``) are archived too. An earlier archive of the chapter is
    replaced. Returns the archive folder.

    Raises
    ------
    FileNotFoundError
        If ``artifacts/<chapter>/provenance.json`` does not exist.
    ValueError
        If the run did not finish (an ``INCOMPLETE`` marker is present), or its provenance
        does not record an unmodified paper-profile run (another profile, non-profile
        parameters, or no run record).
    """
    src = Path(artifacts) / chapter
    prov = src / "provenance.json"
    if not prov.is_file():
        raise FileNotFoundError(f"{prov} does not exist: run the chapter (paper profile) first")
    if (src / "INCOMPLETE").exists():
        raise ValueError(f"the run in {src} did not finish (INCOMPLETE marker present)")
    _check_paper_profile(chapter, src, json.loads(prov.read_text()))
    out = Path(dest) / chapter
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    suffixes = {".csv", ".json"} | ({".parquet"} if parquet else set())
    files = sorted(p for p in src.iterdir() if p.is_file() and p.suffix in suffixes)
    for p in files:
        shutil.copy2(p, out / p.name)
    (out / SUMS).write_text("".join(f"{_sha256(out / p.name)}  {p.name}\n" for p in files))
    return out


def _check_paper_profile(chapter: str, src: Path, provenance: dict[str, Any]) -> None:
    """Refuse a run that is not an unmodified paper-profile run (``ValueError`` naming it)."""
    run = provenance.get("run")
    fix = (f"run it at the paper profile, unmodified: agentstudies book --profile paper --only {chapter}, "
           "then archive again")
    if not isinstance(run, dict) or not run.get("profile"):
        raise ValueError(f"the run in {src} records no profile in its provenance (no 'run' entry); only an "
                         f"unmodified paper-profile run can be archived: {fix}")
    if run["profile"] != "paper":
        raise ValueError(f"the run in {src} is a {run['profile']}-profile run (provenance 'run.profile'), not the "
                         f"paper profile; only an unmodified paper-profile run can be archived: {fix}")
    if run.get("overrides"):
        shown = ", ".join(f"{k}={v!r}" for k, v in run["overrides"].items())
        raise ValueError(f"the run in {src} is a paper-profile run with non-profile parameters ({shown}); only an "
                         f"unmodified paper-profile run can be archived: {fix}")


@dataclass(frozen=True)
class PaperRun:
    """An archived paper-profile run of one chapter (checksums verified on load)."""

    chapter: str
    folder: Path
    provenance: dict[str, Any]

    @property
    def started(self) -> str:
        """Start time of the run as recorded (ISO 8601)."""
        return str(self.provenance.get("started", ""))

    @property
    def date(self) -> str:
        """Start date of the run (``YYYY-MM-DD``)."""
        return self.started[:10]

    @property
    def wall_time_s(self) -> float:
        """Wall time of the chapter's run in seconds."""
        return float(self.provenance.get("wall_time_s", float("nan")))

    @property
    def parameters(self) -> dict[str, Any]:
        return dict(self.provenance.get("parameters", {}))

    @property
    def profile(self) -> str | None:
        """The profile the provenance records (``run.profile``); None when it records none."""
        run = self.provenance.get("run")
        return str(run["profile"]) if isinstance(run, dict) and run.get("profile") else None

    @property
    def label(self) -> str:
        """What the provenance says this run is, for a labelled box: ``"paper-profile run of
        <date>, <wall time>"`` for an unmodified paper-profile run; otherwise the recorded
        profile and its non-profile parameters (``"smoke-profile run (not the paper profile)
        of ..."``), or that the provenance records no profile."""
        s = self.wall_time_s
        wall = f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.1f} min" if s >= 60 else f"{s:.0f} s"
        when = f"of {self.date}, {wall}"
        run = self.provenance.get("run") if isinstance(self.provenance.get("run"), dict) else {}
        if self.profile is None:
            return f"run {when} (its provenance records no profile)"
        if run.get("overrides"):
            shown = ", ".join(f"{k}={v!r}" for k, v in run["overrides"].items())
            return f"{self.profile}-profile run with non-profile parameters ({shown}) {when}"
        if self.profile != "paper":
            return f"{self.profile}-profile run (not the paper profile) {when}"
        return f"paper-profile run {when}"

    def tables(self) -> list[str]:
        return sorted(p.stem for p in self.folder.glob("*.csv"))

    def table(self, name: str) -> pd.DataFrame:
        """The archived table ``<name>.csv`` (KeyError naming the stored tables if absent)."""
        path = self.folder / f"{name}.csv"
        if not path.is_file():
            raise KeyError(f"paper-profile run of {self.chapter} has no table {name!r}; stored: {self.tables()}")
        return pd.read_csv(path)


def load_run(chapter: str, root: Path | str | None = None, *, folder: Path | str | None = None) -> PaperRun:
    """Read ``data/paper_runs/<chapter>/`` and verify every file against ``SHA256SUMS``.

    Raises
    ------
    FileNotFoundError
        If the chapter has no archived run (names the command that makes one).
    ChecksumError
        If a listed file is missing or altered, or a file is not listed.
    """
    base = Path(folder) if folder is not None else runs_dir(root) / chapter
    sums = base / SUMS
    if not sums.is_file():
        raise FileNotFoundError(
            f"no archived paper-profile run of {chapter} at {base}; make one with "
            f"`agentstudies book --profile paper --only {chapter}` then "
            f"`python -m agentstudies.book.paper.runs archive {chapter}`"
        )
    listed = {}
    for line in sums.read_text().splitlines():
        if line.strip():
            digest, name = line.split(None, 1)
            listed[name.strip()] = digest
    for name, digest in listed.items():
        path = base / name
        if not path.is_file():
            raise ChecksumError(f"{chapter}: {name} is listed in {SUMS} but missing")
        if _sha256(path) != digest:
            raise ChecksumError(f"{chapter}: {name} does not match its SHA-256 in {SUMS} (altered?)")
    unlisted = sorted(p.name for p in base.iterdir() if p.is_file() and p.name != SUMS and p.name not in listed)
    if unlisted:
        raise ChecksumError(f"{chapter}: file(s) {unlisted} are not listed in {SUMS}")
    if "provenance.json" not in listed:
        raise ChecksumError(f"{chapter}: the archive has no provenance.json")
    return PaperRun(chapter, base, json.loads((base / "provenance.json").read_text()))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agentstudies.book.paper.runs archive NAME... [--artifacts DIR] [--parquet]``."""
    parser = argparse.ArgumentParser(prog="python -m agentstudies.book.paper.runs",
                                     description="Archive paper-profile runs under data/paper_runs/.")
    sub = parser.add_subparsers(dest="command", required=True)
    arc = sub.add_parser("archive", help="copy artifacts/<NAME>/ (a finished paper-profile run)")
    arc.add_argument("names", nargs="+", metavar="NAME")
    arc.add_argument("--artifacts", type=Path, help="artifacts root (default: <root>/artifacts)")
    arc.add_argument("--parquet", action="store_true", help="archive episode tables (*.parquet) too")
    args = parser.parse_args(argv)
    from agentstudies.book.model import find_root

    root = find_root()
    for name in args.names:
        try:
            out = archive_run(name, args.artifacts or root / "artifacts", runs_dir(root), parquet=args.parquet)
        except (FileNotFoundError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"archived {name} -> {out} ({load_run(name, root).label})")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
