"""Request and response bodies of the HTTP API; the same models give the MCP tools their JSON schemas.

Each request mirrors its library call (`global_search`, `local_search`, `ChunkGraph.query`,
`vector_search`) plus the namespace and an optional `timeout_s`. Unknown fields are refused, so a
misspelt option is a 422 rather than a silently ignored default.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pipeline.core.namespace import NAMESPACE_PATTERN

Namespace = Annotated[
    str,
    Field(
        pattern=NAMESPACE_PATTERN.pattern,
        description="The namespace (tenant index) to read; the API key must cover it",
        examples=["demo"],
    ),
]
Question = Annotated[str, Field(min_length=1, max_length=4000, description="The question, in plain text")]
TimeoutS = Annotated[
    float | None,
    Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="Deadline in seconds for this query (capped by the server's maximum)",
    ),
]
# Filters compare metadata for equality; values are JSON scalars so they cannot smuggle expressions.
Scalar = str | int | float | bool | None


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("question", "query", check_fields=False)
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must contain a non-blank character")
        return v


class GlobalQuery(_Request):
    """Map-reduce over community reports: corpus-wide questions ("what are the main themes?")."""

    namespace: Namespace
    question: Question
    level: int | None = Field(
        default=None, ge=0, le=64, description="Community level; default: leaf communities"
    )
    seed: int | None = Field(default=None, ge=0, le=2**31 - 1, description="Shuffle seed of the batches")
    timeout_s: TimeoutS = None


class LocalQuery(_Request):
    """Entities → graph neighbourhood → communities → evidence cited to document offsets."""

    namespace: Namespace
    question: Question
    top_k: int = Field(default=8, ge=1, le=50, description="Communities to keep")
    community_level: int | None = Field(
        default=None, ge=0, le=64, description="Community level; default: leaf communities"
    )
    timeout_s: TimeoutS = None


class DriftQuery(_Request):
    """DRIFT: a primer over the nearest community reports, follow-up local searches, a reduce; the tree kept."""

    namespace: Namespace
    question: Question
    primer_k: int | None = Field(default=None, ge=1, le=50, description="Reports the primer reads")
    primer_folds: int | None = Field(default=None, ge=1, le=10, description="Primer calls")
    depth: int | None = Field(default=None, ge=0, le=5, description="Rounds of follow-up local searches")
    breadth: int | None = Field(default=None, ge=1, le=10, description="Follow-ups answered per round")
    community_level: int | None = Field(
        default=None, ge=0, le=64, description="Community level of the primer's reports; default: every level"
    )
    timeout_s: TimeoutS = None


class BasicQuery(_Request):
    """Vector RAG: the nearest passages by embedding answered with citations to their offsets."""

    namespace: Namespace
    question: Question
    top_k: int = Field(default=10, ge=1, le=50, description="Passages in the answer's context")
    timeout_s: TimeoutS = None


class ChunkQuery(_Request):
    """Chunk-similarity graph: seeds by cosine, random walk with restart from each (seeded)."""

    namespace: Namespace
    query: Question
    top_k: int = Field(default=10, ge=1, le=100)
    random_walk_steps: int = Field(default=100, ge=1, le=10_000)
    restart_prob: float = Field(default=0.15, gt=0, le=1, allow_inf_nan=False)
    filter: dict[Annotated[str, Field(max_length=64)], Scalar] | None = Field(
        default=None, max_length=16, description="Metadata equality filter, e.g. {'document_title': 'a.txt'}"
    )
    seed: int | None = Field(default=None, ge=0, le=2**31 - 1, description="Walk seed; default: fixed")
    method: Literal["walk", "ppr"] = "walk"
    timeout_s: TimeoutS = None


class VectorQuery(_Request):
    """Nearest text units by cosine similarity to the embedded query (the vector query tool)."""

    namespace: Namespace
    query: Question
    top_k: int = Field(default=10, ge=1, le=100)
    filter: dict[str, Any] | None = Field(
        default=None,
        description='Metadata filter, e.g. {"document_title": "carol.txt"} or {"n_tokens": {"$gte": 100}}; '
        "operators $eq $ne $gt $gte $lt $lte $in $nin, $and / $or lists",
    )
    timeout_s: TimeoutS = None


class QueryResponse(BaseModel):
    namespace: str
    kind: Literal["global", "local", "drift", "basic", "chunks", "vector"]
    status: str = Field(description="The library's status: completed | partial | no_results | cancelled")
    truncated: bool = Field(description="True when the answer or evidence was cut to the configured sizes")
    duration_s: float
    result: dict[str, Any] = Field(description="The library call's result (to_dict), bounded")


class TableStatus(BaseModel):
    name: str
    kind: Literal["parquet", "lancedb", "snapshot"]
    rows: int | None
    materialized_at: dt.datetime


class NamespaceStatus(BaseModel):
    namespace: str
    indexed: bool = Field(description="True when any table of the namespace exists")
    tables: list[TableStatus]
    ready: dict[str, bool] = Field(description="Per query kind: are the tables it reads materialized")


class ErrorDetail(BaseModel):
    code: str = Field(examples=["index_not_ready"])
    message: str
    detail: Any = None


class ErrorResponse(BaseModel):
    error: ErrorDetail
