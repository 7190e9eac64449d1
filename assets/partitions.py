"""Partitions shared by every domain."""

from dagster import DynamicPartitionsDefinition, MultiPartitionsDefinition, StaticPartitionsDefinition

from pipeline.settings import load_settings

# One partition per namespace (tenant). Keys are validated by pipeline.core.namespace before they are added.
namespace_partitions = DynamicPartitionsDefinition(name="namespace")

# PIPELINE_SHARDS is read when the definitions load: the daemon, the webserver and every worker must be
# started with the same value, or they would disagree on the partition keys.
SHARD_COUNT = load_settings().shards
shard_partitions = StaticPartitionsDefinition([str(k) for k in range(SHARD_COUNT)])

# namespace x document shard: a namespace's LLM- and model-bound work, split so workers share it.
namespace_shard_partitions = MultiPartitionsDefinition(
    {"namespace": namespace_partitions, "shard": shard_partitions}
)
