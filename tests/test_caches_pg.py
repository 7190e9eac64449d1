"""The LLM and embedding caches on a real PostgreSQL server (pgserver), as several workers use them."""

from __future__ import annotations

import multiprocessing
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg
import pytest

from pipeline.caches.pg_embedding import PgEmbeddingCache
from pipeline.caches.pg_llm import PgLLMCache
from pipeline.embeddings.cached import CachedEmbedder
from pipeline.engine.base import runner
from pipeline.engine.summarize import SUMMARIZE, SummarizeRequest, Summary
from pipeline.io.pg import shared_connection
from pipeline.runtime import make_engine
from pipeline.settings import load_settings
from tests.support.fault_proxy import FaultProxy
from tests.support.llm_server import MODEL_ALIAS, LlamaServer
from tests.support.pg import pg_dsn  # noqa: F401 - session fixture: a throwaway PostgreSQL server
from tests.support.processes import run_to_completion


@pytest.fixture(scope="module")
def cache_url(pg_dsn: str) -> Iterator[str]:  # noqa: F811
    """A database of this module's own on the shared test server, so the default table names are free."""
    name = f"caches_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    parts = urlsplit(pg_dsn)
    yield urlunsplit(parts._replace(path=f"/{name}"))


def _table(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def _backend_pid(url: str) -> int:
    return shared_connection(url).run(lambda conn: conn.execute("SELECT pg_backend_pid()").fetchone()[0])


# ---- LLM cache ---------------------------------------------------------------------------------------
def test_pg_llm_cache_round_trip_counts_forgets_and_refuses_a_null_response(cache_url: str) -> None:
    cache = PgLLMCache(cache_url, table=_table("llm"))
    assert cache.get("k") is None
    cache.put("k", '{"a": 1}', task="t", model="m", prompt_version="v", prompt_tokens=3, completion_tokens=4)
    hit = cache.get("k")
    assert hit is not None and (hit.response, hit.prompt_tokens, hit.completion_tokens) == ('{"a": 1}', 3, 4)
    assert cache.stats() == {"cache_hits": 1, "cache_misses": 1}
    assert (cache.count(), cache.count("t"), cache.count("other")) == (1, 1, 0)
    cache.put("k", "a later answer", task="t", model="m", prompt_version="v")  # first entry wins
    assert cache.get("k").response == '{"a": 1}'
    cache.forget("k")
    assert cache.get("k") is None and cache.count() == 0
    with pytest.raises(psycopg.IntegrityError):
        cache.put("k", None, task="t", model="m", prompt_version="v")  # type: ignore[arg-type]
    assert cache.count() == 0
    assert "@" not in repr(cache) and cache.table in repr(cache)


def _put_same_key(url: str, table: str, worker: int, n: int, start: Any) -> None:
    cache = PgLLMCache(url, table=table)
    start.wait()  # every process creates the table and writes the shared key at the same moment
    for i in range(n):
        cache.put("shared", f"worker {worker}", task="t", model="m", prompt_version="v")
        cache.put(f"{worker}-{i}", f"{worker}/{i}", task="t", model="m", prompt_version="v")


def test_pg_llm_cache_concurrent_puts_of_one_key_from_several_processes_keep_one_row(cache_url: str) -> None:
    table, workers, n = _table("llm_race"), 4, 50
    ctx = multiprocessing.get_context("spawn")
    # timeout: a worker that dies early breaks the barrier instead of hanging the rest
    start = ctx.Barrier(workers, timeout=120)
    procs = [
        ctx.Process(target=_put_same_key, args=(cache_url, table, w, n, start), daemon=True)
        for w in range(workers)
    ]
    run_to_completion(procs)
    cache = PgLLMCache(cache_url, table=table)
    assert cache.count() == 1 + workers * n
    assert cache.get("shared").response in {f"worker {w}" for w in range(workers)}
    rows = shared_connection(cache_url).run(
        lambda conn: conn.execute(f"SELECT COUNT(*) FROM {table} WHERE key = 'shared'").fetchone()[0]
    )
    assert rows == 1


def _read_and_write(url: str, table: str, queue: Any) -> None:
    cache = PgLLMCache(url, table=table)
    hit = cache.get("from-parent")
    cache.put("from-child", "child answer", task="t", model="m", prompt_version="v")
    queue.put(None if hit is None else hit.response)


def test_pg_llm_cache_entries_survive_reopen_in_a_new_process(cache_url: str) -> None:
    table = _table("llm_reopen")
    cache = PgLLMCache(cache_url, table=table)
    cache.put("from-parent", "parent answer", task="t", model="m", prompt_version="v")
    cache.close()
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_read_and_write, args=(cache_url, table, queue))
    proc.start()
    assert queue.get(timeout=120) == "parent answer"
    proc.join(timeout=300)
    assert proc.exitcode == 0
    assert PgLLMCache(cache_url, table=table).get("from-child").response == "child answer"


