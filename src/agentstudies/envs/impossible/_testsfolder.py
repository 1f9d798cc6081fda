"""The task's tests folder as the runner sees it: capped while the run may write it, read back safely after.

Part of the sandboxed runner (:mod:`agentstudies.envs.impossible._sandbox`). A writable
tests folder is bound into the run's view at its host path, so it is the one place a run
could write to the host's disk: when the runner is root (the case with a per-run uid) it is
a tmpfs of :data:`TESTS_DIR_BYTES` and :data:`TESTS_DIR_INODES` files of its own
(:func:`_mount_capped`, detached by :func:`_unmount` after the run). The file the run
leaves there is read back by :func:`_read_back` without following a link, blocking on a
FIFO or reading more than :data:`TESTS_CAP` bytes.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from agentstudies.envs.impossible._isolation import SandboxFault

#: Largest tests file the runner reads back (bytes; the harness's own cap is the same).
TESTS_CAP = 1 << 20
#: Size and file count of a writable tests folder (a tmpfs the runner mounts when root).
TESTS_DIR_BYTES = 4 << 20
TESTS_DIR_INODES = 64
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MNT_DETACH = 2, 4, 8, 2


@lru_cache(maxsize=None)
def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _mount_capped(folder: Path) -> None:
    """Mount a tmpfs of :data:`TESTS_DIR_BYTES` and :data:`TESTS_DIR_INODES` files on
    ``folder`` (the writable tests folder, bound into the run's view), so an edit cannot
    fill the host's disk through it. Needs root (the only case with a per-run uid);
    :class:`SandboxFault` if the mount fails."""
    import ctypes

    opts = f"size={TESTS_DIR_BYTES},nr_inodes={TESTS_DIR_INODES},mode=0755".encode()
    if _libc().mount(b"impossible-tests", os.fsencode(folder), b"tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC,
                     opts) != 0:
        err = ctypes.get_errno()
        raise SandboxFault(f"cannot mount the capped tests folder {folder}: {os.strerror(err)}")


def _unmount(folder: Path) -> None:
    """Detach a tmpfs :func:`_mount_capped` put on ``folder`` (nothing if none is there)."""
    if os.path.ismount(folder):
        _libc().umount2(os.fsencode(folder), _MNT_DETACH)


def _read_back(tests_path: Path) -> tuple[str | None, str]:
    """The tests file as the run left it: ``(text, "")``, ``(None, "")`` when it is gone,
    or ``(None, why)`` when it is not a regular file of at most :data:`TESTS_CAP` bytes with
    one name (a symbolic link -- on the file or its folder --, FIFO, folder, device, hard
    link). Opened with ``O_NOFOLLOW | O_NONBLOCK`` relative to its folder (itself opened
    ``O_NOFOLLOW | O_DIRECTORY``), so it never follows a link, blocks or reads a host file."""
    import errno
    import stat

    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        dfd = os.open(tests_path.parent, flags | os.O_DIRECTORY)
    except OSError as exc:
        return None, f"the tests folder cannot be opened as a folder ({errno.errorcode.get(exc.errno, exc.errno)})"
    try:
        try:
            fd = os.open(tests_path.name, flags | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=dfd)
        except FileNotFoundError:
            return None, ""
        except OSError as exc:
            return None, f"the tests file cannot be opened as a file ({errno.errorcode.get(exc.errno, exc.errno)})"
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None, "the tests file is not a regular file"
            if st.st_nlink != 1:
                return None, f"the tests file has {st.st_nlink} names (a hard link)"
            if st.st_size > TESTS_CAP:
                return None, f"the tests file has {st.st_size} bytes, more than {TESTS_CAP}"
            data = os.read(fd, TESTS_CAP + 1)
        finally:
            os.close(fd)
    finally:
        os.close(dfd)
    if len(data) > TESTS_CAP:
        return None, f"the tests file has more than {TESTS_CAP} bytes"
    return data.decode("utf-8", errors="replace"), ""


