"""Seeded parallel maps: results independent of ``n_jobs`` and scheduling.

One ``seed`` becomes a :class:`numpy.random.SeedSequence`; item ``i`` always receives the
``i``-th spawned child, whatever worker runs it, so a simulation gives the same table with
``n_jobs=1`` or ``n_jobs=8``. Work runs through :mod:`joblib` (``backend="loky"`` by
default; ``"threading"``, ``"sequential"``; ``"dask"`` uses a ``dask.distributed``
client, created locally if none is running) — no home-made pools.

Scale-out: with a scheduler address (:func:`use_scheduler`, or the environment variable
``DASK_SCHEDULER_ADDRESS``, which ``agentstudies book|run --scheduler ADDRESS`` sets) every
``seeded_map`` with more than one item runs on that existing ``dask.distributed`` cluster,
whatever ``backend`` and ``n_jobs`` the caller passed (``sequential`` excepted), through one
client per process reused for the whole run. Tables are identical to a local run: the
seeds are per item and every worker pins BLAS to one thread.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Callable, Hashable, Iterable, Sequence

import numpy as np
from joblib import Parallel, delayed, parallel_config
from threadpoolctl import threadpool_limits

__all__ = ["seeded_map", "spawn_seeds", "keyed_seed", "key_int", "use_scheduler", "scheduler_address",
           "SCHEDULER_ENV", "tune_collector", "GC_THRESHOLD0"]

#: Environment variable naming an existing dask.distributed scheduler (``tcp://host:8786``).
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
_SCHEDULER: dict[str, Any] = {"address": None, "client": None}


def use_scheduler(address: str | None) -> None:
    """Send every later :func:`seeded_map` of this process to the dask scheduler at
    ``address`` (``None``: back to local execution; the cached client is closed).

    Overrides ``DASK_SCHEDULER_ADDRESS`` for this process.
    """
    client = _SCHEDULER["client"]
    if client is not None and address != _SCHEDULER["address"]:
        client.close()
        _SCHEDULER["client"] = None
    _SCHEDULER["address"] = address if address else ""


def scheduler_address() -> str | None:
    """The scheduler address in force: :func:`use_scheduler`'s, else ``DASK_SCHEDULER_ADDRESS``."""
    addr = _SCHEDULER["address"]
    if addr is None:
        addr = os.environ.get(SCHEDULER_ENV, "")
    return addr or None


def _scheduler_client(address: str):
    """One ``dask.distributed.Client`` per process and address, connected once and reused."""
    client = _SCHEDULER["client"]
    if client is not None and _SCHEDULER.get("client_address") == address and client.status == "running":
        return client
    from dask.distributed import Client

    client = Client(address, set_as_default=False)
    _SCHEDULER["client"] = client
    _SCHEDULER["client_address"] = address
    return client


