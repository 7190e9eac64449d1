"""The worker processes the offline extractor's packs run on.

The rules and spaCy's NER are Python and one core's worth of work: in one process the extraction stage
left a core idle (294 s of the 11 MB scale run, 1,277 s of the 44 MB one). A run with enough units spreads
its packs over a pool of spawned processes, one per core. Each pack is extracted whole by one call in one
worker, the call the same pack gets in this process, so the records are the same (the rules and the model
are deterministic).

Spawned, not forked: the parent may already hold torch's and OpenBLAS's thread pools, which a fork copies
in a state that can hang the child. Each worker keeps BLAS on one thread, so n workers use n cores. A
process that cannot have children (dask's daemonic worker processes) extracts in process, and so do the
packs of a pool whose worker died (an OOM kill): the pool is dropped, the packs it still held are extracted
here, and no unit is lost. The pool lives for one extraction run (`run.extract_graph` shuts it down), so
its memory is back before the next stage.

A worker dies with its parent, however the parent ends (`pipeline.ops.extraction.parent_death`): a `kill -9` of
`pipeline index` left each worker, about 430 MB, running under PID 1. A pool used from a short-lived
thread would see its workers killed (PDEATHSIG follows the parent *thread*): a broken pool, whose packs
are then extracted in process, slower but never wrong.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import multiprocessing.process
import os
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from pipeline.ops.extraction.parent_death import die_with_parent

log = logging.getLogger(__name__)

A = TypeVar("A")
R = TypeVar("R")

# Below this many units a run stays in process: spawning a worker and loading spaCy in it costs about
# 3 s, about what 30 units' extraction takes in one process, so a pool pays off from a few hundred.
MIN_UNITS_FOR_WORKERS = 256

_pools: dict[int, ProcessPoolExecutor] = {}
_lock = threading.Lock()


def cores() -> int:
    """The cores this process may run on (its affinity mask, where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def workers_for(processes: int, units: int) -> int:
    """Worker processes for a run of `units` units: `processes` as configured (0: one per core when the
    run has at least MIN_UNITS_FOR_WORKERS units); 1 means in this process."""
    if multiprocessing.current_process().daemon:
        return 1  # daemonic processes are not allowed to have children
    if processes == 0:
        return cores() if units >= MIN_UNITS_FOR_WORKERS else 1
    return max(1, processes)


def _init_worker() -> None:
    die_with_parent()
    import numpy  # noqa: F401 - loads OpenBLAS so that the limit below reaches it
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


def _pool(workers: int) -> ProcessPoolExecutor:
    with _lock:
        pool = _pools.get(workers)
        if pool is None:
            pool = ProcessPoolExecutor(
                workers, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker
            )
            _pools[workers] = pool
        return pool


def _drop(workers: int, pool: ProcessPoolExecutor) -> None:
    with _lock:
        if _pools.get(workers) is pool:
            del _pools[workers]
    pool.shutdown(wait=False, cancel_futures=True)


async def run_in_workers(fn: Callable[[A], R], arg: A, workers: int) -> R:
    """`fn(arg)` on one of `workers` worker processes (in this process when `workers` is 1). `fn` and
    `arg` must pickle: a module-level function and plain data."""
    if workers <= 1:
        return fn(arg)
    pool = _pool(workers)
    try:
        return await asyncio.get_running_loop().run_in_executor(pool, fn, arg)
    except BrokenProcessPool as e:
        _drop(workers, pool)
        log.warning("an extraction worker process died (%s): extracting this pack in process", e)
        return fn(arg)


def shutdown() -> None:
    """Stop every pool's workers and wait for them (the end of an extraction run)."""
    with _lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.shutdown(wait=True, cancel_futures=True)
