"""How graphrag-serve's process is set up before it serves: malloc arenas and compute threads.

Malloc arenas (glibc only): glibc gives each thread that meets contention an arena of its own (up to 8
per core) and rarely gives their freed pages back, so a threaded server's RSS creeps up with the number
of threads that ever allocated, not with what it holds. Under bench/bench_serve_load.py (16 clients,
60 s, 11 MB index) the service grew 1,605 -> 1,979 MB (+23%) with glibc's default and 1,536 -> 1,576 MB
(+2.6%) with two arenas, at no cost in throughput (6.6 and 7.7 requests a second). Python's small
objects come from its own allocator, so few arenas cost little contention.

Compute threads: the service's parallelism is its concurrent queries, and a question to embed is a dozen
tokens, too few for torch's intra-op threads (or numpy's OpenBLAS ones) to speed it up; two such pools
(a basic and a graph query embedding at once) only fight over two cores. Under the same bench (basic
p95 / p99, seconds): torch and OpenBLAS at their defaults 0.60-0.84 / 0.71-1.15 (four runs); torch at
one thread 0.77-0.91 / 1.12-1.13 (two); both at one 0.60-0.68 / 0.67-0.91 (four), at the same 8-9
requests a second.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

M_ARENA_MAX = -8  # glibc's <malloc.h>


def limit_compute_threads(count: int) -> bool:
    """`count` threads for the BLAS and OpenMP pools already loaded (numpy's OpenBLAS), and
    `OMP_NUM_THREADS` for torch, which reads it when it loads; nothing when the environment already
    has `OMP_NUM_THREADS` (the operator chose). True when it was applied."""
    if os.environ.get("OMP_NUM_THREADS"):
        return False
    from threadpoolctl import threadpool_limits

    os.environ["OMP_NUM_THREADS"] = str(count)
    threadpool_limits(limits=count)  # not used as a context: it holds for the process's life
    return True


def limit_malloc_arenas(count: int) -> bool:
    """Cap glibc's arenas at `count` for this process from now on; True when it took effect.

    `MALLOC_ARENA_MAX` in the environment wins (glibc read it at start-up, and the operator chose it);
    off Linux or off glibc (musl, macOS) nothing is done."""
    if os.environ.get("MALLOC_ARENA_MAX") or not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name)
    if not hasattr(libc, "mallopt") or not hasattr(libc, "gnu_get_libc_version"):
        return False
    return bool(libc.mallopt(M_ARENA_MAX, count))
