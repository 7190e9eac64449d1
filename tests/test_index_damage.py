"""Damaged tables are named, not crashed on: a truncated Parquet file and a Lance table whose data file
or manifest is cut short, over HTTP, MCP and the CLI, in every answering mode, and repaired by
`pipeline index`.

Each namespace here is a copy of the session's indexed sample book (`sample_book`), damaged on disk as a
full disk or a crash would leave it; the shared fixture itself is never touched."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pipeline.core import schema
from pipeline.io.damage import IndexDamaged
from pipeline.io.repair import clear_damage, diagnose, find_damage
from pipeline.io.store import NamespaceStore
from pipeline.service.auth import hash_key
from pipeline.service.queries import QueryService
from pipeline.settings import Settings
from tests.conftest import REPO_ROOT, make_dagster_home
from tests.support import cli
from tests.support.namespace_copy import copy_namespace

KEY = "grk_test-damage-0123456789abcdef"
QUESTION = "Who is Scrooge's clerk?"
# Every mode's request body beside the namespace.
BODIES = {
    "global": {"question": QUESTION},
    "local": {"question": QUESTION},
    "drift": {"question": QUESTION},
    "basic": {"question": QUESTION},
    "lazy": {"question": QUESTION},
    "auto": {"question": QUESTION},
    "chunks": {"query": QUESTION},
    "vector": {"query": QUESTION},
}
TOOLS = {
    "global": "global_search",
    "local": "local_search",
    "drift": "drift_search",
    "basic": "basic_search",
    "lazy": "lazy_search",
    "auto": "auto_search",
    "chunks": "chunk_graph_search",
    "vector": "vector_query",
}
# The modes that read each damaged table, so must name it; the others answer (200) or name it too
# (local, DRIFT and lazy search passages in `text_unit_pieces`, the chunk graph its own snapshot).
READS_ENTITIES = {"local", "drift", "lazy", "auto"}
READS_LANCE_TEXT_UNITS = {"basic", "vector"}


def truncate(path: Path, size: int = 100) -> None:
    with open(path, "r+b") as f:  # in place, as a crash mid-write or a full disk leaves a file
        f.truncate(size)


def damage_parquet(ns_dir: Path) -> None:
    truncate(ns_dir / f"{schema.ENTITIES}.parquet")


def damage_lance_data(ns_dir: Path) -> None:
    data = list((ns_dir / "lancedb" / f"{schema.LANCE_TEXT_UNITS}.lance" / "data").glob("*.lance"))
    assert data
    for f in data:
        truncate(f, 200)


def damage_lance_manifest(ns_dir: Path) -> None:
    manifests = list(
        (ns_dir / "lancedb" / f"{schema.LANCE_TEXT_UNITS}.lance" / "_versions").glob("*.manifest")
    )
    assert manifests
    for f in manifests:
        truncate(f, 20)


DAMAGE = {
    "parquet": (damage_parquet, ("parquet", schema.ENTITIES), READS_ENTITIES),
    "lance-data": (damage_lance_data, ("lancedb", schema.LANCE_TEXT_UNITS), READS_LANCE_TEXT_UNITS),
    "lance-manifest": (damage_lance_manifest, ("lancedb", schema.LANCE_TEXT_UNITS), READS_LANCE_TEXT_UNITS),
}


@pytest.fixture(scope="module")
def damaged_root(sample_book: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A storage root with one namespace per kind of damage (named after it) and an intact one ('whole')."""
    root = tmp_path_factory.mktemp("damaged") / "storage"
    copy_namespace(sample_book / "demo", root / "whole")
    for name, (damage, _, _) in DAMAGE.items():
        copy_namespace(sample_book / "demo", root / name)
        damage(root / name)
    if (sample_book / "_cache").is_dir():  # the book's embeddings: queries embed the question only
        shutil.copytree(sample_book / "_cache", root / "_cache")
    return root


def views(store: NamespaceStore) -> list[NamespaceStore]:
    """The store, and the view a query reads through where the store pins a committed index version."""
    pinned = getattr(store, "pinned", None)
    return [store, pinned()] if pinned is not None else [store]


