"""The LLM engine: every task through the one LLM client (cache, retries, validation)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Literal, TypeVar

from pipeline import prompts
from pipeline.engine.base import SummarizeRequest, Summary
from pipeline.llm.batch import CancelSignal
from pipeline.llm.client import LLMClient
from pipeline.llm.errors import LLMError
from pipeline.ops.reports.models import CommunityReportRequest, CommunityReportResponse

T = TypeVar("T")
R = TypeVar("R")


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
