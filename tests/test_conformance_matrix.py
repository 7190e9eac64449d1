"""The conformance matrix: every query mode through every door, with the embedder and chat model pairs teams
run (docs/matrix.md is generated from the `matrix` marks of the test suite: `docs/gen_matrix.py`).

The doors the default pair (MiniLM, offline) is held at live in their own test modules (marked there);
here the 768-d OpenAI-compatible embedding server (`tests.support.minilm_http`) meets every door not
covered by `tests/test_openai_embedder_path.py`, on one index built once per session (`book_768`), and
the llama.cpp chat model meets both embedders.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from pipeline import api
from pipeline.eval.run import eval_modes
from pipeline.query import registry
from pipeline.settings import Settings
from tests.support.llm_server import MODEL_ALIAS, LlamaServer
from tests.support.minilm_http import MODEL, MiniLMServer
from tests.support.processes import graphrag_serve

REPO = Path(__file__).resolve().parent.parent
MODES = list(registry.MODES)
EVAL_MODES = eval_modes()  # the modes that answer (chunks and vector return hits)
ANSWERING = [m for m in MODES if m not in ("chunks", "vector")]  # what the chat door offers
QUESTION = {m: "How is Scrooge related to Bob Cratchit?" for m in MODES} | {
    "vector": "Marley was dead, to begin with.",
    "chunks": "Who is Marley?",
    "global": "What are the main themes of the story?",
}
KEY = "k-matrix"
E768 = pytest.mark.matrix(embedder="openai-compatible 768-d", chat="offline")


def env_of(server: MiniLMServer, storage: Path, **more: str) -> dict[str, str]:
    return {**os.environ, **server.env(), "PIPELINE_STORAGE_ROOT": str(storage), **more}


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pipeline.service.auth import hash_key

    path = tmp_path_factory.mktemp("matrix_keys") / "keys.yaml"
    path.write_text(f"tenants:\n  t:\n    key_sha256: {hash_key(KEY)}\n    namespaces: [demo]\n")
    return path


@pytest.fixture(scope="module")
def service_768(
    minilm_http: MiniLMServer, book_768: Path, keys: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """graphrag-serve in its own process over the 768-d index."""
    env = {**minilm_http.env(), "PIPELINE_STORAGE_ROOT": str(book_768), "PIPELINE_API_KEYS_FILE": str(keys)}
    with graphrag_serve(
        {**env, "PIPELINE_SERVICE_TIMEOUT_S": "300"}, tmp_path_factory.mktemp("serve") / "log"
    ) as url:
        yield url


def body(mode: str) -> dict[str, object]:
    return {"namespace": "demo", registry.mode(mode).question: QUESTION[mode]}


@E768
@pytest.mark.matrix(doors=("HTTP JSON", "HTTP SSE"), modes=tuple(MODES))
@pytest.mark.parametrize("mode", MODES)
def test_every_mode_over_http_json_and_sse(service_768: str, mode: str) -> None:
    with httpx.Client(
        base_url=service_768, timeout=300, headers={"Authorization": f"Bearer {KEY}"}
    ) as client:
        plain = client.post(f"/v1/query/{mode}", json=body(mode))
        assert plain.status_code == 200, plain.text
        assert plain.json()["status"] == "completed", plain.json()
        with client.stream("POST", f"/v1/query/{mode}", json={**body(mode), "stream": True}) as streamed:
            assert streamed.status_code == 200
            lines = list(streamed.iter_lines())
    done = [
        json.loads(x.removeprefix("data: "))
        for i, x in enumerate(lines)
        if i and lines[i - 1] == "event: done"
    ]
    assert done and done[0]["status"] == "completed"


@E768
@pytest.mark.matrix(doors=("OpenAI door", "OpenAI door streamed"), modes=tuple(ANSWERING))
@pytest.mark.parametrize("mode", ANSWERING)
def test_every_answering_mode_at_the_openai_door_whole_and_streamed(service_768: str, mode: str) -> None:
    client = openai.OpenAI(base_url=f"{service_768}/v1", api_key=KEY, timeout=300, max_retries=0)
    messages = [{"role": "user", "content": QUESTION[mode]}]
    whole = client.chat.completions.create(model=f"demo/{mode}", messages=messages)  # type: ignore[arg-type]
    assert whole.choices[0].finish_reason == "stop" and whole.choices[0].message.content
    pieces = client.chat.completions.create(model=f"demo/{mode}", messages=messages, stream=True)  # type: ignore[arg-type]
    text = "".join(c.choices[0].delta.content or "" for c in pieces if c.choices)
    assert text.strip()


@E768
@pytest.mark.matrix(doors=("MCP stdio",), modes=tuple(MODES))
def test_every_mode_as_an_mcp_tool_over_stdio(minilm_http: MiniLMServer, book_768: Path, keys: Path) -> None:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    env = env_of(minilm_http, book_768, PIPELINE_API_KEYS_FILE=str(keys), GRAPHRAG_API_KEY=KEY)
    env["PIPELINE_SERVICE_TIMEOUT_S"] = "300"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "pipeline.service", "mcp"], env=env, cwd=REPO
    )

    async def run() -> dict[str, bool]:
        errors = {}
        async with Client(params) as client:
            for mode in MODES:
                result = await client.call_tool(registry.mode(mode).tool_name, body(mode))
                errors[mode] = result.is_error or result.structured_content["status"] != "completed"
        return errors

    assert asyncio.run(asyncio.wait_for(run(), timeout=1200)) == dict.fromkeys(MODES, False)


@E768
@pytest.mark.matrix(doors=("CLI --stream",), modes=tuple(MODES))
@pytest.mark.parametrize("mode", MODES)
def test_every_mode_streams_at_the_cli(minilm_http: MiniLMServer, book_768: Path, mode: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "assets",
            "query",
            mode,
            "--namespace",
            "demo",
            "--stream",
            "--json",
            QUESTION[mode],
        ],
        cwd=REPO,
        env=env_of(minilm_http, book_768),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert events and events[-1]["event"] == "done"
    assert events[-1]["data"]["result"]["status"] == "completed"


@E768
@pytest.mark.matrix(
    doors=("Dagster query assets",), modes=tuple(m for m in MODES if m not in ("chunks", "vector"))
)
def test_the_saved_answer_assets_answer_with_the_768d_embedder(
    minilm_http: MiniLMServer, book_768: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dagster import DagsterInstance, materialize

    from assets.launch import add_namespace
    from assets.query import assets as query_assets
    from assets.resources import default_resources
    from pipeline.core import schema
    from pipeline.io.store import NamespaceStore
    from tests.conftest import make_dagster_home

    for key, value in {**minilm_http.env(), "PIPELINE_STORAGE_ROOT": str(book_768)}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("DAGSTER_HOME", str(make_dagster_home(tmp_path / "home")))
    chain = [query_assets.global_map_batches, query_assets.global_map_answers, query_assets.global_answers]
    single = query_assets.saved_answer_assets()  # every other mode's, from the registry
    questions = [QUESTION["local"]]
    config = {a.op.name: {"config": {"questions": questions}} for a in single}
    # a question the map phase answers offline: the saved chain has no broad-question path (the CLI's
    # "main themes" answer reads the top-level reports by rank instead of mapping them)
    saved_global = "What is the relationship between Scrooge and the Cratchit family?"
    config["global_map_batches"] = {"config": {"questions": [saved_global]}}
    with DagsterInstance.get() as instance:
        add_namespace(instance, "demo")
        result = materialize(
            [*chain, *single],
            partition_key="demo",
            instance=instance,
            resources=default_resources(),
            run_config={"ops": config},
        )
    assert result.success
    store = NamespaceStore(book_768, "demo")
    for table in [f"query_{a.op.name}" for a in single] + [schema.QUERY_GLOBAL_ANSWERS]:
        statuses = store.read_table(table, columns=["status"]).column(0).to_pylist()
        assert statuses == ["completed"], (table, statuses)


@E768
@pytest.mark.matrix(doors=("pipeline eval",), modes=tuple(EVAL_MODES))
def test_pipeline_eval_counts_no_failure_in_any_mode(
    minilm_http: MiniLMServer, book_768: Path, tmp_path: Path
) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps(
            {
                "question": QUESTION["local"],
                "answer": "his clerk",
                "gold_documents": ["a_christmas_carol.txt"],
            }
        )
        + "\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "assets", "eval", "--namespace", "demo", "--questions", str(questions)]
        + ["--modes", ",".join(EVAL_MODES), "--out", str(tmp_path / "out"), "--json"],
        cwd=REPO,
        env=env_of(minilm_http, book_768),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    metrics = json.loads(done.stdout)["metrics"]
    assert set(metrics) == set(EVAL_MODES)
    assert {m: v["overall"]["statuses"] for m, v in metrics.items()} == {
        m: {"completed": 1} for m in EVAL_MODES
    }


@pytest.mark.matrix(
    embedder="openai-compatible 768-d", chat="llama.cpp (SmolLM2)", doors=("Python API",), modes=("basic",)
)
def test_the_llama_chat_model_answers_over_the_768d_index(
    minilm_http: MiniLMServer, book_768: Path, llm_server: LlamaServer
) -> None:
    settings = Settings(
        storage_root=book_768,
        embedding_provider="openai",
        embedding_base_url=minilm_http.base_url,
        embedding_model=MODEL,
        embedding_max_input_tokens=200,
        llm_provider="openai",
        llm_base_url=llm_server.base_url,
        llm_model=MODEL_ALIAS,
        llm_max_tokens=64,
        llm_first_token_timeout_s=600,  # SmolLM2 on a busy CPU reads a prompt slowly: not a timeout test
        local_context_max_tokens=1000,  # the answer prompt within the server's 2,048-token window
    )
    # the question the 768-d path's own test asks basic (test_openai_embedder_path); on the Scrooge one
    # SmolLM2 repeats itself to its output limit since the contents page left basic's passages
    result = api.answer("basic", "demo", "What happens at Fezziwig's party?", settings=settings, top_k=2)
    assert result.to_dict()["status"] == "completed"
    assert result.to_dict()["answer"].strip()
