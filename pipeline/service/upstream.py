"""What the service answers when the model behind a query fails: 502, or 504 when it did not answer in
time, with a `code` naming how (`pipeline.llm.errors.error_code`: llm_unreachable, llm_timeout,
llm_failed, llm_bad_reply, llm_budget_exceeded; 503 embedding_unavailable when the embedding server
is not there), so that HTTP, MCP and the chat door all say the same.
The caller is told what kind of failure it was, never the model server's address: the log has that."""

from __future__ import annotations

import logging
from typing import Any

from pipeline.llm.errors import (
    EMBEDDING_UNAVAILABLE,
    LLM_BAD_REPLY,
    LLM_BUDGET,
    LLM_FAILED,
    LLM_TIMEOUT,
    LLM_UNREACHABLE,
    LLMConfigError,
    LLMError,
    error_code,
    timed_out,
)
from pipeline.service.errors import ServiceError

log = logging.getLogger("pipeline.service")


class UpstreamError(ServiceError):
    """The model failed the query: 502, its `code` naming how (`pipeline.llm.errors.error_code`)."""

    status, code = 502, "upstream_error"

    def __init__(self, message: str, *, code: str | None = None, detail: Any = None) -> None:
        super().__init__(message, detail=detail)
        self.code = code or self.code


class EmbeddingUnavailable(UpstreamError):
    """The embedding server is not there: no question can be embedded, so none answered (503)."""

    status = 503


class UpstreamTimeout(UpstreamError):
    """The model did not answer in time (hung, stalled): 504."""

    status = 504


# What the caller is told of each kind of model failure; the server's own log has the whole error,
# which names the model server's address.
_UPSTREAM = {
    LLM_UNREACHABLE: "the model server could not be reached",
    LLM_TIMEOUT: "the model server did not answer in time",
    LLM_BAD_REPLY: "the model's reply could not be used (it never matched the expected form)",
    LLM_BUDGET: "the model's spending budget is used up",
    LLM_FAILED: "the model server failed",
    EMBEDDING_UNAVAILABLE: "the embedding server is unavailable",
}


def llm_failure(exc: LLMError, context: str) -> ServiceError:
    """What the caller is told when the LLM call behind `context` failed: a 502 (504 when it timed out),
    or a 500 when the server's own provider settings are wrong; logged here either way, once a query."""
    if isinstance(exc, LLMConfigError):
        log.error("%s: LLM configuration error: %s", context, exc)
        return ServiceError("the server's LLM provider is misconfigured")
    log.warning("%s: the model failed: %s", context, exc)
    code = error_code(exc)
    kind = (
        EmbeddingUnavailable
        if code == EMBEDDING_UNAVAILABLE
        else UpstreamTimeout
        if timed_out(exc)
        else UpstreamError
    )
    status = getattr(exc, "status", None)
    why = f" (HTTP {status})" if isinstance(status, int) else ""
    return kind(f"{_UPSTREAM[code]}{why}", code=code, detail={"error": type(exc).__name__, "task": exc.task})
