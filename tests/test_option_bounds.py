"""Each query option is declared once: a request option that overrides a setting has the setting's bounds
and type. The setting an option overrides is found two ways that must agree: the option's own mark
(`pipeline.settings.bound.option`) and the mode's config, whose field of the same name is bound to a
setting (`pipeline.settings.bound.setting`); the options given become that config's overrides, so that
binding is what a request really changes.

The last test builds a model that restates a bound by hand, wider than its setting, and sees it caught.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

import pytest
from pydantic import BaseModel, Field

from pipeline.query import registry
from pipeline.query.requests import LocalOptions, QueryOptions
from pipeline.query.retrieval.local_retrieval import LocalSearchConfig
from pipeline.settings import Settings
from pipeline.settings.bound import FromSetting, bounds_of

_BOUND_KEYS = ("ge", "gt", "le", "lt", "min_length", "max_length", "multiple_of")


def _bounds(metadata: list[Any]) -> dict[str, Any]:
    return {k: getattr(m, k) for m in metadata for k in _BOUND_KEYS if hasattr(m, k)}


def _without_none(annotation: Any) -> Any:
    """`int | None` → `int`: an option is optional, its setting is not."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else typing.Union[tuple(args)]  # noqa: UP007
    return annotation


def _config_settings(config: Any) -> dict[str, str]:
    """The config's fields bound to a setting: field name → setting name."""
    if not dataclasses.is_dataclass(config):
        return {}
    return {f.name: f.metadata["setting"] for f in dataclasses.fields(config) if "setting" in f.metadata}


def disagreements(options: type[BaseModel], config: Any) -> list[str]:
    """Where `options` differs from the settings it overrides in `config`, one line each."""
    bound = _config_settings(config)
    out: list[str] = []
    for name, field in options.model_fields.items():
        marks = [m.name for m in field.metadata if isinstance(m, FromSetting)]
        setting = marks[0] if marks else bound.get(name)
        if setting is None:
            continue  # an option with no setting (a level, a filter, a seed) is declared once, in requests
        where = f"{options.__name__}.{name}"
        if not marks:
            out.append(f"{where} overrides {setting} but restates it: derive it with option({setting!r})")
        if name in bound and bound[name] != setting:
            out.append(f"{where} is marked {setting} but overrides {bound[name]} in {config.__name__}")
        theirs = Settings.model_fields[setting]
        if _bounds(field.metadata) != bounds_of(setting):
            out.append(f"{where} bounds {_bounds(field.metadata)} != {setting}'s {bounds_of(setting)}")
        if _without_none(field.annotation) != theirs.annotation:
            out.append(f"{where} type {field.annotation} != {setting}'s {theirs.annotation}")
        if field.default is not None:
            out.append(f"{where} defaults to {field.default!r}, not None (the setting's value)")
    return out


@pytest.mark.parametrize("name", sorted(registry.MODES))
def test_every_modes_options_have_their_settings_bounds(name: str) -> None:
    mode = registry.MODES[name]
    assert disagreements(mode.options, mode.config) == []


def test_the_options_that_override_settings_are_found() -> None:
    # The walk above must see the options it is about, or it would pass by seeing nothing.
    found = {
        (name, f): s
        for name, mode in registry.MODES.items()
        for f, s in _config_settings(mode.config).items()
        if f in mode.options.model_fields
    }
    assert found[("local", "top_k")] == "local_top_k"
    assert found[("drift", "primer_k")] == "drift_primer_k"
    assert found[("global", "map_budget")] == "global_map_budget"
    assert found[("lazy", "budget")] == "lazy_budget"


def test_drift_and_global_read_one_reduce_budget() -> None:
    drift = _config_settings(registry.MODES["drift"].config)
    assert drift["reduce_budget"] == _config_settings(registry.MODES["global"].config)["reduce_budget"]


def test_a_restated_wider_bound_is_caught() -> None:
    class Restated(QueryOptions):
        top_k: int | None = Field(default=None, ge=1, le=500, description="Communities to keep")

    found = disagreements(Restated, LocalSearchConfig)
    assert any("restates it" in line for line in found)
    assert any("bounds {'ge': 1, 'le': 500}" in line for line in found)
    assert disagreements(LocalOptions, LocalSearchConfig) == []


def test_a_request_takes_the_settings_bound() -> None:
    # DRIFT's request bounds were narrower than its settings' (depth 5 vs 10): now one bound.
    drift = registry.MODES["drift"].options
    assert drift.model_validate({"depth": 10, "breadth": 50}).given() == {"depth": 10, "breadth": 50}
    with pytest.raises(ValueError):
        drift.model_validate({"depth": 11})
    assert "default 2" in (drift.model_fields["depth"].description or "")
