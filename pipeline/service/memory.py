"""How many malloc arenas the service's process may use (glibc only).

glibc gives each thread that meets contention an arena of its own (up to 8 per core) and rarely gives
their freed pages back, so a threaded server's RSS creeps up with the number of threads that ever
allocated, not with what it holds. Under bench/bench_serve_load.py (16 clients, 60 s, 11 MB index) the
service grew 1,605 -> 1,979 MB (+23%) with glibc's default and 1,536 -> 1,576 MB (+2.6%) with two
arenas, at no cost in throughput (6.6 and 7.7 requests a second). Python's small objects come from
its own allocator, so few arenas cost little contention.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

M_ARENA_MAX = -8  # glibc's <malloc.h>


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
