"""docs/component.md rendered from the `GraphRAGIndex` model: the three steps to add an index to a
Dagster project, then every field of its defs.yaml (name, type, default, description) as the model
declares them, so the reference cannot drift from the code (`docs/gen_config.py`, tests/test_component_docs.py)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from assets.component import GraphRAGIndex
from pipeline.settings.reference import cell, default_text, type_name

INTRO = """# Add GraphRAG to your Dagster project

A GraphRAG index of a folder of documents is one component, `assets.component.GraphRAGIndex`, declared
in a `defs.yaml` of a `dg` project (`dagster-dg-cli`, Dagster's project CLI). Loading it gives the
same namespace-partitioned assets, checks, jobs, sensors and saved-question assets as this repository's
own code location (which is built by the same component).

## 1. Install

Add this package to the project's dependencies and install it into the project's environment, e.g. from
a checkout:

```bash
uv add --editable /path/to/graphrag-dagster   # or: pip install -e /path/to/graphrag-dagster
dg list components | grep GraphRAGIndex       # dg finds it through the package's entry point
```

## 2. Scaffold

```bash
dg scaffold defs assets.component.GraphRAGIndex my_corpus \\
  --json-params '{"input": "data", "namespaces": ["books"], "storage": ".graphrag/storage"}'
dg check defs
```

This writes `src/<project>/defs/my_corpus/defs.yaml`; `data/books/` holds the documents of namespace
`books`. Every field is listed below; the model's key is never written in the file, only the name of
the variable that holds it (`llm.api_key_env`).

## 3. Run

```bash
dg dev
```

In the UI, materialize a `namespace` partition of `index_namespace`, or let the `input_root_sensor`
index a folder when its files change and `reindex_automation_sensor` re-index on the cron. Blocking
checks stop a namespace's run where its index went bad (extraction or reports failing past
`PIPELINE_CHECK_MAX_FAILED_SHARE`, no entities, a vector dimension unlike the table's, dangling
relationships, unresolved citations), with the reason on the check.

One `GraphRAGIndex` per code location: asset keys and the `namespace` partitions are global.

## defs.yaml reference

Generated from the model (`python docs/gen_config.py`, run by `make config-docs`).
"""


def _type(annotation: Any) -> str:
    # A nested model's fields are listed after it, under its dotted name
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    return type_name(annotation)


def _default(field: Any) -> str:
    if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
        return "(its fields' defaults)"
    return default_text(field)


def rows(model: type[BaseModel], prefix: str = "") -> list[tuple[str, str, str, str]]:
    """(dotted field, type, default, description) for every field, nested models' fields after their own."""
    out = []
    for name, field in model.model_fields.items():
        out.append((prefix + name, _type(field.annotation), _default(field), field.description or ""))
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            out.extend(rows(annotation, f"{prefix}{name}."))
    return out


def render() -> str:
    lines = [INTRO, "| Field | Type | Default | Description |", "|---|---|---|---|"]
    for name, kind, default, description in rows(GraphRAGIndex):
        lines.append(f"| `{name}` | {kind} | {default} | {cell(description)} |")
    return "\n".join(lines) + "\n"
