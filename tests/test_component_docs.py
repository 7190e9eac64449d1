"""docs/component.md is what the GraphRAGIndex model renders now: a field added without
`make config-docs` fails here, and every field has a row with a description."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, create_model

from assets.component import GraphRAGIndex
from assets.component_reference import render, rows

PAGE = Path(__file__).resolve().parent.parent / "docs" / "component.md"


def test_the_committed_component_page_is_what_the_model_renders() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), "docs/component.md is stale: run `make config-docs`"


def test_every_field_has_a_row_with_a_description() -> None:
    table = rows(GraphRAGIndex)
    top = {name for name, *_ in table if "." not in name}
    assert top == set(GraphRAGIndex.model_fields)
    assert {"llm.api_key_env", "automation.cron", "automation.on_new_files"} <= {name for name, *_ in table}
    assert [name for name, _, _, description in table if not description] == []


def test_a_new_field_gets_a_row() -> None:
    extended = create_model(
        "Extended", __base__=GraphRAGIndex, shards=(int, Field(default=4, description="Shard count."))
    )
    assert ("shards", "int", "`4`", "Shard count.") in rows(extended)


def test_the_page_gives_the_three_steps() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert text.index("## 1. Install") < text.index("## 2. Scaffold") < text.index("## 3. Run")
    assert "dg scaffold defs assets.component.GraphRAGIndex" in text and "dg dev" in text
