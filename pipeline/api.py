"""The Python entry points: one call per query mode, from a namespace name to its answer.

Each builds the namespace's store, engine and embedder from the settings (`pipeline.runtime`, the
composition root) unless they are given, and runs the mode's search, which takes them as arguments
(`pipeline.query.<mode>.search`). The CLI, the service and the Dagster assets pass their own.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypeVar

from pipeline.embeddings.base import Embedder
from pipeline.engine.base import Engine
from pipeline.io.damage import IndexDamaged
from pipeline.io.repair import diagnose
from pipeline.llm.batch import CancelSignal
from pipeline.query.auto.search import AutoSearchConfig, AutoSearchResult, auto_search_async
from pipeline.query.basic.search import BasicSearchConfig, BasicSearchResult, basic_search_async
from pipeline.query.common.scope import QueryScope
from pipeline.query.drift.search import DriftSearchResult, drift_search_async
from pipeline.query.drift.steps import DriftSearchConfig
from pipeline.query.global_.map import GlobalSearchConfig
from pipeline.query.global_.search import GlobalSearchResult, global_search_async
from pipeline.query.lazy.search import LazySearchConfig, LazySearchResult, lazy_search_async
from pipeline.query.local.search import LocalSearchConfig, LocalSearchResult, local_search_async
from pipeline.runtime import query_runtime

__all__ = ["auto_search", "basic_search", "drift_search", "global_search", "lazy_search", "local_search"]

C = TypeVar("C")


def _config(cls: Any, config: C | None, settings: Any, **given: Any) -> C:
    """Precedence: the options given to the call > `config` > the configured defaults."""
    given = {k: v for k, v in given.items() if v is not None}
    return replace(config, **given) if config is not None else cls.from_settings(settings, **given)


def _answer(rt: Any, search: Any) -> Any:
    """The search's result. A read error no mode expects may come from a damaged table (a Lance data file
    cut short fails deep in a search, naming no table): then the table is named (IndexDamaged)."""
    try:
        return rt.engine.run_sync(search)
    except IndexDamaged:
        raise
    except Exception as exc:
        found = diagnose(rt.store)
        if found is None:
            raise
        raise found from exc


def _scope(rt: Any, deadline: float | None, cancel: CancelSignal | None) -> QueryScope:
    """What a mode is handed: the runtime's store, engine and embedder with this call's clocks."""
    return QueryScope(rt.store, rt.engine, rt.embedder, deadline, cancel)


def local_search(
    namespace: str,
    question: str,
    top_k: int | None = None,
    community_level: int | None = None,
    *,
    settings: Any = None,
    engine: Engine | None = None,
    embedder: Embedder | None = None,
    config: LocalSearchConfig | None = None,
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
) -> LocalSearchResult:
    """Answer a question about specific entities for one namespace, with evidence cited to source offsets.
    The engine and embedder default to the configured ones.
    Precedence: `top_k` / `community_level` given here > `config` > the configured defaults."""
    rt = query_runtime(namespace, settings=settings, engine=engine, embedder=embedder)
    cfg = _config(LocalSearchConfig, config, rt.settings, top_k=top_k, community_level=community_level)
    return _answer(rt, local_search_async(_scope(rt, deadline, cancel), question, cfg))


def global_search(
    namespace: str,
    question: str,
    level: int | None = None,
    *,
    settings: Any = None,
    engine: Engine | None = None,
    embedder: Embedder | None = None,
    config: GlobalSearchConfig | None = None,
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
) -> GlobalSearchResult:
    """Answer a corpus-wide question for one namespace. See GlobalSearchResult for the shape. The engine
    and embedder default to the configured ones."""
    rt = query_runtime(namespace, settings=settings, engine=engine, embedder=embedder)
    cfg = _config(GlobalSearchConfig, config, rt.settings, level=level)
    return _answer(rt, global_search_async(_scope(rt, deadline, cancel), question, cfg))


def drift_search(
    namespace: str,
    question: str,
    *,
    settings: Any = None,
    engine: Engine | None = None,
    embedder: Embedder | None = None,
    config: DriftSearchConfig | None = None,
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
    **overrides: Any,
) -> DriftSearchResult:
    """Answer a question with DRIFT for one namespace; `overrides` (primer_k, primer_folds, depth, breadth,
    community_level, response_type, ...) take precedence over `config`, which takes precedence over the
    configured defaults. The engine and embedder default to the configured ones."""
    rt = query_runtime(namespace, settings=settings, engine=engine, embedder=embedder)
    cfg = _config(DriftSearchConfig, config, rt.settings, **overrides)
    return _answer(rt, drift_search_async(_scope(rt, deadline, cancel), question, cfg))


def basic_search(
    namespace: str,
    question: str,
    top_k: int | None = None,
    *,
    settings: Any = None,
    engine: Engine | None = None,
    embedder: Embedder | None = None,
    config: BasicSearchConfig | None = None,
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
) -> BasicSearchResult:
    """Answer a question from the nearest passages of one namespace, cited to their offsets. The engine
    and embedder default to the configured ones."""
    rt = query_runtime(namespace, settings=settings, engine=engine, embedder=embedder)
    cfg = _config(BasicSearchConfig, config, rt.settings, top_k=top_k)
    return _answer(rt, basic_search_async(_scope(rt, deadline, cancel), question, cfg))


def lazy_search(
    namespace: str,
    question: str,
    *,
    settings: Any = None,
    engine: Engine | None = None,
    embedder: Embedder | None = None,
    config: LazySearchConfig | None = None,
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
    **overrides: Any,
) -> LazySearchResult:
    """Answer a question with lazy search (relevance tests within a budget, no community reports needed);
    `overrides` (budget, subqueries, max_irrelevant, ...) > `config` > the configured defaults."""
    rt = query_runtime(namespace, settings=settings, engine=engine, embedder=embedder)
    cfg = _config(LazySearchConfig, config, rt.settings, **overrides)
    return _answer(rt, lazy_search_async(_scope(rt, deadline, cancel), question, cfg))


def auto_search(
    namespace: str,
    question: str,
    route: str | None = None,
    *,
    settings: Any = None,
    engine: Engine | None = None,
    embedder: Embedder | None = None,
    config: AutoSearchConfig | None = None,
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
) -> AutoSearchResult:
    """Route the question to basic, local, global, DRIFT or lazy search and answer it; the result says
    which (`route`) and why (`reason`). `route` given here skips the classification."""
    rt = query_runtime(namespace, settings=settings, engine=engine, embedder=embedder)
    cfg = _config(AutoSearchConfig, config, rt.settings, route=route)
    return _answer(rt, auto_search_async(_scope(rt, deadline, cancel), question, cfg))
