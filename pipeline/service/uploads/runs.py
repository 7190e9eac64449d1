"""A namespace's index runs for its uploads: one at a time, the changes that arrive meanwhile in the next.

A change (upload, replace, delete, retry) asks for a run. With none in flight for the namespace, the
run starts at once; with one in flight, the change joins the namespace's one *queued* run, which starts
when the current one ends, so any number of changes during a run make exactly one further run.

A run is `pipeline index --namespace NS --record PREFIX` in its own process, the same materialization
through the Dagster instance that the CLI, the sensor and the UI perform (the UI lists it like any other),
and the same lock: one run per namespace whoever started it. The service never imports Dagster; it reads
the run's own record (`assets.run_record`): the stage events as they come, the result at the end.

Each run's service record `runs/<id>.json` says queued, running, succeeded or failed, and why. A run
never stays running once its process is gone: a process that ended without its result (killed, out of
memory) makes the run `failed` with reason `killed` or `crashed`; a run left running or queued by a
service that was itself stopped is `failed` with reason `interrupted` when a new service starts (its
documents can be retried), unless its process still lives, which the new service then watches.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.io.local_json import read_json, write_json
from pipeline.service.uploads.folders import now, state_folder
from pipeline.settings import Settings

log = logging.getLogger("pipeline.service")
REPO_ROOT = Path(__file__).resolve().parents[3]
POLL_S = 0.25  # how often a reader of a live run looks again for new events
ENDED = ("succeeded", "failed")

Command = Callable[[str, Path], list[str]]


def index_command(namespace: str, prefix: Path) -> list[str]:
    """`pipeline index` for the namespace, recording to `prefix`, by this interpreter."""
    return [sys.executable, "-m", "assets", "index", "--namespace", namespace, "--record", str(prefix)]


def runs_folder(settings: Settings, namespace: str) -> Path:
    return state_folder(settings, namespace) / "runs"


def new_run_id() -> str:
    # Sortable by creation, unique without coordination: a time stamp and a random tail.
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def _alive(pid: int | None, run_id: str) -> bool:
    """Whether `pid` is still the index process of `run_id` (a reused pid runs something else)."""
    if not pid:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return run_id.encode() in cmdline


class IndexRuns:
    """The runs of every writable namespace of this service (see the module docstring)."""

    def __init__(self, settings: Settings, command: Command = index_command) -> None:
        self.settings = settings
        self.command = command
        self._lock = threading.Lock()
        self._running: dict[str, str] = {}  # namespace -> run id in flight
        self._queued: dict[str, str] = {}  # namespace -> the run the next changes join
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._closed = False

    # ---- records --------------------------------------------------------------------------------
    def _path(self, namespace: str, run_id: str) -> Path:
        return runs_folder(self.settings, namespace) / f"{run_id}.json"

    def record(self, namespace: str, run_id: str) -> dict[str, Any] | None:
        """The run as a caller sees it: the service's record merged with the run's own result."""
        record = read_json(self._path(namespace, run_id))
        if not isinstance(record, dict):
            return None
        result = read_json(runs_folder(self.settings, namespace) / f"{run_id}.result.json")
        if isinstance(result, dict):
            record = {**record, **{k: v for k, v in result.items() if k != "success"}}
        record.setdefault("dagster_run_ids", [])
        record["dagster_run_id"] = record["dagster_run_ids"][-1] if record["dagster_run_ids"] else None
        return record

    def records(self, namespace: str) -> list[dict[str, Any]]:
        """The namespace's runs, newest first."""
        folder = runs_folder(self.settings, namespace)
        if not folder.is_dir():
            return []
        ids = sorted((p.stem for p in folder.glob("*.json") if "." not in p.stem), reverse=True)
        return [r for r in (self.record(namespace, i) for i in ids) if r is not None]

    def _save(self, namespace: str, record: dict[str, Any]) -> None:
        write_json(self._path(namespace, record["id"]), record)

    # ---- changes ask for runs ------------------------------------------------------------------
    def request(self, namespace: str, changes: list[str], documents: list[str]) -> dict[str, Any]:
        """The run that will take `changes` in: started now when the namespace has none in flight, else
        the namespace's queued run (made if needed), which starts when the current one ends."""
        with self._lock:
            run_id = self._queued.get(namespace)
            record = read_json(self._path(namespace, run_id)) if run_id else None
            if record is None:
                run_id = new_run_id()
                record = {
                    "id": run_id,
                    "namespace": namespace,
                    "status": "queued",
                    "reason": None,
                    "requested_at": now(),
                    "started_at": None,
                    "ended_at": None,
                    "changes": [],
                    "documents": [],
                }
                self._queued[namespace] = run_id
            record["changes"] += changes
            record["documents"] += [d for d in documents if d not in record["documents"]]
            self._save(namespace, record)
            if namespace not in self._running:
                self._start(namespace)
            return read_json(self._path(namespace, run_id)) or record

    def _start(self, namespace: str) -> None:
        """Start the namespace's queued run (the lock is held)."""
        if self._closed:
            return
        run_id = self._queued.pop(namespace)
        record = read_json(self._path(namespace, run_id))
        prefix = runs_folder(self.settings, namespace) / run_id
        output = open(f"{prefix}.log", "ab")  # noqa: SIM115 - the child's; closed when it ends
        try:
            proc = subprocess.Popen(
                self.command(namespace, prefix),
                cwd=REPO_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C to the service is not the run's
            )
        except OSError as exc:
            output.close()
            record.update(status="failed", reason="not_started", ended_at=now(), failures=[str(exc)])
            self._save(namespace, record)
            return
        record.update(status="running", started_at=now(), pid=proc.pid, service_pid=os.getpid())
        self._save(namespace, record)
        self._running[namespace] = run_id
        self._procs[namespace] = proc
        log.info("namespace %r: index run %s started (pid %d)", namespace, run_id, proc.pid)
        threading.Thread(
            target=self._watch, args=(namespace, run_id, proc, output), name=f"run-{run_id}", daemon=True
        ).start()

    def _watch(self, namespace: str, run_id: str, proc: subprocess.Popen[bytes], output: Any) -> None:
        code = proc.wait()
        output.close()
        self._ended(namespace, run_id, code)

    def _ended(self, namespace: str, run_id: str, code: int | None) -> None:
        with self._lock:
            record = read_json(self._path(namespace, run_id)) or {"id": run_id, "namespace": namespace}
            result = read_json(runs_folder(self.settings, namespace) / f"{run_id}.result.json")
            if isinstance(result, dict):
                ok = bool(result.get("success")) and code in (0, None)
                record.update(status="succeeded" if ok else "failed", reason=None if ok else "failed")
            elif code is not None and code < 0:
                name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else -code
                record.update(status="failed", reason="killed", failures=[f"the index process got {name}"])
            else:
                record.update(
                    status="failed",
                    reason="crashed",
                    failures=[f"the index process ended (exit {code}) before it recorded its result"],
                )
            record.update(ended_at=now(), exit_code=code)
            self._save(namespace, record)
            self._running.pop(namespace, None)
            self._procs.pop(namespace, None)
            log.info("namespace %r: index run %s %s", namespace, run_id, record["status"])
            if namespace in self._queued:
                self._start(namespace)

    # ---- a new service --------------------------------------------------------------------------
    def resume(self, namespaces: list[str]) -> None:
        """Settle what a stopped service left: a running run whose process is gone is `interrupted`, one
        whose process lives is watched to its end; the queued run of each namespace starts."""
        for namespace in namespaces:
            for record in self.records(namespace):
                if record["status"] == "running":
                    if _alive(record.get("pid"), record["id"]):
                        with self._lock:
                            self._running[namespace] = record["id"]
                        threading.Thread(
                            target=self._poll_orphan, args=(namespace, record), daemon=True
                        ).start()
                        continue
                    self._interrupt(namespace, record, "the service stopped while the run was in flight")
                elif record["status"] == "queued":
                    with self._lock:
                        if namespace in self._queued:  # one queued run per namespace: merge
                            self._interrupt(namespace, record, "merged into the namespace's queued run")
                            continue
                        self._queued[namespace] = record["id"]
                        if namespace not in self._running:
                            self._start(namespace)

    def _interrupt(self, namespace: str, record: dict[str, Any], why: str) -> None:
        stored = read_json(self._path(namespace, record["id"])) or record
        stored.update(status="failed", reason="interrupted", ended_at=now(), failures=[why])
        self._save(namespace, stored)

    def _poll_orphan(self, namespace: str, record: dict[str, Any]) -> None:
        while _alive(record.get("pid"), record["id"]) and not self._closed:
            time.sleep(1.0)
        if not self._closed:
            self._ended(namespace, record["id"], None)

    # ---- readers ---------------------------------------------------------------------------------
    def read_events(
        self, namespace: str, run_id: str, offset: int
    ) -> tuple[list[dict[str, Any]], int, dict[str, Any] | None]:
        """The run's events past byte `offset` of its events file, the next offset, and the run's
        record once it has ended (read before the events: an ended run's events are all written)."""
        record = self.record(namespace, run_id) or {}
        ended = record if record.get("status") in ENDED else None
        path = runs_folder(self.settings, namespace) / f"{run_id}.events.jsonl"
        found = []
        with contextlib.suppress(FileNotFoundError), open(path, "rb") as handle:
            handle.seek(offset)
            for line in handle:
                if not line.endswith(b"\n"):
                    break  # a line still being written: read again next time
                offset += len(line)
                found.append(json.loads(line))
        return found, offset, ended

    def close(self) -> None:
        """The service stops: runs in flight go on in their own processes (a new service watches them)."""
        self._closed = True


def summary(record: dict[str, Any]) -> dict[str, Any]:
    """A run's final line for its events stream."""
    keep = ("id", "status", "reason", "started_at", "ended_at", "failures", "dagster_run_id", "seconds")
    return {k: record.get(k) for k in keep}
