"""The LLM engine: every task's model form, through the one LLM client (cache, retries, validation).

Each task's model form sends the task's output limit (`OutputLimits`, named by `Task.limit`) as
`max_tokens`: one limit for every task either cuts off extractions and reports or lets a map answer run
long. Global map and reduce send the reserve their request carries (the batcher left exactly that much
room), else the limit here.
"""

from __future__ import annotations

from collections.abc import Coroutine
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

from pipeline.engine.base import Engine
from pipeline.engine.task import Task, TaskContext
from pipeline.llm.client import LLMClient
from pipeline.settings.bound import FromSettings, setting

T = TypeVar("T")
Req = TypeVar("Req")
Res = TypeVar("Res")


@dataclass(frozen=True)
class OutputLimits(FromSettings):
    """max_tokens per kind of task (`Task.limit`; the client's own default for a task that names none)."""

    extraction: int = setting("llm_extraction_max_tokens")
    report: int = setting("llm_report_max_tokens")
    description: int = setting("llm_description_max_tokens")
    map: int = setting("llm_map_max_tokens")
    reduce: int = setting("llm_reduce_max_tokens")
    local_answer: int = setting("llm_local_answer_max_tokens")


class LLMEngine(Engine):
    """Every task through the LLM client: same prompts, same validation, whatever the server."""

    kind: Literal["offline", "llm"] = "llm"

    def __init__(self, client: LLMClient, limits: OutputLimits | None = None) -> None:
        self.client = client
        self.usage = client.usage
        self.limits = limits or OutputLimits()

    async def _run_form(self, task: Task[Req, Res], request: Req, ctx: TaskContext) -> Res:
        max_tokens = getattr(self.limits, task.limit) if task.limit else None
        return await task.model(request, replace(ctx, client=self.client, max_tokens=max_tokens))

    def identity(self, task: Task[Any, Any], options: Any = None) -> Any:
        if task.model_identity is None:
            raise ValueError(f"task {task.name!r} has no identity")
        return task.model_identity(self.client, options)

    def run_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.client.run_sync(coro)
