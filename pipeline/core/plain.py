"""Dataclasses as plain JSON-shaped data (a search result, extraction records for their table), without
`dataclasses.asdict`'s deep copy.

`asdict` deep-copies every leaf and recurses through every row of every list: on MuSiQue a local
result (its ranked passages with their signals, its context rows) took 27 ms to convert, a tenth of
an auto question, which converts two; the 11 MB scale corpus's extraction records, 21 s of a
re-index's 41 s extraction stage (profiled). What is converted is built fresh and handed over whole,
so leaves are shared rather than copied; dataclasses, lists, tuples and dicts are still new objects,
so editing the plain form never edits the result, and it equals what `asdict` gives."""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any

_LEAVES = (str, int, float, bool, type(None))


def plain(value: Any) -> Any:
    """`value` with every dataclass a dict, recursively; containers new, leaves shared."""
    kind = type(value)
    if kind in _LEAVES:
        return value
    if kind is dict:
        return {k: v if type(v) in _LEAVES else plain(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _LEAVES else plain(v) for v in value]
    if kind is tuple:
        return tuple(v if type(v) in _LEAVES else plain(v) for v in value)
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):  # a subclass (a named tuple): its items, as a list
        return [plain(v) for v in value]
    return value


def attributes(value: Any, *names: str) -> dict[str, Any]:
    """The named attributes of `value`, in that order, as they are: the part of an object a report or
    an error detail shows, each name written once."""
    return {name: getattr(value, name) for name in names}
