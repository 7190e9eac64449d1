"""The CLI's query flags, derived from each mode's request model (`pipeline.query.requests`).

A field becomes `--field-name` (plus the flags its `cli` extra names), typed and described by the model;
every flag defaults to None, so an option not given takes the mode's configured default exactly as over
HTTP, MCP and in Dagster. The values are validated by the model itself: a bad one is exit 2 with the
model's message.
"""

from __future__ import annotations

import argparse
import json
import types
import typing
from typing import Any, Literal

from pydantic import ValidationError

from pipeline.query.requests import QueryOptions, cli_flags


def _json(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"expected JSON, got {value!r} ({exc.msg})") from None


def _int_or(words: tuple[str, ...]) -> Any:
    def parse(value: str) -> int | str:
        if value in words:
            return value
        try:
            return int(value)
        except ValueError:
            allowed = " or ".join(repr(w) for w in words)
            raise argparse.ArgumentTypeError(f"expected a number or {allowed}, got {value!r}") from None

    return parse


def _argument(annotation: Any) -> dict[str, Any]:
    """argparse keywords for a field's type (its Optional stripped)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    origin = typing.get_origin(annotation)
    if annotation is bool:
        return {"action": "store_const", "const": True}
    if annotation in (int, float, str):
        return {"type": annotation}
    if origin is Literal:
        return {"choices": typing.get_args(annotation)}
    if origin in (typing.Union, types.UnionType):  # e.g. int | Literal["auto"]
        literals = [w for a in args if typing.get_origin(a) is Literal for w in typing.get_args(a)]
        if int in args and literals:
            return {"type": _int_or(tuple(literals))}
    if origin is dict or annotation is dict:
        return {"type": _json, "metavar": "JSON"}
    raise TypeError(f"no CLI form for {annotation!r}")


def _choices(prop: dict[str, Any]) -> tuple[str, ...]:
    """The words a string option's JSON schema allows (its `enum`), or none."""
    for branch in prop.get("anyOf", [prop]):
        if branch.get("type") == "string" and branch.get("enum"):
            return tuple(branch["enum"])
    return ()


def add_options(
    parser: argparse.ArgumentParser, model: type[QueryOptions], **special: dict[str, Any]
) -> None:
    """One flag per field of `model`; `special[field]` replaces the derived argparse keywords (the
    chunk graph's KEY=VALUE filter)."""
    properties = model.model_json_schema()["properties"]
    for name, field in model.model_fields.items():
        kwargs = special.get(name) or _argument(field.annotation)
        if kwargs.get("type") is str and (words := _choices(properties[name])):
            kwargs = {"choices": words}  # e.g. auto's `route`: the registry's routable modes, read now
        parser.add_argument(
            *cli_flags(name, field), dest=name, default=None, help=field.description, **kwargs
        )


def options_from(args: argparse.Namespace, model: type[QueryOptions]) -> QueryOptions:
    """The model built from the parsed flags; raises ValueError with the model's message."""
    given = {n: getattr(args, n) for n in model.model_fields if getattr(args, n, None) is not None}
    try:
        return model(**given)
    except ValidationError as exc:
        raise ValueError(
            "; ".join(f"--{'.'.join(map(str, e['loc'])).replace('_', '-')}: {e['msg']}" for e in exc.errors())
        ) from None
