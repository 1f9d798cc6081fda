"""A cross-build cache of pure ALFWorld work in a user cache folder, checksummed.

Two results are pure functions of their inputs and cost most of an ALFWorld chapter's
set-up, yet every build (every fresh clone, every ``make paper``) recomputed them:

* the PDDL -> SAS translation of a problem (fast-downward's pure-Python translator,
  about 0.3 s a problem; :func:`agentstudies.envs.alfworld.engine._translate`), and
* a generated, engine-checked game (:func:`agentstudies.envs.alfworld.generate.generate_game`
  with ``check=True``: the planner expert and an engine run per attempt).

Both are stored here across builds, in the folder named by ``$AGENTSTUDIES_CACHE``, else
``$XDG_CACHE_HOME/agentstudies``, else ``~/.cache/agentstudies``
(:func:`cache_folder`); ``AGENTSTUDIES_CACHE=off`` (or ``0`` / ``none`` / empty)
disables it. Every key is a SHA-256 over :data:`CACHE_FORMAT`, this package's version,
the engine's version (``fast_downward_textworld``, ``alfworld``, ``textworld``) and the
full inputs, so a new version of any of them never reads an old entry.

Integrity: an entry is ``MAGIC + sha256(payload) + payload``. :func:`get` recomputes the
checksum on every read; an entry that is torn, truncated, foreign or altered is never
trusted: it is deleted, counted in :data:`STATS` (``"corrupt"``), reported with a
:class:`CacheCorruptionWarning` naming the file, and the caller recomputes and rewrites
it. Writes are atomic (a temporary file, then ``os.replace``), so concurrent workers of
one or several builds can share the folder. A cache that cannot be written (read-only
home, full disk) only costs speed: nothing fails.

The cache changes speed only: a cached and an uncached run give byte-identical outputs
(tests/test_alfworld_usercache.py runs a game both ways and compares).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
import warnings
import zlib
from pathlib import Path
from typing import Any

__all__ = ["CACHE_ENV", "CACHE_FORMAT", "STATS", "CacheCorruptionWarning", "cache_folder", "engine_versions",
           "entry_key", "get", "put"]

#: Environment variable naming the cache folder (``off`` / ``0`` / ``none`` / empty: disabled).
CACHE_ENV = "AGENTSTUDIES_CACHE"
#: Bump when the stored form of an entry changes.
CACHE_FORMAT = 1
MAGIC = b"AGSC1\n"
_DISABLED = {"", "0", "off", "none", "false", "no"}
#: Per-process counters: ``hit``, ``miss``, ``write``, ``corrupt`` (a bad entry found and
#: dropped), ``write_error``.
STATS: dict[str, int] = {"hit": 0, "miss": 0, "write": 0, "corrupt": 0, "write_error": 0}


class CacheCorruptionWarning(UserWarning):
    """A cache entry failed its checksum (or could not be decoded); it was dropped and recomputed."""


def cache_folder() -> Path | None:
    """The user cache folder in force, or ``None`` when disabled (see the module docstring)."""
    env = os.environ.get(CACHE_ENV)
    if env is not None:
        return None if env.strip().lower() in _DISABLED else Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "agentstudies"


_VERSIONS: str | None = None


def engine_versions() -> str:
    """``agentstudies=<v>;fast_downward_textworld=<v>;alfworld=<v>;textworld=<v>`` (``?`` if unknown)."""
    global _VERSIONS
    if _VERSIONS is None:
        from importlib.metadata import PackageNotFoundError, version

        parts = []
        for dist in ("agentstudies", "fast_downward_textworld", "alfworld", "textworld"):
            try:
                parts.append(f"{dist}={version(dist)}")
            except PackageNotFoundError:
                parts.append(f"{dist}=?")
        _VERSIONS = ";".join(parts)
    return _VERSIONS


def entry_key(kind: str, *parts: str) -> str:
    """SHA-256 hex key of ``kind`` and ``parts`` under :data:`CACHE_FORMAT` and :func:`engine_versions`."""
    h = hashlib.sha256()
    for p in (f"format={CACHE_FORMAT}", engine_versions(), kind, *parts):
        b = p.encode()
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def _path(kind: str, key: str) -> Path | None:
    folder = cache_folder()
    return None if folder is None else folder / kind / key[:2] / f"{key}.bin"


def get(kind: str, key: str) -> Any | None:
    """The stored object for ``(kind, key)``, or ``None`` (absent, disabled, or corrupt:
    a corrupt entry is deleted, counted and warned about -- never returned)."""
    path = _path(kind, key)
    if path is None:
        return None
    try:
        raw = path.read_bytes()
    except OSError:
        STATS["miss"] += 1
        return None
    n = len(MAGIC)
    ok = raw[:n] == MAGIC and len(raw) >= n + 32 and hashlib.sha256(raw[n + 32:]).digest() == raw[n:n + 32]
    if ok:
        try:
            obj = pickle.loads(zlib.decompress(raw[n + 32:]))
        except Exception:  # noqa: BLE001 - checksum right but undecodable: written by a foreign build
            ok = False
    if not ok:
        STATS["corrupt"] += 1
        warnings.warn(f"agentstudies cache: {path} failed its checksum; dropped and recomputed",
                      CacheCorruptionWarning, stacklevel=2)
        try:
            path.unlink()
        except OSError:
            pass
        return None
    STATS["hit"] += 1
    return obj


def put(kind: str, key: str, obj: Any) -> None:
    """Store ``obj`` (pickled, zlib level 1, checksummed) atomically; errors only count in :data:`STATS`."""
    path = _path(kind, key)
    if path is None:
        return
    payload = zlib.compress(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), 1)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        STATS["write"] += 1
    except OSError:
        STATS["write_error"] += 1

