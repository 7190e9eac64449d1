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
A namespace's shard runs (namespace x shard, `assets.distributed`) are parts of one index and run
together by design: their partition tag is the pair, so the limit does not serialize them.
"""

from __future__ import annotations

import fcntl
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

PARTITION_TAG = "dagster/partition"
IN_PROGRESS = [DagsterRunStatus.STARTING, DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
POLL_S = 2.0  # how often a waiting `pipeline index` looks again for the namespace's runs


class NamespaceBusy(RuntimeError):
    """Another run of the namespace is in progress and the caller asked not to wait."""


def runs_in_progress(instance: DagsterInstance, namespace: str) -> list[str]:
    """Ids of the namespace's runs the instance records as in progress."""
    runs = instance.get_runs(filters=RunsFilter(tags={PARTITION_TAG: namespace}, statuses=IN_PROGRESS))
    return [r.run_id for r in runs]


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
            while busy := runs_in_progress(instance, namespace):
                if not wait:
                    raise NamespaceBusy(f"namespace {namespace!r} has run {busy[0]} in progress")
                if not announced:
                    say(f"waiting: namespace {namespace!r} has run {busy[0]} in progress")
                    announced = True
                time.sleep(POLL_S)
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