# ---- the store --------------------------------------------------------------------------------------
def test_a_truncated_parquet_table_is_named_with_its_repair(damaged_root: Path) -> None:
    for store in views(NamespaceStore(damaged_root, "parquet")):
        with pytest.raises(IndexDamaged) as caught:
            store.read_table(schema.ENTITIES)
        damaged = caught.value
        assert (damaged.namespace, damaged.table, damaged.kind) == ("parquet", "entities", "parquet")
        assert damaged.stage == "entities_and_relationships"
        assert "pipeline index --namespace parquet" in str(damaged) and "Parquet magic" not in str(damaged)
        with pytest.raises(IndexDamaged):
            store.read_schema(schema.ENTITIES)
    # a column the table lacks is the caller's mistake, not damage
    with pytest.raises(Exception) as wrong:
        NamespaceStore(damaged_root, "whole").read_table(schema.ENTITIES, columns=["no_such_column"])
    assert not isinstance(wrong.value, IndexDamaged)


def test_a_lance_table_cut_short_is_found_and_named(damaged_root: Path) -> None:
    with pytest.raises(IndexDamaged) as opened:
        NamespaceStore(damaged_root, "lance-manifest").open_lance_table(schema.LANCE_TEXT_UNITS)
    assert (opened.value.table, opened.value.kind, opened.value.stage) == (
        "text_units",
        "lancedb",
        "text_unit_embeddings",
    )
    assert "lance error" not in str(opened.value) and ".rs" not in str(opened.value)
    # a data file cut short opens, and fails only when read: the diagnosis reads it
    data = NamespaceStore(damaged_root, "lance-data")
    found = diagnose(data)
    assert found is not None and (found.table, found.kind) == ("text_units", "lancedb")
    assert [(d.kind, d.table) for d in find_damage(NamespaceStore(damaged_root, "parquet"))] == [
        ("parquet", "entities")
    ]
    assert diagnose(NamespaceStore(damaged_root, "whole")) is None
    assert diagnose(NamespaceStore(damaged_root, "never-indexed")) is None


def test_status_names_the_damaged_table(damaged_root: Path) -> None:
    with pytest.raises(IndexDamaged) as caught:
        NamespaceStore(damaged_root, "parquet").tables()
    assert caught.value.table == "entities"


# ---- HTTP and MCP ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def base_url(damaged_root: Path, embedder: object) -> Iterator[str]:
    from tests.support.service_data import serving

    keys = damaged_root.parent / "keys.yaml"
    keys.write_text(
        f"tenants:\n  t:\n    key_sha256: {hash_key(KEY)}\n    namespaces: [whole, {', '.join(DAMAGE)}]\n"
    )
    settings = Settings(storage_root=damaged_root, api_keys_file=keys, service_timeout_s=110.0)
    service = QueryService(settings, embedder=embedder)
    with serving(service) as url:
        yield url


def _assert_named(error: dict, namespace: str, kind: str, table: str) -> None:
    assert error["code"] == "index_damaged", error
    detail = error["detail"]
    assert (detail["namespace"], detail["kind"], detail["table"]) == (namespace, kind, table)
    assert f"pipeline index --namespace {namespace}" in error["message"]
    assert "Traceback" not in error["message"] and ".rs:" not in error["message"]


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_http_answers_503_index_damaged_in_every_mode(base_url: str, damage: str) -> None:
    _, (kind, table), readers = DAMAGE[damage]
    named = set()
    with httpx.Client(base_url=base_url, timeout=120, headers={"Authorization": f"Bearer {KEY}"}) as http:
        for mode, body in BODIES.items():
            r = http.post(f"/v1/query/{mode}", json={"namespace": damage, **body})
            assert r.status_code in (200, 503), (mode, r.status_code, r.text[:500])
            if r.status_code == 503:
                _assert_named(r.json()["error"], damage, kind, table)
                named.add(mode)
            else:
                assert r.json()["status"] != "degraded", (mode, r.text[:500])
        assert readers <= named, (readers - named, named)
        status = http.get(f"/v1/namespaces/{damage}/status")
        assert status.status_code == 503, status.text[:500]
        _assert_named(status.json()["error"], damage, kind, table)
        whole = http.get("/v1/namespaces/whole/status")
        assert whole.status_code == 200 and whole.json()["indexed"]


