"""LLM engines the tests drive a model through over real HTTP: `scripted_engine` for a scripted
OpenAI-compatible server (the fault proxy answering itself: one HTTP attempt per call, so that a scripted
500 is a failed call) and `llama_engine` for the llama.cpp server (SmolLM2), its replies capped."""

from __future__ import annotations

from pathlib import Path

from pipeline.caches.sqlite_llm import LLMCache
from pipeline.engine.llm import LLMEngine
from pipeline.llm import LLMClient
from pipeline.llm.retry import Backoff
from tests.support.llm_server import MODEL_ALIAS


def scripted_engine(base_url: str, tmp_path: Path) -> LLMEngine:
    client = LLMClient(
        model="scripted",
        api_key="test-key",
        base_url=base_url,
        timeout_s=120,
        max_retries=0,  # one HTTP attempt per call: a scripted 500 is a failed call
        cache=LLMCache(tmp_path / "llm.sqlite"),
        backoff=Backoff(initial_s=0.01, max_s=0.05),
    )
    return LLMEngine(client)


def llama_engine(base_url: str, tmp_path: Path, max_tokens: int = 256) -> LLMEngine:
    client = LLMClient(
        model=MODEL_ALIAS,
        api_key="test-key",
        base_url=base_url,
        timeout_s=120,
        first_token_timeout_s=600,  # SmolLM2 on a busy machine reads a report batch slowly
        max_retries=0,  # one HTTP attempt per call: the map step's own retry is what is under test
        max_tokens=max_tokens,
        cache=LLMCache(tmp_path / "llm.sqlite"),
        backoff=Backoff(initial_s=0.01, max_s=0.05),
    )
    return LLMEngine(client)
