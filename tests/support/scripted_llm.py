"""The pipeline pointed at a scripted OpenAI-compatible server (tests/support/fault_proxy.py): its
settings (`scripted_settings`: extraction one unit per request, no retries, no gleaning, `LIMIT` max
tokens) and an LLM client of its own (`scripted_client`: JSON mode, no retries, short backoff)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.caches.sqlite_llm import LLMCache
from pipeline.llm import LLMClient
from pipeline.llm.retry import Backoff
from pipeline.settings import Settings

LIMIT = 1000  # the extraction's max_tokens in these tests


def scripted_settings(tmp_path: Path, base_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "storage_root": tmp_path / "storage",
        "llm_provider": "openai",
        "llm_base_url": base_url,
        "llm_model": "scripted",
        "llm_json_mode": "json_object",
        "llm_max_retries": 0,
        "llm_extraction_max_tokens": LIMIT,
        "extraction_max_gleanings": 0,
        "extraction_pack_tokens": 0,  # one unit per request (packing: test_extraction_packed)
        **overrides,
    }
    return Settings(**values)


def scripted_client(base_url: str, tmp_path: Path, **overrides: Any) -> LLMClient:
    options: dict[str, Any] = {
        "model": "scripted",
        "api_key": "test-key",
        "base_url": base_url,
        "max_retries": 0,
        "json_mode": "json_object",
        "cache": LLMCache(tmp_path / "llm.sqlite"),
        "backoff": Backoff(initial_s=0.05, max_s=0.2),
    }
    return LLMClient(**{**options, **overrides})
