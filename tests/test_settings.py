from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.settings import ConfigError, load_settings


def test_defaults_are_offline_and_graphrag_chunking(monkeypatch):
    for var in (
        "PIPELINE_CONFIG_FILE",
        "PIPELINE_STORAGE_ROOT",
        "PIPELINE_LLM_PROVIDER",
        "PIPELINE_CHUNK_SIZE",
    ):
        monkeypatch.delenv(var, raising=False)
    s = load_settings()
    assert (s.chunk_size, s.chunk_overlap, s.encoding) == (1200, 100, "o200k_base")
    assert s.llm_provider == "offline" and s.embedding_provider == "local"


def test_env_vars_with_the_pipeline_prefix(monkeypatch, tmp_path):
    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(tmp_path / "s"))
    monkeypatch.setenv("PIPELINE_INPUT_ROOT", str(tmp_path / "in"))
    monkeypatch.setenv("PIPELINE_CHUNK_SIZE", "600")
    monkeypatch.setenv("PIPELINE_FALLBACK_ENCODINGS", "latin-1, cp1252")
    s = load_settings()
    assert s.storage_root == tmp_path / "s" and s.input_root == tmp_path / "in"
    assert s.chunk_size == 600 and s.fallback_encodings == ["latin-1", "cp1252"]


def test_yaml_file_below_env_vars(monkeypatch, tmp_path):
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text("chunk_size: 800\nchunk_overlap: 50\nstorage_root: /tmp/from-yaml\n", encoding="utf-8")
    monkeypatch.setenv("PIPELINE_CONFIG_FILE", str(cfg))
    monkeypatch.setenv("PIPELINE_CHUNK_SIZE", "900")
    monkeypatch.delenv("PIPELINE_STORAGE_ROOT", raising=False)
    s = load_settings()
    assert s.chunk_size == 900 and s.chunk_overlap == 50 and s.storage_root == Path("/tmp/from-yaml")


def test_invalid_values_are_clear_errors(monkeypatch):
    monkeypatch.setenv("PIPELINE_CHUNK_OVERLAP", "2000")
    with pytest.raises(ConfigError, match="chunk_overlap"):
        load_settings()
    monkeypatch.delenv("PIPELINE_CHUNK_OVERLAP")
    with pytest.raises(ConfigError, match="encoding"):
        load_settings(encoding="gpt2")


def test_missing_config_file_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("PIPELINE_CONFIG_FILE", str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigError, match="missing.yaml"):
        load_settings()


def test_config_file_that_is_not_a_mapping_is_named(monkeypatch, tmp_path):
    cfg = tmp_path / "list.yaml"
    cfg.write_text("- chunk_size\n- 800\n", encoding="utf-8")
    monkeypatch.setenv("PIPELINE_CONFIG_FILE", str(cfg))
    with pytest.raises(ConfigError, match="list.yaml: expected a mapping"):
        load_settings()


def test_graph_query_workers_are_one_offline_many_with_a_model_and_the_setting_wins(monkeypatch):
    from pipeline.runtime import LLM_GRAPH_QUERY_WORKERS, graph_query_workers

    monkeypatch.delenv("PIPELINE_LLM_PROVIDER", raising=False)
    monkeypatch.delenv("PIPELINE_SERVICE_GRAPH_WORKERS", raising=False)
    monkeypatch.delenv("PIPELINE_CONFIG_FILE", raising=False)
    assert graph_query_workers(load_settings()) == 1  # the GIL: a second thread only slows the quick lane
    monkeypatch.setenv("PIPELINE_LLM_PROVIDER", "openai")
    assert graph_query_workers(load_settings()) == LLM_GRAPH_QUERY_WORKERS
    monkeypatch.setenv("PIPELINE_SERVICE_GRAPH_WORKERS", "3")
    assert graph_query_workers(load_settings()) == 3