def _use_inherited_cache(cache: PgLLMCache, url: str, queue: Any) -> None:
    cache.put("from-fork", "forked answer", task="t", model="m", prompt_version="v")
    queue.put((cache.get("before-fork").response, _backend_pid(url)))


def test_pg_llm_cache_forked_child_opens_its_own_connection_and_leaves_the_parents_alone(
    cache_url: str,
) -> None:
    cache = PgLLMCache(cache_url, table=_table("llm_fork"))
    cache.put("before-fork", "parent answer", task="t", model="m", prompt_version="v")
    parent_backend = _backend_pid(cache_url)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_use_inherited_cache, args=(cache, cache_url, queue))
    proc.start()
    answer, child_backend = queue.get(timeout=300)
    proc.join(timeout=300)
    assert proc.exitcode == 0 and answer == "parent answer"
    assert child_backend != parent_backend
    # The child neither used nor closed the parent's session: the same backend still serves the parent.
    assert _backend_pid(cache_url) == parent_backend
    assert cache.get("from-fork").response == "forked answer"


def test_pg_llm_cache_is_safe_for_many_threads_at_once(cache_url: str) -> None:
    cache = PgLLMCache(cache_url, table=_table("llm_threads"))
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(40):
                cache.put(f"{i}", f"answer {i}", task="t", model="m", prompt_version="v")
                assert cache.get(f"{i}").response == f"answer {i}"
        except BaseException as exc:  # collected: an assert in a thread would vanish
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == [] and cache.count() == 40
    assert cache.stats() == {"cache_hits": 8 * 40, "cache_misses": 0}


def test_pg_llm_cache_reconnects_after_the_server_drops_its_session(cache_url: str) -> None:
    cache = PgLLMCache(cache_url, table=_table("llm_drop"))
    cache.put("k", "answer", task="t", model="m", prompt_version="v")
    with psycopg.connect(cache_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (_backend_pid(cache_url),))
    assert cache.get("k").response == "answer"


# ---- embedding cache ---------------------------------------------------------------------------------
def test_pg_embedding_cache_round_trip_returns_the_same_float32_bits(cache_url: str) -> None:
    cache = PgEmbeddingCache(cache_url, table=_table("emb"))
    rng = np.random.default_rng(0)
    vectors = {f"h{i}": rng.standard_normal(384).astype(np.float32) for i in range(2500)}  # > one SELECT
    vectors["h0"][:4] = [np.float32(-0.0), np.float32(1e-45), np.finfo(np.float32).max, np.float32(np.inf)]
    cache.put_many("model-a", vectors)
    got = cache.get_many("model-a", [*vectors, "missing"])
    assert set(got) == set(vectors)
    for h, v in vectors.items():
        assert got[h].dtype == np.float32 and got[h].tobytes() == v.tobytes()
    assert cache.get_many("model-b", list(vectors)) == {} and cache.get_many("model-a", []) == {}
    assert (cache.count(), cache.count("model-a"), cache.count("model-b")) == (2500, 2500, 0)
    cache.put_many("model-a", {"h1": np.zeros(384, dtype=np.float32)})  # a concurrent writer's copy: kept
    assert cache.get_many("model-a", ["h1"])["h1"].tobytes() == vectors["h1"].tobytes()


