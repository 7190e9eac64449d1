"""One index version per answer (issue 59, finding 6): a re-index runs while queries in every mode ask
about the document it changes, and no answer may cite both texts.

The changed document names a different family in each version (OLD / NEW tokens), so an answer's text
tells which version each of its parts came from. The re-index is `index_folder` with a `log` callback:
every message it prints (after each stage, and inside stages between their writes) is an event at which
the index thread stops while every mode is asked, over HTTP through the real service and through
`pipeline.api`. Read unpinned, local and DRIFT answers here cite both families from the entities
write on (new entities and relationships, old reports). Offline engine, real MiniLM, Parquet, LanceDB.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pyarrow as pa
import pytest

from pipeline import api
from pipeline.index.run import index_folder
from pipeline.io.manifest import GRACE_VERSIONS, MANIFEST, VERSIONS_DIR, commit_manifest
from pipeline.io.store import NamespaceStore
from pipeline.service.auth import hash_key
from pipeline.service.models import bodies
from pipeline.service.modes import Work, answer
from pipeline.service.queries import QueryService
from pipeline.settings import Settings, load_settings
from tests.support.service_data import serving

NS = "obs"
KEY = "grk_test-versions-0123456789abcdef"
OLD, NEW = "Quorvath", "Brisaldo"
CHANGED = "observatory.txt"


def observatory(family: str) -> str:
    return (
        f"Elena {family} founded the {family} Observatory in Lisbon. Elena {family} studied comets at the "
        f"{family} Observatory with Tomas {family}. The {family} Observatory lent a telescope to Marie Curie.\n"
    )


DOCS = {
    CHANGED: observatory(OLD),
    "curie.txt": "Marie Curie studied physics in Paris with Pierre Curie. Marie Curie and Pierre Curie "
    "discovered polonium in Paris.\n",
    "dunant.txt": "Henry Dunant founded the Red Cross in Geneva. Gustave Moynier chaired the Red Cross in "
    "Geneva with Henry Dunant.\n",
}
QUESTION = "Who founded the observatory in Lisbon and studied comets there?"
BODY = {
    "global": {"question": QUESTION},
    "local": {"question": QUESTION},
    "drift": {"question": QUESTION},
    "basic": {"question": QUESTION},
    "lazy": {"question": QUESTION},
    "auto": {"question": QUESTION},
    "chunks": {"query": QUESTION, "top_k": 3},
    "vector": {"query": QUESTION, "top_k": 3},
}
API_MODES = ("global", "local", "drift", "basic", "lazy", "auto")


def version_ids(store: NamespaceStore) -> set[str]:
    """Every row id of every table of the pinned version (long enough to be found in text only as an id)."""
    assert store.manifest is not None
    ids: set[str] = set()
    tables = [
        store.read_table(n.removesuffix(".parquet")) for n in store.manifest.files if n.endswith(".parquet")
    ]
    tables += [store.open_lance_table(name).to_arrow() for name in store.manifest.lance]
    for table in tables:
        if "id" in table.column_names:
            ids |= {str(i) for i in table.column("id").to_pylist() if i is not None and len(str(i)) >= 8}
    return ids


@dataclass
class Answer:
    event: str
    door: str  # "http" | "api" | "held"
    mode: str
    text: str


@dataclass
class Reindex:
    answers: list[Answer] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    old_ids: set[str] = field(default_factory=set)
    new_ids: set[str] = field(default_factory=set)
    held_version: int = 0
    final_version: int = 0


def _held_answers(held: NamespaceStore, settings: Settings) -> dict[str, str]:
    """Every mode answered through the service's own mode functions on a view pinned earlier."""
    from pipeline.runtime import cached_embedder, make_engine

    work = Work(
        held, settings, lambda: make_engine(settings), cached_embedder(settings), math.inf, threading.Event()
    )
    return {
        mode: json.dumps(answer(work, mode, bodies()[mode](namespace=NS, **BODY[mode])), default=str)
        for mode in BODY
    }


