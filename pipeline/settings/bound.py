"""Option objects whose fields are settings: each field names the setting it takes, once, where it is
declared, so no mapper copies settings into options field by field and no default is written twice.

    @dataclass(frozen=True)
    class DescriptionOptions(FromSettings):
        max_words: int = setting("summarize_max_words")   # default: the setting's default
        encoding: str = setting("encoding")

    DescriptionOptions.from_settings(settings)            # every bound field from `settings`
    DescriptionOptions()                                   # the settings' defaults

A field may convert the setting's value (`setting("entity_types", tuple)`), and an options object may
hold another one (`nested(DescriptionOptions)`), which is built from the same settings.

A request option (`pipeline.query.requests`) that overrides a setting is derived from it the same way, so
its bounds and description are the setting's and never written twice:

    class LocalOptions(QueryOptions):
        top_k: int | None = option("local_top_k")   # ge=1, le=50, "Communities ...; default 8"
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import annotated_types
from pydantic import Field

from pipeline.settings import Settings, default_of

C = TypeVar("C")
_SETTING = "setting"
_CONVERT = "convert"
_NESTED = "nested"
# The constraints a request option takes from its setting, by the keyword `Field` spells each with.
_BOUNDS: dict[type, str] = {
    annotated_types.Ge: "ge",
    annotated_types.Gt: "gt",
    annotated_types.Le: "le",
    annotated_types.Lt: "lt",
    annotated_types.MinLen: "min_length",
    annotated_types.MaxLen: "max_length",
    annotated_types.MultipleOf: "multiple_of",
}


def setting(name: str, convert: Callable[[Any], Any] | None = None) -> Any:
    """A dataclass field that takes setting `name` (through `convert` when given)."""
    default = default_of(name)
    return dataclasses.field(
        default=convert(default) if convert else default, metadata={_SETTING: name, _CONVERT: convert}
    )


def nested(cls: type) -> Any:
    """A dataclass field holding options of type `cls`, built from the same settings."""
    return dataclasses.field(default_factory=cls, metadata={_NESTED: cls})


def configured(cls: type[C], settings: Any, **overrides: Any) -> C:
    """`cls` with every bound field from `settings` (nested options too), then `overrides` that are not
    None."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if _SETTING in f.metadata:
            value = getattr(settings, f.metadata[_SETTING])
            convert = f.metadata[_CONVERT]
            values[f.name] = convert(value) if convert else value
        elif _NESTED in f.metadata:
            values[f.name] = configured(f.metadata[_NESTED], settings)
    values.update({k: v for k, v in overrides.items() if v is not None})
    return cls(**values)


class FromSettings:
    """`from_settings` for an options dataclass whose fields are bound with `setting` and `nested`."""

    @classmethod
    def from_settings(cls: type[C], settings: Any, **overrides: Any) -> C:
        return configured(cls, settings, **overrides)


@dataclass(frozen=True)
class FromSetting:
    """Marks a request option derived from setting `name` (pydantic keeps it in the field's metadata and
    ignores it when validating), so a test can compare the option with its setting."""

    name: str


def bounds_of(name: str) -> dict[str, Any]:
    """Setting `name`'s constraints as `Field` keywords (`{"ge": 1, "le": 50}`)."""
    out: dict[str, Any] = {}
    for item in Settings.model_fields[name].metadata:
        if type(item) not in _BOUNDS:
            # A constraint this cannot carry would leave the request looser than the setting unnoticed.
            raise TypeError(f"setting {name!r}: cannot derive a request option from {item!r}")
        key = _BOUNDS[type(item)]
        out[key] = getattr(item, key)
    return out


def option(name: str, **extra: Any) -> Any:
    """A request option that overrides setting `name`: default None (the setting's value is then taken),
    the setting's bounds, and its description with its default. `extra` is the field's JSON schema extra
    (`cli` flags)."""
    field = Settings.model_fields[name]
    info = Field(
        default=None,
        description=f"{field.description}; default {default_of(name)}",
        json_schema_extra=extra or None,
        **bounds_of(name),
    )
    info.metadata.append(FromSetting(name))
    return info
