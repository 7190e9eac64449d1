"""Indexing jobs."""

from dagster import AssetSelection, define_asset_job

from assets.partitions import namespace_partitions

# Every indexing asset of one namespace partition, in dependency order.
index_job = define_asset_job(
    name="index_namespace",
    selection=AssetSelection.groups("indexing"),
    partitions_def=namespace_partitions,
    description="Index one namespace: documents -> text units -> embeddings (and, as they land, the graph).",
)
