"""The sandbox's seccomp filter: a classic-BPF program refusing the system calls a run never needs.

Part of the sandboxed runner (:mod:`agentstudies.envs.impossible._sandbox`); the harness
installs the program (``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)`` with no_new_privs)
before any submitted code runs, in both the judge and the candidate process, so a
submission that defeats every Python-level check (the audit hook) still meets it in the
kernel. Built here by hand (a dozen instructions; no library is needed for a deny list:
Debian's ``python3-seccomp`` is built for the system interpreter, not the one runs use).

Refused with ``EPERM`` (the call fails, the process lives):

* ``socket`` and ``socketpair`` for every address family (``AF_UNIX``, ``AF_INET``,
  ``AF_INET6``, ``AF_VSOCK``, ``AF_NETLINK``, ``AF_PACKET`` ...): the harness talks over
  inherited pipes only, and ``AF_VSOCK`` is not confined by a network namespace;
* reaching another process's memory or descriptors: ``ptrace``, ``process_vm_readv`` /
  ``process_vm_writev``, ``pidfd_open`` / ``pidfd_getfd``, ``kcmp``;
* kernel surfaces a run never needs: ``bpf``, ``perf_event_open``, ``userfaultfd``,
  ``io_uring_*``, ``keyctl`` / ``add_key`` / ``request_key``, ``mount`` / ``umount2`` /
  ``pivot_root`` / ``chroot``, ``unshare`` / ``setns``, module and ``kexec`` loading,
  ``open_by_handle_at`` / ``name_to_handle_at``;
* ``clone`` with any namespace flag, and ``clone3`` (``ENOSYS``, so the C library falls
  back to ``clone``, whose flags the filter can read).

Any architecture other than the one the program was built for (the x32 ABI included) is
killed. Only ``x86_64`` has a table here: elsewhere :func:`seccomp_program` returns
``None`` and the runs go without the filter (:func:`agentstudies.envs.impossible.isolation`
reports ``seccomp: False``).
"""

from __future__ import annotations

import errno
import platform
import struct

#: AUDIT_ARCH_X86_64.
_ARCH_X86_64 = 0xC000003E
#: System calls refused with EPERM on x86_64 (name -> number, from the kernel's syscall_64.tbl).
DENIED_X86_64: dict[str, int] = {
    "socket": 41, "socketpair": 53, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
    "pidfd_open": 434, "pidfd_getfd": 438, "kcmp": 312, "bpf": 321, "perf_event_open": 298,
    "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "keyctl": 250, "add_key": 248, "request_key": 249, "mount": 165, "umount2": 166, "pivot_root": 155,
    "chroot": 161, "unshare": 272, "setns": 308, "init_module": 175, "finit_module": 313,
    "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320, "open_by_handle_at": 304,
    "name_to_handle_at": 303,
}
_CLONE, _CLONE3 = 56, 435
#: CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET.
CLONE_NS_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _KILL_PROCESS, _ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16


def _ins(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def build_program(denied: dict[str, int], arch: int) -> bytes:
    """The BPF program (``struct sock_filter`` array, 8 bytes per instruction): kill on
    another ``arch`` or a syscall number >= 0x40000000 (x32), ``EPERM`` for ``denied`` and
    for ``clone`` with a namespace flag, ``ENOSYS`` for ``clone3``, else allow."""
    eperm, enosys = _ERRNO | errno.EPERM, _ERRNO | errno.ENOSYS
    nrs = sorted(set(denied.values()))
    prog = [_ins(_LD_W_ABS, 0, 0, _OFF_ARCH), _ins(_JEQ_K, 1, 0, arch), _ins(_RET_K, 0, 0, _KILL_PROCESS),
            _ins(_LD_W_ABS, 0, 0, _OFF_NR), _ins(_JGE_K, 0, 1, 0x40000000), _ins(_RET_K, 0, 0, _KILL_PROCESS)]
    # each denied number: "jeq nr -> the EPERM return" (counted from after this block)
    n = len(nrs)
    for i, nr in enumerate(nrs):
        prog.append(_ins(_JEQ_K, n - i + 5, 0, nr))      # to the EPERM return, the last instruction
    prog += [_ins(_JEQ_K, 0, 1, _CLONE3), _ins(_RET_K, 0, 0, enosys),
             _ins(_JEQ_K, 0, 2, _CLONE), _ins(_LD_W_ABS, 0, 0, _OFF_ARG0), _ins(_JSET_K, 1, 0, CLONE_NS_FLAGS),
             _ins(_RET_K, 0, 0, _ALLOW), _ins(_RET_K, 0, 0, eperm)]
    return b"".join(prog)


def seccomp_program() -> bytes | None:
    """This machine's filter (:func:`build_program` for x86_64), or ``None`` elsewhere."""
    if platform.machine() != "x86_64":
        return None
    return build_program(DENIED_X86_64, _ARCH_X86_64)
