"""Partitions shared by every domain."""

from dagster import DynamicPartitionsDefinition

# One partition per namespace (tenant). Keys are validated by pipeline.namespace before they are added.
namespace_partitions = DynamicPartitionsDefinition(name="namespace")