class _CountingEmbedder:
    model_id = "fake:counting"
    dimension = 4

    def __init__(self) -> None:
        self.embedded = 0

    def split(self, text: str) -> list[tuple[int, int]]:
        return [(0, len(text))]

    def embed(self, texts: Any) -> np.ndarray:
        self.embedded += len(texts)
        out = np.asarray([[len(t), 1.0, 2.0, 3.0] for t in texts], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_pg_embedding_cache_behind_cached_embedder_embeds_each_text_once(cache_url: str) -> None:
    table = _table("emb_wrapped")
    inner = _CountingEmbedder()
    first = CachedEmbedder(inner, PgEmbeddingCache(cache_url, table=table), batch_size=3)
    vectors = first.embed(["a", "bb", "ccc", "a", "dddd"])
    again = CachedEmbedder(inner, PgEmbeddingCache(cache_url, table=table))
    assert again.embed(["a", "bb", "ccc", "a", "dddd"]).tobytes() == vectors.tobytes()
    assert inner.embedded == 4 and (again.cache_hits, again.computed) == (4, 0)


# ---- end to end: the LLM client -------------------------------------------------------------------
REQUESTS = [
    SummarizeRequest(texts=["Marley was dead, to begin with."], max_words=10),
    SummarizeRequest(texts=["Scrooge signed the register of his burial."], max_words=10),
]


def _summarize_in_a_new_process(queue: Any) -> None:
    engine = make_engine(load_settings())  # everything from the PIPELINE_* env the parent set
    results = engine.run_batch(REQUESTS, runner(engine, SUMMARIZE))
    queue.put(([r.summary for r in results], engine.usage.calls, engine.usage.cache_hits))


def test_llm_client_on_pg_cache_second_run_in_another_process_makes_no_http_call(
    llm_server: LlamaServer, cache_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = tmp_path / "storage"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local server needs no key
    monkeypatch.delenv("PIPELINE_CACHE_DIR", raising=False)
    monkeypatch.setenv("PIPELINE_CACHE_URL", cache_url)
    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(storage))
    with FaultProxy(llm_server.base_url) as proxy:
        monkeypatch.setenv("PIPELINE_LLM_PROVIDER", "openai")
        monkeypatch.setenv("PIPELINE_LLM_BASE_URL", proxy.base_url)
        monkeypatch.setenv("PIPELINE_LLM_MODEL", MODEL_ALIAS)
        monkeypatch.setenv("PIPELINE_LLM_MAX_TOKENS", "48")
        monkeypatch.setenv("PIPELINE_LLM_FIRST_TOKEN_TIMEOUT_S", "600")  # a busy machine reads slowly
        engine = make_engine(load_settings())
        first = engine.run_batch(REQUESTS, runner(engine, SUMMARIZE))
        assert all(isinstance(r, Summary) for r in first)
        assert proxy.received >= len(REQUESTS) and engine.usage.calls >= len(REQUESTS)
        received = proxy.received

        # A step re-executed on another worker: a fresh process, the same cache server.
        ctx = multiprocessing.get_context("spawn")
        queue = ctx.Queue()
        proc = ctx.Process(target=_summarize_in_a_new_process, args=(queue,))
        proc.start()
        summaries, calls, hits = queue.get(timeout=180)
        proc.join(timeout=300)
        assert proc.exitcode == 0
        assert summaries == [r.summary for r in first]
        assert (calls, hits) == (0, len(REQUESTS))
        assert proxy.received == received  # not one HTTP request
    assert not list(storage.rglob("*.sqlite"))  # nothing went to a local cache
