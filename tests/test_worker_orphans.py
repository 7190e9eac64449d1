"""Finding 5 of issue 59: `kill -9` of `pipeline index` left its extraction worker processes and
multiprocessing's resource tracker running under PID 1. Now each worker dies with its parent
(`pipeline/ops/extraction/processes.py`), and the tracker, whose pipe the workers held open, ends with them.

The test runs the real CLI with two extraction workers on the demo book. It waits for the event "both
workers are up" (the index process's children, read with psutil), stops the process (SIGSTOP) so that it
cannot shut its pool down itself, records every descendant, kills it with SIGKILL and then waits, with a
bound that only keeps a broken build from hanging the suite, for every recorded descendant to end.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.conftest import REPO_ROOT, make_dagster_home

BOOK = REPO_ROOT / "samples" / "demo" / "a_christmas_carol.txt"
WORKERS = 2
WAIT_S = 300.0  # only bounds how long a broken build could hang the test


def _workers(proc: psutil.Process) -> list[psutil.Process]:
    found = []
    for child in proc.children(recursive=True):
        try:
            if any("spawn_main" in part for part in child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def _wait_for_workers(proc: psutil.Process, popen: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while len(_workers(proc)) < WORKERS:
        if popen.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"the index never started {WORKERS} workers:\n{log.read_text()[-3000:]}")
        time.sleep(0.05)  # a poll interval for the event, not a wait for something to happen


def test_kill_9_of_pipeline_index_leaves_no_worker_or_tracker_behind(tmp_path: Path):
    folder = tmp_path / "input"
    folder.mkdir()
    (folder / "carol.txt").write_text(BOOK.read_text(encoding="utf-8"), encoding="utf-8")
    log = tmp_path / "index.log"
    env = {
        **os.environ,
        "DAGSTER_HOME": str(make_dagster_home(tmp_path / "dagster")),
        "PIPELINE_STORAGE_ROOT": str(tmp_path / "storage"),
        "PIPELINE_LLM_PROVIDER": "offline",
        "PIPELINE_EXTRACTION_PROCESSES": str(WORKERS),
    }
    cmd = [sys.executable, "-m", "assets", "index", "--namespace", "orphans", "--input", str(folder)]
    with open(log, "wb") as out:
        popen = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    proc = psutil.Process(popen.pid)
    descendants: list[psutil.Process] = []
    try:
        _wait_for_workers(proc, popen, log)
        os.kill(popen.pid, signal.SIGSTOP)  # from here the parent cannot end its workers itself
        descendants = proc.children(recursive=True)
        kinds = [" ".join(p.cmdline()) for p in descendants]
        os.kill(popen.pid, signal.SIGKILL)
        assert popen.wait(timeout=WAIT_S) == -signal.SIGKILL
        assert sum("spawn_main" in k for k in kinds) >= WORKERS, kinds
        assert any("resource_tracker" in k for k in kinds), kinds
        _, alive = psutil.wait_procs(descendants, timeout=WAIT_S)
        assert not alive, [(p.pid, " ".join(p.cmdline())) for p in alive]
    finally:
        if popen.poll() is None:
            popen.kill()
            popen.wait()
        for p in descendants:  # only this test's own processes, whatever the outcome
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()


_POOL_PARENT = """
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

from pipeline.ops.extraction.parent_death import die_with_parent


def busy() -> None:
    print(os.getpid(), flush=True)  # the event the test waits for: the child is up and working
    time.sleep(3600)  # a task that outlives its parent unless the child dies with it


if __name__ == "__main__":
    pool = ProcessPoolExecutor(1, mp_context=get_context("spawn"), initializer=die_with_parent)
    pool.submit(busy)
    time.sleep(3600)
"""


def test_a_pool_child_that_dies_with_parent_ends_when_its_parent_is_killed_mid_task(tmp_path: Path):
    """The initializer every spawned pool uses (extraction workers, the distributed index's shard runs):
    a child busy with a task when its parent gets SIGKILL is gone, not re-parented to PID 1."""
    script = tmp_path / "pool_parent.py"
    script.write_text(_POOL_PARENT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    parent = subprocess.Popen([sys.executable, str(script)], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE)
    try:
        child = psutil.Process(int(parent.stdout.readline()))
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        gone, alive = psutil.wait_procs([child], timeout=WAIT_S)  # the bound only guards a broken build
        assert alive == [], f"child {child.pid} outlived its killed parent"
    finally:
        with contextlib.suppress(ProcessLookupError):
            parent.kill()
        for proc in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                if proc.pid != parent.pid and str(script) in " ".join(proc.cmdline()):
                    proc.kill()
