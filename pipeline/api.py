"""The Python entry points: one call per query mode, from a namespace name to its answer.

`answer` serves every mode in the registry (`pipeline.query.registry`): it builds the namespace's
store, engine and embedder from the settings (`pipeline.runtime`, the composition root) unless they are
given, and runs the question through `registry.run`, as every door does. The named functions below are the same call for
one mode each, kept as the public API. The CLI, the service and the Dagster assets pass their own parts.

Inside a running event loop (a Jupyter cell, an async web handler) await `answer_async` (or the
`*_async` names); the sync functions work there too, running the search on a helper thread's loop.
"""

from __future__ import annotations

from typing import Any

from pipeline.embeddings.base import Embedder
from pipeline.engine.base import Engine
from pipeline.io.damage import IndexDamaged
from pipeline.io.repair import diagnose
from pipeline.llm.batch import CancelSignal
from pipeline.query import registry
from pipeline.query.auto.search import AutoSearchResult
from pipeline.query.basic.search import BasicSearchResult
from pipeline.query.drift.search import DriftSearchResult
from pipeline.query.global_.search import GlobalSearchResult
from pipeline.query.lazy.search import LazySearchResult
from pipeline.query.local.search import LocalSearchResult
from pipeline.runtime import query_runtime, report_writer

__all__ = [
    "answer",
    "answer_async",
    "auto_search",
    "basic_search",
    "drift_search",
    "global_search",
    "lazy_search",
    "local_search",
]


def answer(
    mode: str,
    namespace: str,
    question: str,
    *,
    settings: Any = None,
    engine: Engine | None = None,
    embedder: Embedder | None = None,
    config: Any = None,
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
    **options: Any,
) -> Any:
    """Answer `question` with query mode `mode` on one namespace. Precedence: the `options` given here
    (those not None) > `config` > the configured defaults. The engine and embedder default to the
    configured ones. A read error no mode expects may come from a damaged table (a Lance data file cut
    short fails deep in a search, naming no table): then the table is named (IndexDamaged)."""
    parts = dict(settings=settings, engine=engine, embedder=embedder, config=config)
    parts |= dict(deadline=deadline, cancel=cancel)
    rt, search = _search(mode, namespace, question, options, parts)
    return rt.engine.run_sync(_named_damage(rt, search))


async def answer_async(mode: str, namespace: str, question: str, **keywords: Any) -> Any:
    """`answer` (the same keywords and options), awaited on the caller's event loop."""
    options = {k: v for k, v in keywords.items() if k not in _PARTS}
    parts = {k: v for k, v in keywords.items() if k in _PARTS}
    rt, search = _search(mode, namespace, question, options, parts)
    return await _named_damage(rt, search)


# `answer`'s keywords that are not a mode's options
_PARTS = frozenset({"settings", "engine", "embedder", "config", "deadline", "cancel"})


async def _named_damage(rt: Any, search: Any) -> Any:
    """The search's result; an error no mode expects that comes from a damaged table names it."""
    try:
        return await search
    except Exception as exc:
        found = _damage_behind(rt, exc)
        if found is None:
            raise
        raise found from exc


def _search(
    mode: str, namespace: str, question: str, options: dict[str, Any], parts: dict[str, Any]
) -> tuple[Any, Any]:
    """The runtime and the search's coroutine; `parts`: `answer`'s keywords that are not options."""
    rt = query_runtime(
        namespace, settings=parts.get("settings"), engine=parts.get("engine"), embedder=parts.get("embedder")
    )
    search = registry.run(
        mode,
        question,
        options,  # validated by the mode's own request model, as the HTTP body: top_k=500 is refused
        settings=rt.settings,
        store=rt.store,
        engine=rt.engine,
        embedder=rt.embedder,
        deadline=parts.get("deadline"),
        cancel=parts.get("cancel"),
        write_reports=report_writer(rt.settings),
        config=parts.get("config"),
    )
    return rt, search


def _damage_behind(rt: Any, exc: Exception) -> IndexDamaged | None:
    """The damaged table behind an error no mode expects (a Lance data file cut short fails deep in a
    search, naming no table); None when the error is not that."""
    return None if isinstance(exc, IndexDamaged) else diagnose(rt.store)


def local_search(
    namespace: str, question: str, top_k: int | None = None, community_level: int | None = None, **kw: Any
) -> LocalSearchResult:
    """Answer a question about specific entities, with evidence cited to source offsets (`answer`'s
    keywords: settings, engine, embedder, config, deadline, cancel)."""
    return answer("local", namespace, question, top_k=top_k, community_level=community_level, **kw)


def global_search(namespace: str, question: str, level: int | None = None, **kw: Any) -> GlobalSearchResult:
    """Answer a corpus-wide question. See GlobalSearchResult for the shape."""
    return answer("global", namespace, question, level=level, **kw)


def drift_search(namespace: str, question: str, **kw: Any) -> DriftSearchResult:
    """Answer with DRIFT; options: primer_k, primer_folds, depth, breadth, community_level, response_type."""
    return answer("drift", namespace, question, **kw)


def basic_search(namespace: str, question: str, top_k: int | None = None, **kw: Any) -> BasicSearchResult:
    """Answer from the nearest passages, cited to their offsets."""
    return answer("basic", namespace, question, top_k=top_k, **kw)


def lazy_search(namespace: str, question: str, **kw: Any) -> LazySearchResult:
    """Answer with lazy search (relevance tests within a budget, no community reports needed); options:
    budget, subqueries, max_irrelevant."""
    return answer("lazy", namespace, question, **kw)


def auto_search(namespace: str, question: str, route: str | None = None, **kw: Any) -> AutoSearchResult:
    """Route the question to the mode that fits it and answer; the result says which (`route`) and why
    (`reason`). `route` given here skips the classification."""
    return answer("auto", namespace, question, route=route, **kw)
