"""The LLM engine: every task through the one LLM client (cache, retries, validation).

Each method calls its task's LLM form, which lives with its stage (see `base.py` for where), and sends
its task's output limit (`OutputLimits`) as `max_tokens`: one limit for every task either cuts off
extractions and reports or lets a map answer run long. Global map and reduce send the reserve their
request carries (the batcher left exactly that much room), else the limit here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pipeline import prompts
from pipeline.embeddings.base import Embedder
from pipeline.engine.base import DescriptionRequest, DescriptionSummary, SummarizeRequest, Summary
from pipeline.llm.batch import CancelSignal
from pipeline.llm.client import LLMClient
from pipeline.llm.errors import LLMError
from pipeline.ops.descriptions import llm_description
from pipeline.ops.extraction.llm import extract_request_llm, llm_identity
from pipeline.ops.extraction.models import (
    ExtractionFailure,
    ExtractionOptions,
    ExtractionRequest,
    ExtractorIdentity,
    UnitExtraction,
)
from pipeline.ops.extraction.packed import extract_pack_llm
from pipeline.ops.reports.models import CommunityReportRequest, CommunityReportResponse, ReportIdentity
from pipeline.query.basic_tasks import llm_basic_answer
from pipeline.query.drift_tasks import (
    DriftReduceRequest,
    DriftStep,
    FollowUpRequest,
    PrimerRequest,
    llm_follow_up,
    llm_primer,
)
from pipeline.query.drift_tasks import llm_reduce as llm_drift_reduce
from pipeline.query.global_tasks import (
    MapAnswer,
    MapRequest,
    ReduceAnswer,
    ReduceRequest,
    llm_map,
    llm_reduce,
)
from pipeline.query.local_tasks import CommunitySelection, LocalContext, llm_answer, llm_select
from pipeline.query.query_intent import QueryIntent, llm_intent
from pipeline.query.selection_tasks import RateAnswer, RateRequest, llm_rate

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class OutputLimits:
    """max_tokens per task (the client's own default for the tasks not named here)."""

    extraction: int = 4000
    report: int = 4000
    description: int = 1000
    map: int = 512
    reduce: int = 1024
    local_answer: int = 2000

    @classmethod
    def from_settings(cls, settings: Any) -> OutputLimits:
        return cls(
            extraction=settings.llm_extraction_max_tokens,
            report=settings.llm_report_max_tokens,
            description=settings.llm_description_max_tokens,
            map=settings.llm_map_max_tokens,
            reduce=settings.llm_reduce_max_tokens,
            local_answer=settings.llm_local_answer_max_tokens,
        )


class LLMEngine:
    """Every task through the LLM client: same prompts, same validation, whatever the server."""

    kind: Literal["offline", "llm"] = "llm"

    def __init__(self, client: LLMClient, limits: OutputLimits | None = None) -> None:
        self.client = client
        self.usage = client.usage
        self.limits = limits or OutputLimits()

    async def summarize(
        self, request: SummarizeRequest, *, deadline: float | None = None, cancel: CancelSignal | None = None
    ) -> Summary:
        prompt = prompts.SUMMARIZE
        texts = "\n".join(f"- {t.strip()}" for t in request.texts)
        return await self.client.complete_json(
            prompt.messages(texts=texts, max_words=request.max_words),
            Summary,
            task=prompt.name,
            prompt_version=prompt.version,
            deadline=deadline,
            cancel=cancel,
        )

    # ---- indexing ----------------------------------------------------------------------------------
    @property
    def report_identity(self) -> ReportIdentity:
        model = f"{self.client.endpoint}/{self.client.model}"
        return ReportIdentity("llm", model, prompts.COMMUNITY_REPORT.version)

    async def community_report(
        self,
        request: CommunityReportRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> CommunityReportResponse:
        prompt = prompts.COMMUNITY_REPORT
        return await self.client.complete_json(
            prompt.messages(context=request.context.text, max_words=request.max_words),
            CommunityReportResponse,
            task=prompt.name,
            prompt_version=prompt.version,
            deadline=deadline,
            cancel=cancel,
            max_tokens=self.limits.report,
        )

    def extraction_identity(self, options: ExtractionOptions) -> ExtractorIdentity:
        return llm_identity(self.client.model, options)

    async def extract_unit(
        self,
        request: ExtractionRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> tuple[UnitExtraction, ExtractionFailure | None]:
        # The batch (`run_batch`) enforces the deadline and cancellation: a unit's rounds are not cut
        # one by one, so a unit is either finished or a failure row.
        return await extract_request_llm(self.client, request, max_tokens=self.limits.extraction)

    async def extract_units(
        self,
        requests: list[ExtractionRequest],
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> list[tuple[UnitExtraction, ExtractionFailure | None]]:
        return await extract_pack_llm(self.client, requests, max_tokens=self.limits.extraction)

    async def summarize_descriptions(
        self,
        request: DescriptionRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> DescriptionSummary:
        return await llm_description(self.client, request, max_tokens=self.limits.description)

    # ---- global search -----------------------------------------------------------------------------
    async def map_answer(
        self,
        request: MapRequest,
        embedder: Embedder | None,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> MapAnswer:
        max_tokens = request.max_tokens or self.limits.map
        return await llm_map(self.client, request, deadline=deadline, cancel=cancel, max_tokens=max_tokens)

    async def reduce_answer(
        self,
        request: ReduceRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> ReduceAnswer:
        max_tokens = request.max_tokens or self.limits.reduce
        return await llm_reduce(self.client, request, deadline=deadline, cancel=cancel, max_tokens=max_tokens)

    async def rate_reports(
        self,
        request: RateRequest,
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> RateAnswer:
        return await llm_rate(
            self.client, request, deadline=deadline, cancel=cancel, max_tokens=self.limits.map
        )

    # ---- local search ------------------------------------------------------------------------------
    async def query_intent(
        self, question: str, *, deadline: float | None = None, cancel: CancelSignal | None = None
    ) -> QueryIntent:
        return await llm_intent(self.client, question, deadline=deadline, cancel=cancel)

    async def select_communities(
        self,
        question: str,
        candidates: list[dict[str, Any]],
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> CommunitySelection:
        return await llm_select(self.client, question, candidates, deadline=deadline, cancel=cancel)

    async def local_answer(
        self,
        question: str,
        context: LocalContext,
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> str:
        return await llm_answer(
            self.client,
            question,
            context,
            deadline=deadline,
            cancel=cancel,
            max_tokens=self.limits.local_answer,
        )

    # ---- DRIFT and basic search ---------------------------------------------------------------------
    async def drift_primer(
        self,
        request: PrimerRequest,
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> DriftStep:
        return await llm_primer(
            self.client, request, deadline=deadline, cancel=cancel, max_tokens=self.limits.local_answer
        )

    async def drift_follow_up(
        self,
        request: FollowUpRequest,
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> DriftStep:
        return await llm_follow_up(
            self.client, request, deadline=deadline, cancel=cancel, max_tokens=self.limits.local_answer
        )

    async def drift_reduce(
        self,
        request: DriftReduceRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> str:
        return await llm_drift_reduce(
            self.client, request, deadline=deadline, cancel=cancel, max_tokens=self.limits.reduce
        )

    async def basic_answer(
        self,
        question: str,
        context: LocalContext,
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> str:
        return await llm_basic_answer(
            self.client,
            question,
            context,
            deadline=deadline,
            cancel=cancel,
            max_tokens=self.limits.local_answer,
        )

    # ---- running -----------------------------------------------------------------------------------
    def run_batch(
        self,
        items: Sequence[T],
        fn: Callable[[T], Awaitable[R]],
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> list[R | LLMError]:
        return self.client.run_batch(items, fn, deadline=deadline, cancel=cancel)

    def run_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.client.run_sync(coro)
