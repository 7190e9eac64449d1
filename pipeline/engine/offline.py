"""The offline engine: every task's offline form, deterministic and without a model."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Literal, TypeVar

from pipeline.engine.base import Engine
from pipeline.engine.task import Task, TaskContext
from pipeline.llm.blocking import run_to_end
from pipeline.llm.usage import Usage

T = TypeVar("T")
Req = TypeVar("Req")
Res = TypeVar("Res")


class OfflineEngine(Engine):
    """Deterministic, model-free implementations: same inputs, same outputs, on any machine."""

    kind: Literal["offline", "llm"] = "offline"

    def __init__(self, usage: Usage | None = None) -> None:
        self.usage = usage if usage is not None else Usage()

    async def _run_form(self, task: Task[Req, Res], request: Req, ctx: TaskContext) -> Res:
        return await task.offline(request, ctx)

    def identity(self, task: Task[Any, Any], options: Any = None) -> Any:
        if task.offline_identity is None:
            raise ValueError(f"task {task.name!r} has no identity")
        return task.offline_identity(options)

    def run_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        return run_to_end(coro)
