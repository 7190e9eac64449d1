"""A task: one piece of LLM-shaped work with an offline form and a model form, defined beside its stage.

The engine runs any task without naming it (`await engine.run(TASK, request, embedder=...)`) and is the
one place that picks the form: the offline engine calls `task.offline`, the LLM engine `task.model` with
its client and the task's output limit. So adding a task touches its stage's module (the request and
result models, both forms, the `Task` object) and the prompt in `pipeline/prompts/`, nothing here.

How a task is written (`pipeline/engine/summarize.py` is the worked example; copy its shape):
1. Request and result are models (pydantic, or frozen dataclasses for requests that hold rows). A model
   form's result model is also the JSON schema the model answers in, so give its fields descriptions.
2. The prompt goes in `pipeline/prompts/` (indexing.py or query.py) with a version string.
3. `offline(request, ctx)` does the job deterministically; `model(request, ctx)` renders the prompt and
   calls `ctx.ask(prompt, messages, Schema)` (cache, retries, validation, the output limit).
4. `TASK = Task("name", offline=..., model=..., limit="...")`; `limit` names the `OutputLimits` field
   the model form's `max_tokens` comes from (None: the client's default).
5. A task whose output enters a fingerprint also says what it is (`offline_identity` / `model_identity`);
   callers ask `engine.identity(TASK, options)`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from pipeline.embeddings.base import Embedder
from pipeline.llm.batch import CancelSignal
from pipeline.llm.client import LLMClient
from pipeline.prompts import Prompt

Req = TypeVar("Req")
Res = TypeVar("Res")
R = TypeVar("R")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class TaskContext:
    """What a task's form may use besides its request: the query's embedder (offline forms score with
    it), the deadline and cancel signal, and, for the model form, the client and the output limit."""

    embedder: Embedder | None = None
    deadline: float | None = None
    cancel: CancelSignal | None = None
    client: LLMClient | None = None
    max_tokens: int | None = None
    # Who hears the task's events (a streaming query's door, through `QueryScope.ask`); None: nobody.
    events: Callable[[str, dict[str, Any]], None] | None = None

    def emit(self, kind: str, **data: Any) -> None:
        if self.events is not None:
            self.events(kind, data)

    def written(self, text: str) -> None:
        """Answer text as it is written (a `delta` event), when someone listens."""
        if text:
            self.emit("delta", text=text)

    def withdrawn(self, chars: int) -> None:
        """The last `chars` characters written are no answer's (a `retract` event): a retried model
        call wrote otherwise, or the call failed."""
        if chars > 0:
            self.emit("retract", chars=chars)

    @property
    def llm(self) -> LLMClient:
        if self.client is None:
            raise RuntimeError("a model form ran without an LLM client (the offline engine never does this)")
        return self.client

    async def ask(
        self,
        prompt: Prompt,
        messages: list[dict[str, str]],
        schema: type[M],
        *,
        max_tokens: int | None = None,
    ) -> M:
        """The model's validated JSON reply to `messages` (built from `prompt`), cached by the prompt's
        name and version; `max_tokens` overrides the task's output limit."""
        return await self.llm.complete_json(messages, schema, **self._call(prompt, max_tokens))

    async def ask_text(
        self,
        prompt: Prompt,
        messages: list[dict[str, str]],
        *,
        answer: bool = False,
        max_tokens: int | None = None,
    ) -> str:
        """The model's prose reply to `messages`, cached and within the task's output limit (or
        `max_tokens`). An `answer` is reported as it is written (`written`): token by token as the
        model streams it, whole when it came from the cache."""
        return await self.llm.complete_text(
            messages,
            **self._call(prompt, max_tokens),
            on_text=self.written if answer and self.events is not None else None,
            on_withdraw=self.withdrawn,
        )

    def _call(self, prompt: Prompt, max_tokens: int | None) -> dict[str, Any]:
        """What every model call of this task carries: the prompt's cache key (name, version), the
        deadline and cancel signal, and the output limit (`max_tokens`, else the task's)."""
        return {
            "task": prompt.name,
            "prompt_version": prompt.version,
            "deadline": self.deadline,
            "cancel": self.cancel,
            "max_tokens": max_tokens if max_tokens is not None else self.max_tokens,
        }

    def need_embedder(self, task: str) -> Embedder:
        if self.embedder is None:
            raise ValueError(f"offline {task} needs an embedder to score text")
        return self.embedder


@dataclass(frozen=True)
class Task(Generic[Req, Res]):
    """A task's two forms and what the engine needs to run them."""

    name: str
    offline: Callable[[Req, TaskContext], Awaitable[Res]]
    model: Callable[[Req, TaskContext], Awaitable[Res]]
    limit: str | None = None
    # What the output is, for fingerprints: (options) -> identity offline; (client, options) with a model.
    offline_identity: Callable[[Any], Any] | None = None
    model_identity: Callable[[LLMClient, Any], Any] | None = None


_CPU = threading.Lock()


async def cpu_bound(fn: Callable[..., R], *args: Any) -> R:
    """Run offline CPU work (embedding, scoring) in a thread, one at a time: the other items' bookkeeping
    goes on meanwhile, and the model already uses every core (4 at once were 20% slower)."""

    def serialized() -> R:
        with _CPU:
            return fn(*args)

    return await asyncio.to_thread(serialized)
