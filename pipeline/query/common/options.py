"""What the query modes' configs check: counts that must be positive (or at least 0), and a community
level. (How they take the configured values: `pipeline.settings.bound`.)"""

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
