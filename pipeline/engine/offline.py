"""The offline engine: every task done deterministically without a model."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Literal, TypeVar

from pipeline.engine.base import SummarizeRequest, Summary
from pipeline.llm.batch import CancelSignal, gather_settled
from pipeline.llm.errors import LLMError
from pipeline.llm.usage import Usage
from pipeline.ops.reports.models import CommunityReportRequest, CommunityReportResponse
from pipeline.ops.reports.offline import offline_report

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

    async def community_report(
        self,
        request: CommunityReportRequest,
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> CommunityReportResponse:
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
