"""The engine: every LLM task of the pipeline, done by a model (`LLMEngine`) or without one (`OfflineEngine`).

`pipeline.runtime.make_engine(settings)` picks one from `PIPELINE_LLM_PROVIDER`; callers type their
parameter `engine: Engine` and never branch on which they got.

How a task is added (the `summarize` task below is the worked example; copy its shape):

1. Input and output are pydantic models (`SummarizeRequest`, `Summary`). The output model is also the
   JSON schema the model must answer in, so give its fields descriptions.
2. The prompt goes in `pipeline/prompts.py` with a version string.
3. A protocol names the task's method (`Summarizer`); `Engine` lists every task protocol.
4. `LLMEngine` (`llm.py`) renders the prompt and calls `client.complete_json(...)` (cache, retries, validation).
5. `OfflineEngine` (`offline.py`) does the same job deterministically without a model. Larger offline logic (rule-based
   extraction, extractive reports) lives in its stage's module and the method just calls it.

Task methods are async and handle one item; `engine.run_batch(items, fn)` runs many of them and returns a
result or an `LLMError` per item, so that an asset can write failure rows instead of stopping.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field

from pipeline.llm.batch import CancelSignal
from pipeline.llm.errors import LLMError
from pipeline.llm.usage import Usage
from pipeline.ops.reports.models import CommunityReportRequest, CommunityReportResponse

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
    async def community_report(
        self,
        request: CommunityReportRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> CommunityReportResponse: ...


# ---- the engine ------------------------------------------------------------------------------------
@runtime_checkable
class Engine(Summarizer, CommunityReporter, Protocol):
    """All task protocols plus batch running; later tasks add their protocol to the bases."""

    kind: Literal["offline", "llm"]
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
