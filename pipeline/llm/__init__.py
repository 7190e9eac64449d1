"""The LLM layer: one client for every chat and embedding request, and the engine of LLM tasks.

from pipeline.llm import make_engine
engine = make_engine(settings)            # OfflineEngine by default, LLMEngine with the openai provider
results = engine.run_batch(requests, engine.summarize)   # a Summary or an LLMError per request
metadata = engine.usage.as_metadata()    # calls, cache hits, tokens, failures, cost
"""

from pipeline.llm.batch import deadline_in
from pipeline.llm.cache import LLMCache
from pipeline.llm.client import LLMClient
from pipeline.llm.embeddings import OpenAIEmbedder
from pipeline.llm.engine import (
    Engine,
    LLMEngine,
    OfflineEngine,
    Summarizer,
    SummarizeRequest,
    Summary,
    make_engine,
)
from pipeline.llm.errors import (
    LLMCallError,
    LLMCancelledError,
    LLMConfigError,
    LLMError,
    LLMTimeoutError,
    LLMValidationError,
)
from pipeline.llm.usage import Usage

__all__ = [
    "Engine",
    "LLMCache",
    "LLMCallError",
    "LLMCancelledError",
    "LLMClient",
    "LLMConfigError",
    "LLMEngine",
    "LLMError",
    "LLMTimeoutError",
    "LLMValidationError",
    "OfflineEngine",
    "OpenAIEmbedder",
    "SummarizeRequest",
    "Summarizer",
    "Summary",
    "Usage",
    "deadline_in",
    "make_engine",
]
