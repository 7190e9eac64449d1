"""The query modes' sections of `Settings`: local, global, DRIFT, lazy, the vector tool.

A section is its mode's config declaration: the search's config binds its fields to these settings
(`pipeline.settings.bound.setting`), and a request option a door accepts is derived from the same setting
(`pipeline.settings.bound.option`, used by `pipeline.query.requests`), so a bound or a description is
written here once and `tests/test_option_bounds.py` fails when a request's bound differs."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from pipeline.settings.models import OutputLimitSettings
from pipeline.settings.tokenizer import TokenizerSettings

# Named once for the setting and for global search's check of a config built by hand.
GlobalSelection = Literal["auto", "dynamic", "static"]


class LocalSettings(TokenizerSettings):
    """Local search (pipeline.query.local) and basic search's budget."""

    # Local search (GraphRAG: 12,000 context tokens): the answer prompt, data tables included, fits this
    local_context_max_tokens: int = Field(
        default=12_000, ge=1000, description="Tokens of the local answer prompt, its data tables included"
    )
    local_top_k: int = Field(default=8, ge=1, le=50, description="Communities local search keeps")
    local_rrf_k: int = Field(
        default=80,
        ge=1,
        description="RRF constant of local search's entity matching and community ranking "
        "(graphrag-ts's service default, rrfK 80)",
    )


class GlobalSettings(TokenizerSettings, OutputLimitSettings):
    """Global search (pipeline.query.global_): selection, map and reduce."""

    # Global search's report selection (pipeline.query.global_.selection)
    global_selection: GlobalSelection = Field(
        default="auto",
        description="dynamic: rate reports top-down and map the relevant ones; static: map one level; "
        "auto: dynamic above global_dynamic_min_communities communities",
    )
    global_dynamic_min_communities: int = Field(
        default=300, ge=0, description="Communities above which auto selection is dynamic"
    )
    global_max_rated: int = Field(default=160, ge=1, description="Reports rated per question (dynamic)")
    global_max_map_batches: int = Field(
        default=8, ge=1, description="Map calls per question (dynamic selection and level auto)"
    )
    global_rate_threshold: float = Field(
        default=2.0, ge=0, le=10, description="A report rated this (0-10) or more is mapped"
    )
    # 16: two rounds of the client's 8 concurrent calls (OpenAI's default), so a first use adds about two
    # report calls' latency to a question; a level holding more is completed by the questions that follow.
    global_first_use_reports: int = Field(
        default=16,
        ge=0,
        description="Deferred community reports (PIPELINE_REPORTS=on_demand) one global question may have "
        "the model write before mapping them; the rest are read as their extractive stand-ins until a "
        "later question or `pipeline index --reports eager` writes them",
    )
    # 8,000 tokens a map prompt (GraphRAG's data_max_tokens for global search is 12,000): a laptop model's
    # window. 1,000 leaves the map prompt and its 512-token answer a little room; 1,000,000 is the largest
    # window offered, a smaller model's limit being the operator's to set.
    global_map_budget: int = Field(
        default=8000,
        ge=1000,
        le=1_000_000,
        description="Tokens of one map prompt, its answer's reserve (llm_map_max_tokens) included",
    )
    global_reduce_budget: int = Field(
        default=8000,
        ge=1000,
        le=1_000_000,
        description="Tokens of the reduce prompt, its answer's reserve (llm_reduce_max_tokens) included; "
        "DRIFT's reduce has it too",
    )
    global_map_concurrency: int = Field(
        default=4,
        ge=1,
        le=64,
        description="Map calls in flight at once (also dynamic selection's rating waves); the LLM "
        "client's own limit (llm_concurrency) still applies",
    )


class BasicSettings(BaseModel):
    """Basic search (pipeline.query.basic); its answer prompt has local search's budget."""

    basic_top_k: int = Field(
        default=10, ge=1, le=50, description="Passages in basic search's context (Microsoft GraphRAG's k)"
    )


class DriftSettings(LocalSettings):
    """DRIFT search (pipeline.query.drift); its follow-ups are local searches."""

    # DRIFT search (pipeline.query.drift.search); Microsoft GraphRAG's defaults are 20 / 5 / 3 / 20 / 32:
    # up to 66 model calls a question. Ours: at most primer_folds + depth x breadth + 1 = 9.
    drift_primer_k: int = Field(default=8, ge=1, le=100, description="Community reports the primer reads")
    drift_primer_folds: int = Field(default=2, ge=1, le=20, description="Primer calls the reports split into")
    drift_depth: int = Field(default=2, ge=0, le=10, description="Rounds of follow-up local searches")
    drift_breadth: int = Field(default=3, ge=1, le=50, description="Follow-ups answered per round")
    drift_concurrency: int = Field(default=4, ge=1, le=64, description="DRIFT calls in flight at once")


class LazySettings(LocalSettings):
    """Lazy search (pipeline.query.lazy); its answer prompt has local search's budget."""

    # Lazy search (pipeline.query.lazy): at most 1 + 2 x ceil(budget / units_per_call) + 1 calls a question
    lazy_budget: int = Field(
        default=100, ge=1, le=10_000, description="Units rated per question (MS: 100/500/1500)"
    )
    lazy_subqueries: int = Field(
        default=3, ge=1, le=8, description="Subqueries the question is expanded into"
    )
    lazy_units_per_call: int = Field(default=8, ge=1, le=32, description="Units rated in one call")
    lazy_max_irrelevant: int = Field(
        default=3, ge=1, le=100, description="Irrelevant communities ending a branch"
    )
    lazy_threshold: float = Field(
        default=2.0, ge=0, le=10, description="A unit rated this (0-10) is relevant"
    )


class VectorToolSettings(BaseModel):
    """The vector query tool (pipeline.vector_tool)."""

    # Vector query tool (pipeline/vector_tool): the PostgreSQL server for `query vector --store pgvector`
    pgvector_dsn: str | None = Field(
        default=None, description="PostgreSQL URI with the pgvector extension; one schema per namespace"
    )


class QuerySettings(DriftSettings, LazySettings, GlobalSettings, BasicSettings, VectorToolSettings):
    """Every query mode's section: what auto search builds each mode's config from."""
