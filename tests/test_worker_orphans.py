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
import pytest

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


@pytest.mark.skipif(sys.platform != "linux", reason="the resource tracker and psutil children are Linux here")
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
