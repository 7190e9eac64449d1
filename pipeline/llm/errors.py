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
