"""Documents in through the service (issue 70): write keys upload, replace and delete documents of a
managed namespace; each change runs the namespace's incremental index through the real Dagster instance
(`pipeline index` in its own process), one run at a time; every document's status is read from the
runs' own records.

One real `graphrag-serve` on 127.0.0.1 with a keys file of four keys, embedding through the real MiniLM
behind HTTP (`tests.support.minilm_http`), whose `/hold` keeps one embeddings request unanswered: the
fixed point inside a run at which a test uploads more, or kills the run's process.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from tests.support.documents import docx_file, encrypted_pdf, text_pdf
from tests.support.event_stream import parse
from tests.support.uploads_service import FILE_LIMIT, OTHER, QUOTA_BYTES, READER, SCOPED, WRITER, Served


def _pdf() -> bytes:
    """Two pages: the lighthouse facts on page 2 only."""
    first = [
        (f"The harbour council met on day {i} to count the fishing boats.", 72, 700 - 40 * i)
        for i in range(8)
    ]
    second = [
        ("The Vigo lighthouse keeper Marta Sousa lit the lamp with whale oil every night.", 72, 700),
        ("Marta Sousa kept the Vigo lighthouse logbook in a brass box.", 72, 660),
    ]
    return text_pdf([first, second])


def _text(tag: str) -> bytes:
    return (f"The {tag} ledger records that the guild of {tag} sold salt in Porto. " * 6).encode()


def _upload(client: httpx.Client, ns: str, files: dict[str, bytes]) -> httpx.Response:
    return client.post(f"/v1/namespaces/{ns}/documents", files=[("file", (n, b)) for n, b in files.items()])


def _finished(client: httpx.Client, ns: str, run_id: str) -> tuple[list[tuple[str, dict[str, Any]]], dict]:
    """The run's events stream, read to its end: the events and the final `run` event's data."""
    with client.stream("GET", f"/v1/namespaces/{ns}/runs/{run_id}/events") as response:
        assert response.status_code == 200, response.read()
        events = parse(response.read().decode())
    assert events and events[-1][0] == "run", events[-3:]
    return events, events[-1][1]


def _documents(client: httpx.Client, ns: str) -> dict[str, dict[str, Any]]:
    got = client.get(f"/v1/namespaces/{ns}/documents")
    assert got.status_code == 200, got.text
    return {d["name"]: d for d in got.json()["documents"]}


def _namespace(served: Served, name: str) -> str:
    created = served.client(WRITER).post("/v1/namespaces", json={"namespace": name})
    assert created.status_code == 201, created.text
    return name


@contextmanager
def _held_run(served: Served, writer: httpx.Client, ns: str, name: str) -> Iterator[dict[str, Any]]:
    """Upload `name` and yield its run once the run waits on its first embeddings request (held by
    the embedding server until the block ends): a fixed point inside a running stage."""
    held = served.embedder.hold()["held"]
    try:
        run = _upload(writer, ns, {name: _text(name)}).json()["run"]
        served.embedder.wait_held(held + 1)
        yield run
    finally:
        served.embedder.release()


def test_a_write_key_creates_a_namespace_its_tenant_reads_and_no_other_key_creates_one(
    served: Served,
) -> None:
    writer, reader, other = served.client(WRITER), served.client(READER), served.client(OTHER)
    created = writer.post("/v1/namespaces", json={"namespace": "acme-new"})
    assert created.status_code == 201 and created.json()["owner"] == "acme", created.text
    assert writer.post("/v1/namespaces", json={"namespace": "acme-new"}).status_code == 409
    assert (served.input_root / "acme-new").is_dir()
    listed = {n["namespace"]: n for n in reader.get("/v1/namespaces").json()["namespaces"]}
    assert "acme-new" in listed and listed["acme-new"]["writable"] is False  # the tenant's, read-only key
    assert {n["namespace"] for n in other.get("/v1/namespaces").json()["namespaces"]} == set()
    for key in (READER, SCOPED):
        refused = served.client(key).post("/v1/namespaces", json={"namespace": f"by-{key[7:13]}"})
        assert refused.status_code == 403, refused.text
    assert other.get("/v1/namespaces/acme-new/documents").status_code == 403


def test_an_uploaded_pdf_and_docx_are_indexed_and_a_question_cites_the_pdf_page(served: Served) -> None:
    ns = _namespace(served, "handbook")
    writer = served.client(WRITER)
    notes = docx_file(["The tide table of Vigo lists two high tides a day."], "Tide notes")
    accepted = _upload(
        writer, ns, {"lighthouse.pdf": _pdf(), "tides.docx": notes, "locked.pdf": encrypted_pdf()}
    )
    assert accepted.status_code == 202, accepted.text
    body = accepted.json()
    assert {d["name"]: d["status"] for d in body["documents"]} == {
        "lighthouse.pdf": "queued",
        "tides.docx": "queued",
        "locked.pdf": "queued",
    }
    events, final = _finished(writer, ns, body["run"]["id"])
    assert final["status"] == "succeeded", final
    stages = [data["stage"] for kind, data in events if kind == "stage_finished"]
    assert stages[0] == "input_documents" and "index_version" in stages
    docs = _documents(writer, ns)
    assert docs["lighthouse.pdf"]["status"] == docs["tides.docx"]["status"] == "indexed", docs
    assert (docs["locked.pdf"]["status"], docs["locked.pdf"]["reason"]) == ("failed", "encrypted")  # hostile
    assert docs["lighthouse.pdf"]["pages"] == 2 and docs["lighthouse.pdf"]["run"] == body["run"]["id"]
    run = writer.get(f"/v1/namespaces/{ns}/runs/{body['run']['id']}").json()
    assert run["delta"]["documents_added"] == 2 and run["stages"] and run["usage"]["llm_calls"] == 0
    from dagster import DagsterInstance

    from tests.conftest import environment

    with environment(DAGSTER_HOME=str(served.dagster_home)), DagsterInstance.get() as instance:  # the UI's
        dagster_run = instance.get_run_by_id(run["dagster_run_id"])
        assert dagster_run is not None and dagster_run.tags["dagster/partition"] == ns
    answer = writer.post(
        "/v1/query/basic", json={"namespace": ns, "question": "Who keeps the Vigo lighthouse logbook?"}
    )
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    cited = [c for c in result["citations"] if c.get("document_title") == "lighthouse.pdf"]
    assert cited and cited[0]["page_start"] <= 2 <= cited[0]["page_end"], result["citations"]
    quoted = [q for q in result["quotes"] if "logbook" in q["text"]]
    assert quoted and quoted[0]["page_start"] == quoted[0]["page_end"] == 2, result["quotes"]


def test_every_change_endpoint_refuses_a_read_only_key_and_another_tenants_key(served: Served) -> None:
    ns = _namespace(served, "guarded")
    doc = "0" * 24
    for key in (READER, SCOPED, OTHER):
        client = served.client(key)
        calls = [
            client.post(f"/v1/namespaces/{ns}/documents", files=[("file", ("a.txt", _text("a")))]),
            client.put(f"/v1/namespaces/{ns}/documents/{doc}", files=[("file", ("a.txt", _text("a")))]),
            client.delete(f"/v1/namespaces/{ns}/documents/{doc}"),
            client.post(f"/v1/namespaces/{ns}/documents/{doc}/retry"),
            client.post(f"/v1/namespaces/{ns}/documents/retry"),
        ]
        assert [c.status_code for c in calls] == [403] * 5, [c.text for c in calls]
    # an operator's folder stays read-only through the API, even for a key that may write
    refused = _upload(served.client(WRITER), "operator-docs", {"a.txt": _text("a")})
    assert refused.status_code == 403 and "operator" in refused.json()["error"]["message"]
    assert not list((served.input_root / ns).glob("*.txt"))


def test_an_unsafe_name_an_oversized_file_and_a_quota_overflow_are_refused(served: Served) -> None:
    ns = _namespace(served, "bounded")
    writer = served.client(WRITER)
    for name in ("../escape.txt", "a/b.txt", "..\\win.txt", ".hidden.txt"):
        refused = _upload(writer, ns, {name: _text("x")})
        assert refused.status_code == 422 and refused.json()["error"]["code"] == "unsafe_name", (
            name,
            refused.text,
        )
    big = _upload(writer, ns, {"big.txt": b"word " * (FILE_LIMIT // 5 + 1)})
    assert big.status_code == 413 and big.json()["error"]["detail"]["limit_bytes"] == FILE_LIMIT
    parts = {f"part{i}.txt": (f"{i} " + "filler " * 40_000).encode()[: FILE_LIMIT - 10] for i in range(6)}
    over = _upload(writer, ns, parts)
    assert over.status_code == 413 and over.json()["error"]["code"] == "quota_exceeded", over.text
    assert over.json()["error"]["detail"]["limit_bytes"] == QUOTA_BYTES
    assert (
        writer.post(f"/v1/namespaces/{ns}/documents", files=[("file", ("x.exe", b"MZ"))]).status_code == 415
    )
    assert not [p for p in (served.input_root / ns).iterdir() if not p.name.startswith(".")]
    assert not (served.input_root / "escape.txt").exists()
    assert writer.get(f"/v1/namespaces/{ns}/runs").json()["runs"] == []  # nothing refused ran


def test_three_uploads_during_a_running_index_make_exactly_one_more_run(served: Served) -> None:
    ns = _namespace(served, "busy")
    writer = served.client(WRITER)
    with _held_run(served, writer, ns, "first.txt") as first:
        later = [_upload(writer, ns, {f"{t}.txt": _text(t)}).json() for t in ("second", "third", "fourth")]
    assert {r["run"]["id"] for r in later} == {later[0]["run"]["id"]} != {first["id"]}
    assert all(r["run"]["status"] == "queued" for r in later)
    assert _finished(writer, ns, first["id"])[1]["status"] == "succeeded"
    assert _finished(writer, ns, later[0]["run"]["id"])[1]["status"] == "succeeded"
    runs = writer.get(f"/v1/namespaces/{ns}/runs").json()["runs"]
    assert [r["id"] for r in runs] == [later[0]["run"]["id"], first["id"]]
    assert len(runs[0]["documents"]) == 3 and runs[0]["delta"]["documents_added"] == 3
    assert {d["status"] for d in _documents(writer, ns).values()} == {"indexed"}


def test_a_run_killed_mid_stage_leaves_its_documents_failed_and_retryable(served: Served) -> None:
    ns = _namespace(served, "killed")
    writer = served.client(WRITER)
    with _held_run(served, writer, ns, "doomed.txt") as run:
        record = writer.get(f"/v1/namespaces/{ns}/runs/{run['id']}").json()
        assert record["status"] == "running" and _documents(writer, ns)["doomed.txt"]["status"] == "parsing"
        os.kill(record["pid"], signal.SIGKILL)
        _, final = _finished(writer, ns, run["id"])
    assert (final["status"], final["reason"]) == ("failed", "killed"), final
    doc = _documents(writer, ns)["doomed.txt"]
    assert (doc["status"], doc["reason"], doc["retryable"]) == ("failed", "run_killed", True), doc
    retried = writer.post(f"/v1/namespaces/{ns}/documents/{doc['id']}/retry")
    assert retried.status_code == 202, retried.text
    assert _finished(writer, ns, retried.json()["run"]["id"])[1]["status"] == "succeeded"
    assert _documents(writer, ns)["doomed.txt"]["status"] == "indexed"
    again = writer.post(f"/v1/namespaces/{ns}/documents/{doc['id']}/retry")
    assert again.status_code == 409 and again.json()["error"]["code"] == "not_failed"


def _tables_mentioning(store: NamespaceStore, needles: set[str]) -> list[str]:
    """The namespace's committed tables holding any of `needles` in any column."""
    pinned = store.pinned()
    found = []
    for table in pinned.manifest.files if pinned.manifest else {}:
        name = table.removesuffix(".parquet")
        if not pinned.has_table(name):
            continue
        text = json.dumps(pinned.read_table(name).to_pylist(), default=str)
        if any(n in text for n in needles):
            found.append(name)
    return found


