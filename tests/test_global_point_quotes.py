"""A global answer's point quotes (issue 58) are looked for only inside the passages its communities cite,
and the community -> passage map and the titles are read once per version of their tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pipeline.core import schema
from pipeline.core.tables import registered_schema
from pipeline.io.store import NamespaceStore
from pipeline.parse.layout import Layout, Page, Section
from pipeline.query.global_.sources import point_quotes

SENTENCE = "The eigenvalue routine returns a list of values."
# The sentence on page 1 (no community cites that passage), then on page 2 broken over a line, as a PDF
# line break leaves it, inside the passage of community 7.
TEXT = (
    "Intro text. "
    + SENTENCE
    + " More intro.\n"
    + "x" * 40
    + "\nPage two starts. The eigenvalue routine\nreturns a list   of values. The end.\n"
)
PAGE_2 = TEXT.index("Page two")


def _table(name: str, columns: dict[str, list[Any]]) -> pa.Table:
    registered = registered_schema(name)
    assert registered is not None
    n = len(next(iter(columns.values())))
    return pa.table(
        {f.name: pa.array(columns.get(f.name, [None] * n), f.type) for f in registered}, schema=registered
    )


@pytest.fixture
def store(tmp_path: Path) -> NamespaceStore:
    store = NamespaceStore(tmp_path, "quotes")
    layout = Layout(
        pages=[Page(1, 0, PAGE_2), Page(2, PAGE_2, len(TEXT))],
        sections=[Section("2 Matrices", 1, ("2 Matrices",), PAGE_2, len(TEXT))],
    )
    store.write_table(
        schema.DOCUMENTS,
        _table(
            schema.DOCUMENTS,
            {"id": ["d1"], "title": ["manual.pdf"], "text": [TEXT], "layout": [layout.to_json()]},
        ),
    )
    spans = {"u1": (0, PAGE_2), "u2": (PAGE_2, len(TEXT))}
    store.write_table(
        schema.TEXT_UNITS,
        _table(
            schema.TEXT_UNITS,
            {
                "id": list(spans),
                "document_id": ["d1", "d1"],
                "start_char": [a for a, _ in spans.values()],
                "end_char": [b for _, b in spans.values()],
            },
        ),
    )
    _communities(store, {3: ["u1"], 7: ["u2"]})
    return store


def _communities(store: NamespaceStore, units: dict[int, list[str]]) -> None:
    store.write_table(
        schema.COMMUNITIES,
        _table(schema.COMMUNITIES, {"community": list(units), "text_unit_ids": list(units.values())}),
    )


POINT = {"description": f"Summary first. {SENTENCE}", "community_ids": [7], "score": 90}


def test_a_point_is_quoted_inside_its_communities_passages_not_where_the_document_says_it_first(
    store: NamespaceStore,
) -> None:
    [quote] = point_quotes(store, [POINT])
    start = TEXT.index("The eigenvalue routine\n")
    assert quote == {
        "text": SENTENCE,
        "community": 7,
        "document_id": "d1",
        "document_title": "manual.pdf",
        "start_char": start,
        "end_char": TEXT.index("values. The end") + len("values."),
        "page_start": 2,
        "page_end": 2,
        "document_section": "2 Matrices",
    }
    assert point_quotes(store, [{**POINT, "community_ids": [5]}]) == []  # no passages: no quote


def test_the_community_map_is_read_once_per_version_of_its_tables(
    store: NamespaceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    real = store.read_table

    def counting(name: str, *args: Any, **kwargs: Any) -> pa.Table:
        reads.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(store, "read_table", counting)
    first = point_quotes(store, [POINT])
    assert point_quotes(store, [POINT]) == first
    assert reads.count(schema.COMMUNITIES) == 1 and reads.count(schema.TEXT_UNITS) == 1
    # the layouts, the titles and (text units with no stored regions) the texts front matter is found in,
    # each once
    assert reads.count(schema.DOCUMENTS) <= 3

    _communities(store, {7: ["u1"]})  # a re-index moves community 7 to page 1's passage
    [quote] = point_quotes(store, [POINT])
    assert reads.count(schema.COMMUNITIES) == 2
    assert (quote["start_char"], quote["page_start"]) == (TEXT.index(SENTENCE), 1)
