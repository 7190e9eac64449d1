"""OpenAI-compatible embeddings behind the Embedder interface, against a real llama.cpp embedding server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipeline.caches.sqlite_embedding import EmbeddingCache
from pipeline.core.tokens import get_encoding
from pipeline.embeddings.cached import CachedEmbedder
from pipeline.embeddings.openai import EMBEDDING_ENCODING, OpenAIEmbedder
from pipeline.runtime import make_embedder
from pipeline.settings import Settings
from tests.support.fault_proxy import FaultProxy
from tests.support.llm_server import MODEL_ALIAS, LlamaServer

SMOLLM2_WIDTH = 576  # SmolLM2-135M's hidden size: what the server's vectors must have

TEXTS = [
    "Scrooge was a squeezing, wrenching, grasping old sinner.",
    "The ghost of Jacob Marley rattled its chains.",
    "Tiny Tim said: God bless us, every one!",
    "Fog came pouring in at every chink and keyhole.",
    "",
]


@pytest.fixture(scope="module")
def embedding_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    server = LlamaServer(tmp_path_factory.mktemp("embedding_server") / "server.log", embedding=True).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def proxy(embedding_server: LlamaServer) -> Iterator[FaultProxy]:
    with FaultProxy(embedding_server.base_url, retry_after_s=0.1) as proxy:
        yield proxy


def _settings(proxy: FaultProxy, tmp_path: Path, **overrides: Any) -> Settings:
    return Settings(
        storage_root=tmp_path,
        embedding_provider="openai",
        embedding_base_url=proxy.base_url,
        embedding_model=MODEL_ALIAS,
        **overrides,
    )


def test_vectors_are_normalised_and_the_dimension_comes_from_the_server(
    proxy: FaultProxy, tmp_path: Path
) -> None:
    embedder = make_embedder(_settings(proxy, tmp_path))
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.model_id == f"openai:{proxy.base_url.split('://', 1)[1]}/{MODEL_ALIAS}:normalized"
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), SMOLLM2_WIDTH) and vectors.dtype == np.float32
    assert embedder.dimension == SMOLLM2_WIDTH
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(vectors[0], vectors[1])
    assert proxy.forwarded == 1  # five short texts fit one request


def test_requests_are_batched_by_token_budget_and_keep_order(proxy: FaultProxy, tmp_path: Path) -> None:
    budget = 16
    embedder = OpenAIEmbedder.from_settings(
        _settings(proxy, tmp_path, embedding_max_input_tokens=budget, embedding_batch_tokens=budget)
    )
    encoding = get_encoding(EMBEDDING_ENCODING)
    costs = [len(encoding.encode(t or " ")) for t in TEXTS]
    expected_requests, used = 1, 0
    for cost in costs:
        if used and used + cost > budget:
            expected_requests, used = expected_requests + 1, 0
        used += cost
    batched = embedder.embed(TEXTS)
    assert proxy.forwarded == expected_requests > 1
    one_by_one = np.vstack([embedder.embed([t]) for t in TEXTS])
    assert np.allclose(batched, one_by_one, atol=1e-4)


def test_split_keeps_every_piece_within_the_token_budget(proxy: FaultProxy, tmp_path: Path) -> None:
    embedder = OpenAIEmbedder.from_settings(_settings(proxy, tmp_path, embedding_max_input_tokens=32))
    text = " ".join(TEXTS * 6)
    spans = embedder.split(text)
    encoding = get_encoding(EMBEDDING_ENCODING)
    assert len(spans) > 1 and spans[0][0] == 0 and spans[-1][1] == len(text)
    for (_, end), (next_start, _) in zip(spans, spans[1:], strict=False):
        assert next_start < end  # pieces overlap: no text falls between two of them
    assert all(len(encoding.encode(text[s:e])) <= 33 for s, e in spans)  # a boundary may re-merge one token
    assert embedder.split("short") == [(0, 5)]
    assert proxy.forwarded == 0


def test_the_embedding_cache_spares_the_server_the_second_time(proxy: FaultProxy, tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    first = CachedEmbedder(make_embedder(_settings(proxy, tmp_path)), cache).embed(TEXTS[:3])
    reached = proxy.forwarded
    second = CachedEmbedder(make_embedder(_settings(proxy, tmp_path)), cache).embed(TEXTS[:3])
    assert np.array_equal(first, second)
    assert proxy.forwarded == reached


def test_a_server_fault_is_retried(proxy: FaultProxy, tmp_path: Path) -> None:
    embedder = OpenAIEmbedder.from_settings(_settings(proxy, tmp_path))
    proxy.script("500", "garble")
    assert embedder.embed(TEXTS[:2]).shape == (2, SMOLLM2_WIDTH)
    assert [fault for _, fault in proxy.served] == ["500", "garble", "ok"]
    assert embedder.client.usage.retries == 2
