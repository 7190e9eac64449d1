"""Basic search: vector RAG with an answer, the baseline every GraphRAG mode must beat.

The nearest text units by cosine (their best model-sized piece, `pipeline.query.retrieval.nearest`), optionally fused
by reciprocal rank with BM25 full-text hits, are packed best first into the answer prompt's token budget
as a Sources table; the engine answers from it (offline: the passages' sentences closest to the question),
citing `[Data: Sources (n)]`, which resolve to the units' documents and offsets. Microsoft GraphRAG's
basic search takes k=10 units into a 12,000-token context; so does this one by default.

Statuses: `completed`; `no_results` when the namespace has no text units or none is relevant (the best
cosine below the embedder's `relevant` level, the rule local search uses); `cancelled` when the
deadline passed or the caller cancelled before the answer came back. A model that fails (down, hung,
failing) raises its LLMError: the question failed, which is no status of a result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pipeline.core import schema
from pipeline.core.boilerplate import mask_rows
from pipeline.core.plain import plain
from pipeline.core.rrf import reciprocal_rank_fusion
from pipeline.embeddings.base import Embedder
from pipeline.io.store import NamespaceStore
from pipeline.llm.errors import LLMCancelledError, LLMTimeoutError
from pipeline.query.answer.answer_context import AnswerRequest
from pipeline.query.answer.citations import describe_context, resolve_citations
from pipeline.query.answer.context_events import context_sources, emit_context
from pipeline.query.answer.front_matter import body_first, document_regions
from pipeline.query.answer.pages import locate_result
from pipeline.query.answer.passage_answer import BASIC_ANSWER, build_basic_context
from pipeline.query.common.scope import QueryScope, start_clock
from pipeline.query.retrieval.nearest import text_search, vector_search
from pipeline.settings.bound import FromSettings, setting

NOTHING_RELEVANT = "The index holds nothing relevant to this question."


class BasicSearchError(ValueError):
    """The request is invalid (e.g. top_k below 1)."""


@dataclass(frozen=True)
class BasicSearchConfig(FromSettings):
    top_k: int = setting("basic_top_k")  # Microsoft GraphRAG's basic_search k
    # Fuse BM25 hits with the dense ones. Off, as Microsoft GraphRAG's basic search: on MuSiQue-100 the
    # equal-weight fusion lost 7 points of R@5 to dense alone (57.0 vs 63.9; `make eval`).
    full_text: bool = False
    rrf_k: int = 60  # the RRF constant of the original paper (Cormack et al.), as `pipeline.core.rrf`
    # the whole answer prompt; Microsoft GraphRAG's max_context_tokens
    context_max_tokens: int = setting("local_context_max_tokens")
    encoding: str = setting("encoding")
    # A caller's own floor on the passages' cosine to the question, above the embedder's relevance
    # level that decides no_results; a full-text-only hit has no cosine and is kept.
    min_score: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 1:
            raise BasicSearchError(f"top_k must be a positive integer, got {self.top_k!r}")


@dataclass
class BasicSearchResult:
    question: str
    status: str  # completed | no_results | cancelled
    answer: str = ""
    sources: list[dict[str, Any]] = field(default_factory=list)  # the retrieved units, best first
    citations: list[dict[str, Any]] = field(default_factory=list)
    unresolved_citations: list[str] = field(default_factory=list)
    quotes: list[dict[str, Any]] = field(default_factory=list)  # quoted sentences, their own page each
    context: dict[str, Any] = field(default_factory=dict)  # budget, prompt_tokens, rows
    reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return plain(self)


def retrieve(
    store: NamespaceStore, embedder: Embedder, question: str, config: BasicSearchConfig
) -> tuple[list[dict[str, Any]], float]:
    """The top_k units, best first, each with its fused score and its dense cosine, and the best cosine."""
    store.open_lance_table(schema.LANCE_TEXT_UNITS)  # TableNotFoundError, naming the asset, when missing
    depth = 2 * config.top_k
    dense = vector_search(store, embedder, question, k=depth)
    rows = {r["id"]: r for r in dense}
    rankings = [[r["id"] for r in dense]]
    if config.full_text:
        lexical = text_search(store, question, k=depth)
        rankings.append([r["id"] for r in lexical])
        for r in lexical:
            rows.setdefault(r["id"], {**r, "score": None})
    cosine = {r["id"]: r["score"] for r in dense}
    out = []
    for uid, fused in reciprocal_rank_fusion(rankings, k=config.rrf_k):  # every candidate, best first
        row = rows[uid]
        out.append(
            {
                "text_unit_id": uid,
                "document_id": row.get("document_id"),
                "document_title": row.get("document_title"),
                "start_char": row.get("start_char"),
                "end_char": row.get("end_char"),
                "score": round(float(fused), 6),
                "cosine": None if cosine.get(uid) is None else round(float(cosine[uid]), 6),
                "text": row.get("text") or "",
            }
        )
    if (regions := document_regions(store)) is not None:  # front matter is not a passage to answer from
        # Mostly front matter ranks after the body, and a passage blanked whole (a title or contents
        # page) is left out: the next candidate takes its place. Sent as an empty source, it left a
        # small model nothing to read and SmolLM2 repeated itself to its output limit.
        out = [r for r in body_first(out, mask_rows(out, regions)) if r["text"].strip()]
    out = out[: config.top_k]
    return out, max((r["score"] for r in dense), default=-1.0)


async def basic_search_async(
    scope: QueryScope, question: str, config: BasicSearchConfig = BasicSearchConfig()
) -> BasicSearchResult:
    started = start_clock(question)
    result = BasicSearchResult(question, "completed")
    try:
        units, best = retrieve(scope.store, scope.embedder, question, config)
        floor = scope.embedder.calibration.relevant
        if not units:
            result.status, result.reason = "no_results", "the namespace has no text units"
        elif best < floor:
            result.status = "no_results"
            result.reason = f"no passage is relevant to the question (best cosine {best:.2f} < {floor:.2f})"
        elif config.min_score is not None:
            units = [u for u in units if u["cosine"] is None or u["cosine"] >= config.min_score]
            if not units:
                result.status = "no_results"
                result.reason = f"no passage scored min_score {config.min_score:g} (best cosine {best:.2f})"
        result.sources = units
        if result.status == "no_results":
            result.answer = NOTHING_RELEVANT
            return _finish(result, scope, started)
        if scope.stopped():
            result.status, result.reason = "cancelled", "cancelled before the answer"
            return _finish(result, scope, started)
        context = build_basic_context(question, units, config.context_max_tokens, config.encoding)
        result.context, _ = describe_context(context)
        scores = {"text_unit_id": {u["text_unit_id"]: u["score"] for u in units}}
        emit_context(scope, lambda: context_sources(context, scores))
        result.answer = await scope.ask(BASIC_ANSWER, AnswerRequest(question, context))
        result.citations, result.unresolved_citations = resolve_citations(result.answer, context)
    except (LLMCancelledError, LLMTimeoutError) as exc:
        if not scope.stopped():  # the server timed out, the question did not: its failure
            raise
        result.status, result.reason, result.answer = "cancelled", str(exc), ""
    return _finish(result, scope, started)


def _finish(result: BasicSearchResult, scope: QueryScope, started: float) -> BasicSearchResult:
    locate_result(result, scope.store)
    result.usage = scope.usage()
    result.duration_s = round(time.monotonic() - started, 3)
    return result