def test_a_delete_removes_the_document_from_every_table_and_the_answer_and_a_replace_reindexes_it_alone(
    served: Served,
) -> None:
    ns = _namespace(served, "edited")
    writer = served.client(WRITER)
    files = {"lighthouse.pdf": _pdf(), "salt.txt": _text("salt"), "wine.txt": _text("wine")}
    run = _upload(writer, ns, files).json()["run"]
    assert _finished(writer, ns, run["id"])[1]["status"] == "succeeded"
    question = {"namespace": ns, "question": "Who keeps the Vigo lighthouse logbook?"}
    before = writer.post("/v1/query/basic", json=question).json()
    assert any(c.get("document_title") == "lighthouse.pdf" for c in before["result"]["citations"])
    store = NamespaceStore(served.storage, ns)
    pdf = _documents(writer, ns)["lighthouse.pdf"]
    units = store.pinned().read_table(schema.TEXT_UNITS, columns=["id", "document_id"]).to_pylist()
    gone = {pdf["content_hash"], *(u["id"] for u in units if u["document_id"] == pdf["content_hash"])}
    assert _tables_mentioning(store, gone)

    deleted = writer.delete(f"/v1/namespaces/{ns}/documents/{pdf['id']}")
    assert deleted.status_code == 202, deleted.text
    assert _documents(writer, ns)["lighthouse.pdf"]["status"] == "deleted"
    _, final = _finished(writer, ns, deleted.json()["run"]["id"])
    assert final["status"] == "succeeded", final
    assert _tables_mentioning(store, gone) == []
    after = writer.post("/v1/query/basic", json=question).json()
    assert not any(c.get("document_title") == "lighthouse.pdf" for c in after["result"]["citations"]), after
    listed = _documents(writer, ns)["lighthouse.pdf"]
    assert (listed["status"], listed["removed"]) == ("deleted", True)

    salt = _documents(writer, ns)["salt.txt"]
    replaced = writer.put(
        f"/v1/namespaces/{ns}/documents/{salt['id']}", files=[("file", ("new.txt", _text("pepper")))]
    )
    assert replaced.status_code == 202 and replaced.json()["documents"][0]["name"] == "salt.txt", (
        replaced.text
    )
    _, final = _finished(writer, ns, replaced.json()["run"]["id"])
    record = writer.get(f"/v1/namespaces/{ns}/runs/{final['id']}").json()
    delta = record["delta"]
    assert (delta["documents_changed"], delta["documents_added"], delta["documents_removed"]) == (1, 0, 0), (
        delta
    )
    assert delta["documents_unchanged"] == 1  # wine.txt: not re-read by any later stage
    now = _documents(writer, ns)["salt.txt"]
    assert now["status"] == "indexed" and now["content_hash"] != salt["content_hash"]
    duplicate = _upload(writer, ns, {"copy.txt": _text("wine")}).json()
    assert (
        duplicate["documents"]
        == [
            {
                "id": _documents(writer, ns)["wine.txt"]["id"],
                "name": "wine.txt",
                "status": "duplicate",
                "duplicate_of": "wine.txt",
                "uploaded_as": "copy.txt",
            }
        ]
        and duplicate["run"] is None
    )
    log = writer.get(f"/v1/namespaces/{ns}/changes").json()["changes"]
    assert [c["action"] for c in log] == ["upload"] * 3 + ["delete", "replace"]
    assert all(c["by"]["tenant"] == "acme" and WRITER not in json.dumps(c) for c in log)


