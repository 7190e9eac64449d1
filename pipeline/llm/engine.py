"""The engine: every LLM task of the pipeline, done by a model (`LLMEngine`) or without one (`OfflineEngine`).

`make_engine(settings)` picks one from `PIPELINE_LLM_PROVIDER`; callers never know which they got.

How a task is added (the `summarize` task below is the worked example; copy its shape):

1. Input and output are pydantic models (`SummarizeRequest`, `Summary`). The output model is also the
   JSON schema the model must answer in, so give its fields descriptions.
2. The prompt goes in `pipeline/prompts.py` with a version string.
3. A protocol names the task's method (`Summarizer`); `Engine` lists every task protocol.
4. `LLMEngine` renders the prompt and calls `client.complete_json(...)` (cache, retries, validation).
5. `OfflineEngine` does the same job deterministically without a model. Larger offline logic (rule-based
   extraction, extractive reports) lives in its stage's module and the method just calls it.

Task methods are async and handle one item; `engine.run_batch(items, fn)` runs many of them and returns a
result or an `LLMError` per item, so that an asset can write failure rows instead of stopping.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field

from pipeline import prompts
from pipeline.llm.batch import CancelSignal, gather_settled
from pipeline.llm.client import LLMClient
from pipeline.llm.errors import LLMError
from pipeline.llm.usage import Usage
from pipeline.reports.models import CommunityReportRequest, CommunityReportResponse

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


# ---- community reports (pipeline.reports) -----------------------------------------------------------
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


class OfflineEngine:
    """Deterministic, model-free implementations: same inputs, same outputs, on any machine."""

    kind: Literal["offline", "llm"] = "offline"

    def __init__(self, usage: Usage | None = None) -> None:
        self.usage = usage if usage is not None else Usage()

    async def summarize(
        self, request: SummarizeRequest, *, deadline: float | None = None, cancel: CancelSignal | None = None
    ) -> Summary:
        return Summary(summary=extractive_summary(request.texts, request.max_words))

    async def community_report(
        self,
        request: CommunityReportRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> CommunityReportResponse:
        from pipeline.reports.offline import offline_report

        return offline_report(request.context)

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


class LLMEngine:
    """Every task through the LLM client: same prompts, same validation, whatever the server."""

    kind: Literal["offline", "llm"] = "llm"

    def __init__(self, client: LLMClient) -> None:
        self.client = client
        self.usage = client.usage

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
        )

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


def make_engine(settings: Any, usage: Usage | None = None) -> Engine:
    """`OfflineEngine` unless `PIPELINE_LLM_PROVIDER=openai`."""
    if settings.llm_provider == "openai":
        return LLMEngine(LLMClient.from_settings(settings, usage=usage))
    return OfflineEngine(usage=usage)


# ---- offline helpers -------------------------------------------------------------------------------
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
