"""The LLM client: every chat and embedding request of the pipeline goes through `LLMClient`.

It sends requests through `Transport` (`openai.AsyncOpenAI` with streamed replies under a first-token
and an idle timeout, retries that honour Retry-After, a concurrency limit and usage counts) and adds
what a batch pipeline needs on top: the persistent cache, validated JSON output with one repair retry,
per-call and per-batch deadlines, and cancellation. A thinking model's reasoning (`<think>…</think>`,
`reasoning_content`) is never part of the text parsed or cached (`pipeline.llm.reply`).

A reply cut off at `max_tokens` (`finish_reason: "length"`) is never parsed and never cached: a cut JSON
reply can still hold one complete object. It is asked again once with twice the limit (at most
`max_output_tokens`); cut again, the call raises `LLMTruncatedError`. The answer of the larger request
is cached under the original request's key, so a re-run does not pay for the cut attempt again.

The API key is read from the environment variable the settings name and handed to the SDK; it is
never logged, stored in the cache or put in any repr.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from pipeline.caches.base import ResponseCache, cache_key
from pipeline.core import client_defaults as cd
from pipeline.llm import structured
from pipeline.llm.batch import Batches, CancelSignal, run_guarded
from pipeline.llm.blocking import run_to_end
from pipeline.llm.errors import LLMError, LLMTruncatedError, LLMValidationError
from pipeline.llm.reply import Reply
from pipeline.llm.stream import Written
from pipeline.llm.transport import FormatRejectedError, Transport, endpoint_label
from pipeline.llm.usage import Usage

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
JsonModeSetting = Literal["auto", "json_schema", "json_object"]


class LLMClient(Batches):
    """One model on one OpenAI-compatible endpoint. Cheap to build; share one per run.

    Async methods may be used from any event loop; each loop gets its own HTTP connection pool and
    concurrency limit. Sync callers (Dagster assets) use `run_batch` (from `Batches`) or `run_sync`;
    async ones gather calls with `pipeline.llm.batch.gather_settled`.

    Every call takes `deadline` (an absolute `time.monotonic()` value, see `deadline_in`) and `cancel`
    (an asyncio.Event, or a threading.Event set from another thread), and raises an `LLMError`
    subclass on failure; `run_batch` and `gather_settled` turn those into per-item results instead.
    """

    def __init__(
        self,
        *,
        model: str,
        api_key: str,
        base_url: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = cd.LLM_MAX_TOKENS,
        max_output_tokens: int = cd.LLM_MAX_OUTPUT_TOKENS,
        json_mode: JsonModeSetting = cd.LLM_JSON_MODE,  # type: ignore[assignment]
        cache: ResponseCache | None = None,
        usage: Usage | None = None,
        **connection: Any,
    ) -> None:
        """`connection` is what `Transport` takes beside the model and endpoint (timeouts, stream,
        max_retries, concurrency — None: by endpoint —, prices, backoff, and the budget, which is checked
        before every request, so that a cached answer is free); it is forwarded as it is."""
        self.model = model
        self.base_url = base_url
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_output_tokens = max_output_tokens
        self.json_mode: JsonModeSetting = json_mode
        self._probe_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        self.cache = cache
        self.usage = usage if usage is not None else Usage()
        connection.setdefault("timeout_retries", cd.LLM_TIMEOUT_RETRIES)
        self.transport = Transport(
            model=model, api_key=api_key, base_url=base_url, usage=self.usage, **connection
        )

    def __repr__(self) -> str:
        return f"LLMClient(model={self.model!r}, endpoint={self.endpoint!r}, concurrency={self.concurrency})"

    @property
    def concurrency(self) -> int:
        return self.transport.concurrency

    @property
    def endpoint(self) -> str:
        """host[:port]/path of the server (never credentials)."""
        return endpoint_label(self.base_url)

    # ---- public calls --------------------------------------------------------------------------
    async def complete_json(
        self,
        messages: list[dict[str, Any]],
        response_model: type[M],
        *,
        task: str,
        prompt_version: str,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
        max_tokens: int | None = None,
    ) -> M:
        """The task's output model, validated; LLMValidationError if it never validated (one repair retry)."""
        work = self._complete_json(messages, response_model, task, prompt_version, deadline, max_tokens)
        return await self._guarded(work, task, deadline, cancel)

    async def complete_text(
        self,
        messages: list[dict[str, Any]],
        *,
        task: str,
        prompt_version: str,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
        max_tokens: int | None = None,
        on_text: Callable[[str], None] | None = None,
        on_withdraw: Callable[[int], None] | None = None,
    ) -> str:
        """The model's prose reply; `on_text` hears it as it is written (each piece once, the reasoning
        left out), or whole when it comes from the cache. `on_withdraw(n)` takes back the last n
        characters heard: a retried attempt wrote otherwise, or the call failed (`stream.Written`)."""
        written = Written(on_text, on_withdraw) if on_text is not None else None
        work = self._complete_text(messages, task, prompt_version, deadline, max_tokens, written)
        return await self._guarded(work, task, deadline, cancel)

    async def embed(
        self,
        texts: Sequence[str],
        *,
        task: str = "embed",
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
        dimensions: int | None = None,
    ) -> list[list[float]]:
        """Embedding vectors (as the server returns them) for one request's worth of texts; `dimensions`
        asks a model that can shorten its vectors for that width."""
        work = self.transport.embed(list(texts), task, deadline, dimensions=dimensions)
        return await self._guarded(work, task, deadline, cancel)

    def run_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine to completion on a fresh event loop (a helper thread's inside a running loop) and
        close this client's connections."""

        async def main() -> T:
            try:
                return await coro
            finally:
                await self.aclose()

        return run_to_end(main())

    async def aclose(self) -> None:
        """Close the current event loop's connection pool (the next call opens a new one)."""
        await self.transport.aclose()

    # ---- the work behind the public calls ------------------------------------------------------
    async def _guarded(
        self,
        work: Coroutine[Any, Any, T],
        task: str,
        deadline: float | None,
        cancel: CancelSignal | None,
    ) -> T:
        try:
            return await run_guarded(work, deadline=deadline, cancel=cancel, what=f"{task} call", task=task)
        except LLMError as exc:
            exc.task = exc.task or task
            self.usage.add(failures=1)
            # a server found down is said once, by the call that found it
            repeated = getattr(exc, "repeated", False)
            log.log(logging.DEBUG if repeated else logging.WARNING, "llm %s failed: %s", task, exc)
            raise

    def _params(self, max_tokens: int | None) -> dict[str, Any]:
        return {"temperature": self.temperature, "max_tokens": max_tokens or self.max_tokens}

    def _from_cache(self, key: str) -> str | None:
        if self.cache is None:
            return None
        hit = self.cache.get(key)
        return None if hit is None else hit.response

    def _to_cache(self, key: str, text: str, task: str, version: str, reply: Reply) -> None:
        if self.cache is not None:
            self.cache.put(
                key,
                text,
                task=task,
                model=f"{self.endpoint}/{self.model}",
                prompt_version=version,
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
            )

    async def _complete_text(
        self,
        messages: list[dict[str, Any]],
        task: str,
        version: str,
        deadline: float | None,
        max_tokens: int | None,
        written: Written | None = None,
    ) -> str:
        params = self._params(max_tokens)
        key = cache_key(f"{self.endpoint}/{self.model}", messages, params, version)
        if (cached := self._from_cache(key)) is not None:
            self.usage.add(cache_hits=1)
            if written is not None:
                written.whole(cached)
            return cached
        try:
            reply, _ = await self._whole(
                lambda p: self.transport.chat(messages, p, task, deadline, written=written), params, task
            )
        except BaseException:
            if written is not None:
                written.abandon()
            raise
        if written is not None:
            written.settle(reply.text)
        self._to_cache(key, reply.text, task, version, reply)
        return reply.text

    async def _complete_json(
        self,
        messages: list[dict[str, Any]],
        model: type[M],
        task: str,
        version: str,
        deadline: float | None,
        max_tokens: int | None,
    ) -> M:
        messages = structured.with_instruction(messages, structured.schema_instruction(model))
        params = self._params(max_tokens)
        key_params = {**params, "output_schema": structured.json_schema(model)}
        key = cache_key(f"{self.endpoint}/{self.model}", messages, key_params, version)
        if (cached := self._from_cache(key)) is not None:
            try:
                result = structured.parse_reply(cached, model)
            except ValueError:
                self.cache.forget(key)  # the task's model changed under an unchanged prompt version
            else:
                self.usage.add(cache_hits=1)
                return result
        reply, sent = await self._whole(
            lambda p: self._chat_json(messages, p, model, task, deadline), params, task
        )
        try:
            result = structured.parse_reply(reply.text, model)
        except ValueError as first:
            log.info("llm %s: reply did not validate (%s); asking the model to repair it", task, first)
            repair = structured.repair_messages(messages, reply.text, str(first))
            second, _ = await self._whole(
                lambda p: self._chat_json(repair, p, model, task, deadline), sent, task
            )
            reply = _summed(reply, second)
            try:
                result = structured.parse_reply(second.text, model)
            except ValueError as final:
                raise LLMValidationError(
                    f"{task}: the model's reply did not match {model.__name__} after one repair retry: {final}",
                    task=task,
                    raw=second.text,
                    error=str(final),
                ) from final
        self._to_cache(key, result.model_dump_json(), task, version, reply)
        return result

    async def _whole(
        self, send: Callable[[dict[str, Any]], Awaitable[Reply]], params: dict[str, Any], task: str
    ) -> tuple[Reply, dict[str, Any]]:
        """A reply the model finished, and the params that got it: a cut one is asked again once with a
        larger `max_tokens`; LLMTruncatedError when that one is cut too (or the limit cannot grow)."""
        reply = await send(params)
        if not reply.cut_off:
            return reply, params
        self.usage.add(truncations=1)
        limit = int(params["max_tokens"])
        larger = min(2 * limit, self.max_output_tokens)
        if larger <= limit:
            raise _truncated(task, reply, limit, None)
        log.warning("llm %s: reply cut off at max_tokens=%d; asking again with %d", task, limit, larger)
        params = {**params, "max_tokens": larger}
        second = await send(params)
        if second.cut_off:
            self.usage.add(truncations=1)
            raise _truncated(task, second, larger, limit)
        return _summed(reply, second), params

    async def _chat_json(
        self,
        messages: list[dict[str, Any]],
        params: dict[str, Any],
        model: type[BaseModel],
        task: str,
        deadline: float | None,
    ) -> Reply:
        def send(mode: str, *, probe: bool = False) -> Awaitable[Reply]:
            fmt = structured.response_format(model, mode)
            return self.transport.chat(
                messages, {**params, "response_format": fmt}, task, deadline, schema_probe=probe
            )

        if self.json_mode == "auto":
            # Until one request has shown whether the server takes json_schema, requests go one at a
            # time: concurrent probes would each be refused and retried as ordinary 500s.
            loop = asyncio.get_running_loop()
            lock = self._probe_locks.get(loop)
            if lock is None:
                lock = self._probe_locks[loop] = asyncio.Lock()
            async with lock:
                if self.json_mode == "auto":
                    return await self._probe_json_schema(send, task)
        return await send("json_schema" if self.json_mode == "json_schema" else "json_object")

    async def _probe_json_schema(self, send: Callable[..., Awaitable[Reply]], task: str) -> Reply:
        try:
            reply = await send("json_schema", probe=True)
        except FormatRejectedError:
            log.info("llm %s: %s rejects json_schema output; using json_object", task, self.endpoint)
            self.json_mode = "json_object"
            return await send("json_object")
        self.json_mode = "json_schema"
        return reply


def _summed(first: Reply, second: Reply) -> Reply:
    """The second reply, with the tokens of both (both were paid for)."""
    return Reply(
        second.text,
        first.prompt_tokens + second.prompt_tokens,
        first.completion_tokens + second.completion_tokens,
        second.finish_reason,
        first.reasoning_tokens + second.reasoning_tokens,
    )


def _truncated(task: str, reply: Reply, limit: int, first_limit: int | None) -> LLMTruncatedError:
    tried = f"at max_tokens={first_limit}, then at {limit}" if first_limit else f"at max_tokens={limit}"
    return LLMTruncatedError(
        f"{task}: the reply was cut off (finish_reason 'length') {tried}; raise the task's max_tokens "
        "setting or give it less to do per call (e.g. smaller chunks)",
        task=task,
        max_tokens=limit,
        raw=reply.text,
    )
