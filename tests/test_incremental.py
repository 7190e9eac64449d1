"""Incremental re-indexing through Dagster (offline engine, real MiniLM, real Parquet and LanceDB).

One namespace goes through add -> edit -> delete; after each step the counts of new, reused and removed
work are exact, and after the last one every table equals a from-scratch index of the same folder.
A reader thread queries the LanceDB tables during every re-index and must always see a complete
version (the old rows or the new ones, full-text search working).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import lancedb
import pyarrow as pa
import pytest

from assets.launch import run_index
from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from tests.support.env import scoped_env

NAMESPACE = "incr"
FRESH = "incr_fresh"
DOCS = {
    "curie.txt": "Marie Curie studied physics in Paris with Pierre Curie. Marie Curie and Pierre Curie "
    "discovered polonium in Paris.\n",
    "babbage.txt": "Charles Babbage designed the Analytical Engine in London. Ada Lovelace wrote a program "
    "for the Analytical Engine with Charles Babbage.\n",
    "dunant.txt": "Henry Dunant founded the Red Cross in Geneva. Gustave Moynier chaired the Red Cross in "
    "Geneva with Henry Dunant.\n",
    "nightingale.txt": "Florence Nightingale nursed soldiers in Scutari. Florence Nightingale reformed "
    "nursing in England with Sidney Herbert.\n",
}
ADDED = (
    "tesla.txt",
    "Nikola Tesla worked for Thomas Edison in New York. Nikola Tesla and George Westinghouse built "
    "alternating current systems in Pittsburgh.\n",
)
EDIT = " Marie Curie visited Warsaw with Bronislawa Dluska.\n"
DELETED = "dunant.txt"  # Henry Dunant, Gustave Moynier, Red Cross, Geneva appear nowhere else
COMPARED = [schema.ENTITIES, schema.RELATIONSHIPS, schema.COVARIATES, schema.COMMUNITIES]


class LanceReader(threading.Thread):
    """Reads the namespace's LanceDB tables in a loop, as a query service would, until stopped."""

    def __init__(self, uri: Path) -> None:
        super().__init__(daemon=True)
        self.uri = uri
        self.stop = threading.Event()
        self.seen: list[frozenset[str]] = []
        self.errors: list[str] = []
        self.first_read = threading.Event()  # one read done (or failed): it has not been starved out

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                db = lancedb.connect(str(self.uri))
                table = db.open_table(schema.LANCE_TEXT_UNITS)  # pinned to the latest version
                ids = frozenset(table.to_arrow().column("id").to_pylist())
                table.search("Curie", query_type="fts").limit(3).to_list()  # needs the index
                reports = db.open_table(schema.LANCE_COMMUNITY_REPORTS)
                reports.search("Curie", query_type="fts").limit(3).to_list()
                self.seen.append(ids)
            except Exception as exc:  # noqa: BLE001 - every failure is what this thread reports
                self.errors.append(f"{type(exc).__name__}: {exc}")
            self.first_read.set()
            self.stop.wait(0.02)  # leave the CPU to the run being observed


def _meta(result, asset: str) -> dict:
    return next(s.metadata for s in result.steps if s.asset == asset)


@pytest.fixture(scope="module")
def cycle(tmp_path_factory: pytest.TempPathFactory, dagster_instance) -> Iterator[dict]:
    storage = tmp_path_factory.mktemp("incr_storage")
    folder = tmp_path_factory.mktemp("incr_input")
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    store = NamespaceStore(storage, NAMESPACE)
    out: dict = {"store": store, "steps": {}, "readers": {}, "unit_ids": {}}

    def step(name: str) -> None:
        reader = LanceReader(store.lance_uri) if store.has_lance_table(schema.LANCE_TEXT_UNITS) else None
        if reader:
            reader.start()
            # However busy the machine, the reader has read once before the run can finish: `seen` is
            # never empty, and every read, during the run or just before it, must see a whole version.
            assert reader.first_read.wait(120), "the reader thread never got to read"
        result = run_index(NAMESPACE, input_dir=str(folder), instance=dagster_instance)
        if reader:
            reader.stop.set()
            reader.join(timeout=60)
            out["readers"][name] = reader
        assert result.success, result.failures
        out["steps"][name] = result
        out["unit_ids"][name] = frozenset(store.read_table(schema.TEXT_UNITS).column("id").to_pylist())
        out[f"{name}_docs"] = store.read_table(schema.DOCUMENTS)
        out[f"{name}_lance_version"] = store.open_lance_table(schema.LANCE_TEXT_UNITS).version
        out[f"{name}_fingerprints"] = (
            store.read_table(schema.COMMUNITY_REPORTS).column("fingerprint").to_pylist()
        )

    # Every version is kept, so that test_every_lance_version_written_by_a_reindex_is_complete can open
    # each one (pruning is tested in test_lance_versions.py).
    with scoped_env(PIPELINE_STORAGE_ROOT=str(storage), PIPELINE_LANCE_KEEP_VERSIONS="100000"):
        step("initial")
        (folder / ADDED[0]).write_text(ADDED[1], encoding="utf-8")
        step("add")
        (folder / "curie.txt").write_text(DOCS["curie.txt"].rstrip("\n") + EDIT, encoding="utf-8")
        step("edit")
        (folder / DELETED).unlink()
        step("delete")
        out["fresh"] = run_index(FRESH, input_dir=str(folder), instance=dagster_instance)
    out["fresh_store"] = NamespaceStore(storage, FRESH)
    yield out