@pytest.fixture(scope="module")
def reindex(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reindex]:
    base = tmp_path_factory.mktemp("versions")
    corpus, storage = base / "corpus", base / "storage"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    keys = base / "keys.yaml"
    keys.write_text(f"tenants:\n  t:\n    key_sha256: {hash_key(KEY)}\n    namespaces: [{NS}]\n")
    settings = load_settings(storage_root=str(storage), api_keys_file=str(keys), service_timeout_s=110.0)

    index_folder(NS, corpus, settings=settings, log=lambda _: None)
    out = Reindex(old_ids=version_ids(NamespaceStore(storage, NS).pinned()))
    (corpus / CHANGED).write_text(observatory(NEW), encoding="utf-8")
    held: list[NamespaceStore] = []
    service = QueryService(settings)
    with serving(service) as url, httpx.Client(base_url=url, timeout=120) as client:

        def ask_everything(event: str) -> None:
            out.events.append(event)
            for mode, body in BODY.items():
                r = client.post(
                    f"/v1/query/{mode}", json={"namespace": NS, **body}, headers={"X-API-Key": KEY}
                )
                assert r.status_code == 200, (event, mode, r.text)
                out.answers.append(Answer(event, "http", mode, r.text))
            for mode in API_MODES:
                result = getattr(api, f"{mode}_search")(NS, QUESTION, settings=settings)
                out.answers.append(Answer(event, "api", mode, json.dumps(result.to_dict(), default=str)))

        def on_event(message: str) -> None:
            if not held:  # a question that began before the re-index wrote anything
                held.append(NamespaceStore(storage, NS).pinned())
            ask_everything(message)

        index_folder(NS, corpus, settings=settings, log=on_event)
        ask_everything("after the run")
    service.close()
    current = NamespaceStore(storage, NS).pinned()
    out.new_ids = version_ids(current)
    out.final_version = current.manifest.version if current.manifest else 0
    out.held_version = held[0].manifest.version if held[0].manifest else 0
    out.answers += [
        Answer("after the run", "held", m, t) for m, t in _held_answers(held[0], settings).items()
    ]
    yield out


def test_no_answer_cites_both_texts_of_the_changed_document(reindex: Reindex) -> None:
    assert len(reindex.events) >= 15  # stages and the writes inside them: the index was caught between many
    mixed = [(a.event, a.door, a.mode) for a in reindex.answers if OLD in a.text and NEW in a.text]
    assert not mixed
    # the check can fail: every mode cited the changed document, in its old and then its new text
    for mode in BODY:
        for door in ("http", "api") if mode in API_MODES else ("http",):
            texts = [a.text for a in reindex.answers if (a.mode, a.door) == (mode, door)]
            assert OLD in texts[0] and NEW in texts[-1], (mode, door)


def test_each_answers_rows_all_exist_in_one_version(reindex: Reindex) -> None:
    only_old, only_new = reindex.old_ids - reindex.new_ids, reindex.new_ids - reindex.old_ids
    assert only_old and only_new
    cited = []
    for a in reindex.answers:
        olds, news = {i for i in only_old if i in a.text}, {i for i in only_new if i in a.text}
        assert not (olds and news), (a.event, a.door, a.mode, sorted(olds)[:3], sorted(news)[:3])
        cited.append((bool(olds), bool(news)))
    assert (True, False) in cited and (False, True) in cited  # ids of each version were cited


def test_a_question_begun_before_the_run_reads_its_version_to_the_end(reindex: Reindex) -> None:
    """A view pinned at the first event, used after the run committed its version: its reads all come
    from the version it began on, in every mode."""
    assert reindex.final_version == reindex.held_version + 1
    held = [a for a in reindex.answers if a.door == "held"]
    assert {a.mode for a in held} == set(BODY)
    for a in held:
        assert OLD in a.text and NEW not in a.text, a.mode


# ---- the manifest itself -------------------------------------------------------------------------------
def _table(generation: int) -> pa.Table:
    return pa.table({"id": ["a", "b"], "text": [f"alpha {generation}", f"beta {generation}"]})


def _documents(*titles: str) -> pa.Table:
    from pipeline.core import schema

    rows = [{"id": f"d{i}", "title": t, "text": t} for i, t in enumerate(titles)]  # other columns null
    return pa.Table.from_pylist(rows, schema=schema.DOCUMENTS_SCHEMA)


def test_a_namespace_without_a_manifest_reads_its_current_files(tmp_path: Path) -> None:
    from pipeline.core import schema

    store = NamespaceStore(tmp_path, "plain")
    store.write_table(schema.DOCUMENTS, _documents("one"))
    view = store.pinned()
    assert view.manifest is None
    assert view.read_table(schema.DOCUMENTS).column("title").to_pylist() == ["one"]


def test_a_pinned_view_reads_its_version_after_later_writes_and_commits(tmp_path: Path) -> None:
    from pipeline.core import schema

    store = NamespaceStore(tmp_path, "ns")
    store.write_table(schema.DOCUMENTS, _documents("one"))
    store.replace_lance_table("things", _table(1), fts_columns=("text",))
    commit_manifest(store)
    first = store.pinned()
    store.replace_lance_table("things", _table(2), fts_columns=("text",))
    store.delete_file(f"{schema.DOCUMENTS}.parquet")  # a table the next version lacks
    assert first.has_table(schema.DOCUMENTS) and not store.has_table(schema.DOCUMENTS)
    second_was_written = store.pinned()
    assert second_was_written.manifest == first.manifest  # not committed yet: queries stay on version 1
    commit_manifest(store)
    for generation in range(3, 3 + GRACE_VERSIONS):
        store.replace_lance_table("things", _table(generation), fts_columns=("text",))
    # version 1's Lance rows are still readable through the view, full-text index included
    assert first.open_lance_table("things").to_arrow().column("text")[0].as_py() == "alpha 1"
    hits = first.open_lance_table("things").search("alpha", query_type="fts").limit(2).to_arrow()
    assert hits.column("text").to_pylist()[0] == "alpha 1"
    latest = store.pinned()
    assert latest.manifest is not None and latest.manifest.version == 2
    assert not latest.has_table(schema.DOCUMENTS)
    assert latest.open_lance_table("things").to_arrow().column("text")[0].as_py() == "alpha 2"


