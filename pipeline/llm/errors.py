"""The LLM layer's error types. Callers catch `LLMError` and record a failure row; none is ever swallowed."""

from __future__ import annotations


class LLMError(Exception):
    """Base of every error the LLM layer raises; `task` names the pipeline task that made the call."""

    def __init__(self, message: str, *, task: str | None = None) -> None:
        super().__init__(message)
        self.task = task


class LLMCallError(LLMError):
    """The server refused the request (a 4xx other than 429) or the retries ran out.

    `status` is the last HTTP status (None for connection errors), `attempts` how many requests were sent.
    """

    def __init__(
        self, message: str, *, task: str | None = None, status: int | None = None, attempts: int = 0
    ) -> None:
        super().__init__(message, task=task)
        self.status = status
        self.attempts = attempts


class LLMTimeoutError(LLMError):
    """The call's deadline (or its batch's) passed, or every attempt timed out."""


class LLMCancelledError(LLMError):
    """The call was cancelled before it finished; nothing was cached for it."""


class LLMValidationError(LLMError):
    """The model's output never validated against the task's schema, even after the repair retry.

    `raw` is the last text the model returned and `error` the validation message it failed with.
    """

    def __init__(self, message: str, *, task: str | None = None, raw: str = "", error: str = "") -> None:
        super().__init__(message, task=task)
        self.raw = raw
        self.error = error


class LLMTruncatedError(LLMError):
    """The reply was cut off at `max_tokens` (`finish_reason: "length"`) even after one retry with a larger
    limit. A cut reply is never parsed or cached: its JSON may look whole while records are missing.

    `max_tokens` is the limit of the last attempt and `raw` the cut text it returned.
    """

    def __init__(self, message: str, *, task: str | None = None, max_tokens: int = 0, raw: str = "") -> None:
        super().__init__(message, task=task)
        self.max_tokens = max_tokens
        self.raw = raw


class LLMBudgetExceededError(LLMError):
    """The run's LLM spend reached `PIPELINE_LLM_BUDGET_USD`: the request was not sent (a cached answer is
    still given). The message starts with "budget" so that failure rows say why at a glance.

    `budget_usd` is the limit and `spent_usd` what the run had spent when the call was refused.
    """

    def __init__(
        self, message: str, *, task: str | None = None, budget_usd: float = 0.0, spent_usd: float = 0.0
    ) -> None:
        super().__init__(message, task=task)
        self.budget_usd = budget_usd
        self.spent_usd = spent_usd


class LLMConfigError(LLMError, ValueError):
    """The LLM settings cannot work (e.g. no API key for the OpenAI API); the message says which setting."""


class LLMUnreachableError(LLMCallError):
    """No connection to the model server could be made (refused, no such host), on every attempt.

    The transport remembers it for the rest of its client's life: later calls fail at once with a copy
    (`repeated`), so a question or a run that makes many calls stops at the first instead of trying each
    one again (`pipeline.llm.transport`). `endpoint` is host[:port]/path, `reason` the message less its
    task."""

    def __init__(
        self,
        message: str,
        *,
        task: str | None = None,
        attempts: int = 0,
        endpoint: str = "",
        reason: str = "",
        repeated: bool = False,
    ) -> None:
        super().__init__(message, task=task, status=None, attempts=attempts)
        self.endpoint = endpoint
        self.reason = reason or message
        self.repeated = repeated


class LLMUnresponsiveError(LLMTimeoutError):
    """The model server took every attempt's request and sent nothing back within the first-token (or
    connect) timeout: hung, or too busy to start. Remembered as `LLMUnreachableError` is."""

    def __init__(
        self,
        message: str,
        *,
        task: str | None = None,
        endpoint: str = "",
        reason: str = "",
        repeated: bool = False,
    ) -> None:
        super().__init__(message, task=task)
        self.endpoint = endpoint
        self.reason = reason or message
        self.repeated = repeated


def repeat_of(first: LLMUnreachableError | LLMUnresponsiveError, task: str) -> LLMError:
    """What a later call of a client whose server was found down raises, without sending anything."""
    message = f"{task}: {first.reason} (found by an earlier call; not asked again)"
    if isinstance(first, LLMUnreachableError):
        return LLMUnreachableError(
            message, task=task, endpoint=first.endpoint, reason=first.reason, repeated=True
        )
    return LLMUnresponsiveError(
        message, task=task, endpoint=first.endpoint, reason=first.reason, repeated=True
    )


class EmbeddingUnavailableError(LLMCallError):
    """The embedding server could not be reached, or failed every attempt: no question can be embedded,
    so none can be answered (the CLI exits 3, the service answers 503 `embedding_unavailable`)."""


def is_unreachable(error: LLMError) -> bool:
    """Whether `error` says the server is not there (no connection, or 5xx after every retry), rather
    than that this one request was bad."""
    return isinstance(error, LLMCallError) and (error.status is None or error.status >= 500)


# What each door names a failed model call by: the CLI's `--stream --json` error event, the HTTP error
# body's `code` (502, or 504 for a timeout: `timed_out`), MCP's and the chat door's error.
LLM_UNREACHABLE = "llm_unreachable"  # no connection could be made
LLM_TIMEOUT = "llm_timeout"  # hung, stalled, or past the deadline
LLM_BAD_REPLY = "llm_bad_reply"  # a reply that never validated, or was cut off
LLM_BUDGET = "llm_budget_exceeded"
LLM_MISCONFIGURED = "llm_misconfigured"
LLM_FAILED = "llm_failed"  # the server answered with errors (5xx, a refused request, a garbled body)


EMBEDDING_UNAVAILABLE = "embedding_unavailable"  # HTTP 503: no question can be embedded


def error_code(exc: LLMError) -> str:
    if isinstance(exc, EmbeddingUnavailableError):
        return EMBEDDING_UNAVAILABLE
    if isinstance(exc, LLMUnreachableError):
        return LLM_UNREACHABLE
    if isinstance(exc, LLMTimeoutError | LLMCancelledError):
        return LLM_TIMEOUT
    if isinstance(exc, LLMValidationError | LLMTruncatedError):
        return LLM_BAD_REPLY
    if isinstance(exc, LLMBudgetExceededError):
        return LLM_BUDGET
    if isinstance(exc, LLMConfigError):
        return LLM_MISCONFIGURED
    return LLM_FAILED


def timed_out(exc: LLMError) -> bool:
    return error_code(exc) == LLM_TIMEOUT
