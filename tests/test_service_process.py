"""graphrag-serve's process set-up: glibc's malloc arenas, counted with glibc's own `malloc_info` in a fresh
process, and torch's compute threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Eight threads each allocate once and stay alive; glibc gives a new thread an arena of its own until the
# cap (8 per core by default), so the arenas counted are min(cap, threads + the main one).
PROBE = r"""
import ctypes, ctypes.util, json, sys, tempfile, threading
from pipeline.service.process import limit_malloc_arenas
applied = limit_malloc_arenas(2) if sys.argv[1] == "capped" else None
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.fopen.restype, libc.fopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes, libc.fclose.argtypes = [ctypes.c_int, ctypes.c_void_p], [ctypes.c_void_p]
ready, leave = threading.Barrier(9), threading.Event()
def hold():
    libc.malloc(64)
    ready.wait()
    leave.wait()
threads = [threading.Thread(target=hold) for _ in range(8)]
for t in threads:
    t.start()
ready.wait()
path = tempfile.mktemp()
fp = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, fp)
libc.fclose(fp)
leave.set()
print(json.dumps({"applied": applied, "arenas": open(path).read().count("<heap nr=")}))
"""


def probe(mode: str, **env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | env
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode], cwd=ROOT, env=clean, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_the_service_caps_glibc_malloc_arenas_at_two_and_the_environment_wins() -> None:
    uncapped = probe("uncapped")
    assert uncapped["arenas"] >= 5  # the probe does make arenas: one per live thread, up to glibc's cap
    capped = probe("capped")
    assert capped == {"applied": True, "arenas": 2}
    chosen = probe("capped", MALLOC_ARENA_MAX="4")  # the operator's choice is left as it is
    assert chosen == {"applied": False, "arenas": 4}


THREADS_PROBE = r"""
import json, os
import numpy  # loads OpenBLAS with its default thread count first, as the service's imports do
from threadpoolctl import threadpool_info
from pipeline.service.process import limit_compute_threads
applied = limit_compute_threads(1)
blas = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
print(json.dumps({"applied": applied, "omp": os.environ.get("OMP_NUM_THREADS"), "blas": blas}))
"""


def threads_probe(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    out = subprocess.run(
        [sys.executable, "-c", THREADS_PROBE],
        cwd=ROOT,
        env=clean | env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def test_the_service_runs_torch_and_openblas_on_one_thread_unless_the_environment_chose() -> None:
    chosen = threads_probe()
    assert chosen["applied"] and chosen["omp"] == "1"  # torch, loaded later, reads it
    assert chosen["blas"] and set(chosen["blas"]) == {1}  # numpy's OpenBLAS, already loaded, is capped
    left = threads_probe(OMP_NUM_THREADS="2")
    assert left == {"applied": False, "omp": "2", "blas": [2] * len(chosen["blas"])}  # OpenBLAS reads it too
