"""Which failures are worth another request, and how long to wait before it (tenacity does the looping).

Retried: 429 (waiting what Retry-After says), 5xx, timeouts, dropped connections and garbled response
bodies; timeouts fewer times (`StopAfterTimeouts`): a hung server does not answer a third request either,
and each costs a whole timeout. Not retried: any other 4xx (a bad key or a bad request does not get better by asking again),
a 429 that says the account's quota is used up, and a whole (unstreamed) reply that timed out at a local
server: that server is still generating it, and a copy would queue behind it (`NotResentTimeoutError`).
A stalled stream is retried: it was closed first, so the server stopped.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

import openai
from tenacity import RetryCallState, wait_exponential_jitter

from pipeline.llm.errors import (
    LLMCallError,
    LLMError,
    LLMTimeoutError,
    LLMUnreachableError,
    LLMUnresponsiveError,
    repeat_of,
)
from pipeline.llm.stream import StreamStalledError


class GarbledResponseError(Exception):
    """The server's HTTP body was not the JSON completion it promised (proxies, overloaded servers)."""


class NotResentTimeoutError(Exception):
    """A whole reply from a local server took longer than the total timeout; not retried (see above)."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"no reply within {timeout_s:g}s")
        self.timeout_s = timeout_s


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, openai.APIConnectionError | TimeoutError | GarbledResponseError):
        return True  # APITimeoutError is an APIConnectionError
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code == 429:
            return getattr(exc, "code", None) != "insufficient_quota"
        return exc.status_code >= 500
    return False


def retry_after_s(exc: BaseException | None) -> float | None:
    """Seconds the server asked us to wait (Retry-After / retry-after-ms), if it said."""
    response = getattr(exc, "response", None)
    headers: Any = getattr(response, "headers", None)
    if not headers:
        return None
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class Backoff:
    """tenacity wait: the server's Retry-After when it gives one, else exponential backoff with jitter."""

    def __init__(self, initial_s: float = 0.5, max_s: float = 20.0, retry_after_max_s: float = 60.0) -> None:
        self.retry_after_max_s = retry_after_max_s
        self._exponential = wait_exponential_jitter(initial=initial_s, max=max_s, jitter=initial_s)

    def __call__(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        hinted = retry_after_s(exc)
        if hinted is not None:
            return min(hinted, self.retry_after_max_s)
        return self._exponential(state)


class StopAtDeadline:
    """tenacity stop: give up when the next wait would end past the deadline (monotonic seconds)."""

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline
        self.hit = False

    def __call__(self, state: RetryCallState) -> bool:
        if self.deadline is None:
            return False
        self.hit = time.monotonic() + state.upcoming_sleep >= self.deadline
        return self.hit


class StopAfterTimeouts:
    """tenacity stop: give up once `retries` attempts past the first have timed out (a stalled stream, a
    request timeout), whatever the other retries allow."""

    def __init__(self, retries: int) -> None:
        self.retries = retries
        self.timeouts = 0

    def __call__(self, state: RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, TimeoutError | openai.APITimeoutError):
            self.timeouts += 1
        return self.timeouts > self.retries


class Down:
    """What a transport knows of its server being down: not reachable (`LLMUnreachableError`), or hung
    (`LLMUnresponsiveError`: every attempt's request went unanswered). Once a call found it, later calls
    of the same transport (its client's life: one question, one command, one index run) fail at once
    with a copy, and their failure is logged at DEBUG only: the log says it once."""

    def __init__(self) -> None:
        self.error: LLMUnreachableError | LLMUnresponsiveError | None = None

    def check(self, task: str) -> None:
        if self.error is not None:
            raise repeat_of(self.error, task)

    def note(self, error: LLMError) -> LLMError:
        if isinstance(error, LLMUnreachableError | LLMUnresponsiveError) and self.error is None:
            self.error = error
        return error


def _unreachable(exc: BaseException) -> bool:
    """No connection could be made: nothing at that address, or it never accepted one. By the HTTP
    library's class names: the SDK's transport is httpx's (or its fork's, `httpx2`)."""
    if not isinstance(exc, openai.APIConnectionError) or exc.__cause__ is None:
        return False
    return any(c.__name__ in ("ConnectError", "ConnectTimeout") for c in type(exc.__cause__).__mro__)


def describe(exc: BaseException) -> str:
    """One line for logs and error messages (never includes request headers, so never the key)."""
    if isinstance(exc, openai.APIStatusError):
        body = exc.body if isinstance(exc.body, str) else (exc.body or exc.message)
        return f"HTTP {exc.status_code}: {str(body)[:300]}"
    if isinstance(exc, StreamStalledError | NotResentTimeoutError):
        return str(exc)
    if isinstance(exc, openai.APITimeoutError | TimeoutError):
        return "request timed out"
    if isinstance(exc, openai.APIConnectionError):
        return f"connection failed ({type(exc.__cause__).__name__ if exc.__cause__ else 'no response'})"
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def final_error(
    exc: Exception,
    *,
    task: str,
    attempts: int,
    deadline_hit: bool,
    endpoint: str,
    model: str,
    timeout_s: float,
) -> LLMError:
    """The typed error a caller sees once tenacity has given up, with what to do about it."""
    what = describe(exc)
    if deadline_hit:
        return LLMTimeoutError(
            f"{task}: deadline reached after {attempts} attempt(s); last: {what}", task=task
        )
    if _unreachable(exc):
        reason = (
            f"the model server at {endpoint} could not be reached in {attempts} attempt(s) ({what}); "
            "check that it is running at that address"
        )
        return LLMUnreachableError(
            f"{task}: {reason}", task=task, attempts=attempts, endpoint=endpoint, reason=reason
        )
    if isinstance(exc, StreamStalledError) and exc.clock == "first_token":
        reason = (
            f"the model server at {endpoint} took the request but sent nothing back, {attempts} time(s) "
            f"({what}; each stream closed before the next request); check that it is not stuck, or raise "
            "PIPELINE_LLM_FIRST_TOKEN_TIMEOUT_S if it is only slow to read long prompts"
        )
        return LLMUnresponsiveError(f"{task}: {reason}", task=task, endpoint=endpoint, reason=reason)
    if isinstance(exc, StreamStalledError):
        setting = "FIRST_TOKEN" if exc.clock == "first_token" else "IDLE"
        return LLMTimeoutError(
            f"{task}: {attempts} attempt(s) at {endpoint} stalled, the last with {what} (each stream "
            f"closed before the next request); raise PIPELINE_LLM_{setting}_TIMEOUT_S if the server is "
            "only slow, or check that it is not stuck",
            task=task,
        )
    if isinstance(exc, NotResentTimeoutError):
        return LLMTimeoutError(
            f"{task}: {endpoint} sent no whole reply within {exc.timeout_s:g}s (replies not streamed); "
            "not sent again, as the server would still be generating it. Raise PIPELINE_LLM_TIMEOUT_S, or "
            "stream (PIPELINE_LLM_STREAM) from a server that can",
            task=task,
        )
    if isinstance(exc, openai.APITimeoutError | TimeoutError):
        return LLMTimeoutError(
            f"{task}: {attempts} attempt(s) timed out after {timeout_s:.0f}s each at {endpoint}; "
            "raise PIPELINE_LLM_TIMEOUT_S or check that the server is not overloaded",
            task=task,
        )
    status = getattr(exc, "status_code", None)
    if status is not None and not is_retryable(exc):
        advice = {
            401: "check the API key in the environment variable named by PIPELINE_LLM_API_KEY_ENV",
            403: "the key is not allowed to use this model",
            404: f"check PIPELINE_LLM_MODEL ({model!r}) and PIPELINE_LLM_BASE_URL",
            429: "the account's quota is used up",
        }.get(status, "the server rejected the request; this is not retried")
        return LLMCallError(f"{task}: {what}; {advice}", task=task, status=status, attempts=attempts)
    return LLMCallError(
        f"{task}: gave up after {attempts} attempt(s) at {endpoint}; last: {what}. "
        "Check the server, or raise PIPELINE_LLM_MAX_RETRIES",
        task=task,
        status=status,
        attempts=attempts,
    )
