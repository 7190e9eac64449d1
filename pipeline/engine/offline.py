"""The offline engine: every task done deterministically without a model.

Each method calls its task's offline form, which lives with its stage (see `base.py` for where).
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Literal, TypeVar

from pipeline.embeddings.base import Embedder
from pipeline.engine.base import DescriptionRequest, DescriptionSummary, SummarizeRequest, Summary
from pipeline.llm.batch import CancelSignal, gather_settled
from pipeline.llm.errors import LLMError
from pipeline.llm.usage import Usage
from pipeline.ops.descriptions import offline_description
from pipeline.ops.extraction.models import (
    ExtractionFailure,
    ExtractionOptions,
    ExtractionRequest,
    ExtractorIdentity,
    UnitExtraction,
)
from pipeline.ops.extraction.offline import extract_request, extract_requests, offline_identity
from pipeline.ops.reports.models import CommunityReportRequest, CommunityReportResponse, ReportIdentity
from pipeline.ops.reports.offline import OFFLINE_REPORT_VERSION, offline_report
from pipeline.query.basic_tasks import offline_basic_answer
from pipeline.query.drift_tasks import (
    DriftReduceRequest,
    DriftStep,
    FollowUpRequest,
    PrimerRequest,
    offline_follow_up,
    offline_primer,
)
from pipeline.query.drift_tasks import offline_reduce as offline_drift_reduce
from pipeline.query.global_tasks import (
    MapAnswer,
    MapRequest,
    ReduceAnswer,
    ReduceRequest,
    offline_map,
    offline_reduce,
)
from pipeline.query.local_tasks import CommunitySelection, LocalContext, offline_answer, offline_select
from pipeline.query.query_intent import QueryIntent, offline_intent
from pipeline.query.selection_tasks import RateAnswer, RateRequest, offline_rate

T = TypeVar("T")
R = TypeVar("R")


class OfflineEngine:
    """Deterministic, model-free implementations: same inputs, same outputs, on any machine."""

    kind: Literal["offline", "llm"] = "offline"

    def __init__(self, usage: Usage | None = None) -> None:
        self.usage = usage if usage is not None else Usage()

    async def summarize(
        self, request: SummarizeRequest, *, deadline: float | None = None, cancel: CancelSignal | None = None
    ) -> Summary:
        return Summary(summary=extractive_summary(request.texts, request.max_words))

    # ---- indexing ----------------------------------------------------------------------------------
    @property
    def report_identity(self) -> ReportIdentity:
        return ReportIdentity("offline", "offline", OFFLINE_REPORT_VERSION)

    async def community_report(
        self,
        request: CommunityReportRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> CommunityReportResponse:
        return offline_report(request.context)

    def extraction_identity(self, options: ExtractionOptions) -> ExtractorIdentity:
        return offline_identity(options)

    async def extract_unit(
        self,
        request: ExtractionRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> tuple[UnitExtraction, ExtractionFailure | None]:
        return extract_request(request), None  # the rules cannot fail a unit

    async def extract_units(
        self,
        requests: list[ExtractionRequest],
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> list[tuple[UnitExtraction, ExtractionFailure | None]]:
        return [(unit, None) for unit in extract_requests(requests)]

    async def summarize_descriptions(
        self,
        request: DescriptionRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> DescriptionSummary:
        return offline_description(request)

    # ---- global search -----------------------------------------------------------------------------
    async def map_answer(
        self,
        request: MapRequest,
        embedder: Embedder | None,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> MapAnswer:
        if embedder is None:
            raise ValueError("offline global search needs an embedder to score sentences")
        # Embedding is CPU work: in a thread, so that the other map batches' bookkeeping goes on; one
        # batch embeds at a time, as the model already uses every core (4 at once were 20% slower).
        return await asyncio.to_thread(_serialized, offline_map, request, embedder)

    async def reduce_answer(
        self,
        request: ReduceRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> ReduceAnswer:
        return offline_reduce(request)

    async def rate_reports(
        self,
        request: RateRequest,
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> RateAnswer:
        return offline_rate(request, embedder)

    # ---- local search ------------------------------------------------------------------------------
    async def query_intent(
        self, question: str, *, deadline: float | None = None, cancel: CancelSignal | None = None
    ) -> QueryIntent:
        return offline_intent(question)

    async def select_communities(
        self,
        question: str,
        candidates: list[dict[str, Any]],
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> CommunitySelection:
        return offline_select(question, candidates, embedder)

    async def local_answer(
        self,
        question: str,
        context: LocalContext,
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> str:
        return offline_answer(question, context, embedder)

    # ---- DRIFT and basic search ---------------------------------------------------------------------
    async def drift_primer(
        self,
        request: PrimerRequest,
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> DriftStep:
        return offline_primer(request, embedder)

    async def drift_follow_up(
        self,
        request: FollowUpRequest,
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> DriftStep:
        return offline_follow_up(request, embedder)

    async def drift_reduce(
        self,
        request: DriftReduceRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> str:
        return offline_drift_reduce(request)

    async def basic_answer(
        self,
        question: str,
        context: LocalContext,
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> str:
        return offline_basic_answer(question, context, embedder)

    # ---- running -----------------------------------------------------------------------------------
    def run_batch(
        self,
        items: Sequence[T],
        fn: Callable[[T], Awaitable[R]],
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> list[R | LLMError]:
        return asyncio.run(gather_settled(items, fn, deadline=deadline, cancel=cancel))

    def run_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run(coro)


# ---- offline helpers -------------------------------------------------------------------------------
_CPU = threading.Lock()


def _serialized(fn: Callable[..., R], *args: Any) -> R:
    with _CPU:
        return fn(*args)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def extractive_summary(texts: Sequence[str], max_words: int) -> str:
    """Sentences in their original order, duplicates dropped, cut at `max_words` words."""
    seen: set[str] = set()
    words: list[str] = []
    for text in texts:
        for sentence in _SENTENCE_END.split(" ".join(text.split())):
            key = sentence.lower().strip(" .!?")
            if not key or key in seen:
                continue
            seen.add(key)
            room = max_words - len(words)
            if room <= 0:
                return " ".join(words)
            words.extend(sentence.split()[:room])
    return " ".join(words)
