"""The tool's metadata filter: a small MongoDB-style language (Mastra's VectorFilter), validated once and
translated for each store.

    {"document_title": "carol.txt"}                       equality
    {"n_tokens": {"$gte": 100, "$lt": 500}}               $eq $ne $gt $gte $lt $lte $in $nin
    {"$or": [{"document_title": "a.txt"}, {"document_title": "b.txt"}]}    $and / $or of filters

Several keys in one object are ANDed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

COMPARISONS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin")
LOGICAL = ("$and", "$or")
# fullmatch only: with re.match, "$" also matches before a final newline, so "i\n" passed.
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_DEPTH = 32  # $and / $or levels; a deeper filter is a mistake or an attack on the recursion
_INT64 = (-(2**63), 2**63 - 1)

Scalar = str | int | float | bool | None


class FilterError(ValueError):
    """A filter that is not valid JSON, not an object, or uses an unknown operator."""


def parse_filter(value: Any) -> dict[str, Any] | None:
    """A filter from tool input: a JSON string or an object. Empty (``""``, ``"{}"``, ``{}``) means none."""
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = json.loads(value)
        except RecursionError:
            raise FilterError(f"filter nested too deeply: at most {MAX_DEPTH} levels of $and / $or") from None
        except json.JSONDecodeError as exc:
            raise FilterError(
                f"Invalid filter format: {exc.msg} at position {exc.pos} in {value!r}"
            ) from None
    if not isinstance(value, Mapping):
        raise FilterError(
            f"Invalid filter format: a filter must be a JSON object, got {type(value).__name__}"
        )
    validate(value)
    return dict(value) or None


def validate(node: Mapping[str, Any], depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise FilterError(f"filter nested too deeply: at most {MAX_DEPTH} levels of $and / $or")
    for key, value in node.items():
        if key in LOGICAL:
            if not isinstance(value, list) or not value or not all(isinstance(v, Mapping) for v in value):
                raise FilterError(f"{key} takes a non-empty list of filter objects, got {_shown(value)}")
            for sub in value:
                validate(sub, depth + 1)
        elif key.startswith("$"):
            raise FilterError(f"unknown operator {key!r} at the top of a filter; use {LOGICAL}")
        elif not isinstance(key, str) or not _FIELD.fullmatch(key):
            raise FilterError(
                f"invalid field name {_shown(key)}: a letter or '_', then letters, digits and '_' only"
            )
        elif isinstance(value, Mapping):
            if not value:
                raise FilterError(f"empty condition for field {key!r}")
            for op, operand in value.items():
                if op not in COMPARISONS:
                    raise FilterError(f"unknown operator {op!r} for field {key!r}; use {COMPARISONS}")
                if op in ("$in", "$nin"):
                    if not isinstance(operand, list) or not all(_is_scalar(v) for v in operand):
                        raise FilterError(
                            f"{op} for field {key!r} takes a list of values, got {_shown(operand)}"
                        )
                    for v in operand:
                        _check_number(key, v)
                elif not _is_scalar(operand):
                    raise FilterError(f"{op} for field {key!r} takes a single value, got {_shown(operand)}")
                else:
                    _check_number(key, operand)
        elif not _is_scalar(value):
            raise FilterError(f"field {key!r}: expected a value or an operator object, got {_shown(value)}")
        else:
            _check_number(key, value)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _check_number(field: str, value: Any) -> None:
    """Numbers every store can compare: finite (NaN and Infinity would reach SQL as bare names), and
    integers within 64 bits (a longer one is not a column's value anywhere)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise FilterError(f"field {field!r}: numbers must be finite, got {value!r}")
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64[0] <= value <= _INT64[1]:
        raise FilterError(f"field {field!r}: integers must fit in 64 bits")


def _shown(value: Any, limit: int = 80) -> str:
    """A value as an error message quotes it: cut, so a long value does not fill the message."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def conditions(node: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    """(field, operator, operand) of one object's field conditions; ``$and``/``$or`` are not included."""
    out = []
    for key, value in node.items():
        if key in LOGICAL:
            continue
        if isinstance(value, Mapping):
            out.extend((key, op, operand) for op, operand in value.items())
        else:
            out.append((key, "$eq", value))
    return out


def compile_filter(
    node: Mapping[str, Any],
    condition: Callable[[str, str, Any], str],
    join: Callable[[str, list[str]], str],
) -> str:
    """Fold a filter into one expression: ``condition(field, op, operand)`` renders a leaf and
    ``join("AND"|"OR", parts)`` combines them (used for SQL dialects)."""
    parts = [condition(f, op, v) for f, op, v in conditions(node)]
    for key in LOGICAL:
        if key in node:
            subs = [compile_filter(sub, condition, join) for sub in node[key]]
            parts.append(join("AND" if key == "$and" else "OR", subs))
    return join("AND", parts)


def matches(node: Mapping[str, Any], metadata: Mapping[str, Any]) -> bool:
    """Whether a row's metadata passes the filter (Python evaluation, used by the graph tool)."""
    for field, op, operand in conditions(node):
        if not _compare(metadata.get(field), op, operand):
            return False
    if "$and" in node and not all(matches(sub, metadata) for sub in node["$and"]):
        return False
    return not ("$or" in node and not any(matches(sub, metadata) for sub in node["$or"]))


def _compare(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return value == operand
    if op == "$ne":
        return value != operand
    if op == "$in":
        return value in operand
    if op == "$nin":
        return value not in operand
    if value is None or operand is None:
        return False
    try:
        return {
            "$gt": value > operand,
            "$gte": value >= operand,
            "$lt": value < operand,
            "$lte": value <= operand,
        }[op]
    except TypeError:
        return False


def to_chroma_where(node: Mapping[str, Any]) -> dict[str, Any]:
    """Chroma's ``where`` speaks the same operators but allows one key per object: wrap several in $and."""
    parts: list[dict[str, Any]] = []
    for field, op, operand in conditions(node):
        if operand is None:
            raise FilterError(f"Chroma cannot filter on null (field {field!r})")
        parts.append({field: {op: operand}})
    for key in LOGICAL:
        if key in node:
            subs = [to_chroma_where(sub) for sub in node[key]]
            parts.append(subs[0] if len(subs) == 1 else {key: subs})
    return parts[0] if len(parts) == 1 else {"$and": parts}
