"""What the query modes' configs check and how they take the configured values: counts that must be
positive (or at least 0), a community level, the configured values of a settings section, and the
caller's options over the configured ones."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

C = TypeVar("C")


def require_counts(config: Any, error: type[Exception], names: Iterable[str], minimum: int = 1) -> None:
    """`error` naming the first of `names` that is not an int of at least `minimum` (a bool is not one)."""
    word = "positive" if minimum == 1 else "non-negative"
    for name in names:
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise error(f"{name} must be a {word} integer, got {value!r}")


def require_level(level: Any, error: type[Exception], also: str | None = None) -> None:
    """`error` unless `level` is None, a non-negative int, or the word `also` (global's "auto")."""
    if level is None or (also is not None and level == also):
        return
    if isinstance(level, bool) or not isinstance(level, int) or level < 0:
        other = f" or {also!r}" if also else ""
        raise error(f"community level must be a non-negative integer{other}, got {level!r}")


def with_overrides(cls: type[C], configured: dict[str, Any], overrides: dict[str, Any]) -> C:
    """`cls` from the configured values, each replaced by the caller's option unless that is None."""
    return cls(**{**configured, **{k: v for k, v in overrides.items() if v is not None}})


def prefixed(settings: Any, prefix: str, names: Iterable[str]) -> dict[str, Any]:
    """The config fields `names` from the settings fields of the same name after `prefix` (drift_depth)."""
    return {name: getattr(settings, prefix + name) for name in names}
