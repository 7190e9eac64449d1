"""Request and response bodies of the HTTP API; the same models give the MCP tools their JSON schemas.

Each request is its mode's options (`pipeline.query.requests`, written once for every door) plus the
namespace, the question and an optional `timeout_s`. Unknown fields are refused, so a misspelt option
is a 422 rather than a silently ignored default.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pipeline.core.namespace import NAMESPACE_PATTERN
from pipeline.query.requests import (
    BasicOptions,
    ChunkOptions,
    DriftOptions,
    GlobalOptions,
    LocalOptions,
    VectorOptions,
)

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


class _Request(BaseModel):
    """What every query body has besides its mode's options (`pipeline.query.requests`)."""

    model_config = ConfigDict(extra="forbid")

    namespace: Namespace
    timeout_s: TimeoutS = None

    @field_validator("question", "query", check_fields=False)
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must contain a non-blank character")
        return v


class GlobalQuery(_Request, GlobalOptions):
    __doc__ = GlobalOptions.__doc__
    question: Question


class LocalQuery(_Request, LocalOptions):
    __doc__ = LocalOptions.__doc__
    question: Question


class DriftQuery(_Request, DriftOptions):
    __doc__ = DriftOptions.__doc__
    question: Question


class BasicQuery(_Request, BasicOptions):
    __doc__ = BasicOptions.__doc__
    question: Question


class ChunkQuery(_Request, ChunkOptions):
    __doc__ = ChunkOptions.__doc__
    query: Question


class VectorQuery(_Request, VectorOptions):
    __doc__ = VectorOptions.__doc__
    query: Question


# The HTTP body of each mode, by the mode's name (the MCP tools are built from the same).
BODIES: dict[str, type[_Request]] = {
    "global": GlobalQuery,
    "local": LocalQuery,
    "drift": DriftQuery,
    "basic": BasicQuery,
    "chunks": ChunkQuery,
    "vector": VectorQuery,
}


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
