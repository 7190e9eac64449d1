"""Global search as every door sees it (`pipeline.query.common.mode`)."""

from __future__ import annotations

from pipeline.core import schema
from pipeline.query.common.mode import Mode
from pipeline.query.global_.context import GlobalContextError
from pipeline.query.global_.search import GlobalSearchConfig, global_search_async
from pipeline.query.requests import GlobalOptions

MODE = Mode(
    name="global",
    summary='Map-reduce over community reports: corpus-wide questions ("what are the main themes?").',
    options=GlobalOptions,
    configure=lambda settings, given: GlobalSearchConfig.from_settings(settings, **given),
    search=global_search_async,
    needs=(("parquet", schema.COMMUNITIES), ("parquet", schema.COMMUNITY_REPORTS)),
    errors=(GlobalContextError,),
    routable=True,
)
