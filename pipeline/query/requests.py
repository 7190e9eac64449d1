"""One request model per query mode: its options, each declared once.

An option that overrides a setting is derived from it (`option("local_top_k")`: the setting's bounds and
description, default None), so its bounds live in `pipeline.settings.query` only and
`tests/test_option_bounds.py` fails when a request's differ; an option with no setting (a level, a filter,
a seed, a route) is declared here.

Every door derives from these: the CLI's flags (`assets/cli/query.py`), the HTTP bodies and so the
OpenAPI schema (`pipeline/service/models.py`), the MCP tools' schemas (`pipeline/service/mcp_server.py`)
and the Dagster query assets' run config (`assets/query/assets.py`). A new option or a changed bound is
one edit here; `tests/test_query_doors.py` checks that every field reaches every door with one default.

An option left at None takes the mode's configured default (`<Mode>SearchConfig.from_settings`, which
reads `PIPELINE_*`), so a default is never written at a door. `cli` in a field's extra names flags the
CLI has always accepted besides the field's own (`--level` for `community_level`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pipeline.chunk_graph.graph import RANDOM_WALK_STEPS, RESTART_PROB, TOP_K
from pipeline.settings.bound import option
from pipeline.settings.query import GlobalSelection
from pipeline.vector_tool.options import DEFAULT_TOP_K

Scalar = str | int | float | bool | None  # filter values: JSON scalars, so they cannot smuggle expressions
ResponseType = Field(
    default=None,
    min_length=1,
    max_length=200,
    description='Length and form of the answer, e.g. "a single paragraph"; default: multiple paragraphs',
)
CommunityLevel = Field(
    default=None,
    ge=0,
    le=64,
    description="Community level; default: leaf communities",
    json_schema_extra={"cli": ["--level"]},
)


# What a door adds to a mode's options (the HTTP bodies, the MCP tools): never passed to the search.
DOOR_FIELDS = frozenset({"namespace", "question", "query", "timeout_s", "stream"})


def json_object(v: Any) -> Any:
    """A metadata filter is a JSON object (mapping); say so, not pydantic's 'valid dictionary'."""
    if v is not None and not isinstance(v, dict):
        raise ValueError(f'must be a JSON object, e.g. {{"document_title": "a.txt"}}, not {type(v).__name__}')
    return v


class QueryOptions(BaseModel):
    """The options of one mode; unknown fields are refused, so a misspelt option is an error."""

    model_config = ConfigDict(extra="forbid")

    def given(self) -> dict[str, Any]:
        """The options set (a door's own fields left out), for `<Mode>SearchConfig.from_settings`."""
        return {
            k: getattr(self, k)
            for k in type(self).model_fields
            if k not in DOOR_FIELDS and getattr(self, k) is not None
        }


class GlobalOptions(QueryOptions):
    """Map-reduce over community reports: corpus-wide questions ("what are the main themes?")."""

    level: int | Literal["auto"] | None = Field(
        default=None,
        description="Community level, or 'auto': the deepest whose reports fit the map calls; default: leaf "
        "communities, or dynamic selection on a large namespace",
    )
    selection: GlobalSelection | None = option("global_selection")
    map_budget: int | None = option("global_map_budget")
    reduce_budget: int | None = option("global_reduce_budget")
    map_concurrency: int | None = option("global_map_concurrency")
    seed: int | None = Field(default=None, ge=0, le=2**31 - 1, description="Shuffle seed of the batches")
    response_type: str | None = ResponseType

    @field_validator("level")
    @classmethod
    def _level_in_range(cls, v: int | str | None) -> int | str | None:
        if isinstance(v, int) and not 0 <= v <= 64:
            raise ValueError("a level is 0-64 or 'auto'")
        return v


class LocalOptions(QueryOptions):
    """Entities → graph neighbourhood → communities → evidence cited to document offsets."""

    top_k: int | None = option("local_top_k")
    community_level: int | None = CommunityLevel


