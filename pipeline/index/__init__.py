"""Indexing, one module per Dagster asset: `run(ctx) -> StageReport`, same name as the asset.

A runner reads the previous stage's tables from `ctx.store`, calls the operations in `pipeline.ops`,
writes its tables and returns what the asset reports (metadata, checks, warnings). The Dagster asset
body builds `ctx` from its resources, calls the runner and turns the report into a materialization;
`pipeline.index.run.index_folder` calls the same runners in order without Dagster.
"""