def test_a_name_is_stored_as_one_plain_file_name_or_refused_with_why() -> None:
    from pipeline.service.uploads.names import UnsafeName, safe_name

    assert (
        safe_name("Caf\u0065\u0301 notes.pdf") == "Caf\u00e9 notes.pdf"
    )  # one name typed two ways: one file
    assert safe_name("  report.docx ") == "report.docx"
    for bad in (
        "",
        ".",
        "..",
        "../x.txt",
        "a/b.txt",
        "a\\b.txt",
        "nul\x00.txt",
        "bell\x07.txt",
        "line\nbreak.txt",
        ".env",
        "x" * 201 + ".txt",
        "rtl\u202e.txt",
    ):
        with pytest.raises(UnsafeName):
            safe_name(bad)


def test_the_documents_api_is_in_the_openapi_document(served: Served) -> None:
    spec = httpx.get(f"{served.url}/openapi.json", timeout=60).json()["paths"]
    ns = "/v1/namespaces/{namespace}"
    expected = {
        "/v1/namespaces": {"get", "post"},
        f"{ns}/documents": {"get", "post"},
        f"{ns}/documents/{{document_id}}": {"get", "put", "delete"},
        f"{ns}/documents/{{document_id}}/retry": {"post"},
        f"{ns}/documents/retry": {"post"},
        f"{ns}/runs": {"get"},
        f"{ns}/runs/{{run_id}}": {"get"},
        f"{ns}/runs/{{run_id}}/events": {"get"},
        f"{ns}/changes": {"get"},
    }
    for path, methods in expected.items():
        assert methods <= set(spec[path]), (path, set(spec.get(path, {})))
    upload = spec[f"{ns}/documents"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert upload["properties"]["file"]["items"]["format"] == "binary"
