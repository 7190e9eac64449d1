"""Run the indexing job for one namespace in-process against the real Dagster instance (used by the CLI)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from dagster import DagsterInstance

from assets.namespace_lock import exclusive_namespace, holder_tags
from assets.runs import PROJECT_ROOT, IndexRunResult, documents_run_config, summarize_run
from pipeline.core.namespace import validate_namespace

# The console logger of an in-process run prints every event (STEP_START, STEP_OUTPUT ...) at DEBUG;
# the CLI prints its own lines and each failure, so without -v the console gets none of them.
QUIET_CONSOLE = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def ensure_dagster_home() -> Path:
    """Use $DAGSTER_HOME, or ./.dagster_home seeded with the project's dagster.yaml."""
    home = os.environ.get("DAGSTER_HOME")
    if home:
        path = Path(home)
    else:
        path = Path.cwd() / ".dagster_home"
        os.environ["DAGSTER_HOME"] = str(path.resolve())
    path.mkdir(parents=True, exist_ok=True)
    config = path / "dagster.yaml"
    if not config.exists() and (PROJECT_ROOT / "dagster.yaml").exists():
        shutil.copyfile(PROJECT_ROOT / "dagster.yaml", config)
    return path


def add_namespace(instance: DagsterInstance, namespace: str) -> None:
    validate_namespace(namespace)
    if not instance.has_dynamic_partition("namespace", namespace):
        instance.add_dynamic_partitions("namespace", [namespace])


def run_index(
    namespace: str,
    input_dir: str | None = None,
    instance: DagsterInstance | None = None,
    on_event: Callable[[str], None] | None = None,
    *,
    wait: bool = True,
    quiet: bool = False,
) -> IndexRunResult:
    """Register the namespace partition and materialize its indexing assets through Dagster.

    With PIPELINE_DASK_SCHEDULER set, the steps run on that dask cluster's workers, the namespace's
    shards in parallel (`assets.distributed`); otherwise the whole chain runs in this process. One run
    per namespace at a time (`assets.namespace_lock`): this waits for the namespace's run in progress,
    or raises NamespaceBusy with `wait=False`. `quiet` keeps Dagster's event stream off the console
    (the run's event log in the instance still has every event)."""
    validate_namespace(namespace)
    from assets.definitions import defs
    from pipeline.io.partial_writes import remove_partial_writes
    from pipeline.io.repair import clear_damage
    from pipeline.io.store import NamespaceStore
    from pipeline.settings import load_settings

    if instance is None:
        ensure_dagster_home()
        instance = DagsterInstance.get()
    add_namespace(instance, namespace)
    with exclusive_namespace(instance, namespace, wait=wait, on_wait=on_event):
        # A damaged table (a file cut short) is removed, so that the stage writing it rebuilds it.
        clear_damage(NamespaceStore.from_settings(load_settings(), namespace), on_event)
        remove_partial_writes(NamespaceStore.from_settings(load_settings(), namespace), on_event)
        if load_settings().dask_scheduler:
            from assets.distributed import run_index_distributed

            return run_index_distributed(namespace, input_dir, instance, on_event)
        if on_event and not quiet:
            on_event(f"namespace {namespace!r} is free: the run starts")
        job = defs.resolve_job_def("index_namespace")
        result = job.execute_in_process(
            partition_key=namespace,
            instance=instance,
            run_config={**documents_run_config(input_dir), **(QUIET_CONSOLE if quiet else {})},
            tags=holder_tags(),
            raise_on_error=False,
        )
    return summarize_run(result, None if quiet else on_event)


def backfill_namespaces(
    instance: DagsterInstance | None = None, on_event: Callable[[str], None] | None = None
) -> tuple[dict[str, IndexRunResult], list[str]]:
    """Re-index every namespace: each folder under the input root and each registered partition.

    Runs one namespace after another in-process (a re-index of an unchanged namespace is nearly free:
    everything is cached by content). A registered namespace with no folder under the input root was
    indexed from elsewhere (`--input`) and is skipped, named in the second value."""
    from pipeline.ops.incremental import all_namespaces, namespace_folders
    from pipeline.settings import load_settings

    if instance is None:
        ensure_dagster_home()
        instance = DagsterInstance.get()
    root = load_settings().input_root
    folders = namespace_folders(root)
    results: dict[str, IndexRunResult] = {}
    skipped: list[str] = []
    for ns in all_namespaces(root, instance.get_dynamic_partitions("namespace")):
        if ns not in folders:
            skipped.append(ns)
            continue
        if on_event:
            on_event(f"namespace {ns!r}")
        results[ns] = run_index(ns, instance=instance, on_event=on_event)
    return results, skipped
