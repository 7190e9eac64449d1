"""The storage root as an s3:// URI, against a moto S3 server on 127.0.0.1 (tests/support/s3_server.py):
the namespace store's Parquet, files and LanceDB on S3, a whole offline index run through Dagster writing to
S3 and queries reading from it, and the errors for an unsupported scheme and a missing bucket."""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from pipeline.core import schema
from pipeline.io.storage import BucketNotFoundError, S3Config, StorageRoot, parse_location
from pipeline.io.store import NamespaceStore, TableNotFoundError
from pipeline.settings import ConfigError, Settings, load_settings
from tests.support.s3_server import S3Bucket


def _config(bucket: S3Bucket) -> S3Config:
    return S3Config(bucket.endpoint_url, bucket.region, bucket.access_key_id, bucket.secret_access_key)


def _store(bucket: S3Bucket, namespace: str = "acme") -> NamespaceStore:
    root = StorageRoot(bucket.uri(f"t-{uuid.uuid4().hex[:8]}"), _config(bucket))
    return NamespaceStore(root, namespace)


def _keys(bucket: S3Bucket, prefix: str) -> list[str]:
    fs = StorageRoot(bucket.uri(), _config(bucket)).filesystem
    found = fs.get_file_info(
        pafs.FileSelector(f"{bucket.bucket}/{prefix}", recursive=True, allow_not_found=True)
    )
    return sorted(i.path for i in found if i.type == pafs.FileType.File)


# ---- the store on S3 ---------------------------------------------------------------------------------
def test_parquet_tables_and_files_round_trip_on_s3(s3_bucket: S3Bucket) -> None:
    store = _store(s3_bucket)
    assert not store.exists() and not store.has_table("docs") and store.tables() == []
    with pytest.raises(TableNotFoundError, match="no table 'docs'"):
        store.read_table("docs")

    data = pa.table({"id": ["a", "b", "c"], "n": [1, 2, 3]})
    location = store.write_table("docs", data)
    assert location == store.parquet_path("docs") and str(location).startswith("s3://")
    assert str(location).endswith("/acme/docs.parquet")
    assert store.exists() and store.has_table("docs")
    assert store.read_table("docs").equals(data)
    assert store.read_table("docs", columns=["n"]).column("n").to_pylist() == [1, 2, 3]

    store.write_table("docs", data.slice(0, 2))  # replaced, not appended
    assert store.read_table("docs").num_rows == 2
    store.write_bytes("notes.json", b'{"k": 1}')
    assert store.has_file("notes.json") and json.loads(store.read_bytes("notes.json")) == {"k": 1}
    assert store.file_size("notes.json") == 8

    [info] = store.tables()  # Parquet only: other files are not tables
    assert (info.name, info.kind, info.rows) == ("docs", "parquet", 2)
    assert info.modified.tzinfo is not None and store.file_modified("docs.parquet") == info.modified
    assert store.delete_file("notes.json") and not store.has_file("notes.json")
    assert not store.delete_file("notes.json")


def test_a_failed_write_leaves_the_old_object_on_s3(s3_bucket: S3Bucket) -> None:
    store = _store(s3_bucket)
    store.write_bytes("blob.bin", b"old")
    with pytest.raises(RuntimeError, match="producer failed"), store.open_output("blob.bin") as sink:
        sink.write(b"half of the new")
        raise RuntimeError("producer failed")
    assert store.read_bytes("blob.bin") == b"old"


def test_lance_tables_replace_and_search_on_s3(s3_bucket: S3Bucket) -> None:
    store = _store(s3_bucket)
    assert not store.has_lance_table("units")
    assert store.lance_uri.startswith("s3://") and store.lance_uri.endswith("/acme/lancedb")
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(6, 8)).astype(np.float32)
    texts = ["lighthouse keeper", "ferry timetable", "harbour crane", "lantern oil", "tide chart", "gulls"]

    def table(rows: range) -> pa.Table:
        flat = pa.array(vectors[list(rows)].reshape(-1))
        return pa.table(
            {
                "id": [f"u{i}" for i in rows],
                "text": [texts[i] for i in rows],
                "vector": pa.FixedSizeListArray.from_arrays(flat, 8),
            }
        )

    store.replace_lance_table("units", table(range(6)), fts_columns=["text"])
    assert store.has_lance_table("units")
    hits = store.open_lance_table("units").search(vectors[3]).limit(1).to_list()
    assert hits[0]["id"] == "u3"
    fts = store.open_lance_table("units").search("ferry", query_type="fts").limit(3).to_list()
    assert [h["id"] for h in fts] == ["u1"]

    store.replace_lance_table("units", table(range(3)), fts_columns=["text"])  # merge-insert in place
    reopened = NamespaceStore(store.storage, "acme").open_lance_table("units")
    assert sorted(reopened.to_arrow().column("id").to_pylist()) == ["u0", "u1", "u2"]
    assert reopened.search("harbour", query_type="fts").limit(3).to_list()[0]["id"] == "u2"
    [info] = [t for t in store.tables() if t.kind == "lancedb"]
    assert (info.name, info.rows) == ("units", 3)


