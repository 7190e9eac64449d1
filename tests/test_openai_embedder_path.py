"""The path teams run: the sample book indexed and queried through an OpenAI-compatible embedding server
of another width (the real MiniLM behind HTTP, lifted to 768 dimensions: `tests.support.minilm_http`),
at every door, with the similarity levels the index measured on that model.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from deploy.local_cluster import free_port
from pipeline import api
from pipeline.query import registry
from pipeline.settings import Settings
from tests.support.minilm_http import MODEL, MiniLMServer
from tests.support.processes import graphrag_serve

REPO = Path(__file__).resolve().parent.parent
QUESTIONS = {
    "vector": "Marley was dead, to begin with.",
    "chunks": "Who is Marley?",
    "basic": "What happens at Fezziwig's party?",
    "local": "How is Scrooge related to Bob Cratchit?",
    "drift": "What happens at Fezziwig's party?",
    "global": "What are the main themes of the story?",
    "lazy": "How is Scrooge related to Bob Cratchit?",
    "auto": "How is Scrooge related to Bob Cratchit?",
}


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assets", *args],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


def env_768(server: MiniLMServer, storage: Path, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "dagster_home"
    home.mkdir(exist_ok=True)
    shutil.copyfile(REPO / "dagster.yaml", home / "dagster.yaml")
    return {**server.env(), "PIPELINE_STORAGE_ROOT": str(storage), "DAGSTER_HOME": str(home)}


def settings_768(server: MiniLMServer, storage: Path) -> Settings:
    return Settings(
        storage_root=storage,
        embedding_provider="openai",
        embedding_base_url=server.base_url,
        embedding_model=MODEL,
        embedding_max_input_tokens=200,
    )


def test_status_shows_the_levels_the_index_measured_on_the_768d_model(
    minilm_http: MiniLMServer, book_768: Path, tmp_path: Path
) -> None:
    done = cli(env_768(minilm_http, book_768, tmp_path), "status", "--namespace", "demo")
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if "similarity levels" in x)
    # the lifted map keeps MiniLM's cosines, so the levels measured are MiniLM's tuned constants
    assert "related 0.70, relevant 0.25, useless 0.15, useful 0.65, entity 0.45" in line
    assert "learned" in line and f"{MODEL}:normalized 768-d" in line


@pytest.mark.matrix(
    embedder="openai-compatible 768-d", chat="offline", doors=("CLI",), modes=tuple(QUESTIONS)
)
@pytest.mark.parametrize("mode", list(QUESTIONS))
def test_every_mode_answers_from_the_cli_with_exit_0_and_no_traceback(
    minilm_http: MiniLMServer, book_768: Path, tmp_path: Path, mode: str
) -> None:
    done = cli(
        env_768(minilm_http, book_768, tmp_path), "query", mode, "--namespace", "demo", QUESTIONS[mode]
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "a_christmas_carol.txt" in done.stdout or "Data:" in done.stdout or "[" in done.stdout
    assert "status: no_results" not in done.stdout


def test_the_first_vector_hit_is_the_default_embedders(
    minilm_http: MiniLMServer, book_768: Path, sample_book: Path
) -> None:
    question = QUESTIONS["vector"]
    lifted = api.answer("vector", "demo", question, settings=settings_768(minilm_http, book_768), top_k=3)
    default = api.answer("vector", "demo", question, settings=Settings(storage_root=sample_book), top_k=3)
    assert lifted.status == default.status == "completed"
    assert lifted.hits[0]["id"] == default.hits[0]["id"]
    assert "Marley was dead, to begin with." in lifted.hits[0]["text"]


@pytest.mark.matrix(
    embedder="openai-compatible 768-d", chat="offline", doors=("Python API",), modes=tuple(QUESTIONS)
)
def test_every_mode_answers_inside_a_running_event_loop_sync_and_awaited(
    minilm_http: MiniLMServer, book_768: Path
) -> None:
    settings = settings_768(minilm_http, book_768)

    async def notebook() -> dict[str, tuple[str, str]]:
        seen = {}
        for mode in registry.MODES:
            in_loop = api.answer(mode, "demo", QUESTIONS[mode], settings=settings)  # as a Jupyter cell would
            awaited = await api.answer_async(mode, "demo", QUESTIONS[mode], settings=settings)
            seen[mode] = (in_loop.to_dict()["status"], awaited.to_dict()["status"])
        return seen

    statuses = asyncio.run(notebook())
    assert set(statuses) == set(QUESTIONS)
    assert all(s == ("completed", "completed") for s in statuses.values()), statuses


def test_the_api_refuses_an_option_out_of_bounds_as_the_http_body_does(sample_book: Path) -> None:
    with pytest.raises(ValueError, match="top_k"):
        api.answer(
            "basic", "demo", QUESTIONS["basic"], settings=Settings(storage_root=sample_book), top_k=500
        )


@pytest.fixture(scope="module")
def served_768(
    minilm_http: MiniLMServer, book_768: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """graphrag-serve in its own process over the 768-d index, with one tenant's key."""
    from pipeline.service.auth import hash_key

    root = tmp_path_factory.mktemp("serve_768")
    keys = root / "keys.yaml"
    keys.write_text(f"tenants:\n  t:\n    key_sha256: {hash_key('k-768')}\n    namespaces: [demo]\n")
    env = {**minilm_http.env(), "PIPELINE_STORAGE_ROOT": str(book_768), "PIPELINE_API_KEYS_FILE": str(keys)}
    with graphrag_serve(env, root / "serve.log") as url:
        yield url