def key_int(part: Hashable) -> int:
    """A stable 64-bit integer for one key part (``int`` kept, others hashed with BLAKE2b).

    Strings are hashed together with their type, so ``5`` and ``"5"`` give different keys
    (normalise ids before keying). Stable across processes and Python versions (unlike
    ``hash``).
    """
    if isinstance(part, (bool, np.bool_)):
        part = f"bool:{bool(part)}"
    if isinstance(part, (int, np.integer)) and int(part) >= 0:
        return int(part)
    digest = hashlib.blake2b(f"{type(part).__name__}:{part}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def keyed_seed(seed: int | np.random.SeedSequence, *key: Hashable) -> np.random.SeedSequence:
    """The child seed of ``seed`` for ``key`` -- the package's one keyed-seed rule.

    ``keyed_seed(7, "episode", task_id, replicate, role, checkpoint)`` is the same
    :class:`~numpy.random.SeedSequence` in every process and under any scheduling, and
    independent of the child for any other key. A SeedSequence parent keeps its entropy
    and extends its ``spawn_key``, so keys nest: ``keyed_seed(keyed_seed(s, "a"), "b")
    == keyed_seed(s, "a", "b")``.

    Raises
    ------
    TypeError
        If ``seed`` is neither a non-negative int nor a SeedSequence.
    """
    if isinstance(seed, np.random.SeedSequence):
        entropy, prefix = seed.entropy, tuple(seed.spawn_key)
    elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and int(seed) >= 0:
        entropy, prefix = int(seed), ()
    else:
        raise TypeError(f"seed must be a non-negative int or a SeedSequence, got {seed!r}")
    return np.random.SeedSequence(entropy, spawn_key=prefix + tuple(key_int(k) for k in key))

BACKENDS = ("loky", "threading", "sequential", "dask")


def spawn_seeds(seed: int | np.random.SeedSequence, n: int) -> list[np.random.SeedSequence]:
    """``n`` independent child seed sequences of ``seed`` (the i-th is always the same)."""
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return ss.spawn(n)


def seeded_map(
    func: Callable[..., Any],
    items: Sequence[Any] | int,
    *,
    seed: int | np.random.SeedSequence = 0,
    n_jobs: int = 1,
    backend: str = "loky",
    batch_size: int | str = "auto",
    **kwargs: Any,
) -> list[Any]:
    """Apply ``func(item, rng, **kwargs)`` to every item with its own seeded generator.

    Parameters
    ----------
    func : callable ``(item, rng: numpy.random.Generator, **kwargs) -> result``
        Must be picklable (a module-level function) for process backends.
    items : sequence, or an int ``n`` meaning ``range(n)`` (trial indices)
    seed : int or SeedSequence
        Parent seed; item ``i`` gets ``default_rng(SeedSequence(seed).spawn(n)[i])``.
    n_jobs : int
        Workers (``1`` runs in process; ``-1`` all cores).
    backend : {"loky", "threading", "sequential", "dask"}
    batch_size : joblib batch size.

    Returns
    -------
    list of results in item order.

    Raises
    ------
    ValueError
        On an unknown backend.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose from {BACKENDS}")
    seq: Iterable[Any] = range(items) if isinstance(items, int) else list(items)
    seq = list(seq)
    children = spawn_seeds(seed, len(seq))
    address = scheduler_address()
    if address and backend != "sequential" and len(seq) > 1:
        # an existing cluster: the process's one client, reused; futures in item order
        client = _scheduler_client(address)
        futures = client.map(_call_indexed, [func] * len(seq), seq, children, [kwargs] * len(seq),
                             range(len(seq)), pure=False)
        return client.gather(futures)
    if n_jobs == 1 or backend == "sequential" or len(seq) <= 1:
        # the same one-thread BLAS as in the workers, so sums run in the same order
        with threadpool_limits(limits=1, user_api="blas"):
            return [func(it, np.random.default_rng(ch), **kwargs) for it, ch in zip(seq, children)]
    workers = max(1, n_jobs if n_jobs > 0 else (os.cpu_count() or 1))
    chunks = _chunks(list(zip(seq, children)), workers * CHUNKS_PER_WORKER)
    tasks = (delayed(_call_chunk)(func, chunk, kwargs) for chunk in chunks)
    if backend == "dask":
        from dask.distributed import Client, get_client

        try:
            get_client()
            client = None
        except ValueError:
            client = Client(processes=True, n_workers=max(1, n_jobs if n_jobs > 0 else 2),
                            threads_per_worker=1, dashboard_address=None)
        try:
            with parallel_config(backend="dask"):
                return [r for part in Parallel(batch_size=batch_size)(tasks) for r in part]
        finally:
            if client is not None:
                client.close()
    with parallel_config(backend=backend, n_jobs=n_jobs):
        return [r for part in Parallel(batch_size=batch_size)(tasks) for r in part]


#: Items are sent to local workers in this many contiguous chunks per worker: enough to
#: balance uneven items, few enough that the per-task costs (the BLAS thread limit is set
#: by inspecting every loaded library, about 2 ms; joblib's dispatch) stay negligible.
CHUNKS_PER_WORKER = 8


def _chunks(pairs: list, n: int) -> list[list]:
    """``pairs`` in at most ``n`` contiguous chunks of near-equal size (item order kept)."""
    n = max(1, min(n, len(pairs)))
    size, extra = divmod(len(pairs), n)
    out, start = [], 0
    for k in range(n):
        stop = start + size + (k < extra)
        out.append(pairs[start:stop])
        start = stop
    return out


#: glibc malloc settings of a worker process: keep freed blocks of up to 32 MiB in the
#: heap instead of returning them to the system. A fresh worker otherwise maps and
#: faults in the multi-megabyte temporaries of every trial again (measured: a Study A
#: trial took 22.7 ms in a worker against 14.8 ms with these settings and 14 ms in the
#: long-lived parent). Speed only; no number changes.
WORKER_MALLOPT = {-3: 32 * 2**20, -1: 256 * 2**20}  # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD
_ALLOCATOR_TUNED = False

#: First-generation threshold of Python's cyclic garbage collector in worker processes
#: and chapter kernels (:func:`tune_collector`; CPython's default is 700). The ALFWorld
#: engine (TextWorld, the fast-downward translator), the policy's belief and pandas
#: allocate millions of short-lived containers while a large long-lived heap (parsed
#: logic, memos) sits in the older generations; at 700 the collector runs every few
#: hundred allocations and keeps rescanning that heap. Measured on 12 ALFWorld recovery
#: tasks in one process: 13.7 -> 8.7 CPU-s (-37 %), the same peak memory and the same
#: tables. Cycles are still collected, only in larger batches: speed only, no number
#: changes (the book's artifacts are compared byte for byte).
GC_THRESHOLD0 = 100_000


def tune_collector() -> None:
    """Raise the collector's first threshold to :data:`GC_THRESHOLD0` (never lowers it).

    Called in every worker of :func:`seeded_map` and by
    :class:`agentstudies.book.chapter.Chapter` in a chapter's kernel. The second and third
    thresholds are kept.
    """
    import gc

    t0, t1, t2 = gc.get_threshold()
    if t0 and t0 < GC_THRESHOLD0:  # 0 means the collector is disabled: leave it so
        gc.set_threshold(GC_THRESHOLD0, t1, t2)


def _tune_allocator() -> None:
    global _ALLOCATOR_TUNED
    if _ALLOCATOR_TUNED:
        return
    _ALLOCATOR_TUNED = True
    tune_collector()
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        for param, value in WORKER_MALLOPT.items():
            libc.mallopt(param, value)
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to tune
        pass


def _call_chunk(func, chunk, kwargs):
    # one BLAS thread inside every worker (set once per chunk): tables are bit-identical
    # for any n_jobs; every item still gets its own generator
    _tune_allocator()
    with threadpool_limits(limits=1, user_api="blas"):
        return [func(item, np.random.default_rng(child), **kwargs) for item, child in chunk]


def _call_indexed(func, item, child, kwargs, index):
    # ``index`` only makes every task key distinct; the seed is the item's own child
    return _call(func, item, child, kwargs)


def _call(func, item, child, kwargs):
    # one BLAS thread inside every worker: tables are bit-identical for any n_jobs
    _tune_allocator()
    with threadpool_limits(limits=1, user_api="blas"):
        return func(item, np.random.default_rng(child), **kwargs)
