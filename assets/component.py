"""`GraphRAGIndex`: one corpus's GraphRAG index as a Dagster component, declared in a `defs.yaml`.

Loading it yields the namespace-partitioned asset graph (ingest -> text units -> graph -> communities ->
reports -> embeddings -> index version), its checks, the index jobs, the sensors and the saved-question
assets. This repository's own code location (`assets.definitions`) is built by the same component with
its defaults, so there is one way to build the definitions.

In a `dg` project: `dg scaffold defs assets.component.GraphRAGIndex my_corpus --json-params
'{"input": "data"}'` writes a `defs.yaml`; `dg check defs` validates it; `dg dev` serves it. The fields
are documented on the model (docs/component.md is generated from them: `docs/gen_config.py`).

The asset keys and the `namespace` partitions are global: one GraphRAGIndex per code location.
"""

from __future__ import annotations

import warnings
from typing import Literal

from dagster import Definitions, with_source_code_references
from dagster.components import (
    Component,
    ComponentLoadContext,
    Model,
    Resolvable,
    Scaffolder,
    ScaffoldRequest,
    scaffold_component,
    scaffold_with,
)
from pydantic import BaseModel, Field

from assets.eval_asset import eval_report
from assets.executors import pipeline_executor
from assets.indexing.assets import indexing_assets
from assets.indexing.automation import NIGHTLY_CRON, with_reindex_automation
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


class ModelSettings(Model):
    """The chat model the LLM stages call. The key is never written here: only the name of the
    environment variable that holds it, read when a step runs."""

    provider: Literal["offline", "openai"] | None = Field(
        default=None,
        description="offline: rules and no model call; openai: any OpenAI-compatible server. "
        "Unset: PIPELINE_LLM_PROVIDER (offline by default).",
    )
    model: str | None = Field(
        default=None, description="The chat model's name on the server (PIPELINE_LLM_MODEL)."
    )
    base_url: str | None = Field(
        default=None, description="The server's URL, e.g. http://127.0.0.1:8080/v1 (PIPELINE_LLM_BASE_URL)."
    )
    api_key_env: str | None = Field(
        default=None,
        description="Name of the environment variable holding the API key, e.g. OPENAI_API_KEY "
        "(PIPELINE_LLM_API_KEY_ENV).",
    )


class Automation(Model):
    """When the corpus is indexed again."""

    on_new_files: bool = Field(
        default=True,
        description="Watch `<input>/<namespace>/` and run a namespace's index when its files are added, "
        "changed or deleted (the input_root_sensor); a new folder adds its namespace.",
    )
    cron: str | None = Field(
        default=NIGHTLY_CRON,
        description="Re-index every namespace on this cron (UTC), declared as the assets' on_cron "
        "automation condition; null: never on a clock. Unchanged inputs cost no model call.",
    )


class GraphRAGIndex(Component, Resolvable, Model):
    """A GraphRAG index of one corpus: every namespace under `input` indexed into `storage`."""

    namespaces: list[str] | None = Field(
        default=None,
        description="The namespaces (folders under `input`, one index each) this corpus is made of; "
        "null: every folder found there.",
    )
    input: str | None = Field(
        default=None,
        description="Folder or s3:// prefix holding one folder of documents per namespace "
        "(PIPELINE_INPUT_ROOT). A relative path is relative to the working directory of the run.",
    )
    storage: str | None = Field(
        default=None,
        description="Folder or s3:// prefix the index tables are written to (PIPELINE_STORAGE_ROOT).",
    )
    index_method: Literal["standard", "fast", "nlp"] | None = Field(
        default=None,
        description="standard: the model extracts the graph; fast / nlp: noun-phrase graph, no model "
        "for extraction (PIPELINE_INDEX_METHOD).",
    )
    llm: ModelSettings = Field(default_factory=ModelSettings, description="The chat model, by reference.")
    automation: Automation = Field(default_factory=Automation, description="When to index again.")
    llm_pool: Literal["llm"] = Field(
        default="llm",
        description="The Dagster concurrency pool of every step that calls the model; its limit is the "
        "instance's (`concurrency: pools:` in dagster.yaml, or `dagster instance concurrency set llm N`).",
    )
    saved_questions: list[str] = Field(
        default_factory=list,
        description="Questions answered again after each re-index (the query group's assets), when a "
        "run's config names none; empty: the built-in global questions.",
    )

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        return self.definitions()

    def definitions(self) -> Definitions:
        """The code location's definitions (no load context needed: `assets.definitions` calls this)."""
        overrides = {
            "input_root": self.input,
            "storage_root": self.storage,
            "index_method": self.index_method,
            "llm_provider": self.llm.provider,
            "llm_model": self.llm.model,
            "llm_base_url": self.llm.base_url,
            "llm_api_key_env": self.llm.api_key_env,
            "namespaces": self.namespaces,
            "saved_questions": self.saved_questions or None,
        }
        sensors = [query_refresh_sensor, reindex_automation_sensor]
        if self.automation.on_new_files:
            sensors.insert(0, input_root_sensor)
        assets = [
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
        return Definitions(
            assets=_with_code_references(with_reindex_automation(assets, self.automation.cron)),
            jobs=[*indexing_jobs, answer_questions_job, import_graphrag_job],
            executor=pipeline_executor(),
            schedules=[nightly_reindex],
            sensors=sensors,
            resources=default_resources(**{k: v for k, v in overrides.items() if v is not None}),
        )


def _with_code_references(assets: list) -> list:
    """Each asset linked to its body in the source (which names the `pipeline.index` runner it calls).
    The API is marked beta; its warnings would be printed by every CLI command that loads these."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return with_source_code_references(assets)


class ScaffoldParams(BaseModel):
    input: str = Field(default="data", description="Folder or s3:// prefix with one folder per namespace.")
    namespaces: list[str] | None = Field(default=None, description="The namespaces; null: every folder.")
    storage: str = Field(default=".graphrag/storage", description="Where the index tables are written.")


class GraphRAGIndexScaffolder(Scaffolder[ScaffoldParams]):
    """`dg scaffold defs assets.component.GraphRAGIndex NAME`: a defs.yaml with the corpus's input and
    the defaults spelled out, so the file shows what can be set."""

    @classmethod
    def get_scaffold_params(cls) -> type[ScaffoldParams]:
        return ScaffoldParams

    def scaffold(self, request: ScaffoldRequest[ScaffoldParams]) -> None:
        params = request.params or ScaffoldParams()
        attributes = {
            "input": params.input,
            "storage": params.storage,
            "llm": {"provider": "offline"},
            "automation": {"on_new_files": True, "cron": NIGHTLY_CRON},
            "saved_questions": [],
        }
        if params.namespaces:
            attributes["namespaces"] = params.namespaces
        scaffold_component(request, attributes)


GraphRAGIndex = scaffold_with(GraphRAGIndexScaffolder)(GraphRAGIndex)
