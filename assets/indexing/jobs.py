"""Indexing jobs.

`index_namespace` is the whole chain of one namespace in one run (sensors, the schedule, the UI and
`pipeline index` use it). A distributed index splits the same assets into three runs so that the middle
one fans out over document shards: `index_prepare` (namespace), then `index_shards` once per shard
(namespace x shard, the runs spreading over the executor's workers), then `index_finish` (namespace),
whose merging assets take the shards' work as done."""

from dagster import AssetSelection, define_asset_job

from assets.indexing.assets import base_text_units, input_documents
from assets.partitions import namespace_partitions, namespace_shard_partitions
from pipeline.index.stages import GROUP, SHARD_GROUP

INDEXING = AssetSelection.groups(GROUP)
PREPARE = AssetSelection.assets(input_documents, base_text_units)

# Every indexing asset of one namespace partition, in dependency order.
index_job = define_asset_job(
    name="index_namespace",
    selection=INDEXING,
    partitions_def=namespace_partitions,
    description="Index one namespace: documents -> text units -> embeddings (and, as they land, the graph).",
)
index_prepare_job = define_asset_job(
    name="index_prepare",
    selection=PREPARE,
    partitions_def=namespace_partitions,
    description="Distributed index, step 1: input documents and base text units of one namespace.",
)
index_shards_job = define_asset_job(
    name="index_shards",
    selection=AssetSelection.groups(SHARD_GROUP),
    partitions_def=namespace_shard_partitions,
    description="Distributed index, step 2: one document shard's embeddings and extraction.",
)
index_finish_job = define_asset_job(
    name="index_finish",
    selection=INDEXING - PREPARE,
    partitions_def=namespace_partitions,
    description="Distributed index, step 3: merge the shards, then graph, communities, reports.",
)

indexing_jobs = [index_job, index_prepare_job, index_shards_job, index_finish_job]
