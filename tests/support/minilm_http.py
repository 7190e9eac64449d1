"""A real OpenAI-compatible embedding server for tests: the shipped MiniLM behind `/v1/embeddings`, its
384-d vectors lifted to 768 by a fixed orthonormal map.

Why lifted: a team's model is never MiniLM's width, and every width assumption (384 in a schema, in a
cache row, in a Lance vector column) must break here if it exists. The map is orthonormal (Q of a seeded
QR), so every cosine is MiniLM's own: answers stay comparable with the default embedder's, and the first
vector hit for a sentence is the same passage.

It behaves like Ollama's and vLLM's OpenAI-compatible servers where they differ from OpenAI's: no
`usage` in the reply, no batch limit advertised, inputs past the model's window cut silently; it honours
`encoding_format: base64` and `dimensions` (a prefix, re-normalised, as Matryoshka models do).

Run as `python -m tests.support.minilm_http PORT`; `MiniLMServer` starts it on a free port.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.processes import REPO_ROOT, LoggedServer

WIDTH = 768
MODEL = "minilm-lifted-768"


def lift_matrix(width: int = WIDTH, seed: int = 768) -> np.ndarray:
    """A fixed width x 384 matrix with orthonormal columns: cosines survive it exactly."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((width, 384)))
    return q.astype(np.float32)


def make_app() -> Any:
    import asyncio

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from pipeline.embeddings.minilm import LocalMiniLMEmbedder

    model = LocalMiniLMEmbedder(device="cpu", precision="fp32")
    lift = lift_matrix()
    counts = {"requests": 0, "inputs": 0, "held": 0}
    gate: dict[str, asyncio.Event | None] = {"armed": None}

    async def embeddings(request: Request) -> JSONResponse:
        body = await request.json()
        released = gate["armed"]
        if released is not None:  # the first request after /hold waits for /release
            gate["armed"] = None
            counts["held"] += 1
            await released.wait()
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return JSONResponse({"error": {"message": "input must be a string or strings"}}, status_code=400)
        counts["requests"] += 1
        counts["inputs"] += len(texts)
        vectors = model.embed(texts) @ lift.T
        dims = body.get("dimensions")
        if isinstance(dims, int) and 0 < dims < WIDTH:
            vectors = vectors[:, :dims]
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        as_b64 = body.get("encoding_format") == "base64"
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode() if as_b64 else v.tolist(),
            }
            for i, v in enumerate(vectors)
        ]
        return JSONResponse({"object": "list", "model": body.get("model", MODEL), "data": data})

    async def models(_request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

    async def stats(_request: Request) -> JSONResponse:
        return JSONResponse(counts)

    async def hold(_request: Request) -> JSONResponse:
        """Hold the next embeddings request unanswered until /release: a test's fixed point inside a
        run (`counts["held"]` says when it arrived)."""
        gate["armed"] = gate["release"] = asyncio.Event()
        return JSONResponse(counts)

    async def held(request: Request) -> JSONResponse:
        """Answers once `count` requests have been held: a wait on the event, not a poll."""
        count = int(request.query_params.get("count", "1"))
        while counts["held"] < count:
            await asyncio.sleep(0.05)
        return JSONResponse(counts)

    async def release(_request: Request) -> JSONResponse:
        if isinstance(gate.get("release"), asyncio.Event):
            gate["release"].set()
        gate["armed"] = None
        return JSONResponse(counts)

    return Starlette(
        routes=[
            Route("/v1/embeddings", embeddings, methods=["POST"]),
            Route("/v1/models", models),
            Route("/stats", stats),
            Route("/hold", hold, methods=["POST"]),
            Route("/release", release, methods=["POST"]),
            Route("/held", held),
        ]
    )


class MiniLMServer(LoggedServer):
    """The server in its own process on a free 127.0.0.1 port; `base_url` ends in /v1."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def env(self) -> dict[str, str]:
        """The settings, as environment variables, that point the pipeline at this server."""
        return {
            "PIPELINE_EMBEDDING_PROVIDER": "openai",
            "PIPELINE_EMBEDDING_BASE_URL": self.base_url,
            "PIPELINE_EMBEDDING_MODEL": MODEL,
            # MiniLM reads 256 word pieces: a smaller window than OpenAI's 8191, as Ollama's models have
            "PIPELINE_EMBEDDING_MAX_INPUT_TOKENS": "200",
        }

    def start(self, ready_timeout_s: float = 120.0) -> MiniLMServer:
        from deploy.local_cluster import free_port

        self.port = free_port()
        offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        self.launch(
            [sys.executable, "-m", "tests.support.minilm_http", str(self.port)],
            cwd=REPO_ROOT,
            env={**os.environ, **offline},
        )

        def ready() -> bool:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as response:
                return bool(json.load(response).get("data"))

        self.wait_ready(ready, ready_timeout_s, "embedding server")
        return self

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=10) as response:
            return json.load(response)

    def hold(self) -> dict[str, int]:
        """Hold the next embeddings request until `release` (see `make_app`)."""
        return self._post("hold")

    def release(self) -> dict[str, int]:
        return self._post("release")

    def wait_held(self, count: int) -> dict[str, int]:
        """Return once `count` requests in all have been held (the server answers on that event)."""
        url = f"http://127.0.0.1:{self.port}/held?count={count}"
        with urllib.request.urlopen(url, timeout=600) as response:  # a bound on a hang only
            return json.load(response)

    def _post(self, path: str) -> dict[str, int]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/{path}", data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)


@pytest.fixture(scope="session")
def minilm_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniLMServer]:
    """The 768-d OpenAI-compatible embedding server, started once per test session."""
    server = MiniLMServer(tmp_path_factory.mktemp("minilm_http") / "server.log").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def book_768(tmp_path_factory: pytest.TempPathFactory, minilm_http: MiniLMServer) -> Path:
    """samples/demo indexed offline through the Dagster job as `make demo` does, but embedded by the
    768-d server (once per session); returns the storage root holding namespace 'demo'."""
    from dagster import DagsterInstance

    from assets.launch import run_index
    from tests.conftest import environment, make_dagster_home

    storage = tmp_path_factory.mktemp("book_768_storage")
    home = make_dagster_home(tmp_path_factory.mktemp("book_768_dagster"))
    with (
        environment(**minilm_http.env(), PIPELINE_STORAGE_ROOT=str(storage), DAGSTER_HOME=str(home)),
        DagsterInstance.get() as instance,
    ):
        result = run_index("demo", input_dir=str(REPO_ROOT / "samples" / "demo"), instance=instance)
    assert result.success, result.failures
    return storage


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(make_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