@pytest.mark.parametrize(
    ("step", "docs", "delta", "units", "embedded", "reused"),
    [
        ("initial", 4, (4, 0, 0, 0), (4, 0, 0), 4, 0),
        ("add", 5, (1, 0, 0, 4), (1, 0, 4), 1, 4),
        ("edit", 5, (0, 1, 0, 4), (1, 1, 4), 1, 4),
        ("delete", 4, (0, 0, 1, 4), (0, 1, 4), 0, 4),
    ],
)
def test_each_step_redoes_only_the_changed_work(cycle, step, docs, delta, units, embedded, reused):
    result = cycle["steps"][step]
    d = _meta(result, "input_documents")
    assert (d["rows"], d["documents"]) == (docs, docs)
    assert (
        d["documents_added"],
        d["documents_changed"],
        d["documents_removed"],
        d["documents_unchanged"],
    ) == delta
    t = _meta(result, "base_text_units")
    assert (t["text_units_new"], t["text_units_removed"], t["text_units_unchanged"]) == units
    assert t["rows"] == docs  # one text unit per short document
    e = _meta(result, "text_unit_embeddings")
    assert e["rows"] == docs and e["embeddings_computed"] == embedded
    assert e["embedding_cache_hits"] >= docs - embedded
    x = _meta(result, "extracted_graph")
    assert x["reused_offline_extractions"] == reused and x["text_units"] == docs
    assert x["llm_calls"] == 0  # offline
    g = _meta(result, "entities")
    # Every description is written once, taken from the last run, or empty; after the first run the
    # unchanged documents' entities are taken (the tables equal a fresh index's: the test below).
    written = g["descriptions_offline"] + g["descriptions_reused"] + g["descriptions_kept_as_is"]
    assert written == g["rows"] + _meta(result, "relationships")["rows"]
    assert (g["descriptions_reused"] > 0) == (step != "initial")


def test_deleted_document_leaves_nothing_behind(cycle):
    store: NamespaceStore = cycle["store"]
    gone_doc = next(r["id"] for r in cycle["edit_docs"].to_pylist() if r["title"] == DELETED)
    gone_units = cycle["unit_ids"]["edit"] - cycle["unit_ids"]["delete"]
    assert len(gone_units) == 1
    titles = set(store.read_table(schema.ENTITIES).column("title").to_pylist())
    assert not {"Henry Dunant", "Gustave Moynier", "Geneva"} & titles
    assert {"Marie Curie", "Warsaw", "Nikola Tesla"} <= titles
    for table in (schema.ENTITIES, schema.RELATIONSHIPS):
        for row in store.read_table(table).to_pylist():
            assert not set(row["text_unit_ids"]) & gone_units and gone_doc not in row["document_ids"]
    claims = store.read_table(schema.COVARIATES)
    assert gone_doc not in claims.column("document_id").to_pylist()
    assert not set(claims.column("text_unit_id").to_pylist()) & gone_units
    for name in (schema.LANCE_TEXT_UNITS, schema.LANCE_TEXT_UNIT_PIECES):
        lance = store.open_lance_table(name).to_arrow()
        assert gone_doc not in lance.column("document_id").to_pylist()
    lance_units = store.open_lance_table(schema.LANCE_TEXT_UNITS).to_arrow().column("id").to_pylist()
    assert sorted(lance_units) == sorted(cycle["unit_ids"]["delete"])  # no duplicates, no leftovers
    lance_entities = set(store.open_lance_table(schema.LANCE_ENTITIES).to_arrow().column("title").to_pylist())
    assert lance_entities == titles
    reports = store.open_lance_table(schema.LANCE_COMMUNITY_REPORTS).to_arrow().column("id").to_pylist()
    assert sorted(reports) == sorted(store.read_table(schema.COMMUNITY_REPORTS).column("id").to_pylist())


