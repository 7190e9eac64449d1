"""One run per namespace at a time, with real `pipeline index` processes against a real Dagster instance
(SQLite, the project's dagster.yaml) and the LLM path through the fault proxy's scripted model.

The first run is held mid-extraction by an event (the proxy keeps its first extraction request
unanswered), so the second provably starts while the first is in progress: it must wait (or, with
`--no-wait`, refuse), and the two runs' recorded times must not overlap."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from dagster import DagsterRunStatus, RunsFilter
from dagster._core.test_utils import create_run_for_test

from assets.launch import run_index
from assets.namespace_lock import HOST_TAG, PID_TAG, NamespaceBusy
from tests.conftest import REPO_ROOT
from tests.support.env import scoped_env
from tests.support.fault_proxy import FaultProxy, client_pid
from tests.support.graph_model import ScriptedGraphModel, extraction_text
from tests.support.meeting_corpus import meeting_corpus, scripted_llm_env

WAIT_S = 300.0  # only bounds how long a broken run could hang the test


def _wait_for_line(log: Path, text: str, proc: subprocess.Popen) -> None:
    """Until the process has printed `text` (an event: the line is written before it blocks)."""
    deadline = time.monotonic() + WAIT_S
    while text not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"never printed {text!r}:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.05)


def test_two_index_runs_of_one_namespace_never_overlap_and_both_finish(tmp_path, dagster_instance):
    storage, folder = tmp_path / "storage", tmp_path / "input"
    folder.mkdir()
    for name, text in meeting_corpus(6).items():
        (folder / name).write_text(text, encoding="utf-8")
    cmd = [sys.executable, "-m", "assets", "index", "--namespace", "busy", "--input", str(folder)]
    model = ScriptedGraphModel()
    with FaultProxy(None, responder=model) as proxy:
        hold = proxy.hold(lambda r: extraction_text(r.body) is not None, from_nth=1)
        env = {**os.environ, **scripted_llm_env(storage, proxy.base_url)}
        logs = {k: tmp_path / f"{k}.log" for k in ("first", "second")}
        with open(logs["first"], "wb") as out:
            first = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        second = None
        try:
            hold.wait_held(1, WAIT_S, alive=lambda: first.poll() is None)  # the first run is mid-extraction
            refused = subprocess.run(
                [*cmd, "--no-wait"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=WAIT_S
            )
            assert refused.returncode == 4, refused.stdout + refused.stderr
            assert "not started (--no-wait)" in refused.stderr
            with open(logs["second"], "wb") as out:
                second = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
            _wait_for_line(logs["second"], "waiting:", second)
            # Every held request is the first run's: the second sent nothing while it waited.
            assert {client_pid(r, [first.pid, second.pid]) for r in hold.held} == {first.pid}
        finally:
            hold.release()
            for proc in (first, second):
                if proc is not None:
                    proc.wait(timeout=WAIT_S)
    for name, proc in (("first", first), ("second", second)):
        assert proc.returncode == 0, logs[name].read_text(errors="replace")[-3000:]
    records = dagster_instance.get_run_records(filters=RunsFilter(tags={"dagster/partition": "busy"}))
    assert len(records) == 2  # the refused one started nothing
    earlier, later = sorted(records, key=lambda r: r.start_time)
    assert earlier.end_time <= later.start_time  # never in progress together
    assert model.snapshot()["extract_graph"] == 6  # the second run's extractions came from the cache


def test_both_instance_configs_declare_the_one_run_per_namespace_queue_limit():
    """The daemon's queue (UI, sensor, schedule and backfill runs) applies the same rule, on one machine
    and on the cluster's PostgreSQL instance."""
    for path in (REPO_ROOT / "dagster.yaml", REPO_ROOT / "deploy" / "dagster.cluster.yaml"):
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert config["run_coordinator"]["class"] == "QueuedRunCoordinator", path
        limits = config["concurrency"]["runs"]["tag_concurrency_limits"]
        assert {"key": "dagster/partition", "value": {"applyLimitPerUniqueValue": True}, "limit": 1} in limits


def _in_progress(instance, namespace: str, tags: dict[str, str]) -> str:
    """A run recorded STARTED whose process is gone, as a SIGKILLed `pipeline index` leaves it (the real
    kill is in test_incremental_llm's crash test)."""
    return create_run_for_test(
        instance,
        job_name="index_namespace",
        status=DagsterRunStatus.STARTED,
        tags={"dagster/partition": namespace, **tags},
    ).run_id


def test_a_run_recorded_in_progress_by_a_dead_index_of_this_host_is_failed_not_waited_on(
    tmp_path, dagster_instance
):
    folder = tmp_path / "input"
    folder.mkdir()
    (folder / "a.txt").write_text(
        "Ada Lovelace wrote the first program for the Analytical Engine.", encoding="utf-8"
    )
    orphan = _in_progress(dagster_instance, "orphaned", {HOST_TAG: socket.gethostname(), PID_TAG: "999999"})
    events: list[str] = []
    with scoped_env(PIPELINE_STORAGE_ROOT=str(tmp_path / "storage")):
        result = run_index(
            "orphaned", input_dir=str(folder), instance=dagster_instance, on_event=events.append, wait=False
        )
    assert result.success, result.failures
    run = dagster_instance.get_run_by_id(orphan)
    assert run.status == DagsterRunStatus.FAILURE
    assert any(orphan in e and "ended without finishing" in e for e in events), events
    # the new run carries this process's host and pid, so a kill of it would be recovered the same way
    new = dagster_instance.get_run_by_id(result.run_ids[0])
    assert new.tags[HOST_TAG] == socket.gethostname() and new.tags[PID_TAG] == str(os.getpid())


@pytest.mark.parametrize("tags", [{HOST_TAG: "another-host"}, {}], ids=["other host", "daemon run"])
def test_a_run_in_progress_elsewhere_still_holds_the_namespace(tmp_path, dagster_instance, tags):
    """Only this host's file lock proves a run's process dead: a run of another host (a shared instance)
    or one the daemon launched (no host tag) is waited on, or refused with --no-wait."""
    namespace = "elsewhere" + str(len(tags))
    run_id = _in_progress(dagster_instance, namespace, tags)
    with (
        scoped_env(PIPELINE_STORAGE_ROOT=str(tmp_path / "storage")),
        pytest.raises(NamespaceBusy, match=run_id),
    ):
        run_index(namespace, input_dir=str(tmp_path), instance=dagster_instance, wait=False)
    assert dagster_instance.get_run_by_id(run_id).status == DagsterRunStatus.STARTED
