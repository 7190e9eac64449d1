"""The code location: every domain's definitions composed."""

import warnings

from dagster import Definitions, with_source_code_references

from assets.eval_asset import eval_report
from assets.executors import pipeline_executor
from assets.indexing.assets import indexing_assets
from assets.indexing.automation import with_reindex_automation
from assets.indexing.chunk_graph import chunk_graph
from assets.indexing.graph import graph_assets
from assets.indexing.graphrag_import import graphrag_import, import_graphrag_job
from assets.indexing.jobs import indexing_jobs
from assets.indexing.reports import report_assets
from assets.indexing.schedules import nightly_reindex
from assets.indexing.sensors import input_root_sensor, query_refresh_sensor, reindex_automation_sensor
from assets.indexing.shards import shard_assets
from assets.indexing.version import index_version
from assets.query.assets import query_assets
from assets.query.jobs import answer_questions_job
from assets.resources import default_resources


def _with_code_references(assets: list) -> list:
    """Each asset linked to its body in the source (which names the `pipeline.index` runner it calls).
    The API is marked beta; its warnings would be printed by every CLI command that loads these."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return with_source_code_references(assets)


defs = Definitions(
    assets=_with_code_references(
        with_reindex_automation(
            [
                *indexing_assets,
                *shard_assets,
                chunk_graph,
                index_version,
                *graph_assets,
                *report_assets,
                *query_assets,
                eval_report,
                graphrag_import,
            ]
        )
    ),
    jobs=[*indexing_jobs, answer_questions_job, import_graphrag_job],
    executor=pipeline_executor(),
    schedules=[nightly_reindex],
    sensors=[input_root_sensor, query_refresh_sensor, reindex_automation_sensor],
    resources=default_resources(),
)
