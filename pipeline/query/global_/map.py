"""Global search's map phase and what it runs on: the search's settings (`GlobalSearchConfig`), its
calls counted per phase (`GlobalTasks`), one call per batch with one retry (`run_map`), and the best
points of every batch that fit the reduce budget (`select_for_reduce`). The rules are in
`pipeline.query.global_.search`'s docstring."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, cast, get_args

from pipeline.core.plain import attributes
from pipeline.embeddings.base import Embedder
from pipeline.engine.base import Engine
from pipeline.llm.batch import CancelSignal, stopped
from pipeline.llm.errors import LLMCancelledError, LLMTimeoutError
from pipeline.query.answer.prompt_text import DEFAULT_RESPONSE_TYPE, skeleton_text
from pipeline.query.answer.token_budget import pack, prompt_budget
from pipeline.query.common.events import Sink
from pipeline.query.common.options import require_counts, require_level
from pipeline.query.global_.batches import Batch
from pipeline.query.global_.context import GlobalContextError
from pipeline.query.global_.selection_tasks import RATE, RateAnswer, RateRequest
from pipeline.query.global_.tasks import (
    MAP,
    REDUCE,
    MapAnswer,
    MapPoint,
    MapRequest,
    ReduceAnswer,
    ReducePoint,
    ReduceRequest,
    batch_points,
    reduce_block,
    reduce_messages,
)
from pipeline.settings.bound import FromSettings, setting
from pipeline.settings.query import GlobalSelection

SELECTIONS: tuple[str, ...] = get_args(GlobalSelection)
PHASES = ("rate", "reports", "map", "reduce")  # reports: those written on first use
_PHASE_COUNTERS = ("calls", "requests", "cache_hits", "prompt_tokens", "completion_tokens", "failures")


@dataclass(frozen=True)
class GlobalSearchConfig(FromSettings):
    level: int | str | None = (
        None  # None: leaf communities; "auto": the deepest level that fits max_map_batches
    )
    map_budget: int = setting("global_map_budget")
    # the map and reduce answers' output limits (sent as max_tokens): a batch leaves exactly the room its
    # answer may take
    map_reserve: int = setting("llm_map_max_tokens")
    reduce_budget: int = setting("global_reduce_budget")
    reduce_reserve: int = setting("llm_reduce_max_tokens")
    map_concurrency: int = setting("global_map_concurrency")
    map_attempts: int = 2  # a failed batch is retried once
    seed: int | None = 0  # shuffle seed: fixed by default so a run is reproducible
    encoding: str = setting("encoding")
    response_type: str = DEFAULT_RESPONSE_TYPE  # the reduced answer's length and form
    # Which reports are mapped (`pipeline.query.global_.selection`): "dynamic" rates them top-down,
    # "static" maps one level, "auto" is dynamic when the namespace has more than
    # `dynamic_min_communities` communities and no level was asked for.
    selection: str = setting("global_selection")
    dynamic_min_communities: int = setting("global_dynamic_min_communities")
    # 0-10: a report rated this or more is kept (GraphRAG: 1 of 0-5)
    rate_threshold: float = setting("global_rate_threshold")
    rate_batch_size: int = 8  # reports per rating call
    # reports rated per question: at most ceil(160 / 8) = 20 rating calls
    max_rated: int = setting("global_max_rated")
    # 8 map calls: a broad question on MuSiQue-100 (3,202 communities) maps in 4 s offline on 2 cores.
    # map calls per question, dynamic or level="auto"
    max_map_batches: int = setting("global_max_map_batches")
    keep_parent: bool = False  # a relevant child replaces its parent (GraphRAG's default)
    # deferred reports a question may have written before mapping them (`global_.first_use`)
    first_use_reports: int = setting("global_first_use_reports")
    # what such a report may cost, for the estimate: its context budget and output limit
    report_context_tokens: int = setting("report_context_tokens")
    report_reserve: int = setting("llm_report_max_tokens")

    def __post_init__(self) -> None:
        if self.selection not in SELECTIONS:
            raise GlobalContextError(f"selection must be one of {SELECTIONS}, got {self.selection!r}")
        require_level(self.level, GlobalContextError, also="auto")
        require_counts(self, GlobalContextError, ("rate_batch_size", "max_rated", "max_map_batches"))


@dataclass
class MapResult:
    batch: int
    community_ids: list[int]
    status: str  # ok | failed | cancelled
    points: list[MapPoint] = field(default_factory=list)  # scored above 0, citing this batch
    attempts: int = 0
    error: str | None = None
    dropped_points: int = 0  # points of the reply that failed validation
    # What the last attempt raised: beside the fields (no annotation), so never in a saved row.
    failure = cast("Exception | None", None)

    @property
    def top_score(self) -> float:
        return max((p.score for p in self.points), default=0.0)


class GlobalTasks:
    """Map and reduce asked of the engine (which scores with the embedder offline), with call counts."""

    def __init__(self, engine: Engine, embedder: Embedder | None = None, events: Sink | None = None) -> None:
        self.engine = engine
        self.embedder = embedder
        self.events = events  # who hears the reduce's answer as it is written (a streaming door)
        self.map_calls = 0
        self.reduce_calls = 0
        self.rate_calls = 0
        self.phases: dict[str, dict[str, Any]] = {}
        self._phase: tuple[str, dict[str, Any]] | None = None

    def begin(self, phase: str) -> None:
        """Counters from here to the next `begin` (or `end`) are `phase`'s: the phases run one after
        another, so the difference of the engine's counters is what each spent."""
        self.end()
        self._phase = (phase, self.engine.usage.counters())

    def end(self) -> None:
        if self._phase is None:
            return
        phase, before = self._phase
        now = self.engine.usage.counters()
        spent = self.phases.setdefault(phase, {k: 0 for k in _PHASE_COUNTERS})
        for k in _PHASE_COUNTERS:
            spent[k] += now[k] - before[k]
        self._phase = None

    async def rate(
        self, request: RateRequest, deadline: float | None, cancel: CancelSignal | None
    ) -> RateAnswer:
        self.rate_calls += 1
        return await self.engine.run(RATE, request, embedder=self.embedder, deadline=deadline, cancel=cancel)

    async def map(
        self, request: MapRequest, deadline: float | None, cancel: CancelSignal | None
    ) -> MapAnswer:
        self.map_calls += 1
        return await self.engine.run(MAP, request, embedder=self.embedder, deadline=deadline, cancel=cancel)

    async def reduce(
        self, request: ReduceRequest, deadline: float | None, cancel: CancelSignal | None
    ) -> ReduceAnswer:
        self.reduce_calls += 1
        return await self.engine.run(REDUCE, request, deadline=deadline, cancel=cancel, events=self.events)


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
                if why := stopped(cancel, deadline):
                    result.status = "cancelled"
                    result.error = "cancelled before the batch started" if why == "cancelled" else why
                    return result
                result.attempts += 1
                try:
                    answer = await tasks.map(
                        MapRequest(
                            question=question,
                            context=batch.content,
                            community_ids=batch.community_ids,
                            max_tokens=config.map_reserve,
                            ranks=batch.ranks,
                        ),
                        deadline,
                        cancel,
                    )
                    points = batch_points(answer, batch.community_ids)
                    dropped = int(answer.dropped)
                except (LLMCancelledError, LLMTimeoutError) as exc:
                    if stopped(cancel, deadline):
                        result.status, result.error = "cancelled", str(exc)
                        return result
                    # else the server timed out, the question did not: a failed call
                    result.error, result.failure = f"{type(exc).__name__}: {exc}", exc
                    continue
                except Exception as exc:  # noqa: BLE001 - any failure of one call is one failed batch
                    result.error, result.failure = f"{type(exc).__name__}: {exc}", exc
                    continue
                result.status, result.points, result.error = "ok", points, None
                result.dropped_points = dropped
                return result
        return result

    return list(await asyncio.gather(*(one(b) for b in batches)))


