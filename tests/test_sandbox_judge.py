"""The sandbox's trusted parts, checked on their own: the judge's wire decoder, the runner's
read-back of the tests file, the seccomp program (decoded and run by an independent
classic-BPF interpreter written here from the kernel's documentation), the capped work
folder's file count and the ``unshare`` view's namespaces and hidden top level."""

from __future__ import annotations

import errno
import importlib.util
import math
import os
import struct
from pathlib import Path

import pytest

from agentstudies.envs.impossible import SandboxConfig, Submission, run_submission
from agentstudies.envs.impossible import _isolation as iso_layers
from agentstudies.envs.impossible import _sandbox as sb
from agentstudies.envs.impossible import _seccomp as sc

_spec = importlib.util.spec_from_file_location("harness_under_test", Path(sb.__file__).with_name("_harness_main.py"))
H = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(H)              # defines functions only: the harness runs under __main__


# ------------------------------------------------------------------ the wire format
PLAIN = [0, -7, 2 ** 100, -(2 ** 70), True, False, None, 1.5, -0.0, 1e300, "", "a'b\"c\n\u00e9\ud800", b"\x00\xff",
         [], (), {}, set(), frozenset(), [1, [2, (3,)]], (1,), {"k": [1, 2], 3: (None,)}, {1, 2}, frozenset({"x"}),
         complex(1, -2), [float("inf"), float("-inf")]]


@pytest.mark.parametrize("value", PLAIN, ids=[repr(v)[:30] for v in PLAIN])
def test_plain_values_cross_unchanged_and_with_their_exact_types(value):
    back = H._decode(H._encode(value))

    def same(a, b):
        if type(a) is not type(b):
            return False
        if isinstance(a, (list, tuple)):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, float):
            return struct.pack("d", a) == struct.pack("d", b)          # -0.0 and infinities bit for bit
        return a == b

    assert same(value, back), (value, back)


def test_nan_crosses_as_nan():
    assert math.isnan(H._decode(H._encode(float("nan"))))