def _rows(store: NamespaceStore, table: str) -> list[dict]:
    data = store.read_table(table)
    data = data.drop_columns(
        [c for c in ("creation_date", "period", "human_readable_id") if c in data.column_names]
    )
    return sorted(data.to_pylist(), key=lambda r: str(r["id"]))


def test_incremental_result_equals_a_from_scratch_index(cycle):
    assert cycle["fresh"].success, cycle["fresh"].failures
    for table in COMPARED:
        assert _rows(cycle["store"], table) == _rows(cycle["fresh_store"], table), table
    fresh = _meta(cycle["fresh"], "community_reports")
    after = _meta(cycle["steps"]["delete"], "community_reports")
    assert after["reports"] == fresh["reports"]
    incr = pa.Table.from_pylist(_rows(cycle["store"], schema.COMMUNITY_REPORTS))
    scratch = pa.Table.from_pylist(_rows(cycle["fresh_store"], schema.COMMUNITY_REPORTS))
    assert incr.column("fingerprint").to_pylist() == scratch.column("fingerprint").to_pylist()
    assert incr.column("full_content").to_pylist() == scratch.column("full_content").to_pylist()


def test_whole_graph_is_reclustered_and_only_changed_reports_regenerated(cycle):
    steps = ("initial", "add", "edit", "delete")
    for before, step in zip(steps, steps[1:], strict=False):
        c = _meta(cycle["steps"][step], "communities")
        entities = _meta(cycle["steps"][step], "entities")["entities"]
        assert c["sizes_per_level_json"]["0"]["entities"] == entities  # every entity clustered
        old = set(cycle[f"{before}_fingerprints"])
        now = cycle[f"{step}_fingerprints"]
        r = _meta(cycle["steps"][step], "community_reports")
        assert r["generated"] == sum(f not in old for f in now), step
        assert r["reused"] == sum(f in old for f in now) > 0, step
    # adding and editing touch some communities; deleting an isolated document only removes its own
    assert _meta(cycle["steps"]["add"], "community_reports")["generated"] > 0
    assert _meta(cycle["steps"]["edit"], "community_reports")["generated"] > 0
    assert len(cycle["delete_fingerprints"]) < len(cycle["edit_fingerprints"])


def test_readers_during_reindex_always_see_a_complete_version(cycle):
    versions = [cycle["unit_ids"][s] for s in ("initial", "add", "edit", "delete")]
    for i, step in enumerate(("add", "edit", "delete"), start=1):
        reader = cycle["readers"][step]
        assert reader.errors == [], reader.errors[:3]
        assert reader.seen, f"the reader never read during {step}"
        assert set(reader.seen) <= {versions[i - 1], versions[i]}, step


def test_every_lance_version_written_by_a_reindex_is_complete(cycle):
    """A reader opens whatever version is latest at that instant: each one a re-index committed must
    hold a whole set of rows and answer full-text queries (an overwrite would first commit a version
    without the full-text index)."""
    table = cycle["store"].open_lance_table(schema.LANCE_TEXT_UNITS)
    complete = {cycle["unit_ids"][s] for s in ("initial", "add", "edit", "delete")}
    first, last = cycle["initial_lance_version"], cycle["delete_lance_version"]
    assert last > first
    for version in range(first + 1, last + 1):
        table.checkout(version)
        assert frozenset(table.to_arrow().column("id").to_pylist()) in complete, version
        assert table.search("Curie", query_type="fts").limit(3).to_list(), version


def test_every_asset_reports_rows_llm_usage_and_duration(cycle):
    result = cycle["steps"]["edit"]
    for step in result.steps:
        for key in ("rows", "llm_calls", "llm_cache_hits", "llm_prompt_tokens", "llm_cost_usd", "duration_s"):
            assert key in step.metadata, (step.asset, key)
    histogram = _meta(result, "communities")["size_histogram"]
    assert histogram.splitlines()[2].startswith("| level | 1 |")