class DriftOptions(QueryOptions):
    """DRIFT: a primer over the nearest community reports, follow-up local searches, a reduce."""

    # The settings' bounds (pipeline.settings.query.DriftSettings), not the narrower 50/10/5/10 requests
    # once had: a question may ask for what the operator may configure, the search takes any of them, and
    # the worst case (20 + 10 x 50 + 1 calls) is held by the request's deadline like any other.
    primer_k: int | None = option("drift_primer_k")
    primer_folds: int | None = option("drift_primer_folds")
    depth: int | None = option("drift_depth")
    breadth: int | None = option("drift_breadth")
    community_level: int | None = Field(
        default=None,
        ge=0,
        le=64,
        description="Community level of the primer's reports; default: every level",
        json_schema_extra={"cli": ["--level"]},
    )
    response_type: str | None = ResponseType


class BasicOptions(QueryOptions):
    """Vector RAG: the nearest passages answered with citations to their offsets."""

    top_k: int | None = option("basic_top_k")
    full_text: bool | None = Field(
        default=None, description="Fuse BM25 full-text hits with the dense ones (off by default)"
    )
    min_score: float | None = Field(
        default=None,
        ge=-1.0,
        le=1.0,
        description="Leave out passages whose cosine to the question is below this; default: no floor",
    )


class LazyOptions(QueryOptions):
    """LazyGraphRAG: subqueries, relevance tests of text units in community order within a budget, an
    answer from the relevant units' sentences; no community reports needed."""

    budget: int | None = option("lazy_budget")
    subqueries: int | None = option("lazy_subqueries")
    max_irrelevant: int | None = option("lazy_max_irrelevant")


def _routes(schema: dict[str, Any]) -> None:
    """The routable modes as the JSON schema's choices, read when a door builds its schema."""
    from pipeline.query.common.mode import routable

    for branch in schema.get("anyOf", [schema]):
        if branch.get("type") == "string":
            branch["enum"] = routable()


class AutoOptions(QueryOptions):
    """Routes the question to basic, local, global, DRIFT or lazy search and says which and why."""

    route: str | None = Field(
        default=None,
        description="Take this mode instead of classifying the question",
        json_schema_extra=_routes,
    )

    @field_validator("route")
    @classmethod
    def _routable(cls, v: str | None) -> str | None:
        """Any routable mode of the registry (`pipeline.query.registry`), as it stands when asked."""
        from pipeline.query.common.mode import routable

        if v is not None and v not in (modes := routable()):
            raise ValueError(f"route must be a routable query mode: {', '.join(modes)}; not {v!r}")
        return v


class ChunkOptions(QueryOptions):
    """Chunk-similarity graph: seeds by cosine, random walk with restart from each (seeded)."""

    top_k: int | None = Field(default=None, ge=1, le=100, description=f"Chunks to return; default {TOP_K}")
    random_walk_steps: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description=f"Random walk steps per seed; default {RANDOM_WALK_STEPS}",
        json_schema_extra={"cli": ["--steps"]},
    )
    restart_prob: float | None = Field(
        default=None,
        gt=0,
        le=1,
        allow_inf_nan=False,
        description=f"Restart probability; default {RESTART_PROB}",
    )
    filter: dict[str, Scalar] | None = Field(
        default=None,
        max_length=16,
        description='Metadata equality filter, e.g. {"document_title": "a.txt"}',
    )
    seed: int | None = Field(default=None, ge=0, le=2**31 - 1, description="Walk seed; default: fixed")
    method: Literal["walk", "ppr"] | None = Field(
        default=None, description="walk (default) or ppr: the exact limit of the walks"
    )

    _filter_is_an_object = field_validator("filter", mode="before")(json_object)

    @field_validator("filter")
    @classmethod
    def _short_keys(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v and any(len(k) > 64 for k in v):
            raise ValueError("filter keys are at most 64 characters")
        return v


class VectorOptions(QueryOptions):
    """Nearest text units by cosine similarity to the embedded query (the vector query tool)."""

    top_k: int | None = Field(
        default=None, ge=1, le=100, description=f"Results to return; default {DEFAULT_TOP_K}"
    )
    filter: dict[str, Any] | None = Field(
        default=None,
        description='Metadata filter, e.g. {"document_title": "carol.txt"} or {"n_tokens": {"$gte": 100}}; '
        "operators $eq $ne $gt $gte $lt $lte $in $nin, $and / $or lists",
    )

    _filter_is_an_object = field_validator("filter", mode="before")(json_object)


def cli_flags(name: str, field: Any) -> list[str]:
    """The CLI flags of an option: its own (`--top-k`) and those named in its `cli` extra."""
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    return [f"--{name.replace('_', '-')}", *extra.get("cli", [])]
