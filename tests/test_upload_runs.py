"""A namespace's upload runs (`pipeline.service.uploads.runs.IndexRuns`) with a real process for each run:
a small Python program that stands in for `pipeline index --record` (the command is the composition
root's to give), so that how the service settles a run's end is tested on its own: a result is a
success, a process that ends without one is `crashed` or `killed`, and what a stopped service left
running or queued is settled by the next (`interrupted`, or started)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from pipeline.io.local_json import write_json
from pipeline.service.uploads.runs import IndexRuns, runs_folder
from pipeline.settings import Settings

# The stand-in run: waits for `<prefix>.go` when asked to (the test's fixed point inside a run), then
# writes its result whole, as `assets.run_record` does, or exits 3 without one.
PROGRAM = """
import json, os, sys, time
prefix, mode = sys.argv[1], sys.argv[2]
if mode == "wait":
    while not os.path.exists(prefix + ".go"):
        time.sleep(0.02)
if mode == "crash":
    sys.exit(3)
with open(prefix + ".events.jsonl", "a") as f:
    f.write(json.dumps({"seq": 1, "event": "stage_started", "stage": "input_documents"}) + "\\n")
json.dump({"success": True, "dagster_run_ids": ["d-1"], "seconds": 0.1, "failures": []},
          open(prefix + ".result.json.tmp", "w"))
os.replace(prefix + ".result.json.tmp", prefix + ".result.json")
"""


def _runs(tmp_path: Path, mode: str = "ok") -> tuple[IndexRuns, list[Path]]:
    settings = Settings(storage_root=tmp_path / "storage", input_root=tmp_path / "input")
    (tmp_path / "input" / "docs").mkdir(parents=True)
    started: list[Path] = []

    def command(_namespace: str, prefix: Path) -> list[str]:
        started.append(prefix)
        return [sys.executable, "-c", PROGRAM, str(prefix), mode]

    return IndexRuns(settings, command), started


def _ended(runs: IndexRuns, run_id: str) -> dict:
    """The run's record once it has ended: read through its events, which end on that event."""
    offset, stop = 0, threading.Event()
    while True:
        _, offset, ended = runs.read_events("docs", run_id, offset)
        if ended is not None:
            return ended
        stop.wait(0.05)


def test_a_run_whose_process_records_a_result_succeeds_with_its_dagster_run(tmp_path: Path) -> None:
    runs, _ = _runs(tmp_path)
    run = runs.request("docs", ["c1"], ["doc-a"])
    assert run["status"] == "running" and run["pid"]
    record = _ended(runs, run["id"])
    assert (record["status"], record["dagster_run_id"], record["documents"]) == (
        "succeeded",
        "d-1",
        ["doc-a"],
    )


def test_a_process_that_ends_without_its_result_makes_the_run_failed_crashed(tmp_path: Path) -> None:
    runs, _ = _runs(tmp_path, mode="crash")
    record = _ended(runs, runs.request("docs", ["c1"], ["doc-a"])["id"])
    assert (record["status"], record["reason"], record["exit_code"]) == ("failed", "crashed", 3)


def test_changes_during_a_run_join_one_queued_run_which_starts_when_it_ends(tmp_path: Path) -> None:
    runs, started = _runs(tmp_path, mode="wait")
    first = runs.request("docs", ["c1"], ["doc-a"])
    later = [runs.request("docs", [f"c{i}"], [f"doc-{i}"]) for i in (2, 3, 4)]
    assert {r["id"] for r in later} == {later[0]["id"]} and later[0]["status"] == "queued"
    assert len(started) == 1  # nothing starts while the namespace's run is in flight
    (started[0].parent / f"{first['id']}.go").touch()
    assert _ended(runs, first["id"])["status"] == "succeeded"  # the first ends ...
    while len(started) < 2:  # ... and the queued run starts on that event
        threading.Event().wait(0.02)
    (started[1].parent / f"{later[0]['id']}.go").touch()
    second = _ended(runs, later[0]["id"])
    assert second["status"] == "succeeded" and second["changes"] == ["c2", "c3", "c4"]
    assert [r["id"] for r in runs.records("docs")] == sorted([first["id"], later[0]["id"]], reverse=True)


def test_a_new_service_settles_the_runs_a_stopped_one_left(tmp_path: Path) -> None:
    runs, started = _runs(tmp_path)
    folder = runs_folder(runs.settings, "docs")
    # a pid past the kernel's largest (2**22) is no process: the run's process is gone
    left_running = {"id": "20260101T000000-aaaaaa", "status": "running", "pid": 2**22 + 1, "documents": ["a"]}
    left_queued = {"id": "20260101T000001-bbbbbb", "status": "queued", "changes": ["c9"], "documents": ["b"]}
    for record in (left_running, left_queued):
        write_json(folder / f"{record['id']}.json", {"namespace": "docs", **record})
    runs.resume(["docs"])
    gone = runs.record("docs", left_running["id"])
    assert (gone["status"], gone["reason"]) == ("failed", "interrupted")
    assert len(started) == 1 and _ended(runs, left_queued["id"])["status"] == "succeeded"
