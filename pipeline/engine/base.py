"""The engine: runs any task (`pipeline.engine.task.Task`) by a model (`LLMEngine`) or without one
(`OfflineEngine`).

`pipeline.runtime.make_engine(settings)` picks one from `PIPELINE_LLM_PROVIDER`; callers type their
parameter `engine: Engine` (the base class here, which runs a task and a batch) and never branch on
which they got: the engine class is the one place that picks a task's form. `kind` names the engine for metadata and logs only (tests/test_engine_contract.py
fails on code that compares it). The engine knows no task by name: each lives beside its stage.

Where the tasks live:
- extraction: `ops/extraction/task.py`; descriptions: `ops/descriptions.py`; reports: `ops/reports/task.py`
- global search: `query/global_/tasks.py` (map, reduce), `query/global_/selection_tasks.py` (rating)
- local search: `query/common/intent.py` (the question parse), `query/local/tasks.py` (selection, answer)
- DRIFT: `query/drift/tasks.py`; basic and lazy: `query/common/passage_answer.py`; the example: `engine/summarize.py`

A task runs on one item; `engine.run_batch(items, fn)` runs many and returns a result or an `LLMError`
per item, so that an asset can write failure rows instead of stopping.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar

from pipeline.core.kill_points import kill_point
from pipeline.embeddings.base import Embedder
from pipeline.engine.task import Task, TaskContext
from pipeline.llm.batch import Batches, CancelSignal
from pipeline.llm.usage import Usage

Req = TypeVar("Req")
Res = TypeVar("Res")


class Engine(Batches):
    """Runs tasks, one or many (`run_batch`, from `Batches`); a new task needs nothing here. The
    subclasses (`OfflineEngine`, `LLMEngine`) say which form of a task runs and on which event loop
    (`run_sync`)."""

    kind: Literal["offline", "llm"]  # a name for metadata and logs; never a reason to branch
    usage: Usage

    async def run(
        self,
        task: Task[Req, Res],
        request: Req,
        *,
        embedder: Embedder | None = None,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
        events: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> Res:
        """The task's offline or model form on `request`; `events` hears what it reports as it goes (an
        answer task's text as it is written: `pipeline.query.common.events`)."""
        context = TaskContext(embedder, deadline, cancel, events=events)
        result = await self._run_form(task, request, context)
        kill_point(task.name)  # a test hook (kill_points.py): this call answered (and cached), no more
        return result

    def identity(self, task: Task[Any, Any], options: Any = None) -> Any:
        """What this engine's output of `task` under `options` is, as it enters fingerprints."""
        raise NotImplementedError

    async def _run_form(self, task: Task[Req, Res], request: Req, ctx: TaskContext) -> Res:
        raise NotImplementedError


def runner(engine: Engine, task: Task[Req, Res], **context: Any) -> Callable[[Req], Awaitable[Res]]:
    """`engine.run(task, ...)` as a one-argument function, for `engine.run_batch(items, fn)`."""

    async def run(request: Req) -> Res:
        return await engine.run(task, request, **context)

    return run