class _Sneaky(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


@pytest.mark.parametrize("value", [_Sneaky("x"), [1, _Sneaky("y")], {"k": object()}, iter([1]), lambda: 1],
                         ids=["str-subclass", "nested-subclass", "object-in-dict", "iterator", "function"])
def test_values_that_are_not_plain_data_are_opaque(value):
    with pytest.raises(H._Opaque):
        H._encode(value)


@pytest.mark.parametrize("text", [
    "__import__('os').system('id')", "os", "(1).__class__", "[x for x in ()]", "f'{1}'", "lambda: 1", "a[0]",
    "1 + 2", "float('1.5')", "frozenset(1)", "complex('1')", "H(0)", "G('x')", "{**{}}", "...",
    "(" * 300 + ")" * 300,
])
def test_the_decoder_refuses_everything_but_plain_literals(text):
    with pytest.raises((ValueError, SyntaxError, RecursionError, MemoryError)):
        H._decode(text)


def test_handles_resolve_only_through_the_callers_table():
    seen = []
    assert H._decode("[H(3), G('poly')]", lambda kind, arg: seen.append((kind, arg)) or kind) == ["H", "G"]
    assert seen == [("H", 3), ("G", "poly")]


def test_free_names_are_the_solutions_globals_the_tests_use():
    src = ("import math\nX = 1\ndef helper(v):\n    return poly(v) + X\n"
           "def check(candidate):\n    y = encode_shift('a')\n    assert candidate(y) == math.floor(len(y))\n")
    code, n, free = H._compile_tests(src)
    assert (n, free) == (2, ["encode_shift", "poly"])


# ------------------------------------------------------------------ reading the tests file back
@pytest.fixture
def tests_dir(tmp_path):
    d = tmp_path / "tests"
    d.mkdir()
    return d


def test_read_back_of_a_regular_file(tests_dir):
    (tests_dir / "test_check.py").write_text("def check(candidate):\n    pass\n")
    assert sb._read_back(tests_dir / "test_check.py") == ("def check(candidate):\n    pass\n", "")
    assert sb._read_back(tests_dir / "gone.py") == (None, "")


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory", "huge", "hard-link", "folder-symlink"])
def test_read_back_refuses_what_is_not_one_small_regular_file(tests_dir, tmp_path, kind):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("HOST-SECRET")
    p = tests_dir / "test_check.py"
    if kind == "symlink":
        p.symlink_to(secret)
    elif kind == "fifo":
        os.mkfifo(p)                     # opened for reading with nobody writing: would block without O_NONBLOCK
    elif kind == "directory":
        p.mkdir()
    elif kind == "huge":
        p.write_bytes(b"#" * (sb.TESTS_CAP + 1))
    elif kind == "hard-link":
        p.write_text("x")
        os.link(p, tests_dir / "other.py")
    else:
        moved = tmp_path / "real-tests"
        tests_dir.rename(moved)
        (moved / "test_check.py").write_text("HOST-SECRET")
        tests_dir.symlink_to(moved)
    text, why = sb._read_back(p)
    assert text is None and why and "HOST-SECRET" not in why


# ------------------------------------------------------------------ the seccomp program
def _run_bpf(prog: bytes, arch: int, nr: int, arg0: int = 0) -> int:
    """Classic BPF as seccomp runs it (Documentation/userspace-api/seccomp_filter.rst and
    Documentation/networking/filter.rst): ld abs word, jeq / jge / jset k, ret k."""
    data = struct.pack("=iI", nr, arch) + struct.pack("=Q", 0) + struct.pack("=Q", arg0) + bytes(40)
    ins = [struct.unpack("=HBBI", prog[i:i + 8]) for i in range(0, len(prog), 8)]
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = ins[pc]
        if code == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif code in (0x15, 0x35, 0x45):
            hit = acc == k if code == 0x15 else acc >= k if code == 0x35 else bool(acc & k)
            pc += 1 + (jt if hit else jf)
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")


ARCH = 0xC000003E
ALLOW, KILL, EPERM, ENOSYS = 0x7FFF0000, 0x80000000, 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS


def test_seccomp_program_refuses_exactly_the_listed_calls():
    prog = sc.build_program(sc.DENIED_X86_64, ARCH)
    # numbers from the kernel's arch/x86/entry/syscalls/syscall_64.tbl
    for nr in (41, 53, 101, 310, 311, 438, 434, 272, 308, 165, 321, 298, 323, 425):
        assert _run_bpf(prog, ARCH, nr) == EPERM, nr
    for nr in (0, 1, 2, 3, 9, 57, 59, 60, 231, 257, 262, 318, 39, 62):   # read ... fork, execve, exit, openat, getrandom, kill
        assert _run_bpf(prog, ARCH, nr) == ALLOW, nr
    assert _run_bpf(prog, ARCH, 435) == ENOSYS                            # clone3: the C library falls back to clone
    assert _run_bpf(prog, ARCH, 56, 0x003D0F00) == ALLOW                  # clone for a thread
    for flag in (0x10000000, 0x20000000, 0x40000000, 0x00020000):          # NEWUSER, NEWPID, NEWNET, NEWNS
        assert _run_bpf(prog, ARCH, 56, 0x11 | flag) == EPERM
    assert _run_bpf(prog, 0x40000003, 41) == KILL                         # i386
    assert _run_bpf(prog, ARCH, 0x40000000 + 41) == KILL                  # x32


# ------------------------------------------------------------------ the unshare view
def _unshare_works() -> bool:
    try:
        iso_layers._layer_info("unshare")
        return True
    except sb.SandboxFault:
        return False


def test_unshare_hides_every_top_level_entry_but_the_system_ones():
    roots = set(iso_layers._hide_roots())
    expected = {"/" + e for e in os.listdir("/") if os.path.isdir("/" + e) and not os.path.islink("/" + e)
                and "/" + e not in {"/usr", "/dev", "/proc", "/tmp", "/run", "/etc", "/lib", "/lib64", "/bin", "/sbin"}}
    assert expected <= roots, expected - roots


@pytest.mark.skipif(not _unshare_works(), reason="unshare layer unusable here")
def test_unshare_run_has_its_own_ipc_uts_namespaces_and_a_file_count_cap():
    cmd, _ = iso_layers._unshare_command(Path("/tmp/x"), iso_layers._layer_info("unshare"), 0x30001)
    assert {"--ipc", "--uts", "--net", "--pid"} <= set(cmd)
    n = iso_layers.WORK_INODES
    code = ("import os, errno\nmade, err = 0, None\ntry:\n"
            f"    for i in range({n + 50}):\n        open('f%d' % i, 'w').close()\n        made += 1\n"
            "except OSError as e:\n    err = e.errno\n"
            f"assert err == errno.ENOSPC and made < {n}, (made, err)\n"
            f"assert os.statvfs('.').f_files == {n}\n"
            "def square(x):\n    return x * x\n")
    r = run_submission(Submission(code, "square", "def check(candidate):\n    assert candidate(2) == 4\n"),
                       SandboxConfig(wall_s=20, cpu_s=10, layer="unshare"))
    assert r.outcome == "passed", r.detail
