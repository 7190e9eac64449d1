"""Every query option reaches every door with one default: the CLI, HTTP (and its OpenAPI schema), MCP
and the Dagster query assets are all derived from the mode's request model (`pipeline.query.requests`).

The last test adds an option to a model (basic search's `min_score`) and finds it at every door
without touching any of them: that is what "one edit" means.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
from typing import Any

import pytest
from pydantic import Field, create_model

from assets.cli import build_parser
from assets.cli.query_options import add_options, options_from
from assets.query.config import config_class, configs, options_of
from pipeline.query import registry
from pipeline.query.requests import BasicOptions, QueryOptions
from pipeline.service.app import create_app
from pipeline.service.mcp_server import _tool, build_mcp_server
from pipeline.service.models import bodies
from pipeline.settings import Settings

OPTIONS = {name: mode.options for name, mode in registry.MODES.items()}
BODIES = bodies()
CONFIGS = configs()

# A valid, non-default value per option, to see it arrive through a door.
SAMPLES: dict[str, Any] = {
    "level": 1,
    "selection": "dynamic",
    "map_budget": 6000,
    "reduce_budget": 7000,
    "map_concurrency": 2,
    "seed": 7,
    "response_type": "a single paragraph",
    "top_k": 3,
    "community_level": 1,
    "primer_k": 4,
    "primer_folds": 3,
    "depth": 1,
    "breadth": 2,
    "full_text": True,
    "min_score": 0.25,
    "random_walk_steps": 50,
    "restart_prob": 0.3,
    "method": "ppr",
    "filter": {"document_title": "a.txt"},
    "budget": 10,
    "subqueries": 2,
    "max_irrelevant": 2,
    "route": "lazy",
}
QUESTION_FIELD = {name: mode.question for name, mode in registry.MODES.items()}


def _cli_args(mode: str, options: dict[str, Any]) -> list[str]:
    args = ["query", mode, "--namespace", "demo"]
    for name, value in options.items():
        flag = f"--{name.replace('_', '-')}"
        if value is True:
            args.append(flag)
        elif name == "filter" and mode == "chunks":
            args += [flag, "=".join(next(iter(value.items())))]
        elif name == "filter":
            args += [flag, '{"document_title": "a.txt"}']
        else:
            args += [flag, str(value)]
    return [*args, "a question"]


@pytest.mark.parametrize("mode", sorted(OPTIONS))
def test_every_option_is_a_cli_flag_defaulting_to_none_and_arrives_in_the_model(mode: str) -> None:
    model = OPTIONS[mode]
    parser = build_parser()
    plain = parser.parse_args(["query", mode, "--namespace", "demo", "q"])
    assert {n: getattr(plain, n) for n in model.model_fields} == dict.fromkeys(model.model_fields)
    given = {n: SAMPLES[n] for n in model.model_fields}
    args = parser.parse_args(_cli_args(mode, given))
    if mode == "chunks":
        args.filter = dict(args.filter)
    assert options_from(args, model).given() == given


@pytest.mark.parametrize("mode", sorted(OPTIONS))
def test_every_option_is_in_the_http_body_and_the_openapi_schema_with_the_same_default(
    mode: str, tmp_path: Any
) -> None:
    model, body = OPTIONS[mode], BODIES[mode]
    for name, field in model.model_fields.items():
        assert body.model_fields[name].default is field.default is None
    app = create_app(settings=Settings(storage_root=str(tmp_path)), mcp=False)
    schema = app.openapi()["components"]["schemas"][body.__name__]
    own = model.model_json_schema()["properties"]
    for name in model.model_fields:  # the same type, bounds and description in the published schema
        assert _comparable(schema["properties"][name]) == _comparable(own[name]), name
    body_of = body(namespace="demo", **{QUESTION_FIELD.get(mode, "question"): "q"}, **SAMPLES_FOR(mode))
    assert body_of.given() == SAMPLES_FOR(mode)


def _comparable(prop: Any) -> Any:
    """A property's JSON schema as OpenAPI and pydantic both write it: numbers as floats, without the
    `default` that FastAPI leaves out for None."""
    if isinstance(prop, dict):
        return {k: _comparable(v) for k, v in prop.items() if k != "default"}
    if isinstance(prop, list):
        return [_comparable(v) for v in prop]
    return float(prop) if isinstance(prop, int) and not isinstance(prop, bool) else prop


def SAMPLES_FOR(mode: str) -> dict[str, Any]:  # noqa: N802 - read as a table
    return {n: SAMPLES[n] for n in OPTIONS[mode].model_fields}


def test_every_option_is_a_parameter_of_its_mcp_tool_with_the_same_default() -> None:
    server = build_mcp_server(object())  # type: ignore[arg-type] - listing tools calls no service
    tools = {t.name: t for t in asyncio.run(server.list_tools())}
    for mode, model in OPTIONS.items():
        schema = tools[registry.mode(mode).tool_name].input_schema
        for name in model.model_fields:
            assert schema["properties"][name].get("default") is None, (mode, name)
            assert name not in schema.get("required", []), (mode, name)


@pytest.mark.parametrize("mode", sorted(CONFIGS))
def test_every_option_is_in_the_query_assets_run_config_and_arrives_in_the_model(mode: str) -> None:
    config_cls, model = CONFIGS[mode]
    assert model is OPTIONS[mode]
    defaults = config_cls()
    assert options_of(defaults, model).given() == {}
    given = SAMPLES_FOR(mode)
    if mode == "global":
        assert options_of(config_cls(auto_level=True), model).given() == {"level": "auto"}
    assert options_of(config_cls(**given), model).given() == given


def test_an_option_added_to_a_model_reaches_every_door_without_editing_them(tmp_path: Any) -> None:
    """basic search's `min_score`, as it would be written in `BasicOptions`: one field."""
    extended: type[QueryOptions] = create_model(
        "BasicOptions",
        __base__=BasicOptions,
        min_score=(float | None, Field(default=None, ge=0, le=1, description="Cosine floor of a passage")),
    )
    parser = argparse.ArgumentParser()
    add_options(parser, extended)
    args = parser.parse_args(["--min-score", "0.4"])
    assert options_from(args, extended).given() == {"min_score": 0.4}
    with pytest.raises(ValueError, match="min-score"):
        options_from(parser.parse_args(["--min-score", "2"]), extended)

    config = config_class("BasicQuestionsConfig", extended, "saved basic questions")
    assert options_of(config(min_score=0.5), extended).given() == {"min_score": 0.5}

    body = create_model("BasicQuery", __base__=(BODIES["basic"], extended))
    tool = _tool("basic_search", "doc", body, call=None)  # type: ignore[arg-type]
    assert inspect.signature(tool).parameters["min_score"].default is None
    assert body(namespace="demo", question="q", min_score=0.2).given() == {"min_score": 0.2}
