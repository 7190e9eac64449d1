"""Requests to an OpenAI-compatible server: the SDK call, retries, the concurrency limit, usage counts.

`LLMClient` builds the requests and owns caching and validation; `Transport` only gets an answer for
one request, retrying what is worth retrying (see `pipeline.llm.retry`) and never holding a
concurrency slot while it waits to retry.

Chat replies are streamed (`pipeline.llm.stream`): a model that keeps producing tokens is never cut off,
a hung one is noticed within the idle timeout, and a timed-out stream is closed (its slot held until
then) before any retry. A server that does not stream is asked for whole replies from then on, under
the total `timeout_s` as before, said once in the log; such a reply that times out at a local server
is not sent again, because that server would still be generating it.

A server found down stays down for the transport's life (one question, command or index run: see
`retry.Down`): a mode that makes many calls stops at the first instead of paying every call's retries.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import numpy as np
import openai
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

from pipeline.core import client_defaults as cd
from pipeline.core.tokens import count_tokens
from pipeline.llm import structured
from pipeline.llm.batch import remaining
from pipeline.llm.budget import Budget
from pipeline.llm.errors import LLMConfigError, LLMError
from pipeline.llm.reply import Reply, build_reply, reasoning_of
from pipeline.llm.retry import (
    Backoff,
    Down,
    GarbledResponseError,
    NotResentTimeoutError,
    StopAfterTimeouts,
    StopAtDeadline,
    describe,
    final_error,
    is_retryable,
)
from pipeline.llm.stream import Written, read_stream
from pipeline.llm.usage import DEFAULT_PRICES, Usage, estimate_cost

log = logging.getLogger(__name__)

T = TypeVar("T")


def endpoint_label(base_url: str | None) -> str:
    """host[:port]/path of the server, used in cache keys and model ids (never contains credentials)."""
    if not base_url:
        return "api.openai.com/v1"
    parts = urlsplit(base_url)
    return f"{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path.rstrip('/')}"


def is_local(base_url: str | None) -> bool:
    """Whether the endpoint is anything but OpenAI's API: a server of one's own, with its own capacity."""
    return bool(base_url) and urlsplit(base_url).hostname != "api.openai.com"


def default_concurrency(base_url: str | None) -> int:
    """Requests in flight at once when none is configured: OpenAI serves many; a local server (llama.cpp,
    Ollama, vLLM) as many as it has slots, which it does not say: 1 unless configured."""
    return 1 if is_local(base_url) else 8


def read_api_key(env_name: str, base_url: str | None) -> str:
    key = os.environ.get(env_name, "")
    if key:
        return key
    if base_url:
        return "no-key"  # local servers (llama.cpp, Ollama, vLLM) accept any key
    raise LLMConfigError(
        f"the OpenAI API needs a key: set the environment variable {env_name} "
        "(its name comes from PIPELINE_LLM_API_KEY_ENV), or set PIPELINE_LLM_BASE_URL to a local server"
    )


@dataclass
class _LoopState:
    sdk: openai.AsyncOpenAI
    slots: asyncio.Semaphore


class FormatRejectedError(Exception):
    """The server does not accept `response_format: json_schema` (e.g. llama.cpp answers HTTP 500)."""


class Transport:
    """One model on one endpoint. Each event loop gets its own connection pool and concurrency limit."""

    def __init__(
        self,
        *,
        model: str,
        api_key: str,
        base_url: str | None = None,
        timeout_s: float = cd.REQUEST_TIMEOUT_S,
        first_token_timeout_s: float = cd.LLM_FIRST_TOKEN_TIMEOUT_S,
        idle_timeout_s: float = cd.LLM_IDLE_TIMEOUT_S,
        stream: bool = True,
        max_retries: int = cd.MAX_RETRIES,
        timeout_retries: int | None = None,
        concurrency: int | None = None,
        usage: Usage | None = None,
        prices: Mapping[str, tuple[float, float]] | None = None,
        backoff: Backoff | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.endpoint = endpoint_label(base_url)
        self.timeout_s = timeout_s
        self.first_token_timeout_s = first_token_timeout_s
        self.idle_timeout_s = idle_timeout_s
        self.stream = stream  # turned off, once, when the server shows it does not stream
        self.local = is_local(base_url)
        self.max_retries = max_retries
        self.timeout_retries = max_retries if timeout_retries is None else min(timeout_retries, max_retries)
        self.down = Down()
        self.concurrency = concurrency or default_concurrency(base_url)
        self.usage = usage if usage is not None else Usage()
        self.prices = dict(DEFAULT_PRICES if prices is None else prices)
        self.backoff = backoff or Backoff()
        self.budget = budget
        self._api_key = api_key
        self._states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"Transport(model={self.model!r}, endpoint={self.endpoint!r})"

    async def aclose(self) -> None:
        """Close the current event loop's connection pool (the next request opens a new one)."""
        state = self._states.pop(asyncio.get_running_loop(), None)
        if state is not None:
            await state.sdk.close()

    async def chat(
        self,
        messages: list[dict[str, Any]],
        params: dict[str, Any],
        task: str,
        deadline: float | None,
        *,
        schema_probe: bool = False,
        written: Written | None = None,
    ) -> Reply:
        """One completion. With `schema_probe`, an error that blames json_schema raises FormatRejectedError.
        LLMBudgetExceededError, before anything is sent, when the run's spend reached its budget.
        `written` hears the reply's text as it arrives."""

        prompt_estimate = _PromptEstimate(messages)

        async def attempt(sdk: openai.AsyncOpenAI, deadline: float | None) -> Reply:
            try:
                if self.stream:
                    reply = await self._streamed(sdk, messages, params, prompt_estimate, written)
                    if reply is not None:
                        return reply
                reply = await self._whole(sdk, messages, params, deadline, prompt_estimate)
                if written is not None:
                    written.whole(reply.text)
                return reply
            except openai.APIStatusError as exc:
                if schema_probe and structured.blames_response_format(
                    exc.status_code, exc.body or exc.message
                ):
                    raise FormatRejectedError() from exc
                raise
            except ValueError as exc:  # the SDK could not decode the body as JSON
                raise GarbledResponseError(str(exc)) from exc

        reply = await self._with_retries(attempt, task, deadline, spend_limited=True)
        self._account(reply.prompt_tokens, reply.completion_tokens, reply.reasoning_tokens)
        return reply

    async def _streamed(
        self,
        sdk: openai.AsyncOpenAI,
        messages: list[dict[str, Any]],
        params: dict[str, Any],
        prompt_estimate: Callable[[], int],
        written: Written | None = None,
    ) -> Reply | None:
        """The streamed reply; None when the server refused to stream (nothing was generated)."""
        # The SDK's own timeout is a backstop only: it applies to each read, the clocks are ours.
        backstop = max(self.first_token_timeout_s, self.idle_timeout_s) + 30.0
        try:
            reply, streamed = await read_stream(
                lambda: sdk.chat.completions.create(
                    model=self.model,
                    messages=messages,
                    stream=True,
                    stream_options={"include_usage": True},
                    timeout=backstop,
                    **params,
                ),
                first_token_s=self.first_token_timeout_s,
                idle_s=self.idle_timeout_s,
                prompt_estimate=prompt_estimate,
                written=written,
            )
        except openai.APIStatusError as exc:
            body = str(exc.body or exc.message).lower()
            if exc.status_code in (400, 422) and "stream" in body and "response_format" not in body:
                self._stop_streaming(f"it refused a streamed request (HTTP {exc.status_code})")
                return None
            raise
        if not streamed:
            self._stop_streaming("it answered a streamed request with a whole reply")
        return reply

    def _stop_streaming(self, why: str) -> None:
        if self.stream:
            self.stream = False
            log.warning(
                "llm %s: the server does not stream (%s): asking for whole replies from now on, each "
                "within PIPELINE_LLM_TIMEOUT_S=%gs",
                self.endpoint,
                why,
                self.timeout_s,
            )

    async def _whole(
        self,
        sdk: openai.AsyncOpenAI,
        messages: list[dict[str, Any]],
        params: dict[str, Any],
        deadline: float | None,
        prompt_estimate: Callable[[], int],
    ) -> Reply:
        """One reply sent whole, within the total timeout (a server that does not stream)."""
        budget = _budget(self.timeout_s, deadline)
        try:
            async with asyncio.timeout(budget):
                response = await sdk.chat.completions.create(
                    model=self.model, messages=messages, timeout=budget, **params
                )
        except (TimeoutError, openai.APITimeoutError) as exc:
            if self.local and budget >= self.timeout_s:
                raise NotResentTimeoutError(self.timeout_s) from exc
            raise
        choices = getattr(response, "choices", None)
        if not choices or getattr(choices[0], "message", None) is None:
            raise GarbledResponseError("the response has no choices")
        message, usage = choices[0].message, getattr(response, "usage", None)
        return build_reply(
            message.content or "",
            reasoning_of(message),
            getattr(choices[0], "finish_reason", None),
            usage,
            prompt_estimate() if usage is None else 0,
        )

    async def embed(
        self, texts: list[str], task: str, deadline: float | None, *, dimensions: int | None = None
    ) -> list[list[float]]:
        extra = {"dimensions": dimensions} if dimensions else {}

        async def attempt(sdk: openai.AsyncOpenAI, deadline: float | None) -> tuple[list[list[float]], int]:
            budget = _budget(self.timeout_s, deadline)
            try:
                async with asyncio.timeout(budget):
                    response = await sdk.embeddings.create(
                        model=self.model, input=texts, encoding_format="float", timeout=budget, **extra
                    )
            except ValueError as exc:
                raise GarbledResponseError(str(exc)) from exc
            data = sorted(getattr(response, "data", None) or [], key=lambda d: d.index)
            if len(data) != len(texts):
                raise GarbledResponseError(f"{len(data)} embeddings for {len(texts)} inputs")
            usage = getattr(response, "usage", None)  # Ollama's and some vLLM versions' replies have none
            return [vector_of(d.embedding) for d in data], int(getattr(usage, "prompt_tokens", 0) or 0)

        vectors, prompt_tokens = await self._with_retries(attempt, task, deadline)
        self._account(prompt_tokens, 0)
        return vectors

    def _account(self, prompt_tokens: int, completion_tokens: int, reasoning_tokens: int = 0) -> None:
        cost = estimate_cost(self.model, prompt_tokens, completion_tokens, self.prices)
        self.usage.add(
            calls=1,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            reasoning_tokens=reasoning_tokens,
            cost_usd=cost,
        )

    async def _with_retries(
        self,
        attempt: Callable[..., Awaitable[T]],
        task: str,
        deadline: float | None,
        *,
        spend_limited: bool = False,
    ) -> T:
        state = self._state()
        at_deadline = StopAtDeadline(deadline)
        retrying = AsyncRetrying(
            retry=retry_if_exception(is_retryable),
            wait=self.backoff,
            stop=stop_after_attempt(self.max_retries + 1)
            | StopAfterTimeouts(self.timeout_retries)
            | at_deadline,
            reraise=True,
            before_sleep=lambda rs: self._note_retry(task, rs),
        )
        attempts = 0
        try:
            async for tried in retrying:
                with tried:
                    attempts += 1
                    self.down.check(task)  # found down by an earlier call, or while this one waited
                    async with state.slots:
                        self.down.check(task)
                        if spend_limited and self.budget is not None:
                            # in the slot: the calls answered while this one waited for it have counted
                            self.budget.check(self.usage, task)
                        self.usage.add(requests=1)
                        # each attempt keeps its own clocks: a total timeout for a whole reply, the
                        # first-token and idle ones for a stream, which is closed before it returns
                        return await attempt(state.sdk, deadline)
        except (FormatRejectedError, LLMError):  # the budget's refusal, a server found down
            raise
        except Exception as exc:
            raise self.down.note(
                final_error(
                    exc,
                    task=task,
                    attempts=attempts,
                    deadline_hit=at_deadline.hit,
                    endpoint=self.endpoint,
                    model=self.model,
                    timeout_s=self.timeout_s,
                )
            ) from exc
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _note_retry(self, task: str, state: Any) -> None:
        self.usage.add(retries=1)
        exc = state.outcome.exception()
        log.warning(
            "llm %s: attempt %d failed (%s); retrying in %.1fs",
            task,
            state.attempt_number,
            describe(exc),
            state.upcoming_sleep,
        )

    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._states.get(loop)
        if state is None:
            sdk = openai.AsyncOpenAI(
                api_key=self._api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout_s
            )
            state = self._states[loop] = _LoopState(sdk, asyncio.Semaphore(self.concurrency))
        return state


def vector_of(embedding: Any) -> list[float]:
    """One embedding as floats: a server may answer base64 (little-endian float32) though asked for
    floats, as some OpenAI-compatible proxies do."""
    if isinstance(embedding, str):
        try:
            return np.frombuffer(base64.b64decode(embedding, validate=True), dtype="<f4").tolist()
        except ValueError as exc:
            raise GarbledResponseError(f"an embedding is neither floats nor base64: {exc}") from exc
    return list(embedding)


def _budget(timeout_s: float, deadline: float | None) -> float:
    left = remaining(deadline)
    return timeout_s if left is None else min(timeout_s, left)


class _PromptEstimate:
    """tiktoken's count of the prompt, made only when a server sends no usage (and then once)."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self._messages = messages
        self._count: int | None = None

    def __call__(self) -> int:
        if self._count is None:
            self._count = sum(count_tokens(str(m.get("content") or "")) for m in self._messages)
        return self._count
