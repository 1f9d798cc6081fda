"""Checked reads of the files shipped under ``data/``.

``data/SHA256SUMS`` lists ``<sha256>  <path relative to data/>`` (the format of
``sha256sum``) for every shipped data file that has no checksum file of its own
(``*.npy`` / ``*.npz`` / ``*.gz`` carry a ``.sha256`` beside them): the ALFWorld pool
manifest, the checkpoints' ``.json`` metadata and training logs, the papers' tables, the
impossible-task classifier's hand-labelled corpora (``classifier_corpus/*.yaml``).
Readers go through :func:`read_bytes` / :func:`read_json`; a file whose bytes differ from
the recorded digest (edited, truncated, a bad merge) raises a ``ValueError`` that names the
file and says how to restore it (``git checkout -- data/...``), and a file that is not
valid JSON raises one naming the file instead of a bare ``JSONDecodeError``.

A path outside ``data/`` (a test's own folder) or not listed is read unchecked, but a
JSON error still names it. Code that rewrites a listed file (``python -m
agentstudies.envs.alfworld.pools``, ``python -m agentstudies.studies.alfworld.training``)
records its new digest with :func:`record`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

__all__ = ["MANIFEST_NAME", "DataFileError", "data_dir", "manifest", "read_bytes", "read_json", "read_yaml", "record",
           "verify"]

#: The checksum list inside ``data/``.
MANIFEST_NAME = "SHA256SUMS"


class DataFileError(ValueError):
    """A shipped data file is changed, truncated or unreadable (the message names it)."""


def data_dir() -> Path:
    """``<repo>/data`` of the checkout this package lives in (else ``./data``)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "data").is_dir():
            return parent / "data"
    return Path.cwd() / "data"


def manifest(folder: Path | None = None) -> dict[str, str]:
    """``{path relative to data/: sha256}`` from ``data/SHA256SUMS`` (empty if absent).

    Raises
    ------
    DataFileError
        A line that is not ``<64 hex digits>  <path>``.
    """
    path = (folder or data_dir()) / MANIFEST_NAME
    if not path.is_file():
        return {}
    out: dict[str, str] = {}
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        digest, _, name = line.partition("  ")
        if len(digest) != 64 or not name:
            raise DataFileError(f"{path}: line {i} is not '<sha256>  <path>': {line[:80]!r}; "
                                f"restore it from the repository: git checkout -- data/{MANIFEST_NAME}")
        out[name.strip()] = digest.lower()
    return out


def _relative(path: Path, folder: Path) -> str | None:
    try:
        return path.resolve().relative_to(folder.resolve()).as_posix()
    except ValueError:
        return None


def verify(path: Path | str, raw: bytes | None = None) -> bytes:
    """The bytes of ``path``, checked against ``data/SHA256SUMS`` when it is listed there.

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    DataFileError
        Its SHA-256 differs from the recorded one (names the file, both digests and the
        ``git checkout -- data/<path>`` that restores it).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data file {path} does not exist")
    raw = path.read_bytes() if raw is None else raw
    folder = data_dir()
    rel = _relative(path, folder)
    want = manifest(folder).get(rel) if rel is not None else None
    if want is not None:
        got = hashlib.sha256(raw).hexdigest()
        if got != want:
            raise DataFileError(
                f"data file data/{rel} does not match its checksum in data/{MANIFEST_NAME} (sha256 "
                f"{got[:16]}... of its {len(raw):,} bytes != recorded {want[:16]}...): it was changed or "
                f"truncated. Restore it from the repository: git checkout -- data/{rel} (changed on purpose? "
                f"record its digest: python -m agentstudies._data data/{rel})"
            )
    return raw


read_bytes = verify


def read_json(path: Path | str) -> Any:
    """:func:`verify` ``path``, then parse it as JSON.

    Raises
    ------
    FileNotFoundError, DataFileError
        As :func:`verify`; also ``DataFileError`` for text that is not valid JSON (names the
        file, line and column: a truncated file ends early).
    """
    return _parse_verified(path, json.loads, json.JSONDecodeError, "JSON")


def read_yaml(path: Path | str) -> Any:
    """:func:`verify` ``path``, then parse it as YAML (``yaml.safe_load``).

    Raises
    ------
    FileNotFoundError, DataFileError
        As :func:`verify`; also ``DataFileError`` for text that is not valid YAML (names
        the file and the parser's position) -- a truncated or edited corpus outside
        ``data/`` (unchecked) still names its file.
    """
    import yaml

    return _parse_verified(path, yaml.safe_load, yaml.YAMLError, "YAML")


def _parse_verified(path: Path | str, parse, error: type[Exception], kind: str) -> Any:
    """:func:`verify` ``path`` and ``parse`` its UTF-8 text; a ``DataFileError`` naming the
    file, the parser's message on one line and how to restore it when that fails."""
    path = Path(path)
    raw = verify(path)
    try:
        return parse(raw.decode("utf-8"))
    except (UnicodeDecodeError, error) as exc:
        rel = _relative(path, data_dir())
        fix = f" Restore it from the repository: git checkout -- data/{rel}" if rel else ""
        where = " ".join(str(exc).split())
        raise DataFileError(f"data file {path} is not valid {kind} ({where}); it may be truncated.{fix}") from None


def record(path: Path | str) -> str:
    """Write ``path``'s SHA-256 into ``data/SHA256SUMS`` (for code that regenerates a shipped
    file); returns the digest. Paths outside ``data/`` are not recorded (returns the digest)."""
    path = Path(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    folder = data_dir()
    rel = _relative(path, folder)
    if rel is None:
        return digest
    sums = manifest(folder)
    sums[rel] = digest
    text = "".join(f"{d}  {name}\n" for name, d in sorted(sums.items()))
    (folder / MANIFEST_NAME).write_text(text)
    return digest


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - maintenance command
    """``python -m agentstudies._data FILE...``: record the digests of deliberately changed
    data files in ``data/SHA256SUMS``."""
    import sys

    for name in (sys.argv[1:] if argv is None else argv):
        print(f"{record(name)}  {name}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
