"""The offline engine: every task's offline form, deterministic and without a model."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Literal, TypeVar

from pipeline.embeddings.base import Embedder
from pipeline.engine.task import Task, TaskContext
from pipeline.llm.batch import CancelSignal, gather_settled
from pipeline.llm.errors import LLMError
from pipeline.llm.usage import Usage

T = TypeVar("T")
R = TypeVar("R")
Req = TypeVar("Req")
Res = TypeVar("Res")


class OfflineEngine:
    """Deterministic, model-free implementations: same inputs, same outputs, on any machine."""

    kind: Literal["offline", "llm"] = "offline"

    def __init__(self, usage: Usage | None = None) -> None:
        self.usage = usage if usage is not None else Usage()

    async def run(
        self,
        task: Task[Req, Res],
        request: Req,
        *,
        embedder: Embedder | None = None,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> Res:
        return await task.offline(request, TaskContext(embedder, deadline, cancel))

    def identity(self, task: Task[Any, Any], options: Any = None) -> Any:
        if task.offline_identity is None:
            raise ValueError(f"task {task.name!r} has no identity")
        return task.offline_identity(options)

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
