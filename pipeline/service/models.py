"""Request and response bodies of the HTTP API; the same models give the MCP tools their JSON schemas.

Each request is its mode's options (`pipeline.query.requests`, written once for every door) plus the
namespace, the question, an optional `timeout_s` and `stream` (HTTP only: the answer as events). Unknown fields are refused, so a misspelt option
is a 422 rather than a silently ignored default, and types are strict (`"top_k": true` is a 422, not 1).
"""

from __future__ import annotations

import datetime as dt
import typing
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from pipeline.core.namespace import NAMESPACE_PATTERN
from pipeline.query import registry
from pipeline.query.common.mode import Mode

Namespace = Annotated[
    str,
    Field(
        pattern=NAMESPACE_PATTERN.pattern,
        description="The namespace (tenant index) to read; the API key must cover it",
        examples=["demo"],
    ),
]
MAX_QUESTION_CHARS = 4000
Question = Annotated[
    str, Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="The question, in plain text")
]
Stream = Annotated[
    bool,
    Field(
        default=False,
        description="Answer as Server-Sent Events (text/event-stream) while the query runs: route, context, "
        "delta (the answer's text as it is written), citation, then done (the whole result) or error. "
        "`Accept: text/event-stream` asks for the same.",
    ),
]
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
    """What every query body has besides its mode's options (`pipeline.query.requests`).

    Strict, and so every body made from it: JSON's `true` is not the integer 1 nor `"5"` the integer 5
    (pydantic's lax mode took both), so a client's type error is a 422, not a different query. The
    options themselves stay lax for the CLI and Dagster, whose values arrive as text."""

    model_config = ConfigDict(extra="forbid", strict=True)

    namespace: Namespace
    timeout_s: TimeoutS = None
    stream: Stream = False

    @field_validator("question", "query", check_fields=False)
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must contain a non-blank character")
        return v


def _body(name: str, options: type[BaseModel], question: str = "question") -> type[_Request]:
    """A mode's HTTP body: its options (`pipeline.query.requests`) plus the namespace, the question (or
    `query`, for the retrieval-only modes) and the deadline."""
    body = create_model(
        name, __base__=(_Request, options), __doc__=options.__doc__, **{question: (Question, ...)}
    )
    return typing.cast(type[_Request], body)


# Each body class is made once per mode, so that a request's class tells its mode (`kind_of`).
_BODIES: dict[tuple[str, type[BaseModel], str], type[_Request]] = {}
_KINDS: dict[type, str] = {}


def body_of(mode: Mode) -> type[_Request]:
    """Mode `mode`'s HTTP body (the MCP tool's parameters too), named after its options: `LocalOptions`
    gives `LocalQuery`, the name the OpenAPI schema lists it under."""
    key = (mode.name, mode.options, mode.question)
    if key not in _BODIES:
        name = mode.options.__name__.removesuffix("Options") + "Query"
        _BODIES[key] = body = _body(name, mode.options, mode.question)
        _KINDS[body] = mode.name
    return _BODIES[key]


def bodies() -> dict[str, type[_Request]]:
    """The HTTP body of each registered mode, by the mode's name, as the registry stands now (a door
    reads it when it is built)."""
    return {name: body_of(mode) for name, mode in registry.MODES.items()}


def kind_of(request: BaseModel) -> str:
    """The mode a request body is for."""
    return _KINDS[type(request)]


class QueryResponse(BaseModel):
    namespace: str
    kind: str = Field(description="The query mode: the path's last part (`/v1/query/<kind>`)")
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
    warm: dict[str, Any] | None = Field(
        default=None,
        description="The warm start (`POST /v1/namespaces/{ns}/warm`): state (queued, warming, warm, "
        "not_indexed, failed), index_version, the structures loaded; null before it was asked for",
    )


class ErrorDetail(BaseModel):
    code: str = Field(examples=["index_not_ready"])
    message: str
    detail: Any = None


class ErrorResponse(BaseModel):
    error: ErrorDetail