@pytest.mark.parametrize("mode", ["basic", "local"])
def test_basic_and_local_answer_over_http_json_and_sse(served_768: str, mode: str) -> None:
    headers = {"Authorization": "Bearer k-768"}
    body = {"namespace": "demo", "question": QUESTIONS[mode]}
    with httpx.Client(base_url=served_768, timeout=300, headers=headers) as client:
        plain = client.post(f"/v1/query/{mode}", json=body)
        assert plain.status_code == 200, plain.text
        assert plain.json()["status"] == "completed"
        with client.stream("POST", f"/v1/query/{mode}", json={**body, "stream": True}) as streamed:
            assert streamed.status_code == 200
            events = [line for line in streamed.iter_lines() if line.startswith("event:")]
    assert "event: done" in events


def test_a_query_with_another_embedding_model_names_both_models_in_one_line(
    book_768: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    shutil.copyfile(REPO / "dagster.yaml", home / "dagster.yaml")
    done = cli(
        {"PIPELINE_STORAGE_ROOT": str(book_768), "DAGSTER_HOME": str(home)},
        "query",
        "basic",
        "--namespace",
        "demo",
        "Who is Marley?",
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "768-d" in done.stderr and "384-d" in done.stderr and "--reembed" in done.stderr


def test_an_index_run_with_another_embedding_model_stops_before_embedding_and_names_both(
    minilm_http: MiniLMServer, book_768: Path, tmp_path: Path
) -> None:
    storage = tmp_path / "storage"
    shutil.copytree(book_768, storage)
    env = env_768(minilm_http, storage, tmp_path)
    for key in list(minilm_http.env()):
        env.pop(key)
    env_default = {**{k: v for k, v in os.environ.items() if not k.startswith("PIPELINE_EMBEDDING_")}, **env}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "assets",
            "index",
            "--namespace",
            "demo",
            "--input",
            str(REPO / "samples" / "demo"),
        ],
        cwd=REPO,
        env=env_default,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode != 0
    assert "768-d" in done.stdout + done.stderr and "--reembed" in done.stdout + done.stderr


def dead_server(tmp_path: Path) -> MiniLMServer:
    dead = MiniLMServer(tmp_path / "unused.log")
    dead.port = free_port()  # nothing listens there
    return dead


def test_the_embedding_server_down_at_query_time_is_one_line_and_exit_3(
    book_768: Path, tmp_path: Path
) -> None:
    dead = dead_server(tmp_path)
    env = {
        **dead.env(),
        "PIPELINE_EMBEDDING_MODEL": MODEL,
        "PIPELINE_EMBEDDING_MAX_RETRIES": "1",
        "PIPELINE_STORAGE_ROOT": str(book_768),
    }
    for mode in ("basic", "local", "vector"):
        done = cli(env, "query", mode, "--namespace", "demo", QUESTIONS[mode])
        assert "Traceback" not in done.stderr
        assert done.returncode == 3, done.stderr
        errors = [x for x in done.stderr.splitlines() if x.startswith("error:")]
        assert (
            len(errors) == 1
            and "embedding server" in errors[0]
            and dead.base_url.removeprefix("http://") in errors[0]
        )


def test_an_unknown_similarity_level_override_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown similarity level"):
        Settings(similarity_levels={"relatd": 0.5})
    assert json.loads(json.dumps(Settings(similarity_levels={"related": 0.8}).similarity_levels)) == {
        "related": 0.8
    }


def test_the_embedding_server_down_is_a_named_503_over_http(book_768: Path, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from pipeline.service.app import create_app
    from pipeline.service.auth import hash_key
    from pipeline.service.queries import QueryService

    keys = tmp_path / "keys.yaml"
    keys.write_text(f"tenants:\n  t:\n    key_sha256: {hash_key('k-down')}\n    namespaces: [demo]\n")
    settings = settings_768(dead_server(tmp_path), book_768).model_copy(
        update={"api_keys_file": keys, "embedding_max_retries": 0}
    )
    with TestClient(create_app(QueryService(settings))) as client:
        for mode in ("basic", "local", "vector"):
            field = registry.mode(mode).question
            r = client.post(
                f"/v1/query/{mode}",
                json={"namespace": "demo", field: QUESTIONS[mode]},
                headers={"Authorization": "Bearer k-down"},
            )
            assert r.status_code == 503, (mode, r.text)
            assert r.json()["error"]["code"] == "embedding_unavailable"
