"""One run per namespace at a time.

Runs that go through the instance's queue (the UI, the sensor, the schedule, backfills) are held there by
the run coordinator's tag limit (`dagster.yaml`: one in-progress run per value of `dagster/partition`,
which is the namespace of every namespace-partitioned run): queued, not failed. `pipeline index` runs its
job in-process, past the queue, so it takes the same rule here:
1. a file lock per namespace under $DAGSTER_HOME/locks, so two `pipeline index` of one namespace on this
   machine never start together (the second waits, or refuses with `--no-wait`);
2. then it waits while the instance records a run of that namespace in progress (one the daemon
   started, or a `pipeline index` on another machine of a shared instance);
3. its own run is recorded in progress with the namespace's partition tag, so the queue holds back the
   daemon's runs of that namespace until it ends.
A `pipeline index` that is killed (SIGKILL, OOM, a lost machine) never records its run's end, so the
instance keeps it in progress for ever and every later run of the namespace would wait on it. Its runs
carry the host that ran them (`holder_tags`): once this process holds the namespace's file lock, no live
`pipeline index` of the namespace is left on this host, so an in-progress run tagged with this host is
such an orphan, and it is marked failed (with the reason) instead of waited on.
A namespace's shard runs (namespace x shard, `assets.distributed`) are parts of one index and run
together by design: their partition tag is the pair, so the limit does not serialize them.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dagster import DagsterInstance, DagsterRun, DagsterRunStatus, RunsFilter

PARTITION_TAG = "dagster/partition"
IN_PROGRESS = [DagsterRunStatus.STARTING, DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
POLL_S = 2.0  # how often a waiting `pipeline index` looks again for the namespace's runs
HOST_TAG = "graphrag/index_host"
PID_TAG = "graphrag/index_pid"


class NamespaceBusy(RuntimeError):
    """Another run of the namespace is in progress and the caller asked not to wait."""


def holder_tags() -> dict[str, str]:
    """Tags of a run that `pipeline index` executes itself, naming the process that holds it."""
    return {HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())}


def runs_in_progress(instance: DagsterInstance, namespace: str) -> list[DagsterRun]:
    """The namespace's runs the instance records as in progress."""
    return list(instance.get_runs(filters=RunsFilter(tags={PARTITION_TAG: namespace}, statuses=IN_PROGRESS)))


def fail_orphaned_runs(
    instance: DagsterInstance, runs: list[DagsterRun], say: Callable[[str], None]
) -> list[DagsterRun]:
    """Mark failed the runs a dead `pipeline index` of this host left in progress; the caller must hold
    the namespace's file lock (module docstring). Returns the runs still in progress."""
    host = socket.gethostname()
    alive = []
    for run in runs:
        if run.tags.get(HOST_TAG) != host:
            alive.append(run)
            continue
        reason = (
            f"`pipeline index` (pid {run.tags.get(PID_TAG, '?')} on {host}) ended without finishing "
            "this run (killed?); marked failed by the next run of the namespace"
        )
        instance.report_run_failed(run, message=reason)
        # A killed run never gives back its `llm` pool slots (dagster.yaml): two kills during model
        # steps held both, and every later index waited for ever at extraction.
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        say(f"run {run.run_id} of namespace {run.tags.get(PARTITION_TAG)!r}: {reason}")
    return alive


def _lock_path(instance: DagsterInstance, namespace: str) -> Path:
    path = Path(instance.root_directory) / "locks" / f"namespace-{namespace}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def exclusive_namespace(
    instance: DagsterInstance,
    namespace: str,
    *,
    wait: bool = True,
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Hold the namespace for one run (module docstring); `wait=False` raises NamespaceBusy instead."""
    say = on_wait or (lambda _: None)
    with open(_lock_path(instance, namespace), "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                raise NamespaceBusy(
                    f"namespace {namespace!r} is being indexed by another `pipeline index` on this machine"
                ) from None
            say(f"waiting: another `pipeline index` of namespace {namespace!r} is running on this machine")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            announced = False
            while busy := fail_orphaned_runs(instance, runs_in_progress(instance, namespace), say):
                run_id = busy[0].run_id
                if not wait:
                    raise NamespaceBusy(f"namespace {namespace!r} has run {run_id} in progress")
                if not announced:
                    say(
                        f"waiting: namespace {namespace!r} has run {run_id} in progress "
                        "(if it is dead, terminate it in the UI and this run goes on)"
                    )
                    announced = True
                time.sleep(POLL_S)
            yield
        finally:
            # Not left to the close: a process forked meanwhile shares the open file and would keep it.
            fcntl.flock(handle, fcntl.LOCK_UN)
