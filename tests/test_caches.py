"""Where the caches live (pipeline.runtime), and the cache server's password never showing anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.caches.pg_embedding import PgEmbeddingCache
from pipeline.caches.pg_llm import PgLLMCache
from pipeline.caches.sqlite_embedding import EmbeddingCache
from pipeline.caches.sqlite_llm import LLMCache
from pipeline.io.pg import CacheConnectionError
from pipeline.runtime import open_embedding_cache, open_llm_cache
from pipeline.settings import ConfigError, Settings, load_settings

SECRET = "s3cret-Pa55word"
# Port 1 on loopback: nothing listens, so connecting fails at once.
UNREACHABLE = f"postgresql://graphrag:{SECRET}@127.0.0.1:1/caches"


@pytest.fixture(autouse=True)
def _no_cache_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("PIPELINE_CACHE_URL", "PIPELINE_CACHE_DIR", "PIPELINE_STORAGE_ROOT", "PIPELINE_CONFIG_FILE"):
        monkeypatch.delenv(var, raising=False)


def test_local_storage_root_keeps_sqlite_under_its_cache_folder(tmp_path: Path) -> None:
    settings = Settings(storage_root=str(tmp_path / "storage"))
    llm, emb = open_llm_cache(settings), open_embedding_cache(settings)
    assert isinstance(llm, LLMCache) and llm.path == tmp_path / "storage" / "_cache" / "llm.sqlite"
    assert (
        isinstance(emb, EmbeddingCache) and emb.path == tmp_path / "storage" / "_cache" / "embeddings.sqlite"
    )
    assert llm.path.is_file() and emb.path.is_file()


def test_file_uri_storage_root_is_local(tmp_path: Path) -> None:
    settings = Settings(storage_root=f"file://{tmp_path}/storage")
    assert open_llm_cache(settings).path == tmp_path / "storage" / "_cache" / "llm.sqlite"


def test_cache_dir_wins_over_the_storage_root(tmp_path: Path) -> None:
    settings = Settings(storage_root=str(tmp_path / "storage"), cache_dir=str(tmp_path / "caches"))
    assert open_llm_cache(settings).path == tmp_path / "caches" / "llm.sqlite"
    assert open_embedding_cache(settings).path == tmp_path / "caches" / "embeddings.sqlite"
    assert not (tmp_path / "storage").exists()


def test_remote_storage_root_with_cache_dir_uses_sqlite_there(tmp_path: Path) -> None:
    settings = Settings(storage_root="s3://bucket/prefix", cache_dir=str(tmp_path / "caches"))
    assert open_llm_cache(settings).path == tmp_path / "caches" / "llm.sqlite"


def test_cache_url_wins_and_opens_nothing_until_used(tmp_path: Path) -> None:
    for root in (str(tmp_path / "storage"), "s3://bucket/prefix"):
        settings = Settings(storage_root=root, cache_dir=str(tmp_path / "caches"), cache_url=UNREACHABLE)
        assert isinstance(open_llm_cache(settings), PgLLMCache)  # no server: it would fail if it connected
        assert isinstance(open_embedding_cache(settings), PgEmbeddingCache)
    assert not (tmp_path / "caches").exists() and not (tmp_path / "storage").exists()


def test_remote_storage_root_without_cache_settings_is_a_clear_error() -> None:
    settings = Settings(storage_root="s3://bucket/prefix")
    for opener in (open_llm_cache, open_embedding_cache):
        with pytest.raises(ValueError, match="PIPELINE_CACHE_URL") as err:
            opener(settings)
        assert "postgresql://" in str(err.value) and "PIPELINE_CACHE_DIR" in str(err.value)
        assert "s3://" in str(err.value)


def test_cache_dir_must_be_local(tmp_path: Path) -> None:
    settings = Settings(storage_root=str(tmp_path), cache_dir="s3://bucket/caches")
    with pytest.raises(ValueError, match="PIPELINE_CACHE_DIR must be a local folder"):
        open_llm_cache(settings)


def test_settings_come_from_pipeline_cache_env_vars(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PIPELINE_CACHE_URL", UNREACHABLE)
    monkeypatch.setenv("PIPELINE_CACHE_DIR", str(tmp_path))
    s = load_settings()
    assert s.cache_url is not None and s.cache_url.get_secret_value() == UNREACHABLE
    assert s.cache_dir == str(tmp_path)
    monkeypatch.setenv("PIPELINE_CACHE_URL", "")  # an empty variable means unset
    assert load_settings().cache_url is None
    # with_overrides round-trips through model_dump: the secret must survive it
    assert s.with_overrides(chunk_size=900).cache_url.get_secret_value() == UNREACHABLE


def test_secret_never_in_settings_repr_or_dumps() -> None:
    s = Settings(cache_url=UNREACHABLE)
    for text in (repr(s), str(s), s.model_dump_json(), str(s.model_dump())):
        assert SECRET not in text


def test_secret_never_in_validation_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="postgresql://") as err:
        load_settings(cache_url=f"mysql://graphrag:{SECRET}@db/caches")
    assert SECRET not in str(err.value)
    # An error in another setting lists the inputs it was given, env vars included, unless hidden.
    monkeypatch.setenv("PIPELINE_CACHE_URL", UNREACHABLE)
    monkeypatch.setenv("PIPELINE_CHUNK_OVERLAP", "5000")
    with pytest.raises(ConfigError, match="chunk_overlap") as err:
        load_settings()
    assert SECRET not in str(err.value)


@pytest.mark.parametrize(
    "url",
    [
        UNREACHABLE,
        f"postgresql://graphrag:{SECRET}@127.0.0.1:notaport/caches",  # libpq quotes this URL back
        f"postgresql://graphrag@127.0.0.1:1/caches?password={SECRET}",
    ],
)
def test_secret_never_in_connection_errors_or_cache_reprs(url: str) -> None:
    settings = Settings(cache_url=url)
    llm, emb = open_llm_cache(settings), open_embedding_cache(settings)
    assert SECRET not in repr(llm) and SECRET not in repr(emb)
    for call in (lambda: llm.get("k"), lambda: emb.get_many("m", ["h"])):
        with pytest.raises(CacheConnectionError) as err:
            call()
        assert SECRET not in str(err.value) and "127.0.0.1" in str(err.value)
        assert err.value.__suppress_context__  # the unscrubbed original is not printed with it
