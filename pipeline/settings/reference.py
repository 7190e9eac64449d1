"""The configuration reference page (docs/configuration.md), rendered from the settings model, so the
documentation cannot drift from the fields: `python docs/gen_config.py` writes it, and
tests/test_docs.py fails when the committed page differs from what this renders now.

One table per section (the class that declares the field, or a nested section model), one row per setting:
its environment variable, type, default and description.
"""

from __future__ import annotations

import enum
import types
import typing
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

INTRO = """\
# Configuration

<!-- Generated from pipeline/settings by `python docs/gen_config.py`; do not edit by hand.
     tests/test_docs.py fails when this page differs from what the settings model renders. -->

One typed settings model, `pipeline.settings.Settings`, holds every setting, one section per stage. Each can
be set as an environment variable `PIPELINE_<NAME>` or in a YAML file named by `PIPELINE_CONFIG_FILE`
(names as the fields, lower case); environment variables win over the file, and keyword arguments to
`load_settings(...)` win over both. In Dagster the same values can be overridden on the `pipeline_settings`
resource. A list can be given as a comma-separated string or a JSON list; a mapping as JSON.

A query mode's section is its configuration: an option a question may set (`pipeline query local --top-k`,
the HTTP body's `top_k`, the MCP tool's) overrides the setting of that mode (`PIPELINE_LOCAL_TOP_K`) for one
question, within the same bounds, and is left unset to take the configured value.

`DAGSTER_HOME` defaults to `./.dagster_home` (the Makefile and CLI create it with a copy of `dagster.yaml`:
SQLite storage, queued run coordinator, the `llm` concurrency pool, telemetry off; an existing copy is kept,
so copy `dagster.yaml` there again after it changes). For several machines use `deploy/dagster.cluster.yaml`
(PostgreSQL via dagster-postgres, `DAGSTER_PG_URL=postgresql+psycopg2://...`); see
[Operations](operations.md) and [Scale-out](scale-out.md).
"""

# Defaults that depend on the environment at load time: the page shows the rule, never this machine's value.
DOC_DEFAULT_KEY = "doc_default"


def type_name(annotation: Any) -> str:
    """How the reference pages name a field's type (also `assets.component_reference`)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        names = [type_name(a) for a in args if a is not type(None)]
        optional = len(names) < len(args)
        return " or ".join(names) + (" (optional)" if optional else "")
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin in (list, tuple, set, frozenset):
        inner = ", ".join(type_name(a) for a in args if a is not Ellipsis)
        return f"list of {inner}" if origin is not tuple else f"({inner})"
    if origin is dict:
        return f"mapping {type_name(args[0])} → {type_name(args[1])}"
    if annotation is SecretStr:
        return "secret"
    if annotation is Path:
        return "path"
    if isinstance(annotation, type):
        if issubclass(annotation, enum.Enum):
            return " \\| ".join(f"`{m.value}`" for m in annotation)
        return annotation.__name__
    return str(annotation)


def default_text(field: FieldInfo) -> str:
    """How the reference pages show a field's default."""
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    if DOC_DEFAULT_KEY in extra:
        return str(extra[DOC_DEFAULT_KEY])
    value = field.default
    if value is PydanticUndefined and field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
    if value is None or value is PydanticUndefined:
        return "(unset)"
    if isinstance(value, SecretStr):
        return "(secret)"
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, list | tuple):
        return "`" + ",".join(str(v) for v in value) + "`" if value else "(empty)"
    if isinstance(value, dict):
        return "`" + repr(value) + "`" if value else "(empty)"
    return f"`{value}`"


def cell(text: str) -> str:
    """`text` as one Markdown table cell: one line, its pipes escaped."""
    return " ".join(text.replace("|", "\\|").split()) if text else ""


def _owner(model: type[BaseModel], name: str) -> type:
    """The class in the model's bases that declares `name` (its section)."""
    for cls in model.__mro__:
        if name in cls.__dict__.get("__annotations__", {}):
            return cls
    return model


def _section_title(cls: type) -> str:
    doc = (cls.__doc__ or "").strip().split("\n\n")[0]
    name = cls.__name__.removesuffix("Settings") or cls.__name__
    if cls.__name__ == "Settings":
        return "Storage, caches and scale-out"
    return (
        f"{name}: {' '.join(doc.split()).rstrip('.')}" if doc and not doc.startswith("Every knob") else name
    )


def rows(model: type[BaseModel], prefix: str = "PIPELINE_", delimiter: str = "__") -> list[tuple[str, ...]]:
    """(section, env var, type, default, description) for every field; a nested section model's fields
    are listed under its own title, their variables joined with `delimiter` (pydantic-settings' rule)."""
    out: list[tuple[str, ...]] = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            out += rows(annotation, f"{prefix}{name.upper()}{delimiter}", delimiter)
            continue
        section = _section_title(_owner(model, name))
        env = f"{prefix}{(field.alias or name).upper()}"
        out.append((section, env, type_name(annotation), default_text(field), field.description or ""))
    return out


def render() -> str:
    """The whole configuration page, as committed in docs/configuration.md."""
    from pipeline.settings import Settings

    delimiter = Settings.model_config.get("env_nested_delimiter") or "__"
    by_section: dict[str, list[tuple[str, ...]]] = {}
    for section, *row in rows(Settings, Settings.model_config.get("env_prefix", "PIPELINE_"), delimiter):
        by_section.setdefault(section, []).append(tuple(row))
    parts = [INTRO]
    # The model lists its own fields (storage, caches) last and the first-mixed section before; the page
    # reads in stage order: where things live, ingest, chunking, ..., the service.
    for section, section_rows in reversed(by_section.items()):
        parts.append(f"## {section}\n")
        table = ["| variable | type | default | description |", "| --- | --- | --- | --- |"]
        table += [f"| `{env}` | {cell(t)} | {cell(d)} | {cell(desc)} |" for env, t, d, desc in section_rows]
        parts.append("\n".join(table) + "\n")
    return "\n".join(parts)
