"""DRIFT search as every door sees it (`pipeline.query.common.mode`)."""

from __future__ import annotations

from pipeline.core import schema
from pipeline.query.common.mode import Mode
from pipeline.query.drift.search import DriftSearchConfig, DriftSearchError, drift_search_async
from pipeline.query.requests import DriftOptions

MODE = Mode(
    name="drift",
    summary="DRIFT: a primer over the nearest community reports, follow-up local searches, a reduce.",
    options=DriftOptions,
    configure=lambda settings, given: DriftSearchConfig.from_settings(settings, **given),
    search=drift_search_async,
    needs=(
        ("parquet", schema.ENTITIES),
        ("parquet", schema.COMMUNITIES),
        ("lancedb", schema.LANCE_COMMUNITY_REPORTS),
        ("lancedb", schema.LANCE_TEXT_UNITS),
    ),
    errors=(DriftSearchError,),
    routable=True,
)
