# Second part of the in-sandbox harness, joined after _harness_main.py into one
# ``python -c`` source (agentstudies.envs.impossible._isolation): the judge-side proxies for
# values the candidate keeps, the audit hook, and the entry point. Never imported alone.


class _Candidate(Exception):
    """Carries the candidate's own ``type: message`` text as the cause of the re-raised
    exception (so the detail names the submission's exception type)."""


class _Remote:
    """A value or function that lives in the candidate: every operation on it is asked
    of the candidate (``ask``), and its answer decoded in the judge."""

    __slots__ = ("_ref", "_ask")

    def __init__(self, ref, ask):
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "_ask", ask)

    def __call__(self, *a, **k):
        return self._ask("call", self, *a, **k)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._ask("getattr", self, name)

    def __iter__(self):
        it = self._ask("iter", self)
        while True:
            try:
                yield it._ask("next", it) if type(it) is _Remote else next(it)
            except (_Stop, StopIteration):
                return

    def __repr__(self):
        return str(self._ask("repr", self))

    def __str__(self):
        return str(self._ask("str", self))

    def __hash__(self):
        return self._ask("hash", self)

    def __bool__(self):
        return bool(self._ask("bool", self))

    def __len__(self):
        return self._ask("len", self)

    def __float__(self):
        return float(self._ask("float", self))

    def __int__(self):
        return int(self._ask("int", self))

    def __index__(self):
        return self._ask("index", self)


def _binary(op, reflected=False):
    if reflected:
        return lambda self, other: self._ask(op, other, self)
    return lambda self, *other: self._ask(op, self, *other)


for _op in ("eq", "ne", "lt", "le", "gt", "ge", "getitem", "contains", "abs", "neg", "add", "sub", "mul",
            "truediv", "floordiv", "mod", "round"):
    setattr(_Remote, "__%s__" % _op, _binary(_op))
for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod"):
    setattr(_Remote, "__r%s__" % _op, _binary(_op, reflected=True))


def _install_hook(cfg):
    """The audit hook (a second line behind the view and the seccomp filter): refuses
    writes outside the writable folders, process spawning, ``ctypes``, frame and ``gc``
    introspection and building code objects. Every value it uses is captured here, before
    anything untrusted runs; it resolves paths with its own ``realpath`` over the C
    functions ``os.getcwd`` / ``os.readlink`` (no Python-level ``os.path`` helper).

    Length: the hook and the values it captures must live in one closure (a helper
    reached through module globals is a helper a submission can rebind)."""
    _isinstance, _int, _str, _bytes, _any, _len = isinstance, int, str, bytes, any, len
    _PermissionError, _OSError, _BaseException = PermissionError, OSError, BaseException
    _getcwd, _readlink, _fspath = os.getcwd, os.readlink, os.fspath
    _bdecode, fsenc = bytes.decode, sys.getfilesystemencoding()
    allowed = tuple(cfg["writable"])
    block_net = bool(cfg["block_network"])
    frame_attrs = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back", "f_locals", "f_globals"})
    wflags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    pathlike = (str, bytes, os.PathLike)
    unix_addr = (str, bytes, bytearray)
    refused = frozenset({
        "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
        "os.startfile", "pty.spawn", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "ctypes.addressof",
        "sys._getframe", "sys._current_frames", "sys._current_exceptions", "gc.get_referrers",
        "gc.get_referents", "gc.get_objects", "sys.settrace", "sys.setprofile", "cpython.PyInterpreterState_New",
        "os.register_at_fork", "code.__new__"})
    touching = frozenset({
        "os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.symlink", "os.link", "os.chmod", "os.chown",
        "os.truncate", "os.utime", "shutil.rmtree", "shutil.move", "shutil.copyfile", "os.mkfifo", "os.mknod",
        "os.chdir", "os.chroot"})

    def real(path):
        # os.path.realpath(path) from captured C functions and str methods only
        p = _fspath(path)
        if _isinstance(p, _bytes):
            p = _bdecode(p, fsenc, "surrogateescape")
        if not p.startswith("/"):
            p = _getcwd() + "/" + p
        parts, todo, links = [], p.split("/")[::-1], 0
        while todo:
            c = todo.pop()
            if c == "" or c == ".":
                continue
            if c == "..":
                if parts:
                    parts.pop()
                continue
            cur = "/" + "/".join(parts + [c])
            try:
                target = _readlink(cur)
            except _BaseException:
                parts.append(c)
                continue
            links += 1
            if links > 40:
                return cur
            if target.startswith("/"):
                parts = []
            todo += target.split("/")[::-1]
        return "/" + "/".join(parts)

    def inside(path):
        try:
            p = real(path)
        except _BaseException:
            return False
        return _any(p == a or p.startswith(a + "/") for a in allowed)

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            if _isinstance(path, _int) or path is None:
                return
            writing = (_isinstance(mode, _str) and _any(c in mode for c in "wax+")) or (_int(flags or 0) & wflags)
            if writing and not inside(path):
                raise _PermissionError("sandbox: write outside the task directory: %r" % (path,))
            try:
                r = real(path)
            except _BaseException:
                r = ""
            if r == "/proc" or r.startswith("/proc/") or r.startswith("/dev/mem"):
                raise _PermissionError("sandbox: reading /proc is not allowed")
        elif event in touching:
            for a in args:
                if _isinstance(a, pathlike) and event != "os.chdir" and not inside(a):
                    raise _PermissionError("sandbox: %s outside the task directory" % event)
            if event == "os.chroot":
                raise _PermissionError("sandbox: os.chroot is not allowed")
        elif event.startswith("socket."):
            if block_net:
                raise _PermissionError("sandbox: network disabled (%s)" % event)
            if event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg") and _len(args) > 1 \
                    and _isinstance(args[-1], unix_addr):
                raise _PermissionError("sandbox: Unix sockets are not allowed")
        elif event in refused or event.startswith("ctypes."):
            raise _PermissionError("sandbox: %s is not allowed" % event)
        elif event == "import" and args and _str(args[0]).split(".")[0] in ("ctypes", "_ctypes", "_posixsubprocess"):
            raise _PermissionError("sandbox: importing %s is not allowed" % args[0])
        elif event == "object.__getattr__" and _len(args) > 1 and args[1] in frame_attrs:
            raise _PermissionError("sandbox: frame introspection is not allowed")

    sys.modules.pop("_posixsubprocess", None)
    sys.modules.pop("subprocess", None)
    sys.addaudithook(hook)


def _init():
    """In a fresh PID namespace this process is PID 1, which the kernel shields from
    signals it has no handler for (even SIGKILL sent from inside). Stay a minimal init
    instead: fork the harness, reap orphans, and exit with the harness's status
    (128 + signal number when it was killed)."""
    if os.getpid() != 1:
        return
    child = os.fork()
    if child == 0:
        return
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(70)
        if pid == child:
            if os.WIFSIGNALED(status):
                os._exit(128 + os.WTERMSIG(status))
            os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70)


if __name__ == "__main__":  # run as `python -c <source>`; importing the module (tests do) runs nothing
    _init()
    _main()
