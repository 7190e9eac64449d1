"""The Dagster layer: thin assets over `pipeline`, plus resources, partitions, jobs and checks."""
