"""An input folder as an attacker or a careless user leaves it (issue 59): FIFOs, sockets and links out of
the folder are skipped with a status and never read; UTF-16/32 and BOM text is decoded; empty files and
deeply nested JSON are named for what they are; `pipeline index` says how many files it rejected.

A FIFO that ingest opened would block the test forever, so those tests carry a pytest-timeout as the hang
guard; what they assert is the status row, returned while no writer ever opens the FIFO's other end."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from assets.cli.index_display import print_outcome
from assets.runs import IndexRunResult, StepSummary
from pipeline.core import schema
from pipeline.index import input_documents
from pipeline.index.context import IndexContext
from pipeline.io.store import NamespaceStore
from pipeline.ops.ingest import read_documents
from pipeline.settings import Settings
from tests.conftest import REPO_ROOT, make_dagster_home

SECRET = "Tenant B's launch code is 7741."


def _kinds(result) -> dict[str, str]:
    return {e.source_path: e.error_type for e in result.errors}


def _outside(tmp_path: Path) -> Path:
    other = tmp_path / "tenant_b"
    other.mkdir()
    (other / "secret.txt").write_text(SECRET, encoding="utf-8")
    return other


# ---- the folder stays inside itself ----------------------------------------------------------------------
@pytest.mark.timeout(120)
def test_a_fifo_is_skipped_with_a_status_and_never_opened(tmp_path: Path):
    root = tmp_path / "in"
    root.mkdir()
    (root / "ok.txt").write_text("Fine.", encoding="utf-8")
    os.mkfifo(root / "pipe.txt")  # no writer ever opens it: a read of it would block forever
    result = read_documents(root)
    assert _kinds(result) == {"pipe.txt": "special_file"}
    assert "FIFO" in result.errors[0].reason
    assert [d.title for d in result.documents] == ["ok.txt"]


def test_a_socket_is_skipped_with_a_status(tmp_path: Path):
    root = tmp_path / "in"
    root.mkdir()
    (root / "ok.txt").write_text("Fine.", encoding="utf-8")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(root / "s.txt"))
        result = read_documents(root)
    assert _kinds(result) == {"s.txt": "special_file"} and "socket" in result.errors[0].reason


def test_links_out_of_the_folder_are_skipped_and_their_text_never_indexed(tmp_path: Path):
    other = _outside(tmp_path)
    root = tmp_path / "in"
    (root / "sub").mkdir(parents=True)
    (root / "ok.txt").write_text("Fine.", encoding="utf-8")
    (root / "abs.txt").symlink_to(other / "secret.txt")  # absolute target
    (root / "sub" / "rel.md").symlink_to(Path("..", "..", "tenant_b", "secret.txt"))  # relative target
    (root / "hop.txt").symlink_to(root / "abs.txt")  # a link inside to a link that leaves
    (root / "corpus_b").symlink_to(other, target_is_directory=True)
    result = read_documents(root)
    assert _kinds(result) == {
        "abs.txt": "outside_input",
        "sub/rel.md": "outside_input",
        "hop.txt": "outside_input",
        "corpus_b": "outside_input",
    }
    assert [d.text for d in result.documents] == ["Fine."]


def test_a_link_inside_the_folder_to_a_file_inside_it_is_read(tmp_path: Path):
    root = tmp_path / "in"
    (root / "real").mkdir(parents=True)
    (root / "real" / "a.txt").write_text("Alpha.", encoding="utf-8")
    (root / "alias.md").symlink_to(Path("real", "a.txt"))
    linked_root = tmp_path / "linked"
    linked_root.symlink_to(root, target_is_directory=True)  # the folder named through a link is fine
    for folder in (root, linked_root):
        result = read_documents(folder)
        assert result.errors == [] and [d.text for d in result.documents] == ["Alpha."]
        assert result.duplicates == 1


@pytest.mark.timeout(120)
def test_a_file_swapped_for_a_fifo_after_the_walk_is_refused_not_hung_on(tmp_path: Path):
    from pipeline.ops.input_folder import NotRegularError, read_regular, scan

    (tmp_path / "a.txt").write_text("Alpha.", encoding="utf-8")
    (entry,) = scan(tmp_path)
    (tmp_path / "a.txt").unlink()
    os.mkfifo(tmp_path / "a.txt")
    with pytest.raises(NotRegularError, match="replaced"):
        read_regular(entry)


def test_a_symlink_loop_and_a_dangling_link_are_named(tmp_path: Path):
    (tmp_path / "ok.txt").write_text("Fine.", encoding="utf-8")
    (tmp_path / "loop_a.txt").symlink_to(tmp_path / "loop_b.txt")
    (tmp_path / "loop_b.txt").symlink_to(tmp_path / "loop_a.txt")
    (tmp_path / "gone.txt").symlink_to(tmp_path / "never.txt")
    result = read_documents(tmp_path)
    assert _kinds(result) == {
        "gone.txt": "unreadable",
        "loop_a.txt": "unreadable",
        "loop_b.txt": "unreadable",
    }
    assert all("broken symlink" in e.reason for e in result.errors)


# ---- the sensor watches the same folder the same way -------------------------------------------------------
@pytest.mark.timeout(300)
def test_the_sensor_survives_fifos_and_loops_and_ignores_edits_outside(tmp_path: Path, dagster_instance):
    from dagster import build_sensor_context

    from assets.indexing.sensors import input_root_sensor
    from assets.resources import PipelineSettingsResource

    other = _outside(tmp_path)
    root = tmp_path / "input"
    ns = root / "faults"
    ns.mkdir(parents=True)
    (ns / "a.txt").write_text("Alpha.", encoding="utf-8")
    os.mkfifo(ns / "pipe.txt")
    (ns / "loop.txt").symlink_to(ns / "loop.txt")
    (ns / "secret.txt").symlink_to(other / "secret.txt")
    cursor = None

    def tick():
        nonlocal cursor
        context = build_sensor_context(
            instance=dagster_instance,
            cursor=cursor,
            resources={"pipeline_settings": PipelineSettingsResource(input_root=str(root))},
        )
        result = input_root_sensor(context)
        cursor = result.cursor
        for request in result.dynamic_partitions_requests or []:
            dagster_instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        return [r.partition_key for r in result.run_requests or []]

    assert tick() == ["faults"]
    (other / "secret.txt").write_text(SECRET + " Rotated to 9902.", encoding="utf-8")
    assert tick() == []  # an edit outside the folder is none of this namespace's business
    (ns / "b.txt").write_text("Beta.", encoding="utf-8")
    assert tick() == ["faults"]


# ---- S3 prefixes ---------------------------------------------------------------------------------------------
def test_s3_keys_stay_under_their_prefix(s3_bucket):
    import boto3

    from pipeline.io.storage import S3Config, StorageRoot

    client = boto3.client(
        "s3",
        endpoint_url=s3_bucket.endpoint_url,
        aws_access_key_id=s3_bucket.access_key_id,
        aws_secret_access_key=s3_bucket.secret_access_key,
        region_name=s3_bucket.region,
    )
    for key in ("faults/ns/a.parquet", "faults/ns/..", "faults/other/secret.txt"):
        client.put_object(Bucket=s3_bucket.bucket, Key=key, Body=SECRET.encode())
    config = S3Config(
        s3_bucket.endpoint_url, s3_bucket.region, s3_bucket.access_key_id, s3_bucket.secret_access_key
    )
    root = StorageRoot(s3_bucket.uri("faults"), config)
    # an object named "ns/.." is listed as a file by S3; its key would name the prefix above
    assert [f.key for f in root.list_files("ns")] == ["ns/a.parquet"]
    with pytest.raises(ValueError, match="keys stay under the root"):
        root.read_bytes("ns/../other/secret.txt")  # the endpoint would resolve it to another prefix


# ---- misleading messages ------------------------------------------------------------------------------------
TEXT = "Grüße aus Köln — naïve café, 東京."


@pytest.mark.parametrize(
    "encoding,bom",
    [
        ("utf-16-le", b"\xff\xfe"),
        ("utf-16-be", b"\xfe\xff"),
        ("utf-8", b"\xef\xbb\xbf"),
        ("utf-32-le", b"\xff\xfe\x00\x00"),
        ("utf-32-be", b"\x00\x00\xfe\xff"),
        ("utf-16-le", b""),  # no BOM: the NUL of every other byte is UTF-16, not binary
        ("utf-16-be", b""),
    ],
)
def test_unicode_text_with_or_without_a_bom_is_decoded_not_called_binary(tmp_path: Path, encoding, bom):
    (tmp_path / "doc.txt").write_bytes(bom + TEXT.encode(encoding))
    (tmp_path / "rows.csv").write_bytes(bom + f'title,text\nT,"{TEXT}"\n'.encode(encoding))
    result = read_documents(tmp_path)
    assert result.errors == []
    assert [d.text for d in result.documents] == [TEXT] and result.duplicates == 1  # one text, twice


def test_bytes_behind_a_bom_that_are_not_text_are_named_for_what_they_are(tmp_path: Path):
    (tmp_path / "blob.txt").write_bytes(b"\xff\xfe" + bytes([1, 0, 2, 0, 3, 0, 4, 0]) * 64)  # controls
    (tmp_path / "broken.txt").write_bytes(b"\xff\xfe" + "Half".encode("utf-16-le") + b"\x00\xd8A\x00")
    result = read_documents(tmp_path)
    assert _kinds(result) == {"blob.txt": "binary", "broken.txt": "encoding"}
    broken = next(e for e in result.errors if e.source_path == "broken.txt")
    assert "UTF-16 byte-order mark" in broken.reason and result.documents == []


@pytest.mark.parametrize("name", ["empty.csv", "empty.json", "empty.jsonl", "empty.parquet", "empty.txt"])
def test_an_empty_file_gets_an_ingest_errors_row(tmp_path: Path, name: str):
    (tmp_path / name).write_bytes(b"")
    (result_error,) = read_documents(tmp_path).errors
    assert (result_error.source_path, result_error.error_type) == (name, "empty")
    assert "0 bytes" in result_error.reason


def test_a_row_file_with_no_rows_says_so(tmp_path: Path):
    (tmp_path / "header.csv").write_text("id,title,text\n", encoding="utf-8")
    (tmp_path / "none.json").write_text("[]", encoding="utf-8")
    result = read_documents(tmp_path)
    assert _kinds(result) == {"header.csv": "empty", "none.json": "empty"}
    assert all("no rows" in e.reason for e in result.errors)


def test_json_nested_900_levels_is_nested_too_deeply_not_invalid(tmp_path: Path):
    deep = "[" * 900 + "]" * 900
    (tmp_path / "deep.json").write_text(deep, encoding="utf-8")
    (tmp_path / "deep.jsonl").write_text('{"text": "Fine line."}\n' + deep + "\n", encoding="utf-8")
    # a bracket inside a string is text, not nesting
    (tmp_path / "brackets.json").write_text(json.dumps({"text": "[" * 900}), encoding="utf-8")
    result = read_documents(tmp_path)
    errors = {(e.source_path, e.row): (e.error_type, e.reason) for e in result.errors}
    assert set(errors) == {("deep.json", None), ("deep.jsonl", 1)}
    for error_type, reason in errors.values():
        assert error_type == "too_deep" and "nested too deeply" in reason and "not valid" not in reason
    assert sorted(d.text for d in result.documents) == ["Fine line.", "[" * 900]


# ---- how many files were rejected -----------------------------------------------------------------------------
def _bad_folder(folder: Path, good: bool) -> None:
    folder.mkdir(parents=True)
    if good:
        (folder / "notes.txt").write_text(
            "The lighthouse keeper Elin Varga logs every ship passing Skerry Point.", encoding="utf-8"
        )
    (folder / "empty.csv").write_bytes(b"")
    (folder / "image.png").write_bytes(b"\x89PNG")
    os.mkfifo(folder / "pipe.txt")


def test_the_stage_metadata_counts_rejected_files(tmp_path: Path):
    folder = tmp_path / "input"
    _bad_folder(folder, good=True)
    (folder / "rows.json").write_text(json.dumps([{"text": "One."}, {"title": "no text"}]), encoding="utf-8")
    settings = Settings(storage_root=tmp_path / "storage")
    ctx = IndexContext(NamespaceStore(settings.storage_root, "ns"), settings, None, None)  # type: ignore[arg-type]
    report = input_documents.run(ctx, folder)
    assert (
        report.metadata["input_files"],
        report.metadata["files_rejected"],
        report.metadata["rows_rejected"],
    ) == (
        5,
        3,
        1,
    )
    assert ctx.store.read_table(schema.INGEST_ERRORS).num_rows == 4


def test_the_outcome_says_how_many_files_were_rejected_instead_of_no_failures():
    result = IndexRunResult(
        ["run-1"],
        True,
        [
            StepSummary(
                "input_documents", {"rows": 3, "input_files": 8, "files_rejected": 5, "rows_rejected": 0}
            ),
            StepSummary("documents", {"rows": 3}),
        ],
        [],
    )
    console = Console(record=True, width=120)
    print_outcome(result, 1.0, console)
    text = console.export_text()
    assert "no failures" not in text
    assert text.rstrip().endswith("5 of 8 files rejected (see ingest_errors)")


def _index(tmp_path: Path, folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.update(
        DAGSTER_HOME=str(make_dagster_home(tmp_path / "dagster_home")),
        PIPELINE_STORAGE_ROOT=str(tmp_path / "storage"),
        PIPELINE_INPUT_ROOT=str(folder.parent),
    )
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "assets",
            "index",
            *(args or ("--namespace", "faults", "--input", str(folder))),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=600,
    )


@pytest.mark.timeout(660)
def test_index_where_every_file_is_rejected_exits_non_zero_with_the_count(tmp_path: Path):
    folder = tmp_path / "input"
    _bad_folder(folder, good=False)
    out = _index(tmp_path, folder)
    assert out.returncode == 1, out.stderr[-3000:]
    assert "3 of 3 files rejected (see ingest_errors)" in out.stderr, out.stderr[-3000:]
    assert "pipe.txt: special_file" in out.stderr


@pytest.mark.timeout(660)
def test_index_ends_with_how_many_files_were_rejected(tmp_path: Path):
    folder = tmp_path / "input"
    _bad_folder(folder, good=True)
    out = _index(tmp_path, folder)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "no failures" not in out.stdout
    assert out.stdout.rstrip().endswith("3 of 4 files rejected (see ingest_errors)"), out.stdout[-2000:]


@pytest.mark.timeout(660)
def test_a_backfill_says_how_many_files_of_each_namespace_were_rejected(tmp_path: Path):
    folder = tmp_path / "input" / "partial"
    _bad_folder(folder, good=True)
    out = _index(tmp_path, folder, "--all-namespaces")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "partial: run " in out.stdout and "  3 of 4 files rejected (see ingest_errors)\n" in out.stdout
