"""A namespace indexed on a dask.distributed cluster (dagster-dask): the same assets as
`index_namespace`, as three runs so that the LLM- and model-bound middle fans out over document shards.

1. `index_prepare` (namespace): input documents, base text units.
2. `index_shards` once per shard (namespace x shard), all at once: each run's steps go to whichever
   worker is free, so the shards' embedding and extraction spread over the cluster.
3. `index_finish` (namespace): the merging assets take the shards' parts, then graph, communities,
   reports, each step again on a worker.

The workers rebuild the jobs from this module (`job_by_name`), so they must import this project with
the same PIPELINE_* settings and DAGSTER_HOME; the instance must be persistent and shared (PostgreSQL,
see dagster.cluster.yaml). A worker that dies mid-step has its step re-run by the dask scheduler on
another worker; the LLM and embedding caches (PostgreSQL) answer every call the dead one finished.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any

from dagster import AssetKey, DagsterInstance, JobDefinition, MultiPartitionKey, execute_job
from dagster._core.definitions.reconstruct import ReconstructableJob, build_reconstructable_job

from assets.namespace_lock import holder_tags
from assets.partitions import SHARD_COUNT, namespace_partitions, namespace_shard_partitions
from assets.runs import PROJECT_ROOT, IndexRunResult, documents_run_config, summarize_run
from pipeline.ops.extraction.parent_death import die_with_parent


def job_by_name(name: str) -> JobDefinition:
    """How a worker process rebuilds a job of the code location."""
    from assets.definitions import defs

    return defs.resolve_job_def(name)


def reconstructable_job(name: str) -> ReconstructableJob:
    return build_reconstructable_job(
        "assets.distributed",
        "job_by_name",
        reconstructable_args=(name,),
        reconstructor_working_directory=str(PROJECT_ROOT),
    )


def _execute(
    name: str,
    instance: DagsterInstance,
    tags: dict[str, str],
    run_config: dict[str, Any] | None = None,
    on_event: Callable[[str], None] | None = None,
    asset_selection: list[AssetKey] | None = None,
) -> IndexRunResult:
    with execute_job(
        reconstructable_job(name),
        instance,
        run_config=run_config or {},
        tags=tags,
        asset_selection=asset_selection,
    ) as result:
        return summarize_run(result, on_event)


def execute_shard(key: str, assets: tuple[str, ...] | None = None) -> IndexRunResult:
    """One shard run (all its assets, or `assets`), in a process of its own: Dagster's run orchestration
    reconfigures logging and is not safe to run in several threads of one process (seen: a deadlock on
    the logging lock)."""
    tags = dict(namespace_shard_partitions.get_tags_for_partition_key(key))
    selection = [AssetKey(a) for a in assets] if assets else None
    with DagsterInstance.get() as instance:
        return _execute("index_shards", instance, tags, asset_selection=selection)


def run_index_distributed(
    namespace: str,
    input_dir: str | None,
    instance: DagsterInstance,
    on_event: Callable[[str], None] | None = None,
) -> IndexRunResult:
    if not instance.is_persistent:
        raise ValueError(
            "a distributed index needs a persistent Dagster instance that every worker shares "
            "(set DAGSTER_HOME to a folder whose dagster.yaml points at PostgreSQL)"
        )
    ns_tags = dict(namespace_partitions.get_tags_for_partition_key(namespace)) | holder_tags()
    runs = [_execute("index_prepare", instance, ns_tags, documents_run_config(input_dir), on_event)]
    if runs[0].success:
        keys = [MultiPartitionKey({"namespace": namespace, "shard": str(k)}) for k in range(SHARD_COUNT)]
        if on_event:
            on_event(f"{len(keys)} shard runs of {namespace!r} on the dask cluster")
        # spawn, not fork: the parent holds threads (dask client, database pools) a fork would copy;
        # each shard process dies with this one, as the extraction workers do
        with ProcessPoolExecutor(
            max_workers=len(keys), mp_context=get_context("spawn"), initializer=die_with_parent
        ) as pool:
            for result in pool.map(execute_shard, [str(k) for k in keys]):
                runs.append(result)
                if on_event:
                    on_event(f"shard run {result.run_id}: {'ok' if result.success else 'FAILED'}")
    if all(r.success for r in runs):
        runs.append(_execute("index_finish", instance, ns_tags, on_event=on_event))
    return IndexRunResult(
        run_ids=[r.run_id for r in runs],
        success=all(r.success for r in runs),
        steps=[s for r in runs for s in r.steps],
        failures=[f for r in runs for f in r.failures],
    )
