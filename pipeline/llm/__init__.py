"""The LLM layer: one client for every chat and embedding request, its transport, retries, batches,
structured output, errors and usage counts. Tasks built on it live in `pipeline.engine`.

from pipeline.runtime import make_llm_client
client = make_llm_client(settings)
results = client.run_batch(items, fn)    # a result or an LLMError per item
metadata = client.usage.as_metadata()    # calls, cache hits, tokens, failures, cost
"""

from pipeline.llm.batch import deadline_in
from pipeline.llm.client import LLMClient
from pipeline.llm.errors import (
    LLMBudgetExceededError,
    LLMCallError,
    LLMCancelledError,
    LLMConfigError,
    LLMError,
    LLMTimeoutError,
    LLMTruncatedError,
    LLMValidationError,
)
from pipeline.llm.usage import Usage

__all__ = [
    "LLMBudgetExceededError",
    "LLMCallError",
    "LLMCancelledError",
    "LLMClient",
    "LLMConfigError",
    "LLMError",
    "LLMTimeoutError",
    "LLMTruncatedError",
    "LLMValidationError",
    "Usage",
    "deadline_in",
]
