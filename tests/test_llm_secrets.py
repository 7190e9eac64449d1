"""The API key is used, but never logged and never written under the storage root."""

from __future__ import annotations

import logging
import secrets
from pathlib import Path

import pytest

from pipeline.engine.base import runner
from pipeline.engine.summarize import SUMMARIZE, SummarizeRequest
from pipeline.llm import LLMCallError, LLMConfigError
from pipeline.runtime import make_engine, make_llm_client
from pipeline.settings import Settings
from tests.support.fault_proxy import FaultProxy
from tests.support.llm_server import MODEL_ALIAS, LlamaServer

KEY_ENV = "PIPELINE_TEST_SECRET_LLM_KEY"


def test_the_key_never_appears_in_logs_or_on_disk(
    llm_server: LlamaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-test-" + secrets.token_hex(16)
    monkeypatch.setenv(KEY_ENV, key)
    monkeypatch.setenv("OPENAI_LOG", "debug")  # the SDK's own request logging, at its most verbose
    storage = tmp_path / "storage"
    log_file = tmp_path / "run.log"
    handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        with FaultProxy(llm_server.base_url, retry_after_s=0.1) as proxy:
            settings = Settings(
                storage_root=storage,
                llm_provider="openai",
                llm_base_url=proxy.base_url,
                llm_model=MODEL_ALIAS,
                llm_api_key_env=KEY_ENV,
                llm_max_tokens=48,
                llm_max_retries=1,
                llm_first_token_timeout_s=600,  # a busy machine reads even a short prompt slowly
            )
            engine = make_engine(settings)
            proxy.script("429", "ok", "401")  # a retry and a failure: both paths log
            requests = [SummarizeRequest(texts=["Marley was dead, to begin with."], max_words=10)] * 2
            results = engine.run_batch(requests, runner(engine, SUMMARIZE))
            assert any(isinstance(r, LLMCallError) and r.status == 401 for r in results)
            logging.getLogger("test").info("client=%r usage=%r", engine.client, engine.usage.as_metadata())
            assert f"Bearer {key}" in proxy.authorizations  # the key was really sent
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()

    logged = log_file.read_text()
    assert "HTTP Request" in logged and "retrying" in logged  # the log did capture the run
    assert key not in logged
    written = [p for p in storage.rglob("*") if p.is_file()]
    assert any(p.name == "llm.sqlite" for p in written)
    for path in written:
        assert key.encode() not in path.read_bytes(), path


def test_the_openai_api_without_a_key_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    settings = Settings(storage_root=tmp_path, llm_provider="openai", llm_api_key_env=KEY_ENV)
    with pytest.raises(LLMConfigError, match=KEY_ENV):
        make_llm_client(settings)
