"""A mode added to the registry reaches every door: a toy mode (its own request model with one option,
a trivial search, routable with its route hint, with saved answers) registered with
`registry.registered` is found, with its default, by the CLI (and `--estimate`), HTTP and its OpenAPI
schema, SSE, MCP, the OpenAI door, the web app's mode list, the Dagster query config, asset and answer
table, `pipeline eval`, auto search's routes (given, and chosen by its classifier) and the status
endpoint, none of which names it. That is what "a new mode is a package plus one registry line" means.

It runs on the small hand-built namespace (`tests/conftest.py`'s `tiny`), over a real uvicorn server.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import Field

from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from pipeline.query import registry
from pipeline.query.common.mode import Mode, RouteHint, Saved
from pipeline.query.common.scope import QueryScope
from pipeline.query.requests import QueryOptions
from pipeline.service.auth import hash_key
from pipeline.service.queries import QueryService
from pipeline.settings import Settings
from tests.support.event_stream import parse
from tests.support.service_data import serving

KEY = "grk_test-toy-0123456789abcdef0"
TOY_DEFAULT = 2  # the toy's configured default, as a real mode's would come from its settings


class ToyOptions(QueryOptions):
    """The toy mode: says how many text units the namespace has, `repeat` times."""

    repeat: int | None = Field(
        default=None, ge=1, le=5, description=f"Times the toy says it; default {TOY_DEFAULT}"
    )


@dataclass(frozen=True)
class ToyConfig:
    repeat: int = TOY_DEFAULT


@dataclass
class ToyResult:
    question: str
    answer: str
    units: int
    writes_reports: bool  # its scope can write deferred reports on first use, as every door's
    status: str = "completed"

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "answer": self.answer, "status": self.status, "units": self.units}


async def toy_search(scope: QueryScope, question: str, config: ToyConfig) -> ToyResult:
    units = scope.store.read_table(schema.TEXT_UNITS, columns=["id"]).num_rows
    answer = " ".join([f"toy: {units} text units."] * config.repeat)
    return ToyResult(question, answer, units, scope.write_reports is not None)


TOY = Mode(
    name="toy",
    summary="the toy mode: counts the namespace's text units",
    options=ToyOptions,
    configure=lambda settings, given: ToyConfig(**given),
    search=toy_search,
    needs=(("parquet", schema.TEXT_UNITS),),
    routable=True,
    uses_model=False,
    estimate=lambda estimate, asked, config: None,  # it calls no model: no phase to add
    route_hint=RouteHint(
        "toy: counting the namespace's text units",
        ("Count the text units.", "Tally up the text units of this namespace."),
    ),
    saved=Saved(
        columns=(("units", pa.int64()), ("writes_reports", pa.bool_())),
        row=lambda res: {"units": res.units, "writes_reports": res.writes_reports},
        deps=("text_units",),
    ),
)
COUNTING = "Count the text units, please."  # no cue of rules 1-7: the nearest prototype routes it


@pytest.fixture
def toy() -> Iterator[Mode]:
    with registry.registered(TOY) as mode:
        yield mode


@pytest.fixture(scope="module")
def units(tiny: NamespaceStore) -> int:
    return tiny.read_table(schema.TEXT_UNITS, columns=["id"]).num_rows


@pytest.fixture(scope="module")
def settings(tiny: NamespaceStore, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    keys = tmp_path_factory.mktemp("toy") / "keys.yaml"
    keys.write_text(f"tenants:\n  t:\n    key_sha256: {hash_key(KEY)}\n    namespaces: [tiny]\n")
    return Settings(storage_root=tiny.storage.uri(), api_keys_file=str(keys), service_timeout_s=110.0)


@contextlib.contextmanager
def toy_server(settings: Settings, embedder: Any) -> Iterator[str]:
    """The app (HTTP and MCP) built while the toy is registered, under uvicorn on 127.0.0.1."""
    service = QueryService(settings, embedder=embedder)
    with serving(service) as url:
        yield url


def test_the_toy_is_not_registered_outside_its_block() -> None:
    assert "toy" not in registry.MODES
    with registry.registered(TOY):
        assert registry.mode("toy") is TOY and "toy" in registry.routable()
        with pytest.raises(ValueError, match="registered already"), registry.registered(TOY):
            pass
    assert "toy" not in registry.MODES and "toy" not in registry.routable()


def test_the_toy_answers_over_http_with_its_default_and_its_option(
    toy: Mode, settings: Settings, embedder: Any, units: int
) -> None:
    with toy_server(settings, embedder) as url, httpx.Client(base_url=url, timeout=120) as client:
        headers = {"X-API-Key": KEY}
        plain = client.post("/v1/query/toy", json={"namespace": "tiny", "question": "q"}, headers=headers)
        assert plain.status_code == 200, plain.text
        body = plain.json()
        assert body["kind"] == "toy" and body["status"] == "completed"
        assert body["result"]["answer"] == " ".join([f"toy: {units} text units."] * TOY_DEFAULT)
        once = client.post(
            "/v1/query/toy", json={"namespace": "tiny", "question": "q", "repeat": 1}, headers=headers
        )
        assert once.json()["result"]["answer"] == f"toy: {units} text units."
        bad = client.post(
            "/v1/query/toy", json={"namespace": "tiny", "question": "q", "repeat": 9}, headers=headers
        )
        assert bad.status_code == 422 and "repeat" in bad.json()["error"]["message"]

        spec = client.get("/openapi.json").json()
        route = spec["paths"]["/v1/query/toy"]["post"]
        assert route["description"] == TOY.summary
        prop = spec["components"]["schemas"]["ToyQuery"]["properties"]["repeat"]
        assert prop["description"] == f"Times the toy says it; default {TOY_DEFAULT}"
        assert prop.get("default") is None and "repeat" not in spec["components"]["schemas"]["ToyQuery"].get(
            "required", []
        )
        auto_route = spec["components"]["schemas"]["AutoQuery"]["properties"]["route"]
        assert "toy" in auto_route["anyOf"][0]["enum"]

        # /status: the toy's needs (the text units) are there
        status = client.get("/v1/namespaces/tiny/status", headers=headers).json()
        assert status["ready"]["toy"] is True

        # auto: the toy is a route it accepts and hands the question to
        routed = client.post(
            "/v1/query/auto", json={"namespace": "tiny", "question": "q", "route": "toy"}, headers=headers
        )
        assert routed.status_code == 200, routed.text
        result = routed.json()["result"]
        assert (result["route"], result["router"]) == ("toy", "given")
        assert result["result"]["answer"] == " ".join([f"toy: {units} text units."] * TOY_DEFAULT)
        unknown = client.post(
            "/v1/query/auto", json={"namespace": "tiny", "question": "q", "route": "nope"}, headers=headers
        )
        assert unknown.status_code == 422 and "toy" in unknown.json()["error"]["message"]

        # MCP: the tool, its option in the schema, and a call
        async def mcp() -> None:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {KEY}"})
            async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                assert tools["toy_search"].description == TOY.summary
                param = tools["toy_search"].input_schema["properties"]["repeat"]
                assert param.get("default") is None and "default 2" in param["description"]
                called = await client.call_tool("toy_search", {"namespace": "tiny", "question": "q"})
                assert not called.is_error, called.content
                answer = called.structured_content["result"]["answer"]
                assert answer == " ".join([f"toy: {units} text units."] * TOY_DEFAULT)

        asyncio.run(asyncio.wait_for(mcp(), timeout=600))  # guards against a hang only

        # SSE: the stream's `done` carries the same answer
        streamed = client.post(
            "/v1/query/toy", json={"namespace": "tiny", "question": "q", "stream": True}, headers=headers
        )
        assert streamed.headers["content-type"].startswith("text/event-stream")
        events = parse(streamed.text)
        assert events[-1][0] == "done", events
        assert events[-1][1]["result"]["answer"] == " ".join([f"toy: {units} text units."] * TOY_DEFAULT)

        # the OpenAI door: a model per namespace and mode, and a chat answer
        bearer = {"Authorization": f"Bearer {KEY}"}
        models = [m["id"] for m in client.get("/v1/models", headers=bearer).json()["data"]]
        assert "tiny/toy" in models
        chat = client.post(
            "/v1/chat/completions",
            json={"model": "tiny/toy", "messages": [{"role": "user", "content": "q"}]},
            headers=bearer,
        )
        assert chat.status_code == 200, chat.text
        assert f"toy: {units} text units." in chat.json()["choices"][0]["message"]["content"]

        # the web app's mode choice
        listed = client.get("/v1/modes", headers=headers).json()["modes"]
        assert "toy" in [m["name"] for m in listed]

        # auto, with no route given: its classifier can choose the toy (offline: the nearest prototype)
        chosen = client.post(
            "/v1/query/auto", json={"namespace": "tiny", "question": COUNTING}, headers=headers
        )
        assert chosen.status_code == 200, chosen.text
        result = chosen.json()["result"]
        assert result["route"] == "toy" and "nearest prototype: toy" in result["reason"], result
        assert result["answer"] == " ".join([f"toy: {units} text units."] * TOY_DEFAULT)


def test_the_cli_has_a_toy_command_that_answers(
    toy: Mode,
    tiny: NamespaceStore,
    units: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from assets.cli import build_parser, main

    parser = build_parser()
    args = parser.parse_args(["query", "toy", "--namespace", "tiny", "a question"])
    assert args.repeat is None and args.query == "a question"
    with pytest.raises(SystemExit):
        parser.parse_args(["query", "toy", "--help"])
    shown = capsys.readouterr().out
    assert "--repeat REPEAT" in shown and f"Times the toy says it; default {TOY_DEFAULT}" in shown
    with pytest.raises(SystemExit):
        parser.parse_args(["query", "--help"])
    assert TOY.summary in " ".join(capsys.readouterr().out.split())

    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", tiny.storage.uri())
    assert main(["query", "toy", "--namespace", "tiny", "a question"]) == 0
    out = capsys.readouterr().out
    assert (
        out.startswith(" ".join([f"toy: {units} text units."] * TOY_DEFAULT)) and "[status: completed]" in out
    )
    assert main(["query", "toy", "--namespace", "tiny", "--repeat", "9", "a question"]) == 2
    assert "--repeat" in capsys.readouterr().err


def test_an_app_built_without_the_toy_has_no_toy_door(settings: Settings, embedder: Any) -> None:
    """The doors read the registry when they are built: no toy registered, no route, no tool."""
    from pipeline.service.app import create_app

    app = create_app(QueryService(settings, embedder=embedder))
    assert "/v1/query/toy" not in app.openapi()["paths"]
    assert "/v1/query/local" in app.openapi()["paths"]


def test_the_dagster_config_of_the_toy_has_its_option(toy: Mode) -> None:
    from assets.query.config import config_of, configs, options_of

    config_cls, model = configs()["toy"]
    assert config_cls is config_of("toy") and model is ToyOptions
    field = config_cls.model_fields["repeat"]
    assert field.default is None and field.description == f"Times the toy says it; default {TOY_DEFAULT}"
    assert options_of(config_cls(), model).given() == {}
    assert options_of(config_cls(repeat=3), model).given() == {"repeat": 3}
    assert config_cls.__doc__ == TOY.summary


def test_pipeline_eval_asks_the_toy(toy: Mode, tiny: NamespaceStore, embedder: Any, units: int) -> None:
    from pipeline.engine.offline import OfflineEngine
    from pipeline.eval.questions import EvalQuestion
    from pipeline.eval.run import eval_modes, evaluate_async, parse_modes

    assert parse_modes("toy") == ["toy"]
    assert "toy" in eval_modes() and eval_modes()[-1] == "auto"
    engine = OfflineEngine()
    question = EvalQuestion(id="q1", question="q", answers=(f"{units} text units",))
    run = engine.run_sync(evaluate_async(tiny, engine, embedder, Settings(), [question], ["toy"]))
    (row,) = run.rows
    assert (row.mode, row.status, row.error) == ("toy", "completed", None)


def test_the_dagster_asset_of_the_toy_writes_its_answer_table(
    toy: Mode, tiny: NamespaceStore, units: int, tmp_path: Any, dagster_instance: Any, monkeypatch: Any
) -> None:
    """The saved-answer assets are made from the registry: the toy's writes `query_toy_answers`, its
    schema declared by the toy's record and checked on write like every table's; its questions can
    write deferred reports on first use, as a question at any door can."""
    import shutil

    from dagster import materialize

    from assets.launch import add_namespace
    from assets.query.assets import saved_answer_assets
    from assets.resources import default_resources
    from pipeline.core.tables import registered_schema

    shutil.copytree(Path(tiny.storage_root) / "tiny", tmp_path / "tiny")  # the shared tiny stays as it is
    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(tmp_path))
    add_namespace(dagster_instance, "tiny")
    (asset,) = [a for a in saved_answer_assets() if a.key.to_user_string() == "toy_answers"]
    result = materialize(
        [asset],
        partition_key="tiny",
        instance=dagster_instance,
        resources=default_resources(),
        run_config={"ops": {"toy_answers": {"config": {"questions": ["q", COUNTING], "repeat": 1}}}},
    )
    assert result.success
    table = NamespaceStore(tmp_path, "tiny").read_table("query_toy_answers")
    assert table.schema == registered_schema("query_toy_answers") == toy.saved_schema()
    assert table.to_pylist() == [
        {"question": q, "status": "completed", "answer": f"toy: {units} text units.", "units": units}
        | {"writes_reports": True}
        for q in ("q", COUNTING)
    ]
    (mat,) = result.get_asset_materialization_events()
    assert mat.materialization.metadata["completed"].value == 2


def test_the_cli_estimates_the_toy(
    toy: Mode, tiny: NamespaceStore, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--estimate` of a mode that calls no model: no calls, no cost, its options validated first."""
    import json

    from assets.cli import main

    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", tiny.storage.uri())
    assert main(["query", "toy", "--namespace", "tiny", "--estimate", "--json", "q"]) == 0
    estimate = json.loads(capsys.readouterr().out)
    assert estimate["mode"] == "toy" and estimate["calls"] == 0 and estimate["cost_usd"] == 0
    assert main(["query", "toy", "--namespace", "tiny", "--estimate", "--repeat", "9", "q"]) == 2


def test_pipeline_api_answers_with_the_toy(
    toy: Mode, tiny: NamespaceStore, embedder: Any, units: int
) -> None:
    from pipeline.api import answer

    settings = Settings(storage_root=tiny.storage.uri())
    result = answer("toy", "tiny", "q", settings=settings, embedder=embedder, repeat=1)
    assert result.answer == f"toy: {units} text units."
