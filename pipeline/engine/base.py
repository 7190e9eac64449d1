"""The engine: every LLM task of the pipeline, done by a model (`LLMEngine`) or without one (`OfflineEngine`).

`pipeline.runtime.make_engine(settings)` picks one from `PIPELINE_LLM_PROVIDER`; callers type their
parameter `engine: Engine` and never branch on which they got: every task that has an offline and an LLM
form is a method here, and the engine class is the one place that picks the form. `kind` names the
engine for metadata and logs only (tests/test_engine_contract.py fails on code that compares it).

How a task is added (the `summarize` task below is the worked example; copy its shape):

1. Input and output are pydantic models (`SummarizeRequest`, `Summary`). The output model is also the
   JSON schema the model must answer in, so give its fields descriptions.
2. The prompt goes in `pipeline/prompts.py` with a version string.
3. A protocol names the task's method (`Summarizer`); `Engine` lists every task protocol.
4. `LLMEngine` (`llm.py`) renders the prompt and calls `client.complete_json(...)` (cache, retries, validation).
5. `OfflineEngine` (`offline.py`) does the same job deterministically without a model. Larger offline logic (rule-based
   extraction, extractive reports) lives in its stage's module and the method just calls it.

Where each pair lives (offline form / LLM form):
- `extract_unit`, `extract_units`: `ops/extraction/offline.py` / `ops/extraction/llm.py`, `packed.py`
- `summarize_descriptions`: `ops/descriptions.py` (`offline_description` / `llm_description`)
- `community_report`: `ops/reports/offline.py` / the prompt, in `llm.py`
- `map_answer`, `reduce_answer`: `query/global_tasks.py`
- `query_intent`: `query/query_intent.py`; `select_communities`, `local_answer`: `query/local_tasks.py`
- `rate_reports` (global search's dynamic selection): `query/selection_tasks.py`
- `drift_primer`, `drift_follow_up`, `drift_reduce`: `query/drift_tasks.py`
- `basic_answer`: `query/basic_tasks.py`
The query-time task modules import only core, prompts, llm and the embedder protocol, so the engine may
import them without pulling in query-time code (tests/test_layout.py).

Task methods are async and handle one item; `engine.run_batch(items, fn)` runs many of them and returns a
result or an `LLMError` per item, so that an asset can write failure rows instead of stopping.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field

from pipeline.embeddings.base import Embedder
from pipeline.llm.batch import CancelSignal
from pipeline.llm.errors import LLMError
from pipeline.llm.usage import Usage
from pipeline.ops.extraction.models import (
    ExtractionFailure,
    ExtractionOptions,
    ExtractionRequest,
    ExtractorIdentity,
    UnitExtraction,
)
from pipeline.ops.reports.models import CommunityReportRequest, CommunityReportResponse, ReportIdentity
from pipeline.query.drift_tasks import DriftReduceRequest, DriftStep, FollowUpRequest, PrimerRequest
from pipeline.query.global_tasks import MapAnswer, MapRequest, ReduceAnswer, ReduceRequest
from pipeline.query.local_tasks import CommunitySelection, LocalContext
from pipeline.query.query_intent import QueryIntent
from pipeline.query.selection_tasks import RateAnswer, RateRequest

T = TypeVar("T")
R = TypeVar("R")


# ---- the example task: summarize a few texts ------------------------------------------------------
class SummarizeRequest(BaseModel):
    texts: list[str]
    max_words: int = Field(default=60, ge=1)


class Summary(BaseModel):
    summary: str = Field(description="The summary, using only facts from the texts")


@runtime_checkable
class Summarizer(Protocol):
    async def summarize(
        self, request: SummarizeRequest, *, deadline: float | None = None, cancel: CancelSignal | None = None
    ) -> Summary: ...


# ---- community reports (pipeline.ops.reports) -----------------------------------------------------------
@runtime_checkable
class CommunityReporter(Protocol):
    @property
    def report_identity(self) -> ReportIdentity:
        """(method, model, version) of the reports this engine writes, as they enter the fingerprint."""
        ...

    async def community_report(
        self,
        request: CommunityReportRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> CommunityReportResponse: ...


# ---- graph extraction (pipeline.ops.extraction) -----------------------------------------------------
@runtime_checkable
class Extractor(Protocol):
    def extraction_identity(self, options: ExtractionOptions) -> ExtractorIdentity:
        """What this engine's extraction under `options` is: its method and version, the config a stored
        extraction must match, and whether a stored one is reused (`pipeline.index.extracted_graph`)."""
        ...

    async def extract_unit(
        self,
        request: ExtractionRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> tuple[UnitExtraction, ExtractionFailure | None]:
        """One text unit's records, and the failure that cut them short, if any (then the records are
        partial or empty, never an exception: one unit does not fail a run)."""
        ...

    async def extract_units(
        self,
        requests: list[ExtractionRequest],
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> list[tuple[UnitExtraction, ExtractionFailure | None]]:
        """`extract_unit` for a pack of small units (`ops.extraction.packed.plan_packs`), in order: the
        LLM asks for them in one request, the NLP extractor runs spaCy over them in one batch."""
        ...


# ---- description summaries (pipeline.ops.descriptions) ---------------------------------------------
class DescriptionRequest(BaseModel):
    names: tuple[str, ...]  # the entity's title, or a relationship's (source, target)
    descriptions: tuple[str, ...]  # distinct, in order of first appearance; at least one
    max_tokens: int = Field(ge=1)  # offline: the summary's budget
    max_input_tokens: int = Field(ge=1)  # LLM: descriptions per call, beyond which they go in rounds
    max_words: int = Field(ge=1)  # LLM: the summary's length
    encoding: str


class DescriptionSummary(BaseModel):
    summary: str
    calls: int = 0  # model calls it took (0: written offline, or kept)
    kept: bool = False  # the single description, unchanged


@runtime_checkable
class DescriptionSummarizer(Protocol):
    async def summarize_descriptions(
        self,
        request: DescriptionRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> DescriptionSummary: ...


# ---- global search (pipeline.query.global_tasks) ---------------------------------------------------
@runtime_checkable
class GlobalSearcher(Protocol):
    async def map_answer(
        self,
        request: MapRequest,
        embedder: Embedder | None,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> MapAnswer:
        """A batch of reports -> points, each scored 0-100 and citing communities. The offline form
        scores sentences with `embedder` (ValueError without one); the LLM form does not use it."""
        ...

    async def reduce_answer(
        self,
        request: ReduceRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> ReduceAnswer: ...

    async def rate_reports(
        self,
        request: RateRequest,
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> RateAnswer:
        """A few reports -> a 0-10 relevance rating each (dynamic community selection)."""
        ...


# ---- local search (pipeline.query.query_intent, pipeline.query.local_tasks) ------------------------
@runtime_checkable
class LocalSearcher(Protocol):
    async def query_intent(
        self, question: str, *, deadline: float | None = None, cancel: CancelSignal | None = None
    ) -> QueryIntent: ...

    async def select_communities(
        self,
        question: str,
        candidates: list[dict[str, Any]],
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> CommunitySelection: ...

    async def local_answer(
        self,
        question: str,
        context: LocalContext,
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> str: ...


# ---- DRIFT search (pipeline.query.drift_tasks) --------------------------------------------------------
@runtime_checkable
class DriftSearcher(Protocol):
    async def drift_primer(
        self,
        request: PrimerRequest,
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> DriftStep:
        """A fold of community reports -> an intermediate answer, its score and follow-up questions."""
        ...

    async def drift_follow_up(
        self,
        request: FollowUpRequest,
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> DriftStep: ...

    async def drift_reduce(
        self,
        request: DriftReduceRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> str: ...


# ---- basic search (pipeline.query.basic_tasks) ---------------------------------------------------------
@runtime_checkable
class BasicSearcher(Protocol):
    async def basic_answer(
        self,
        question: str,
        context: LocalContext,
        embedder: Embedder,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> str: ...


# ---- the engine ------------------------------------------------------------------------------------
@runtime_checkable
class Engine(
    Summarizer,
    CommunityReporter,
    Extractor,
    DescriptionSummarizer,
    GlobalSearcher,
    LocalSearcher,
    DriftSearcher,
    BasicSearcher,
    Protocol,
):
    """All task protocols plus batch running; a new task adds its protocol to the bases."""

    kind: Literal["offline", "llm"]  # a name for metadata and logs; never a reason to branch
    usage: Usage

    def run_batch(
        self,
        items: Sequence[T],
        fn: Callable[[T], Awaitable[R]],
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> list[R | LLMError]: ...

    def run_sync(self, coro: Coroutine[Any, Any, T]) -> T: ...
