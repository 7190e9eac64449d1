"""Local search's retrieval, answered by the caller: entities matched in the question → graph
neighbourhood → ranked communities → passages ranked by dense, BM25 and graph signals
(`pipeline.query.retrieval.passage_rank`) → one mixed context within a token budget
(`pipeline.query.retrieval.local_context`: reports, entities, relationships, claims, sources, as tables
with ids) → the caller's answer, whose citations resolve against the context's rows.

Local search (`pipeline.query.local.search`) answers the context with its own prompt; DRIFT's follow-ups
are this same search answered with theirs, without the question parse or the selection call.

The flow is graphrag-ts's local retrieval (seed-systems-notes §A3); where it differs it fixes a flaw
noted there: channels ranked by their own scores, aliases used, precomputed entity vectors, a seed
cap, themes used for the community search, and a selector that falls back to the ranking instead
of answering from nothing.

Rules: a failed question parse (anything but cancellation or the deadline) degrades to the offline
parse, and a failed or empty selection to the ranking; either is recorded in `fallbacks` with its
reason, never raised. The answer's `[Data: ...]` citations are resolved against the context's rows
(`citations`; those naming no row are kept in `unresolved_citations`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pipeline.core.plain import plain
from pipeline.llm.errors import LLMCancelledError, LLMTimeoutError
from pipeline.query.answer.answer_context import LocalContext
from pipeline.query.answer.citations import describe_context, resolve_citations
from pipeline.query.answer.context_events import context_sources, emit_context
from pipeline.query.answer.pages import locate_result
from pipeline.query.common.options import require_counts, require_level
from pipeline.query.common.scope import QueryScope, start_clock
from pipeline.query.retrieval.community_rank import (
    community_row,
    expand,
    rank_communities,
    report_vectors,
    semantic_candidates,
    topology_candidates,
)
from pipeline.query.retrieval.community_select import SELECT, CommunitySelection, SelectRequest
from pipeline.query.retrieval.entity_match import MatchOptions, match_entities
from pipeline.query.retrieval.intent import INTENT, QueryIntent, offline_intent
from pipeline.query.retrieval.local_context import ContextShares, build_local_context
from pipeline.query.retrieval.local_index import LocalIndex, load_local_index
from pipeline.query.retrieval.passage_index import load_passage_index
from pipeline.query.retrieval.passage_rank import (
    PassageRankOptions,
    RankedPassage,
    dense_scores,
    rank_passages,
)
from pipeline.settings.bound import FromSettings, nested, setting


class LocalSearchError(ValueError):
    """The request is invalid for this namespace (e.g. a community level that does not exist)."""


class _Stopped(Exception):
    pass


class _NoResults(Exception):
    """Nothing in the index answers the question; the message says why."""


NOTHING_RELEVANT = "The index holds nothing relevant to this question."


@dataclass(frozen=True)
class LocalSearchConfig(FromSettings):
    top_k: int = setting("local_top_k")
    community_level: int | None = None
    max_hops: int = 2
    report_top_k: int = 8
    evidence_limit: int = 40  # ranked passages offered to the context's sources section
    passages: PassageRankOptions = field(default_factory=PassageRankOptions)
    # community ranking; graphrag-ts's service default (its utility's own default is 60)
    rrf_k: int = setting("local_rrf_k")
    match: MatchOptions = nested(MatchOptions)
    # The answer prompt's budget (settings.local_context_max_tokens) and how its sections share it.
    context_max_tokens: int = setting("local_context_max_tokens")
    context_shares: ContextShares = field(default_factory=ContextShares)
    encoding: str = setting("encoding")

    def __post_init__(self) -> None:
        # A clear error for what would otherwise slice oddly ([:-1]) or fail deep inside (2.5).
        require_counts(self, LocalSearchError, ("top_k", "report_top_k", "evidence_limit"))
        require_level(self.community_level, LocalSearchError)


@dataclass
class LocalSearchResult:
    question: str
    status: str  # completed | no_results | cancelled
    answer: str = ""
    intent: dict[str, Any] = field(default_factory=dict)
    seeds: list[dict[str, Any]] = field(default_factory=list)
    communities: list[dict[str, Any]] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)  # the sources and claims in the context
    passages: list[dict[str, Any]] = field(default_factory=list)  # every ranked passage: id, score, signals
    selection: str = ""  # llm | offline | fallback
    reason: str | None = None
    fallbacks: dict[str, str] = field(default_factory=dict)  # stage (intent, selection) -> why
    context: dict[str, Any] = field(default_factory=dict)  # budget, prompt_tokens, section_tokens
    context_rows: list[dict[str, Any]] = field(default_factory=list)  # {section, id, ...what it names}
    citations: list[dict[str, Any]] = field(default_factory=list)  # the rows the answer cites
    unresolved_citations: list[str] = field(default_factory=list)
    quotes: list[dict[str, Any]] = field(default_factory=list)  # quoted sentences, their own page each
    usage: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0
    timings_ms: dict[str, float] = field(default_factory=dict)  # stage -> milliseconds it took

    def to_dict(self) -> dict[str, Any]:
        return plain(self)


def evidence_chunks(
    index: LocalIndex, selected: list[int], passages: list[RankedPassage], limit: int
) -> list[dict]:
    """The best `limit` ranked passages as evidence items, in rank order, each marked with whether an
    entity of a selected community mentions it."""
    members = set().union(*(index.members(c) for c in selected)) if selected else set()
    tied_units = {u for e in members for u in (index.entities.get(e, {}).get("text_unit_ids") or [])}
    out = []
    for p in passages:
        unit = index.text_units.get(p.id)
        if unit is None:  # the passage index and the graph tables are read apart: mid re-index
            continue
        out.append(
            {
                "id": p.id,
                "kind": "chunk",
                "text": unit["text"],
                "document_id": unit["document_id"],
                "document_title": index.document_titles.get(unit["document_id"]),
                "start_char": unit["start_char"],
                "end_char": unit["end_char"],
                "score": round(p.score, 6),
                "signals": p.ranks,
                "tied_to_community": p.id in tied_units,
            }
        )
        if len(out) >= limit:
            break
    return out


Answerer = Callable[[LocalContext], Awaitable[str]]


async def local_search_with(
    scope: QueryScope,
    question: str,
    cfg: LocalSearchConfig,
    answer: Answerer,
    *,
    parse: bool = True,
    select: bool = True,
) -> tuple[LocalSearchResult, LocalContext | None]:
    """Local search with `answer` asked of the context it builds; the result and that context (None when
    the search stopped before it). `parse=False` takes the offline parse of the question and
    `select=False` the community ranking as it is, with no model call for either (DRIFT's follow-ups)."""
    started = start_clock(question)
    store, embedder = scope.store, scope.embedder
    level = cfg.community_level  # validated by LocalSearchConfig
    clock = {"stage": "index load", "at": started}
    timings: dict[str, float] = {}
    index = load_local_index(store)
    if level is not None and level not in index.levels:
        raise LocalSearchError(
            f"community level {level} does not exist in namespace {store.namespace!r}; levels are {index.levels}"
        )
    result = LocalSearchResult(question, "completed")
    context: LocalContext | None = None
    match = cfg.match
    if match.semantic_threshold is None:
        match = replace(match, semantic_threshold=embedder.calibration.entity)

    def check(stage: str) -> None:
        now = time.monotonic()
        timings[clock["stage"]] = round(1000 * (now - clock["at"]), 1)
        clock["stage"], clock["at"] = stage, now
        why = scope.stopped()
        if why:
            raise _Stopped(f"{why} before {stage}")

    try:
        check("query parsing")
        intent = await _intent(scope, question, result) if parse else offline_intent(question)
        result.intent = intent.model_dump()
        check("entity matching")
        query_vector, theme_vector = embedder.embed([question, " ".join([question, *intent.themes])])
        seeds = match_entities(question, intent, index.entities, store, query_vector, match, index.names)
        result.seeds = [
            {"id": m.id, "title": m.title, "score": round(m.score, 6), "channels": m.channels} for m in seeds
        ]
        check("community resolution")
        seed_ids = [m.id for m in seeds]
        topology = topology_candidates(index, expand(index, seed_ids, cfg.max_hops), level)
        semantic = semantic_candidates(index, theme_vector, level, cfg.report_top_k)
        ranked = rank_communities(index, seed_ids, topology, semantic, cfg.top_k, cfg.rrf_k)
        check("passage ranking")
        passage_index = load_passage_index(store, index)
        passages = rank_passages(store, passage_index, question, query_vector, seed_ids, cfg.passages)
        result.passages = [
            {"id": p.id, "score": round(p.score, 6), "signals": p.ranks}
            for p in passages[: cfg.passages.depth]
        ]
        candidates = [community_row(index, c, score, seed_ids) for c, score in ranked]
        floor = embedder.calibration.relevant
        best = None if seeds else _best_similarity(passage_index, query_vector, semantic)
        if best is not None and best < floor:  # nothing matched, nothing near enough: no selector call
            raise _NoResults(
                f"no entity matched the question and no passage or report is relevant to it (best cosine "
                f"{best:.2f} < relevance floor {floor:.2f})"
            )
        check("community selection")
        if select:
            vectors = report_vectors(store, [c["id"] for c in candidates])  # the offline selector's
            chosen = await _select(scope, question, candidates, result, vectors, query_vector)
        else:
            chosen, result.selection = candidates, "ranking"
        result.communities = chosen
        ranked_chunks = evidence_chunks(index, [c["id"] for c in chosen], passages, cfg.evidence_limit)
        if not ranked_chunks and not chosen and not seeds:
            raise _NoResults("no entity, community or chunk matched the question")
        check("context")
        context, result.evidence = build_local_context(
            index,
            question,
            seed_ids,
            chosen,
            ranked_chunks,
            max_tokens=cfg.context_max_tokens,
            encoding=cfg.encoding,
            shares=cfg.context_shares,
        )
        result.context, result.context_rows = describe_context(context)
        emit_context(scope, lambda: context_sources(context, _scores(result)))
        check("answer")
        result.answer = await answer(context)
        result.citations, result.unresolved_citations = resolve_citations(result.answer, context)
    except _NoResults as exc:
        result.status, result.reason, result.answer = "no_results", str(exc), NOTHING_RELEVANT
    except (_Stopped, LLMCancelledError, LLMTimeoutError) as exc:
        if not isinstance(exc, _Stopped) and not scope.stopped():  # the server timed out: a failure
            raise
        result.status, result.reason = "cancelled", str(exc)
    locate_result(result, scope.store)
    timings[clock["stage"]] = round(1000 * (time.monotonic() - clock["at"]), 1)
    result.timings_ms = timings
    result.usage = scope.usage()
    result.duration_s = round(time.monotonic() - started, 3)
    return result, context


def _scores(result: LocalSearchResult) -> dict[str, dict[Any, float | None]]:
    """What local retrieval scored each kind of context row: passages and claims by their fused rank
    score, communities by their ranking's score, entities by their match score."""
    evidence = {e["id"]: e.get("score") for e in result.evidence}
    return {
        "text_unit_id": evidence,
        "claim_id": evidence,
        "community": {c["id"]: c.get("score") for c in result.communities},
        "entity_id": {s["id"]: s.get("score") for s in result.seeds},
    }


def _best_similarity(passages: Any, query_vector: Any, semantic: list[tuple[int, float]]) -> float:
    """The best cosine of the question to any passage or any community report."""
    dense = dense_scores(passages, query_vector)
    best_passage = float(dense.max()) if len(dense) else -1.0
    return max([best_passage, *(sim for _, sim in semantic)])


async def _intent(scope: QueryScope, question: str, result: LocalSearchResult) -> QueryIntent:
    try:
        return await scope.ask(INTENT, question)
    except (LLMCancelledError, LLMTimeoutError):
        raise
    except Exception as exc:  # noqa: BLE001 - any failure to parse degrades to the offline parse
        result.fallbacks["intent"] = (
            f"query parsing failed ({type(exc).__name__}: {exc}); used the offline parse"
        )
        return offline_intent(question)


async def _select(
    scope: QueryScope,
    question: str,
    candidates: list[dict],
    result: LocalSearchResult,
    vectors: dict[int, Any] | None = None,
    query_vector: Any = None,
) -> list[dict]:
    """The chosen candidates, or all of them (`selection` "fallback", why in `fallbacks`)."""
    result.selection = scope.engine.kind  # metadata: whose selector chose
    if not candidates:
        return []  # nothing to choose from: no call
    reason = None
    try:
        selection: CommunitySelection | None = await scope.ask(
            SELECT, SelectRequest(question, candidates, vectors or {}, query_vector)
        )
    except (LLMCancelledError, LLMTimeoutError):
        raise
    except Exception as exc:  # noqa: BLE001 - a failed selection falls back to the ranking
        selection, reason = None, f"community selection failed ({type(exc).__name__}: {exc})"
    chosen = []
    if selection is not None:
        picked = set(selection.selected_community_ids)
        chosen = [c for c in candidates if c["id"] in picked]
        if not chosen:
            offered = [c["id"] for c in candidates]
            reason = f"the selector chose none of the candidates {offered} (it returned {sorted(picked)})"
    if chosen:
        return chosen
    result.selection = "fallback"
    result.fallbacks["selection"] = f"{reason}; used the ranking"
    return candidates