def test_reading_an_unindexed_namespace_creates_nothing_on_s3(s3_bucket: S3Bucket) -> None:
    store = _store(s3_bucket, "ghost")
    prefix = store.storage.prefix
    assert not store.exists() and not store.has_lance_table(schema.LANCE_TEXT_UNITS)
    assert store.tables() == [] and not store.has_file(schema.CHUNK_GRAPH_SNAPSHOT)
    assert _keys(s3_bucket, prefix) == []


def test_a_bare_s3_uri_takes_endpoint_and_keys_from_the_environment(
    s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = f"env-{uuid.uuid4().hex[:8]}"
    for name, value in s3_bucket.env(prefix).items():
        monkeypatch.setenv(name, value)
    store = NamespaceStore(s3_bucket.uri(prefix), "acme")
    store.write_table("docs", pa.table({"id": ["x"]}))
    assert _keys(s3_bucket, prefix) == [f"{s3_bucket.bucket}/{prefix}/acme/docs.parquet"]
    assert NamespaceStore.from_settings(load_settings(), "acme").read_table("docs").num_rows == 1


# ---- errors and secrets ---------------------------------------------------------------------------
@pytest.mark.parametrize("uri", ["gs://bucket/prefix", "azure://c/p", "http://127.0.0.1:9/data"])
def test_an_unsupported_scheme_is_a_value_error_naming_the_supported_ones(uri: str) -> None:
    with pytest.raises(ValueError, match=r"not supported; use a local path, file:///absolute/path or s3://"):
        StorageRoot(uri)
    with pytest.raises(ConfigError, match="not supported"):
        load_settings(storage_root=uri)


@pytest.mark.parametrize("uri", ["s3://", "s3://Bad_Bucket/p", "s3://key:secret@bucket/p", "s3://b/../x"])
def test_a_malformed_s3_uri_is_a_value_error(uri: str) -> None:
    with pytest.raises(ValueError, match="invalid storage root"):
        parse_location(uri)


def test_local_locations_stay_paths() -> None:
    assert parse_location("data/storage") == Path("data/storage")
    assert parse_location("file:///srv/graphrag") == Path("/srv/graphrag")
    assert parse_location("s3://bkt/a//b/") == "s3://bkt/a/b"
    assert Settings(storage_root="relative/dir").storage_root == Path("relative/dir")


def test_a_missing_bucket_is_a_clear_error(s3_bucket: S3Bucket) -> None:
    root = StorageRoot(f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/p", _config(s3_bucket))
    store = NamespaceStore(root, "acme")
    with pytest.raises(
        BucketNotFoundError,
        match=rf"S3 bucket 'no-such-bucket-\w+' does not exist at {re.escape(s3_bucket.endpoint_url)}",
    ):
        store.write_table("docs", pa.table({"id": ["x"]}))
    with pytest.raises(BucketNotFoundError, match="create it"):
        store.read_table("docs")
    with pytest.raises(BucketNotFoundError):
        store.write_bytes("blob.bin", b"x")
    with pytest.raises(BucketNotFoundError):
        store.lancedb()


def test_s3_keys_come_from_aws_variables_and_are_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "wJalrXUtnFEMI-not-a-real-key"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    for name in ("PIPELINE_S3_ACCESS_KEY_ID", "PIPELINE_S3_SECRET_ACCESS_KEY", "PIPELINE_S3_REGION"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings(storage_root="s3://bkt/p", s3_endpoint_url="http://127.0.0.1:9")
    assert settings.s3_region == "eu-west-3"
    assert settings.s3_secret_access_key is not None
    assert settings.s3_secret_access_key.get_secret_value() == secret
    root = StorageRoot.from_settings(settings)
    options = root.lance_storage_options()
    assert options["aws_secret_access_key"] == secret and options["allow_http"] == "true"
    assert options["aws_endpoint"] == "http://127.0.0.1:9" and options["aws_region"] == "eu-west-3"
    for shown in (repr(settings), str(settings), repr(root), repr(root.s3), repr(NamespaceStore(root, "a"))):
        assert secret not in shown and "AKIDEXAMPLE" not in shown
    monkeypatch.setenv("PIPELINE_S3_SECRET_ACCESS_KEY", "from-pipeline")
    assert load_settings().s3_secret_access_key.get_secret_value() == "from-pipeline"


# ---- a whole index run on S3, then queries reading from it --------------------------------------------
DOCS = {
    "curie.txt": (
        "Marie Curie studied physics in Paris with Pierre Curie. Marie Curie and Pierre Curie discovered "
        "polonium and radium in their laboratory in Paris. Pierre Curie taught at the Sorbonne, and Marie "
        "Curie later led the Radium Institute.\n"
    ),
    "babbage.txt": (
        "Charles Babbage designed the Analytical Engine in London. Ada Lovelace wrote the first program for "
        "the Analytical Engine. Ada Lovelace corresponded with Charles Babbage about the Difference Engine.\n"
    ),
}


@pytest.fixture(scope="module")
def indexed_on_s3(s3_bucket: S3Bucket, dagster_instance, tmp_path_factory: pytest.TempPathFactory):
    from assets.launch import run_index

    prefix = f"index-{uuid.uuid4().hex[:8]}"
    folder = tmp_path_factory.mktemp("input")
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    workdir = tmp_path_factory.mktemp("cwd")
    env = {**s3_bucket.env(prefix), "PIPELINE_CACHE_DIR": str(tmp_path_factory.mktemp("caches"))}
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        mp.chdir(workdir)  # anything written to a relative local path would show up here
        result = run_index("pioneers", input_dir=str(folder), instance=dagster_instance)
        yield {"result": result, "prefix": prefix, "workdir": workdir}


def test_an_offline_index_run_writes_every_table_to_s3(indexed_on_s3, s3_bucket: S3Bucket) -> None:
    result = indexed_on_s3["result"]
    assert result.success, result.failures
    store = NamespaceStore.from_settings(load_settings(), "pioneers")
    assert store.uri == f"{s3_bucket.uri(indexed_on_s3['prefix'])}/pioneers"
    kinds = {(t.kind, t.name) for t in store.tables()}
    for table in (schema.DOCUMENTS, schema.TEXT_UNITS, schema.ENTITIES, schema.COMMUNITIES):
        assert ("parquet", table) in kinds
    assert ("lancedb", schema.LANCE_TEXT_UNITS) in kinds
    assert store.has_file(schema.GRAPHML_EXPORT) and store.read_bytes(schema.GRAPHML_EXPORT).startswith(
        b"<?xml"
    )
    assert store.has_file(schema.CHUNK_GRAPH_SNAPSHOT)
    assert list(indexed_on_s3["workdir"].iterdir()) == []  # no local folder named after the URI
    assert all(
        t.modified.tzinfo is not None and t.modified <= dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
        for t in store.tables()
    )


def test_vector_and_local_queries_read_the_index_from_s3(indexed_on_s3, capsys) -> None:
    from assets.cli import main
    from pipeline.api import local_search

    assert indexed_on_s3["result"].success
    assert main(["query", "vector", "--namespace", "pioneers", "--top-k", "1", "--json", "radium"]) == 0
    [hit] = json.loads(capsys.readouterr().out)
    assert hit["document_title"] == "curie.txt"

    result = local_search("pioneers", "How is Ada Lovelace related to Charles Babbage?")
    assert result.status == "completed"
    assert {s["title"] for s in result.seeds} >= {"Ada Lovelace", "Charles Babbage"}
    assert result.evidence and all(e["document_title"] == "babbage.txt" for e in result.evidence[:1])

    assert main(["query", "chunks", "--namespace", "pioneers", "--top-k", "1", "--json", "polonium"]) == 0
    [chunk] = json.loads(capsys.readouterr().out)
    assert chunk["metadata"]["document_title"] == "curie.txt"
    assert main(["status", "--namespace", "pioneers"]) == 0
    out = capsys.readouterr().out
    assert "at s3://" in out and "text_units" in out


def test_a_chroma_copy_of_an_s3_namespace_lives_in_a_local_folder(
    indexed_on_s3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import tempfile

    from assets.cli import main
    from pipeline.vector_tool.namespace_stores import chroma_dir

    assert indexed_on_s3["result"].success
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    argv = ["query", "vector", "--namespace", "pioneers", "--store", "chroma", "--top-k", "1", "--json"]
    assert main([*argv, "radium"]) == 0
    [hit] = json.loads(capsys.readouterr().out)
    assert hit["document_title"] == "curie.txt"
    store = NamespaceStore.from_settings(load_settings(), "pioneers")
    local = chroma_dir(store)
    assert local.is_relative_to(tmp_path) and (local / "chroma").is_dir()
    assert [p.name for p in local.glob(".synced-chroma-*.json")]  # the marker sits beside the copy
    assert not [f for f in store.storage.list_files("pioneers") if f.name.startswith(".synced")]
