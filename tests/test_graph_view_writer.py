"""graph.html has one writer (`pipeline.index.graph_view.write_graph_view`), used by the communities
stage and by `pipeline graph`: the command ranks the communities by their reports and says where the
page went, `--out` leaves the namespace's page alone, and the stage's page ignores reports left by an
earlier run (they name an older partition's communities)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pytest

from assets.cli import main
from pipeline.core import schema
from pipeline.core.tables import TABLE_SCHEMAS
from pipeline.index.graph_view import write_graph_view
from pipeline.io.store import NamespaceStore
from pipeline.ops.graph_view import PALETTE

# Community 1 is the bigger one (two entities); the reports rank community 2 above it.
ENTITIES = [
    {"id": "a", "title": "Alpha", "type": "PERSON", "degree": 1, "aliases": []},
    {"id": "b", "title": "Beta", "type": "PERSON", "degree": 1, "aliases": []},
    {"id": "c", "title": "Gamma", "type": "PLACE", "degree": 0, "aliases": []},
]
RELATIONSHIPS = [{"id": "r", "source_id": "a", "target_id": "b", "weight": 2.0}]
COMMUNITIES = [
    {"id": "k1", "community": 1, "level": 0, "entity_ids": ["a", "b"], "size": 2},
    {"id": "k2", "community": 2, "level": 0, "entity_ids": ["c"], "size": 1},
]
REPORTS = [
    {"id": "k1", "community": 1, "level": 0, "rank": 1.0},
    {"id": "k2", "community": 2, "level": 0, "rank": 9.0},
]


def _table(name: str, rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=TABLE_SCHEMAS[name])


def _built() -> tuple[pa.Table, pa.Table, pa.Table]:
    return (
        _table(schema.ENTITIES, ENTITIES),
        _table(schema.RELATIONSHIPS, RELATIONSHIPS),
        _table(schema.COMMUNITIES, COMMUNITIES),
    )


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NamespaceStore:
    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(tmp_path / "storage"))
    store = NamespaceStore(tmp_path / "storage", "tiny")
    for name, table in zip(
        (schema.ENTITIES, schema.RELATIONSHIPS, schema.COMMUNITIES), _built(), strict=True
    ):
        store.write_table(name, table)
    store.write_table(schema.COMMUNITY_REPORTS, _table(schema.COMMUNITY_REPORTS, REPORTS))
    return store


def _first_colour(page: str) -> int:
    """The community drawn in the palette's first colour: the one the page ranks first."""
    data = json.loads(re.search(r"^const data = (.*);$", page, flags=re.MULTILINE).group(1))
    (community,) = {n["community"] for n in data["nodes"] if n["color"] == PALETTE[0]}
    return community


def test_pipeline_graph_writes_the_namespace_page_ranked_by_its_reports_and_says_where(
    store: NamespaceStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", "--namespace", "tiny"]) == 0
    where = store.location(schema.GRAPH_VIEW)
    assert capsys.readouterr().out == f"3 entities, 1 relationships -> {where}\n"
    assert _first_colour(store.read_bytes(schema.GRAPH_VIEW).decode("utf-8")) == 2


def test_pipeline_graph_out_writes_that_file_and_not_the_namespace_page(
    store: NamespaceStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "elsewhere.html"
    assert main(["graph", "--namespace", "tiny", "--out", str(out)]) == 0
    assert capsys.readouterr().out == f"3 entities, 1 relationships -> {out}\n"
    assert "<title>tiny: entity graph</title>" in out.read_text("utf-8")
    assert not store.has_file(schema.GRAPH_VIEW)


def test_the_stages_page_is_drawn_unranked_whatever_reports_an_earlier_run_left(
    store: NamespaceStore,
) -> None:
    view = write_graph_view(store, built=_built())
    assert (view.nodes, view.edges, view.where) == (3, 1, str(store.location(schema.GRAPH_VIEW)))
    assert _first_colour(store.read_bytes(schema.GRAPH_VIEW).decode("utf-8")) == 1  # the bigger one
