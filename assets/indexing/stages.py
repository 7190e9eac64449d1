"""The stage table (`pipeline.index.stages`) in Dagster's terms: each indexing asset's `deps` and group
come from it, so no asset lists its inputs by hand and the graph cannot drift from `index_folder`."""

import warnings

from dagster import AssetDep, MultiToSingleDimensionPartitionMapping

from pipeline.index.stages import STAGES

# A namespace-level asset reads every shard of its own namespace. The mapping is marked beta; its
# warning would be printed by every CLI command that loads the definitions.
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    BY_NAMESPACE = MultiToSingleDimensionPartitionMapping(partition_dimension_name="namespace")


def deps(asset: str) -> list[AssetDep]:
    """The assets `asset` reads, as its stage in the table says; a namespace asset reading a per-shard
    one reads all of its namespace's shards."""
    stage = STAGES.writer(asset)
    return [
        AssetDep(name, partition_mapping=BY_NAMESPACE)
        if STAGES.writer(name).per_shard and not stage.per_shard
        else AssetDep(name)
        for name in stage.reads
    ]


def group(asset: str) -> str:
    return STAGES.writer(asset).group