def test_commits_keep_the_newest_versions_files_and_replace_the_manifest_whole(tmp_path: Path) -> None:
    from pipeline.core import schema

    store = NamespaceStore(tmp_path, "ns")
    docs = _documents("one")
    for _ in range(GRACE_VERSIONS + 3):
        store.write_table(schema.DOCUMENTS, docs)
        manifest = commit_manifest(store)
    folder = tmp_path / "ns" / VERSIONS_DIR
    kept = sorted(int(p.name) for p in folder.iterdir())
    assert kept == list(range(manifest.version - GRACE_VERSIONS + 1, manifest.version + 1))
    assert json.loads((tmp_path / "ns" / MANIFEST).read_text())["version"] == manifest.version
    assert not [p for p in (tmp_path / "ns").iterdir() if p.name.endswith(".tmp")]
    # the frozen copy is the file as it was committed, not a later rewrite of it
    frozen = tmp_path / "ns" / manifest.files[f"{schema.DOCUMENTS}.parquet"]
    assert frozen.stat().st_ino == (tmp_path / "ns" / f"{schema.DOCUMENTS}.parquet").stat().st_ino
    store.write_table(schema.DOCUMENTS, docs)
    assert frozen.stat().st_ino != (tmp_path / "ns" / f"{schema.DOCUMENTS}.parquet").stat().st_ino


def test_a_damaged_manifest_loses_the_pin_not_the_answer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from pipeline.core import schema

    store = NamespaceStore(tmp_path, "ns")
    store.write_table(schema.DOCUMENTS, _documents("one"))
    commit_manifest(store)
    store.write_table(schema.DOCUMENTS, _documents("one", "two"))
    (tmp_path / "ns" / MANIFEST).write_text("{not json")
    view = store.pinned()
    assert view.manifest is None and view.read_table(schema.DOCUMENTS).num_rows == 2
    assert "manifest" in caplog.text and "ns" in caplog.text
    assert commit_manifest(store).version == 2  # numbered past the versions still kept, not from 1 again
    assert store.pinned().read_table(schema.DOCUMENTS).num_rows == 2


def test_versions_on_an_s3_root(s3_bucket) -> None:
    """The same commit and pinned reads on S3: server-side copies, a manifest PUT, old folders deleted."""
    import uuid

    from pipeline.core import schema
    from pipeline.io.storage import S3Config, StorageRoot

    config = S3Config(
        s3_bucket.endpoint_url, s3_bucket.region, s3_bucket.access_key_id, s3_bucket.secret_access_key
    )
    store = NamespaceStore(StorageRoot(s3_bucket.uri(f"v-{uuid.uuid4().hex[:8]}"), config), "ns")
    store.write_table(schema.DOCUMENTS, _documents("one"))
    store.replace_lance_table("things", _table(1), fts_columns=("text",))
    commit_manifest(store)
    first = store.pinned()
    store.write_table(schema.DOCUMENTS, _documents("one", "two"))
    store.replace_lance_table("things", _table(2), fts_columns=("text",))
    assert first.read_table(schema.DOCUMENTS).column("title").to_pylist() == ["one"]
    assert first.open_lance_table("things").to_arrow().column("text")[0].as_py() == "alpha 1"
    for _ in range(GRACE_VERSIONS):
        manifest = commit_manifest(store)
    assert store.storage.list_dirs(f"ns/{VERSIONS_DIR}") == [
        f"{n:08d}" for n in range(manifest.version - GRACE_VERSIONS + 1, manifest.version + 1)
    ]
    assert store.pinned().read_table(schema.DOCUMENTS).num_rows == 2


def test_a_dagster_index_run_ends_by_committing_its_version(sample_book: Path) -> None:
    """The `index_version` asset runs last in `index_namespace`: the run's tables are one version."""
    from pipeline.core import schema

    view = NamespaceStore(sample_book, "demo").pinned()
    assert view.manifest is not None and view.manifest.version >= 1
    assert {
        f"{schema.ENTITIES}.parquet",
        f"{schema.COMMUNITY_REPORTS}.parquet",
        schema.CHUNK_GRAPH_SNAPSHOT,
    } <= set(view.manifest.files)
    assert schema.LANCE_TEXT_UNITS in view.manifest.lance
    assert (
        view.read_table(schema.ENTITIES).num_rows
        == NamespaceStore(sample_book, "demo").read_table(schema.ENTITIES).num_rows
    )