def test_mcp_gives_the_same_json_error(base_url: str) -> None:
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def run() -> None:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {KEY}"})
        async with http, Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as client:
            for damage, (_, (kind, table), readers) in DAMAGE.items():
                for mode in sorted(readers):
                    result = await client.call_tool(TOOLS[mode], {"namespace": damage, **BODIES[mode]})
                    assert result.is_error, (damage, mode, result.content)
                    _assert_named(json.loads(result.content[0].text)["error"], damage, kind, table)

    asyncio.run(asyncio.wait_for(run(), timeout=900))  # a guard against a hang only


# ---- the CLI -----------------------------------------------------------------------------------------
def run_cli(root: Path, *args: str, dagster_home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PIPELINE_STORAGE_ROOT": str(root)}
    if dagster_home is not None:
        env["DAGSTER_HOME"] = str(dagster_home)
    return cli.run_cli(env, *args, timeout=600)


def _assert_one_line(out: subprocess.CompletedProcess[str], namespace: str, kind: str, table: str) -> None:
    assert out.returncode == 3, (out.returncode, out.stderr[-3000:])
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr[-3000:]
    line = lines[0]
    shown = {"parquet": "Parquet", "lancedb": "LanceDB"}[kind]
    assert (
        line.startswith("error: ")
        and f"namespace {namespace!r}" in line
        and f"{shown} table {table!r}" in line
    )
    assert f"pipeline index --namespace {namespace}" in line


@pytest.mark.parametrize("damage", ["parquet", "lance-data"])
def test_cli_prints_one_line_and_exits_3(damaged_root: Path, damage: str) -> None:
    _, (kind, table), readers = DAMAGE[damage]
    for mode in sorted(readers):
        question = BODIES[mode].get("question") or BODIES[mode]["query"]
        _assert_one_line(
            run_cli(damaged_root, "query", mode, "--namespace", damage, question), damage, kind, table
        )
    _assert_one_line(run_cli(damaged_root, "status", "--namespace", damage), damage, kind, table)


# ---- repair ------------------------------------------------------------------------------------------
def test_clear_damage_removes_only_the_damaged_tables(damaged_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "storage"
    for name in ("parquet", "lance-manifest"):
        copy_namespace(damaged_root / name, root / name)
    said: list[str] = []
    removed = clear_damage(NamespaceStore(root, "parquet"), said.append)
    assert [(d.kind, d.table) for d in removed] == [("parquet", "entities")]
    assert not (root / "parquet" / "entities.parquet").exists()
    assert (root / "parquet" / "relationships.parquet").exists()
    assert "entities_and_relationships" in said[0]
    removed = clear_damage(NamespaceStore(root, "lance-manifest"))
    assert [(d.kind, d.table) for d in removed] == [("lancedb", "text_units")]
    assert not NamespaceStore(root, "lance-manifest").has_lance_table(schema.LANCE_TEXT_UNITS)
    assert NamespaceStore(root, "lance-manifest").has_lance_table(schema.LANCE_TEXT_UNIT_PIECES)


def test_pipeline_index_rebuilds_damaged_tables(damaged_root: Path, tmp_path: Path) -> None:
    """Parquet and Lance damage at once: the re-index rebuilds both, and every mode answers again."""
    root = tmp_path / "storage"
    copy_namespace(damaged_root / "parquet", root / "demo")
    damage_lance_data(root / "demo")
    damage_lance_manifest(root / "demo")
    if (damaged_root / "_cache").is_dir():
        shutil.copytree(damaged_root / "_cache", root / "_cache")
    home = make_dagster_home(tmp_path / "dagster_home")
    out = run_cli(
        root,
        "index",
        "--namespace",
        "demo",
        "--input",
        str(REPO_ROOT / "samples" / "demo"),
        dagster_home=home,
    )
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    assert "'entities' was damaged" in out.stdout and "'text_units' was damaged" in out.stdout
    store = NamespaceStore(root, "demo")
    assert all(find_damage(view) == [] for view in views(store))
    whole = NamespaceStore(damaged_root, "whole")
    assert store.read_table(schema.ENTITIES).num_rows == whole.read_table(schema.ENTITIES).num_rows
    assert (
        store.open_lance_table(schema.LANCE_TEXT_UNITS).count_rows()
        == whole.open_lance_table(schema.LANCE_TEXT_UNITS).count_rows()
    )
    q = run_cli(root, "query", "local", "--namespace", "demo", QUESTION)
    assert q.returncode == 0, q.stderr[-3000:]
