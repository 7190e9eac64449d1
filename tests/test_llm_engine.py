"""The engine: the offline default and the LLM-backed engine do the same task behind one protocol."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from pipeline.embeddings.openai import OpenAIEmbedder
from pipeline.engine.base import Engine, runner
from pipeline.engine.llm import LLMEngine
from pipeline.engine.offline import OfflineEngine
from pipeline.engine.summarize import SUMMARIZE, SummarizeRequest, Summary
from pipeline.llm import Usage
from pipeline.runtime import make_embedder, make_engine
from pipeline.settings import Settings, load_settings
from tests.support.fault_proxy import FaultProxy
from tests.support.llm_server import MODEL_ALIAS, LlamaServer

TEXTS = [
    "Marley was dead, to begin with. There is no doubt whatever about that.",
    "Marley was dead, to begin with. Scrooge signed the register of his burial.",
]


def test_offline_is_the_default_and_needs_no_model(tmp_path: Path) -> None:
    engine = make_engine(Settings(storage_root=tmp_path))
    assert isinstance(engine, OfflineEngine) and engine.kind == "offline"
    assert isinstance(engine, Engine)


def test_offline_summary_is_extractive_deduplicated_and_bounded() -> None:
    engine = OfflineEngine()
    request = SummarizeRequest(texts=TEXTS, max_words=20)
    [first] = engine.run_batch([request], runner(engine, SUMMARIZE))
    [second] = engine.run_batch([request], runner(engine, SUMMARIZE))
    assert first == second  # deterministic
    assert isinstance(first, Summary)
    assert first.summary.count("Marley was dead") == 1
    assert first.summary.startswith("Marley was dead, to begin with. There is no doubt")
    assert len(first.summary.split()) <= 20


def test_the_openai_provider_runs_the_same_task_on_the_server(
    llm_server: LlamaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local server needs no key
    with FaultProxy(llm_server.base_url) as proxy:
        settings = Settings(
            storage_root=tmp_path,
            llm_provider="openai",
            llm_base_url=proxy.base_url,
            llm_model=MODEL_ALIAS,
            llm_max_tokens=64,
            llm_first_token_timeout_s=600,  # a busy machine reads even a short prompt slowly
        )
        engine = make_engine(settings)
        assert isinstance(engine, LLMEngine) and engine.kind == "llm" and isinstance(engine, Engine)
        requests = [SummarizeRequest(texts=TEXTS, max_words=20)]
        [result] = engine.run_batch(requests, runner(engine, SUMMARIZE))
        assert isinstance(result, Summary) and result.summary.strip()
        assert (tmp_path / "_cache" / "llm.sqlite").is_file()
        # a second engine (a later run) gets the answer from the cache
        again = make_engine(settings)
        assert again.run_batch(requests, runner(again, SUMMARIZE)) == [result]
        assert again.usage.cache_hits == 1 and again.usage.calls == 0
        assert proxy.received == engine.usage.requests


def test_configuration_comes_from_pipeline_env_vars(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(tmp_path))
    monkeypatch.setenv("PIPELINE_LLM_PROVIDER", "openai")
    monkeypatch.setenv("PIPELINE_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PIPELINE_LLM_MODEL", "some-model")
    monkeypatch.setenv("PIPELINE_LLM_API_KEY_ENV", "MY_LLM_KEY")
    monkeypatch.setenv("MY_LLM_KEY", "k-123")
    monkeypatch.setenv("PIPELINE_LLM_CONCURRENCY", "3")
    monkeypatch.setenv("PIPELINE_LLM_TIMEOUT_S", "7.5")
    monkeypatch.setenv("PIPELINE_LLM_MAX_RETRIES", "2")
    monkeypatch.setenv("PIPELINE_LLM_PRICES", '{"some-model": [1.0, 3.0]}')
    monkeypatch.setenv("PIPELINE_EMBEDDING_PROVIDER", "openai")
    monkeypatch.setenv("PIPELINE_EMBEDDING_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PIPELINE_EMBEDDING_MODEL", "some-embedder")
    monkeypatch.setenv("PIPELINE_EMBEDDING_CONCURRENCY", "2")
    settings = load_settings()

    engine = make_engine(settings)
    assert isinstance(engine, LLMEngine)
    client = engine.client
    assert (client.model, client.endpoint, client.concurrency) == ("some-model", "127.0.0.1:9/v1", 3)
    transport = client.transport
    assert (transport.timeout_s, transport.max_retries) == (7.5, 2)
    assert transport.prices["some-model"] == (1.0, 3.0) and "gpt-4o-mini" in transport.prices
    assert "k-123" not in repr(client) + repr(transport)

    embedder = make_embedder(settings)
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.model_id == "openai:127.0.0.1:9/v1/some-embedder:normalized"
    assert embedder.client.concurrency == 2


def test_usage_survives_pickling_between_processes() -> None:
    usage = Usage()
    usage.add(calls=2, prompt_tokens=10, cost_usd=0.25)
    copy = pickle.loads(pickle.dumps(usage))  # Dagster hands results between processes
    assert copy.counters() == usage.counters()
    copy.add(calls=1)  # the copy has a working lock of its own
    assert copy.calls == 3 and usage.calls == 2
    assert copy.as_metadata()["llm_cost_usd"] == 0.25
