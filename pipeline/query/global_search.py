"""Global search: map-reduce over token-budgeted batches of community reports.

The contract is graphrag-ts's (seed-systems-notes §A4) with its gaps closed: a seeded shuffle, a
real tokenizer, and a result that never raises because some or all map batches failed — the status
(`completed` | `partial` | `no_results` | `cancelled`) and the reason say what happened.

- Map: one call per batch, retried once when it fails. Any exception from a call (an LLMError, a
  reply that does not validate, a bug in a task function) is one failed batch, never an escaped
  error; only cancellation and the deadline stop a batch without its retry.
- Each batch answers with scored points (`global_tasks.MapAnswer`); the reduce takes the best points
  of all batches, by score (ties: batch, then order in the batch), identical descriptions once. A
  point that does not fit the reduce budget is skipped so that a shorter, lower-scored one can still
  go in. `response_type` ("multiple paragraphs", "a single paragraph", ...) sets the answer's length.
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
from pipeline.llm.errors import LLMCancelledError, LLMTimeoutError
from pipeline.query.batcher import Batch, build_batches, prompt_budget
from pipeline.query.community_selection import (
    Selection,
    SelectionCancelled,
    auto_level,
    community_count,
    contexts_in_order,
    fit_batches,
    select_dynamic,
)
from pipeline.query.global_context import GlobalContextError, LevelNotFoundError, load_report_contexts
from pipeline.query.global_tasks import (
    DEFAULT_RESPONSE_TYPE,
    MapAnswer,
    MapPoint,
    MapRequest,
    ReduceAnswer,
    ReducePoint,
    ReduceRequest,
    batch_points,
    cited_communities,
    map_messages,
    offline_reduce,
    reduce_block,
    reduce_messages,
    skeleton_text,
)
from pipeline.query.selection_tasks import RateAnswer, RateRequest

NO_RESULTS_ANSWER = "No relevant community summaries were found for this question."
SELECTIONS = ("auto", "dynamic", "static")
PHASES = ("rate", "map", "reduce")
_PHASE_COUNTERS = ("calls", "requests", "cache_hits", "prompt_tokens", "completion_tokens", "failures")


@dataclass(frozen=True)
class GlobalSearchConfig:
    level: int | str | None = (
        None  # None: leaf communities; "auto": the deepest level that fits max_map_batches
    )
    map_budget: int = 8000
    map_reserve: int = 512
    reduce_budget: int = 8000
    reduce_reserve: int = 1024
    map_concurrency: int = 4
    map_attempts: int = 2  # a failed batch is retried once
    seed: int | None = 0  # shuffle seed: fixed by default so a run is reproducible
    encoding: str = "o200k_base"
    response_type: str = DEFAULT_RESPONSE_TYPE  # the reduced answer's length and form
    # Which reports are mapped (`pipeline.query.community_selection`): "dynamic" rates them top-down,
    # "static" maps one level, "auto" is dynamic when the namespace has more than
    # `dynamic_min_communities` communities and no level was asked for.
    selection: str = "auto"
    dynamic_min_communities: int = 300
    rate_threshold: float = 2.0  # 0-10: a report rated this or more is kept (GraphRAG: 1 of 0-5)
    rate_batch_size: int = 8  # reports per rating call
    max_rated: int = 160  # reports rated per question: at most ceil(160 / 8) = 20 rating calls
    # 8 map calls: a broad question on MuSiQue-100 (3,202 communities) maps in 4 s offline on 2 cores.
    max_map_batches: int = 8  # map calls per question, dynamic or level="auto"
    keep_parent: bool = False  # a relevant child replaces its parent (GraphRAG's default)

    def __post_init__(self) -> None:
        if self.selection not in SELECTIONS:
            raise GlobalContextError(f"selection must be one of {SELECTIONS}, got {self.selection!r}")
        level = self.level
        if (
            level is not None
            and level != "auto"
            and (isinstance(level, bool) or not isinstance(level, int) or level < 0)
        ):
            raise GlobalContextError(
                f"community level must be a non-negative integer or 'auto', got {level!r}"
            )
        for name in ("rate_batch_size", "max_rated", "max_map_batches"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise GlobalContextError(f"{name} must be a positive integer, got {value!r}")

    @classmethod
    def from_settings(cls, settings: Any, **overrides: Any) -> GlobalSearchConfig:
        """The reserves are the map and reduce answers' output limits (`llm_map_max_tokens`,
        `llm_reduce_max_tokens`, sent as max_tokens): a batch leaves exactly the room its answer may take."""
        values = {
            "map_reserve": settings.llm_map_max_tokens,
            "reduce_reserve": settings.llm_reduce_max_tokens,
            "encoding": settings.encoding,
            "selection": settings.global_selection,
            "dynamic_min_communities": settings.global_dynamic_min_communities,
            "max_rated": settings.global_max_rated,
            "max_map_batches": settings.global_max_map_batches,
            "rate_threshold": settings.global_rate_threshold,
        }
        return cls(**{**values, **overrides})


@dataclass
class MapResult:
    batch: int
    community_ids: list[int]
    status: str  # ok | failed | cancelled
    points: list[MapPoint] = field(default_factory=list)  # scored above 0, citing this batch
    attempts: int = 0
    error: str | None = None
    dropped_points: int = 0  # points of the reply that failed validation

    @property
    def top_score(self) -> float:
        return max((p.score for p in self.points), default=0.0)


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
    selection: dict[str, Any] = field(default_factory=dict)  # mode, level, rated, kept, mapped_reports, ...
    phases: dict[str, dict[str, Any]] = field(default_factory=dict)  # rate / map / reduce: calls and tokens
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
        return await self.engine.rate_reports(request, self.embedder, deadline=deadline, cancel=cancel)

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
    store: NamespaceStore,
    question: str,
    tasks: GlobalTasks,
    config: GlobalSearchConfig,
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
) -> tuple[list[Batch], Selection]:
    """The map batches and how their reports were chosen (static, level-auto or dynamic)."""
    skeleton = skeleton_text(map_messages(question, ""))
    if selection_mode(store, config) == "dynamic":
        selection = await select_dynamic(store, question, tasks, config, deadline, cancel)
        contexts = contexts_in_order(store, selection.communities)
        batches, selection.dropped = fit_batches(contexts, skeleton, config, config.max_map_batches)
    elif config.level == "auto":
        level, batches, dropped = auto_level(store, skeleton, config)
        selection = Selection("level-auto", level, dropped=dropped)
    else:
        batches = plan_batches(store, question, config)
        selection = Selection("static", config.level)  # type: ignore[arg-type]
    selection.mapped_reports = len({c for b in batches for c in b.community_ids})
    return batches, selection


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
                            question=question,
                            context=batch.content,
                            community_ids=batch.community_ids,
                            max_tokens=config.map_reserve,
                        ),
                        deadline,
                        cancel,
                    )
                    points = batch_points(answer, batch.community_ids)
                    dropped = int(answer.dropped)
                except (LLMCancelledError, LLMTimeoutError) as exc:
                    result.status, result.error = "cancelled", str(exc)
                    return result
                except Exception as exc:  # noqa: BLE001 - any failure of one call is one failed batch
                    result.error = f"{type(exc).__name__}: {exc}"
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
    used = count_tokens(skeleton + "\n", config.encoding)
    chosen: list[ReducePoint] = []
    blocks: list[str] = []
    for point in ranked_points(results):
        block = reduce_block(point)
        # Counted block by block (the text is only re-tokenized once, below): a point costs its own
        # tokens plus the blank line that separates it from the next.
        cost = count_tokens(block + "\n\n", config.encoding)
        if used + cost <= limit:
            chosen.append(point)
            blocks.append(block)
            used += cost
    # Tokens can merge across a join; the exact count decides, dropping the last points if need be.
    while blocks and count_tokens(skeleton + "\n" + "\n\n".join(blocks), config.encoding) > limit:
        chosen.pop()
        blocks.pop()
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
    tasks.begin("rate")
    try:
        batches, selection = await plan_search(store, question, tasks, config, deadline, cancel)
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
    tasks.begin("map")
    maps = await run_map(tasks, question, batches, config, deadline, cancel)
    out = await reduce_map_results(question, len(batches), maps, tasks, config, deadline, cancel, started)
    out.selection, out.level = result.selection, selection.level if selection.mode != "dynamic" else None
    return out


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
        result.points = [_point_row(p) for p in ranked_points(done)]
        result.reason = f"cancelled after {len(done)} of {n_batches} map batches"
        result.answer = ""
        return _finish(result, tasks, started)
    chosen, context = select_for_reduce(maps, question, config)
    if not chosen:
        ok = [r for r in maps if r.status == "ok"]
        if not ok:
            result.reason = f"every map batch failed ({len(failed)}); first error: {failed[0].error}"
        elif not any(r.points for r in ok):
            result.reason = "no batch held information relevant to the question (no point scored above 0)"
        else:
            result.reason = "no map point fits the reduce token budget"
        return _finish(result, tasks, started)
    result.points = [_point_row(p) for p in chosen]
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
        result.status, result.answer, result.reason = "cancelled", "", f"reduce stopped: {exc}"
        return _finish(result, tasks, started)
    except Exception as exc:  # noqa: BLE001 - the map points are still good evidence
        # Merge them extractively rather than answer nothing.
        result.answer = offline_reduce(request).answer
        result.status = "partial"
        result.reason = f"reduce failed ({type(exc).__name__}: {exc}); answer merged from the map points"
    if failed and not result.reason:
        result.reason = f"{len(failed)} of {n_batches} map batches failed"
    # What the answer actually cites; a model that cited nothing is credited with every point used.
    used = {c for p in chosen for c in p.community_ids}
    cited = [c for c in cited_communities(result.answer) if c in used]
    result.cited_communities = cited or list(dict.fromkeys(c for p in chosen for c in p.community_ids))
    return _finish(result, tasks, started)


def _point_row(p: ReducePoint) -> dict[str, Any]:
    return {
        "batch": p.batch,
        "description": p.description,
        "score": p.score,
        "community_ids": p.community_ids,
    }


def _finish(result: GlobalSearchResult, tasks: GlobalTasks, started: float) -> GlobalSearchResult:
    tasks.end()
    usage = dict(tasks.engine.usage.counters())
    usage.update(map_calls=tasks.map_calls, reduce_calls=tasks.reduce_calls, rate_calls=tasks.rate_calls)
    result.usage = usage
    result.phases = {p: dict(tasks.phases[p]) for p in PHASES if p in tasks.phases}
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
    cfg = config or GlobalSearchConfig.from_settings(rt.settings)
    if level is not None:
        cfg = GlobalSearchConfig(**{**asdict(cfg), "level": level})
    tasks = GlobalTasks(rt.engine, rt.embedder)
    return rt.engine.run_sync(global_search_async(rt.store, question, tasks, cfg, deadline, cancel))
