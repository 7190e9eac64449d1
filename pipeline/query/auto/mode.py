"""Auto search as every door sees it (`pipeline.query.common.mode`)."""

from __future__ import annotations

from pipeline.core import schema
from pipeline.query.auto.search import AutoSearchConfig, auto_search_async
from pipeline.query.common.mode import Mode
from pipeline.query.requests import AutoOptions

MODE = Mode(
    name="auto",
    summary="Routes the question to the mode that fits it and says which and why.",
    options=AutoOptions,
    configure=lambda settings, given: AutoSearchConfig.from_settings(settings, **given),
    search=auto_search_async,
    # auto falls back to lazy search, which needs the graph's communities and the text units only
    needs=(("parquet", schema.COMMUNITIES), ("lancedb", schema.LANCE_TEXT_UNITS)),
)
