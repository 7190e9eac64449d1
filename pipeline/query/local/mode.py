"""Local search as every door sees it (`pipeline.query.common.mode`)."""

from __future__ import annotations

from pipeline.core import schema
from pipeline.query.common.mode import Mode
from pipeline.query.local.search import LocalSearchConfig, LocalSearchError, local_search_async
from pipeline.query.requests import LocalOptions

MODE = Mode(
    name="local",
    summary="Entities → graph neighbourhood → communities → evidence cited to document offsets.",
    options=LocalOptions,
    configure=lambda settings, given: LocalSearchConfig.from_settings(settings, **given),
    search=local_search_async,
    needs=(
        ("parquet", schema.ENTITIES),
        ("parquet", schema.RELATIONSHIPS),
        ("parquet", schema.COMMUNITIES),
        ("lancedb", schema.LANCE_TEXT_UNITS),
    ),
    errors=(LocalSearchError,),
    routable=True,
)
