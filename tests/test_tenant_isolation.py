"""Tenant isolation in every query mode, at every door, with two namespaces of different text under one
storage root (issue 59, "Gaps in the test suite").

Each namespace's corpus holds a made-up secret no other corpus has. A question about one namespace's
secret is asked of that namespace first (its answer must carry the secret: the control that shows the
question does reach it, so the check below can fail) and then of the other namespace, whose whole
answer (text, citations, context rows, metadata) must name none of the first namespace's secret,
document title, entity names or row ids. The owner is asked first so that any cache the doors share
(embeddings, local indexes, chunk graphs, vector stores) already holds its rows when the other is asked.

Doors: HTTP through `graphrag-serve`'s app under uvicorn, the Python API (`pipeline.api`, the vector
query tool and the graph RAG tool, each one tool over both namespaces' stores), and the CLI (`main`
in-process, `--json`). Offline engine, real MiniLM, Parquet and LanceDB; both corpora are indexed once
per module by `index_folder`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from pipeline.service.auth import hash_key
from pipeline.service.queries import QueryService
from pipeline.settings import Settings, load_settings
from tests.support.service_data import serving


@dataclass(frozen=True)
class Tenant:
    namespace: str
    key: str
    title: str
    text: str
    question: str  # about this tenant's secret
    secret: str
    names: tuple[str, ...]  # this corpus's own names that the question does not mention


HARBOR = Tenant(
    namespace="harbor",
    key="grk_test-harbor-0123456789abcdef",
    title="harbor_ledger.txt",
    text=(
        "Captain Orsolya Venkat commands the lighthouse at Marrowgate Point. Captain Orsolya Venkat keeps "
        "the Marrowgate vault under the lighthouse, and the vault passphrase is Quimblefrost.\n\n"
        "The harbor master Ilse Drummond inspects the Marrowgate vault every spring with Captain Orsolya "
        "Venkat. Ilse Drummond writes the passphrase Quimblefrost in the harbor ledger.\n\n"
        "Fishing boats from Marrowgate Point sell herring in the town of Kelvarro. Ilse Drummond taxes the "
        "herring.\n"
    ),
    question="What is the passphrase of the Marrowgate vault kept by Captain Orsolya Venkat?",
    secret="Quimblefrost",
    names=("Ilse Drummond", "Kelvarro"),
)
ORCHARD = Tenant(
    namespace="orchard",
    key="grk_test-orchard-fedcba9876543210",
    title="orchard_notes.txt",
    text=(
        "The beekeeper Tobiah Lindqvist tends the Saffron Hollow orchard. Tobiah Lindqvist hides his honey "
        "recipe in the orchard cellar, and the recipe's secret ingredient is Zeltraxium.\n\n"
        "The miller Annika Solberg grinds barley for Saffron Hollow with Tobiah Lindqvist. Annika Solberg "
        "once tasted Zeltraxium in the orchard honey.\n\n"
        "Carts from Saffron Hollow carry honey to the market of Pellwick. Annika Solberg sells the barley "
        "there.\n"
    ),
    question="What is the secret ingredient of Tobiah Lindqvist's honey recipe in Saffron Hollow?",
    secret="Zeltraxium",
    names=("Annika Solberg", "Pellwick"),
)
TENANTS = (HARBOR, ORCHARD)
# A third tenant's key reads both namespaces: whatever the service keeps per key is then shared by them.
SHARED_KEY = "grk_test-both-00112233445566778899"
ROW_TABLES = (schema.DOCUMENTS, schema.TEXT_UNITS, schema.ENTITIES, schema.RELATIONSHIPS)
TOP_K = 10  # more than either corpus has text units: a retrieval mode returns all it can see
GRAPH_MODES = ("global", "local", "drift", "basic", "lazy", "auto")
ALL_MODES = (*GRAPH_MODES, "chunks", "vector")


@dataclass
class Indexed:
    storage: Path
    settings: Settings
    row_ids: dict[str, set[str]]  # namespace -> the ids of its rows


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    from pipeline.index.run import index_folder

    base = tmp_path_factory.mktemp("isolation")
    storage = base / "storage"
    keys = base / "keys.yaml"
    keys.write_text(
        "tenants:\n"
        + "".join(
            f"  {t.namespace}:\n    key_sha256: {hash_key(t.key)}\n    namespaces: [{t.namespace}]\n"
            for t in TENANTS
        )
        + f"  both:\n    key_sha256: {hash_key(SHARED_KEY)}\n"
        + f"    namespaces: [{', '.join(t.namespace for t in TENANTS)}]\n"
    )
    # Small text units: each corpus is several rows, so a retrieval mode ranks rows, not one blob.
    settings = load_settings(
        storage_root=str(storage),
        api_keys_file=str(keys),
        chunk_size=60,
        chunk_overlap=10,
        service_timeout_s=110.0,
    )
    row_ids = {}
    for tenant in TENANTS:
        corpus = base / "input" / tenant.namespace
        corpus.mkdir(parents=True)
        (corpus / tenant.title).write_text(tenant.text, encoding="utf-8")
        index_folder(tenant.namespace, corpus, settings=settings, log=lambda _: None)
    for tenant in TENANTS:
        store = NamespaceStore(storage, tenant.namespace)
        assert store.read_table(schema.TEXT_UNITS).num_rows > 1
        row_ids[tenant.namespace] = {
            str(i)
            for table in ROW_TABLES
            for i in store.read_table(table, columns=["id"]).column("id").to_pylist()
            if i is not None
        }
    assert {t.namespace for t in TENANTS} <= {p.name for p in storage.iterdir()}  # one root, both in it
    return Indexed(storage, settings, row_ids)


def other(tenant: Tenant) -> Tenant:
    return ORCHARD if tenant is HARBOR else HARBOR


def markers(owner: Tenant, indexed: Indexed) -> list[str]:
    """What would show that an answer for another namespace read `owner`'s: its secret, its document's
    title, its name, names only its text has, and the ids of its rows that the other namespace has none of."""
    theirs = indexed.row_ids[other(owner).namespace]
    ids = sorted(i for i in indexed.row_ids[owner.namespace] - theirs if len(i) >= 8)
    assert ids, "no id of its own: the id check would check nothing"
    return [owner.secret, owner.title, owner.namespace, *owner.names, *ids]


def assert_isolated(indexed: Indexed, ask: Callable[[Tenant, str], str]) -> None:
    """For each tenant: its question asked of its own namespace finds its secret, and asked of the other
    namespace finds no trace of it. `ask(tenant, question)` is the whole answer as text."""
    for owner in TENANTS:
        own = ask(owner, owner.question)
        assert owner.secret in own, f"{owner.namespace}'s own answer lacks its secret: the check is blind"
        answer = ask(other(owner), owner.question)
        leaked = [m for m in markers(owner, indexed) if m in answer]
        assert not leaked, f"{other(owner).namespace}'s answer shows {owner.namespace}'s {leaked}: {answer}"


# ---- HTTP ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def client(indexed: Indexed) -> Iterator[httpx.Client]:
    service = QueryService(indexed.settings)
    service.warm_up()
    with serving(service) as url, httpx.Client(base_url=url, timeout=120) as c:
        yield c


def http_body(mode: str, namespace: str, question: str) -> dict[str, object]:
    if mode in ("chunks", "vector"):
        return {"namespace": namespace, "query": question, "top_k": TOP_K}
    return {"namespace": namespace, "question": question}


@pytest.mark.parametrize("key", ["own", "shared"])
@pytest.mark.parametrize("mode", ALL_MODES)
def test_http_answers_carry_nothing_of_the_other_namespace(
    mode: str, key: str, indexed: Indexed, client: httpx.Client
) -> None:
    def ask(tenant: Tenant, question: str) -> str:
        r = client.post(
            f"/v1/query/{mode}",
            json=http_body(mode, tenant.namespace, question),
            headers={"Authorization": f"Bearer {tenant.key if key == 'own' else SHARED_KEY}"},
        )
        assert r.status_code == 200, r.text
        assert r.json()["namespace"] == tenant.namespace
        return r.text

    assert_isolated(indexed, ask)


# ---- Python API ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", GRAPH_MODES)
def test_api_answers_carry_nothing_of_the_other_namespace(mode: str, indexed: Indexed) -> None:
    from pipeline import api

    search = getattr(api, f"{mode}_search")

    def ask(tenant: Tenant, question: str) -> str:
        result = search(tenant.namespace, question, settings=indexed.settings)
        return json.dumps(result.to_dict(), default=str)

    assert_isolated(indexed, ask)


@pytest.mark.parametrize("kind", ["vector", "graph"])
def test_one_tool_over_both_namespaces_answers_each_from_its_own_store(kind: str, indexed: Indexed) -> None:
    """One tool, both namespaces' stores registered by name, the store picked per request: the tool's
    caches (the graph tool's chunk graphs) are shared by the two, the rows they answer with are not."""
    from pipeline.runtime import cached_embedder
    from pipeline.vector_tool import LanceDBStore, create_graph_rag_tool, create_vector_query_tool

    stores = {t.namespace: LanceDBStore(NamespaceStore(indexed.storage, t.namespace)) for t in TENANTS}
    create = create_vector_query_tool if kind == "vector" else create_graph_rag_tool
    tool = create(schema.LANCE_TEXT_UNITS, cached_embedder(indexed.settings), stores=stores)

    def ask(tenant: Tenant, question: str) -> str:
        out = tool.execute({"query_text": question, "top_k": TOP_K}, {"store_name": tenant.namespace})
        assert "error" not in out and out["sources"], out
        return json.dumps(out, default=str)

    assert_isolated(indexed, ask)


def test_chunk_graph_answers_carry_nothing_of_the_other_namespace(indexed: Indexed) -> None:
    from pipeline.chunk_graph.indexing import load_namespace_chunk_graph
    from pipeline.runtime import cached_embedder

    embedder = cached_embedder(indexed.settings)

    def ask(tenant: Tenant, question: str) -> str:
        store = NamespaceStore(indexed.storage, tenant.namespace)
        graph = load_namespace_chunk_graph(store, dimension=embedder.dimension)
        hits = graph.query(embedder.embed([question])[0], top_k=TOP_K)
        return json.dumps([h.to_dict() for h in hits], default=str)

    assert_isolated(indexed, ask)


# ---- CLI ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ALL_MODES)
def test_cli_answers_carry_nothing_of_the_other_namespace(
    mode: str, indexed: Indexed, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from assets.cli import main

    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(indexed.storage))
    top_k = ["--top-k", str(TOP_K)] if mode in ("chunks", "vector") else []

    def ask(tenant: Tenant, question: str) -> str:
        code = main(["query", mode, "--namespace", tenant.namespace, *top_k, "--json", question])
        out = capsys.readouterr()
        assert code == 0, out.err
        return out.out + out.err

    assert_isolated(indexed, ask)
