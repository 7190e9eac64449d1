"""Global search: map-reduce over token-budgeted batches of community reports.

The contract is graphrag-ts's (seed-systems-notes §A4) with its gaps closed: a seeded shuffle, a
real tokenizer, and a result that never raises because some map batches failed — the status
(`completed` | `partial` | `no_results` | `cancelled`) and the reason say what happened. When every
batch failed (the model down, hung, failing, garbling), the search raises what the first one raised (an
LLMError): `no_results` says only that the index holds nothing relevant.

- Map: one call per batch, retried once when it fails. Any exception from a call (an LLMError, a
  reply that does not validate, a bug in a task function) is one failed batch, never an escaped
  error; only cancellation and the deadline stop a batch without its retry (a server's own timeout
  is a failed call). A reduce that fails is answered from the map points, `partial`.
- Each batch answers with scored points (`global_tasks.MapAnswer`); the reduce takes the best points
  of all batches, by score (ties: batch, then order in the batch), identical descriptions once. A
  point that does not fit the reduce budget is skipped so that a shorter, lower-scored one can still
  go in. `response_type` ("multiple paragraphs", "a single paragraph", ...) sets the answer's length.
- Which reports are mapped: one level, the deepest level that fits the map calls, or those rated
  relevant top-down on a large namespace (`pipeline.query.global_.selection`); the result says which
  (`selection`) and what each phase (rate, map, reduce) spent (`phases`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from pipeline.core import schema
from pipeline.core.plain import plain
from pipeline.io.store import NamespaceStore
from pipeline.llm.batch import CancelSignal, stopped
from pipeline.llm.errors import LLMCancelledError, LLMTimeoutError
from pipeline.query.answer.context_events import emit_context
from pipeline.query.answer.prompt_text import skeleton_text
from pipeline.query.caches.index_cache import table_versions
from pipeline.query.common.scope import QueryScope, start_clock
from pipeline.query.global_.batches import Batch, build_batches
from pipeline.query.global_.context import LevelNotFoundError, load_report_contexts
from pipeline.query.global_.first_use import FirstUse, stand_ins, write_first_use
from pipeline.query.global_.map import (
    PHASES,
    GlobalSearchConfig,
    GlobalTasks,
    MapResult,
    point_row,
    ranked_points,
    run_map,
    select_for_reduce,
)
from pipeline.query.global_.selection import (
    Selection,
    SelectionCancelled,
    auto_level,
    community_count,
    contexts_in_order,
    fit_batches,
    select_dynamic,
)
from pipeline.query.global_.sources import point_quotes
from pipeline.query.global_.tasks import ReduceRequest, cited_communities, map_messages, offline_reduce
from pipeline.query.retrieval.intent import is_broad

NO_RESULTS_ANSWER = "No relevant community summaries were found for this question."
DEFAULT_CONFIG = GlobalSearchConfig()

__all__ = ["GlobalSearchConfig", "GlobalTasks", "MapResult", "run_map", "select_for_reduce", "ranked_points"]


@dataclass
class GlobalSearchResult:
    question: str
    level: int | None
    status: str  # completed | partial | no_results | cancelled
    answer: str
    points: list[dict[str, Any]] = field(default_factory=list)  # the map points the reduce used, best first
    failed_batches: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    batches: int = 0
    usage: dict[str, Any] = field(default_factory=dict)
    cited_communities: list[int] = field(default_factory=list)
    # the used points found in their communities' passages, with pages (`global_.sources`)
    quotes: list[dict[str, Any]] = field(default_factory=list)
    selection: dict[str, Any] = field(default_factory=dict)  # mode, level, rated, kept, mapped_reports, ...
    phases: dict[str, dict[str, Any]] = field(default_factory=dict)  # rate / map / reduce: calls and tokens
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return plain(self)


def plan_batches(store: NamespaceStore, question: str, config: GlobalSearchConfig) -> list[Batch]:
    """The map batches for a question at the configured level (the prompt skeleton includes the question);
    with level "auto", at the deepest level that fits `max_map_batches`."""
    skeleton = skeleton_text(map_messages(question, ""))
    if config.level == "auto":
        return auto_level(store, skeleton, config)[1]
    reports = load_report_contexts(store, config.level)
    return build_batches(
        reports, skeleton, config.map_budget, config.map_reserve, config.seed, config.encoding
    )


def selection_mode(store: NamespaceStore, config: GlobalSearchConfig) -> str:
    """ "dynamic" or "static" for this namespace: auto is dynamic above `dynamic_min_communities`."""
    if config.selection != "auto":
        return config.selection
    if config.level is not None:
        return "static"  # a level was asked for
    return "dynamic" if community_count(store) > config.dynamic_min_communities else "static"


async def plan_search(
    scope: QueryScope, question: str, tasks: GlobalTasks, config: GlobalSearchConfig
) -> tuple[list[Batch], Selection]:
    """The map batches and how their reports were chosen (static, level-auto or dynamic); `tasks` counts
    the rating calls dynamic selection makes."""
    store = scope.store
    skeleton = skeleton_text(map_messages(question, ""))
    if selection_mode(store, config) == "dynamic":
        selection = await select_dynamic(store, question, tasks, config, scope.deadline, scope.cancel)
        batches = _kept_batches(store, skeleton, config, selection)
    elif config.level == "auto":
        level, batches, dropped = auto_level(store, skeleton, config)
        selection = Selection("level-auto", level, dropped=dropped)
    elif config.level is None and is_broad(question):
        # As dynamic selection does: a question about the whole collection reads the top-level reports.
        batches = plan_batches(store, question, replace(config, level=0))
        selection = Selection("static", 0)
        selection.fallback = "a broad question (it names only the collection): the top-level reports"
    else:
        batches = plan_batches(store, question, config)
        selection = Selection("static", config.level)  # type: ignore[arg-type]
    selection.mapped_reports = len({c for b in batches for c in b.community_ids})
    return batches, selection


async def plan_with_reports(
    scope: QueryScope, question: str, tasks: GlobalTasks, config: GlobalSearchConfig
) -> tuple[list[Batch], Selection, FirstUse | None]:
    """`plan_search`, then the stand-ins among the planned reports written on first use
    (`global_.first_use`), and the batches packed again if the reports changed meanwhile (by this
    question's first use or another's)."""
    writes = scope.write_reports is not None  # else a caller that only reads: nothing to check for
    planned_from = table_versions(scope.store, (schema.COMMUNITY_REPORTS,)) if writes else None
    batches, selection = await plan_search(scope, question, tasks, config)
    if not writes:
        return batches, selection, None
    first_use = None
    if stand_ins(scope.store):
        tasks.begin("reports")
        first_use = await write_first_use(scope, batches, config.first_use_reports)
    if table_versions(scope.store, (schema.COMMUNITY_REPORTS,)) != planned_from:
        batches = replan(scope.store, question, config, selection)
    return batches, selection, first_use


async def global_search_async(
    scope: QueryScope, question: str, config: GlobalSearchConfig = DEFAULT_CONFIG
) -> GlobalSearchResult:
    started = start_clock(question)
    tasks = GlobalTasks(scope.engine, scope.embedder, scope.events)
    deadline, cancel = scope.deadline, scope.cancel
    result = GlobalSearchResult(question, config.level, "no_results", NO_RESULTS_ANSWER)
    tasks.begin("rate")
    try:
        batches, selection, first_use = await plan_with_reports(scope, question, tasks, config)
    except LevelNotFoundError as exc:  # a level the graph does not have: nothing to answer from, not a crash
        result.reason = str(exc)
        return _finish(result, tasks, started)
    except SelectionCancelled as exc:
        result.status, result.answer, result.reason = "cancelled", "", str(exc)
        return _finish(result, tasks, started)
    result.batches = len(batches)
    result.selection = selection.to_dict()
    if not batches:
        result.reason = (
            f"no community report was rated relevant ({selection.rated} rated, threshold {config.rate_threshold:g} of 10)"
            if selection.mode == "dynamic" and selection.rated
            else "the namespace has no community reports at this level"
        )
        return _finish(result, tasks, started)
    emit_context(scope, lambda: mapped_sources(scope.store, batches))
    tasks.begin("map")
    maps = await run_map(tasks, question, batches, config, deadline, cancel)
    out = await reduce_map_results(question, len(batches), maps, tasks, config, deadline, cancel, started)
    out.selection, out.level = result.selection, selection.level if selection.mode != "dynamic" else None
    out.quotes = point_quotes(scope.store, out.points) if out.status in ("completed", "partial") else []
    if first_use is not None:
        out.selection["first_use"] = first_use.to_dict()
        if first_use.failed:  # mapped as their stand-ins: said, never a silent gap
            out.reason = "; ".join(r for r in (out.reason, first_use.reason()) if r)
            out.status = "partial" if out.status == "completed" else out.status
    return out


def replan(
    store: NamespaceStore, question: str, config: GlobalSearchConfig, selection: Selection
) -> list[Batch]:
    """The map batches of the same selection once reports were written on first use (their texts, and so
    the packing, changed)."""
    if selection.mode == "dynamic":
        batches = _kept_batches(store, skeleton_text(map_messages(question, "")), config, selection)
    else:
        batches = plan_batches(store, question, replace(config, level=selection.level))
    selection.mapped_reports = len({c for b in batches for c in b.community_ids})
    return batches


def mapped_sources(store: NamespaceStore, batches: list[Batch]) -> list[dict[str, Any]]:
    """The community reports the map step reads, in batch order, each with its batch and its rank (the
    index's importance score of the community, which orders the batches)."""
    ids = list(dict.fromkeys(c for b in batches for c in b.community_ids))
    reports = {r.community: r for r in load_report_contexts(store, only=ids)}
    rank = {c: r for b in batches for c, r in b.ranks.items()}
    batch = {c: b.index for b in reversed(batches) for c in b.community_ids}
    return [
        {
            "section": "communities",
            "id": c,
            "community": c,
            "rank": n,
            "score": rank.get(c),
            "batch": batch[c],
            "title": reports[c].title if c in reports else None,
            "level": reports[c].level if c in reports else None,
        }
        for n, c in enumerate(ids, start=1)
    ]


async def reduce_map_results(
    question: str,
    n_batches: int,
    maps: list[MapResult],
    tasks: GlobalTasks,
    config: GlobalSearchConfig = DEFAULT_CONFIG,
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
    started: float | None = None,
) -> GlobalSearchResult:
    """The reduce step and the result's status from the map results (also used by the query assets)."""
    started = time.monotonic() if started is None else started
    result = GlobalSearchResult(question, config.level, "no_results", NO_RESULTS_ANSWER, batches=n_batches)
    if not maps:
        result.reason = "the namespace has no community reports at this level"
        return _finish(result, tasks, started)
    failed = [r for r in maps if r.status == "failed"]
    result.failed_batches = [
        {"batch": r.batch, "community_ids": r.community_ids, "attempts": r.attempts, "reason": r.error}
        for r in failed
    ]
    if any(r.status == "cancelled" for r in maps):
        result.status = "cancelled"
        done = [r for r in maps if r.status == "ok"]
        result.points = [point_row(p) for p in ranked_points(done)]
        result.reason = f"cancelled after {len(done)} of {n_batches} map batches"
        result.answer = ""
        return _finish(result, tasks, started)
    chosen, context = select_for_reduce(maps, question, config)
    if not chosen:
        ok = [r for r in maps if r.status == "ok"]
        if not ok and failed[0].failure is not None:
            # the model (or the code) failed, not the index: an error, never "nothing relevant"
            raise failed[0].failure
        if not ok:  # saved map answers (the query assets) keep what failed, not what it raised
            result.status, result.answer = "failed", ""
            result.reason = f"every map batch failed ({len(failed)}); first error: {failed[0].error}"
        elif not any(r.points for r in ok):
            result.reason = "no batch held information relevant to the question (no point scored above 0)"
        else:
            result.reason = "no map point fits the reduce token budget"
        return _finish(result, tasks, started)
    result.points = [point_row(p) for p in chosen]
    request = ReduceRequest(
        question=question,
        points=chosen,
        context=context,
        response_type=config.response_type,
        max_tokens=config.reduce_reserve,
    )
    result.status = "partial" if failed else "completed"
    tasks.begin("reduce")
    try:
        result.answer = (await tasks.reduce(request, deadline, cancel)).answer
    except (LLMCancelledError, LLMTimeoutError) as exc:
        if not stopped(cancel, deadline):  # the server timed out, the question did not
            _merged(result, request, exc)
        else:
            result.status, result.answer, result.reason = "cancelled", "", f"reduce stopped: {exc}"
            return _finish(result, tasks, started)
    except Exception as exc:  # noqa: BLE001 - the map points are still good evidence
        _merged(result, request, exc)
    if failed and not result.reason:
        result.reason = f"{len(failed)} of {n_batches} map batches failed"
    # What the answer actually cites; a model that cited nothing is credited with every point used.
    used = {c for p in chosen for c in p.community_ids}
    cited = [c for c in cited_communities(result.answer) if c in used]
    result.cited_communities = cited or list(dict.fromkeys(c for p in chosen for c in p.community_ids))
    return _finish(result, tasks, started)


def _merged(result: GlobalSearchResult, request: ReduceRequest, exc: Exception) -> None:
    """A failed reduce: the map points are still good evidence, merged extractively rather than answer
    nothing."""
    result.answer = offline_reduce(request).answer
    result.status = "partial"
    result.reason = f"reduce failed ({type(exc).__name__}: {exc}); answer merged from the map points"


def _finish(result: GlobalSearchResult, tasks: GlobalTasks, started: float) -> GlobalSearchResult:
    tasks.end()
    usage = dict(tasks.engine.usage.counters())
    usage.update(map_calls=tasks.map_calls, reduce_calls=tasks.reduce_calls, rate_calls=tasks.rate_calls)
    result.usage = usage
    result.phases = {p: dict(tasks.phases[p]) for p in PHASES if p in tasks.phases}
    result.duration_s = round(time.monotonic() - started, 3)
    return result


def _kept_batches(
    store: NamespaceStore, skeleton: str, config: GlobalSearchConfig, selection: Selection
) -> list[Batch]:
    """Dynamic selection's kept reports, best rated first, in the batches that fit `max_map_batches`
    (those left out are counted in `selection.dropped`)."""
    contexts = contexts_in_order(store, selection.communities)
    batches, selection.dropped = fit_batches(contexts, skeleton, config, config.max_map_batches)
    return batches
