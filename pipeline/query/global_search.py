"""Global search: map-reduce over token-budgeted batches of community reports.

The contract is graphrag-ts's (seed-systems-notes §A4) with its gaps closed: a seeded shuffle, a
real tokenizer, and a result that never raises because some or all map batches failed — the status
(`completed` | `partial` | `no_results` | `cancelled`) and the reason say what happened.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from pipeline.core.tokens import count_tokens
from pipeline.embeddings.base import Embedder
from pipeline.engine.base import Engine
from pipeline.io.store import NamespaceStore
from pipeline.llm.batch import CancelSignal, is_cancelled
from pipeline.llm.errors import LLMCancelledError, LLMError, LLMTimeoutError
from pipeline.query.batcher import Batch, build_batches, prompt_budget
from pipeline.query.global_context import load_report_contexts
from pipeline.query.global_tasks import (
    MapAnswer,
    MapRequest,
    ReduceAnswer,
    ReduceBlock,
    ReduceRequest,
    cited_communities,
    map_messages,
    offline_reduce,
    reduce_block,
    reduce_messages,
    skeleton_text,
)

NO_RESULTS_ANSWER = "No relevant community summaries were found for this question."


@dataclass(frozen=True)
class GlobalSearchConfig:
    level: int | None = None  # None: leaf communities
    map_budget: int = 8000
    map_reserve: int = 512
    reduce_budget: int = 8000
    reduce_reserve: int = 1024
    map_concurrency: int = 4
    map_attempts: int = 2  # a failed batch is retried once
    seed: int | None = 0  # shuffle seed: fixed by default so a run is reproducible
    encoding: str = "o200k_base"


@dataclass
class MapResult:
    batch: int
    community_ids: list[int]
    status: str  # ok | failed | cancelled
    answer: str = ""
    usefulness: float = 0.0
    attempts: int = 0
    error: str | None = None


@dataclass
class GlobalSearchResult:
    question: str
    level: int | None
    status: str  # completed | partial | no_results | cancelled
    answer: str
    map_answers: list[dict[str, Any]] = field(default_factory=list)  # the ones the reduce used
    failed_batches: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    batches: int = 0
    usage: dict[str, Any] = field(default_factory=dict)
    cited_communities: list[int] = field(default_factory=list)
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class GlobalTasks:
    """Map and reduce asked of the engine (which scores with the embedder offline), with call counts."""

    def __init__(self, engine: Engine, embedder: Embedder | None = None) -> None:
        self.engine = engine
        self.embedder = embedder
        self.map_calls = 0
        self.reduce_calls = 0

    async def map(
        self, request: MapRequest, deadline: float | None, cancel: CancelSignal | None
    ) -> MapAnswer:
        self.map_calls += 1
        return await self.engine.map_answer(request, self.embedder, deadline=deadline, cancel=cancel)

    async def reduce(
        self, request: ReduceRequest, deadline: float | None, cancel: CancelSignal | None
    ) -> ReduceAnswer:
        self.reduce_calls += 1
        return await self.engine.reduce_answer(request, deadline=deadline, cancel=cancel)


def plan_batches(store: NamespaceStore, question: str, config: GlobalSearchConfig) -> list[Batch]:
    """The map batches for a question (the prompt skeleton includes the question)."""
    reports = load_report_contexts(store, config.level)
    skeleton = skeleton_text(map_messages(question, ""))
    return build_batches(
        reports, skeleton, config.map_budget, config.map_reserve, config.seed, config.encoding
    )


async def run_map(
    tasks: GlobalTasks,
    question: str,
    batches: list[Batch],
    config: GlobalSearchConfig,
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
) -> list[MapResult]:
    """One map call per batch, `map_concurrency` at a time, each retried once; never raises."""
    gate = asyncio.Semaphore(max(1, config.map_concurrency))

    async def one(batch: Batch) -> MapResult:
        result = MapResult(batch.index, batch.community_ids, "failed")
        async with gate:
            for _ in range(config.map_attempts):
                if is_cancelled(cancel) or (deadline is not None and time.monotonic() >= deadline):
                    result.status = "cancelled"
                    result.error = (
                        "cancelled before the batch started" if is_cancelled(cancel) else "deadline passed"
                    )
                    return result
                result.attempts += 1
                try:
                    answer = await tasks.map(
                        MapRequest(
                            question=question, context=batch.content, community_ids=batch.community_ids
                        ),
                        deadline,
                        cancel,
                    )
                except (LLMCancelledError, LLMTimeoutError) as exc:
                    result.status, result.error = "cancelled", str(exc)
                    return result
                except LLMError as exc:
                    result.error = f"{type(exc).__name__}: {exc}"
                    continue
                result.status, result.answer, result.usefulness, result.error = (
                    "ok",
                    answer.answer,
                    answer.usefulness,
                    None,
                )
                return result
        return result

    return list(await asyncio.gather(*(one(b) for b in batches)))


def select_for_reduce(
    results: list[MapResult], question: str, config: GlobalSearchConfig
) -> tuple[list[MapResult], str]:
    """Useful answers by usefulness (stable), packed greedily; one that does not fit is skipped, not fatal."""
    limit = prompt_budget(config.reduce_budget, config.reduce_reserve)
    skeleton = skeleton_text(reduce_messages(question, ""))
    useful = sorted(
        (r for r in results if r.status == "ok" and r.usefulness > 0), key=lambda r: -r.usefulness
    )
    chosen: list[MapResult] = []
    blocks: list[str] = []
    for r in useful:
        block = reduce_block(
            ReduceBlock(answer=r.answer, usefulness=r.usefulness, community_ids=r.community_ids)
        )
        candidate = "\n\n".join([*blocks, block])
        if count_tokens(skeleton + "\n" + candidate, config.encoding) <= limit:
            chosen.append(r)
            blocks.append(block)
    return chosen, "\n\n".join(blocks)


async def global_search_async(
    store: NamespaceStore,
    question: str,
    tasks: GlobalTasks,
    config: GlobalSearchConfig = GlobalSearchConfig(),
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
) -> GlobalSearchResult:
    started = time.monotonic()
    if not question or not question.strip():
        raise ValueError("question must not be empty")
    result = GlobalSearchResult(question, config.level, "no_results", NO_RESULTS_ANSWER)
    batches = plan_batches(store, question, config)
    result.batches = len(batches)
    if not batches:
        result.reason = "the namespace has no community reports at this level"
        return _finish(result, tasks, started)
    maps = await run_map(tasks, question, batches, config, deadline, cancel)
    return await reduce_map_results(question, len(batches), maps, tasks, config, deadline, cancel, started)


async def reduce_map_results(
    question: str,
    n_batches: int,
    maps: list[MapResult],
    tasks: GlobalTasks,
    config: GlobalSearchConfig = GlobalSearchConfig(),
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
        result.map_answers = [_answer_row(r) for r in done]
        result.reason = f"cancelled after {len(done)} of {n_batches} map batches"
        result.answer = ""
        return _finish(result, tasks, started)
    chosen, context = select_for_reduce(maps, question, config)
    if not chosen:
        ok = [r for r in maps if r.status == "ok"]
        if not ok:
            result.reason = f"every map batch failed ({len(failed)}); first error: {failed[0].error}"
        elif not any(r.usefulness > 0 for r in ok):
            result.reason = "no batch held information relevant to the question (usefulness 0 everywhere)"
        else:
            result.reason = "no map answer fits the reduce token budget"
        return _finish(result, tasks, started)
    result.map_answers = [_answer_row(r) for r in chosen]
    request = ReduceRequest(
        question=question,
        blocks=[
            ReduceBlock(answer=r.answer, usefulness=r.usefulness, community_ids=r.community_ids)
            for r in chosen
        ],
        context=context,
    )
    result.status = "partial" if failed else "completed"
    try:
        result.answer = (await tasks.reduce(request, deadline, cancel)).answer
    except (LLMCancelledError, LLMTimeoutError) as exc:
        result.status, result.answer, result.reason = "cancelled", "", f"reduce stopped: {exc}"
        return _finish(result, tasks, started)
    except LLMError as exc:
        # The map answers are still good evidence: merge them extractively rather than answer nothing.
        result.answer = offline_reduce(request).answer
        result.status = "partial"
        result.reason = f"reduce failed ({type(exc).__name__}: {exc}); answer merged from the map answers"
    if failed and not result.reason:
        result.reason = f"{len(failed)} of {n_batches} map batches failed"
    # What the answer actually cites; a model that cited nothing is credited with every used batch.
    used = {c for r in chosen for c in r.community_ids}
    cited = [c for c in cited_communities(result.answer) if c in used]
    result.cited_communities = cited or list(dict.fromkeys(c for r in chosen for c in r.community_ids))
    return _finish(result, tasks, started)


def _answer_row(r: MapResult) -> dict[str, Any]:
    return {
        "batch": r.batch,
        "answer": r.answer,
        "usefulness": r.usefulness,
        "community_ids": r.community_ids,
    }


def _finish(result: GlobalSearchResult, tasks: GlobalTasks, started: float) -> GlobalSearchResult:
    usage = dict(tasks.engine.usage.counters())
    usage.update(map_calls=tasks.map_calls, reduce_calls=tasks.reduce_calls)
    result.usage = usage
    result.duration_s = round(time.monotonic() - started, 3)
    return result


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
    and embedder default to the configured ones (`pipeline.runtime.query_runtime`)."""
    from pipeline.runtime import query_runtime

    rt = query_runtime(namespace, settings=settings, engine=engine, embedder=embedder)
    cfg = config or GlobalSearchConfig()
    if level is not None:
        cfg = GlobalSearchConfig(**{**asdict(cfg), "level": level})
    tasks = GlobalTasks(rt.engine, rt.embedder)
    return rt.engine.run_sync(global_search_async(rt.store, question, tasks, cfg, deadline, cancel))
