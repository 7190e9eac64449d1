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
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from pipeline.settings import default_of

C = TypeVar("C")
_SETTING = "setting"
_CONVERT = "convert"
_NESTED = "nested"


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