def ranked_points(results: list[MapResult]) -> list[ReducePoint]:
    """Every point of the successful batches, best first; an identical description only once."""
    ranked = sorted(
        (
            (-p.score, r.batch, i, p)
            for r in results
            if r.status == "ok"
            for i, p in enumerate(r.points)
            if p.score > 0
        ),
        key=lambda t: t[:3],
    )
    out, seen = [], set()
    for _, batch, _, p in ranked:
        key = " ".join(p.description.lower().split())
        if key not in seen:
            seen.add(key)
            out.append(
                ReducePoint(
                    description=p.description, score=p.score, community_ids=p.communities, batch=batch
                )
            )
    return out


def select_for_reduce(
    results: list[MapResult], question: str, config: GlobalSearchConfig
) -> tuple[list[ReducePoint], str]:
    """The best points that fit the reduce budget together; one that does not fit is skipped, not fatal."""
    limit = prompt_budget(config.reduce_budget, config.reduce_reserve)
    skeleton = skeleton_text(reduce_messages(question, "", config.response_type))
    points = ranked_points(results)
    blocks = [reduce_block(p) for p in points]
    kept = pack(blocks, skeleton + "\n", limit, config.encoding)
    return [points[i] for i in kept], "\n\n".join(blocks[i] for i in kept)


def point_row(p: ReducePoint) -> dict[str, Any]:
    return attributes(p, "batch", "description", "score", "community_ids")
