"""The web app's JSON endpoints over real HTTP (uvicorn on 127.0.0.1, real Parquet/LanceDB/MiniLM indexes):
each scoped to the key's namespaces, a document view with the cited span's page and section, an entity's
neighbourhood drawn without overlaps, the namespace's eval report, and the page itself served with no
outside URL."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pipeline.ops.graph_layout import MAX_SIZE, MIN_SIZE
from pipeline.service.queries import QueryService
from pipeline.service.web import WEBAPP
from tests.support.drawing import overlaps
from tests.support.service_data import ServiceData, auth, offline_settings, serving
from tests.support.web_data import KEY_A, KEY_B, MARKUP, QUESTION


@pytest.fixture(scope="module")
def client(web_data: ServiceData) -> Iterator[httpx.Client]:
    service = QueryService(
        offline_settings(web_data, service_max_body_bytes=65536), embedder=web_data.embedder
    )
    with serving(service) as url, httpx.Client(base_url=url, timeout=60) as c:
        yield c


def test_the_page_and_its_files_come_from_this_server_only(client: httpx.Client) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "connect-src 'self'" in csp
    for path in re.findall(r'(?:src|href)="([^"]+)"', page.text):
        assert path.startswith("/"), path  # nothing from another origin
        assert client.get(path).status_code == 200, path
    for name in ("app.js", "api.js", "answer.js", "graph.js", "dom.js"):
        script = (WEBAPP / name).read_text("utf-8")
        assert "innerHTML" not in script and "insertAdjacentHTML" not in script
        assert not re.search(r"https?://", script)
        assert client.get(f"/app/{name}").status_code == 200


def test_namespaces_lists_the_keys_own_with_their_status(client: httpx.Client) -> None:
    listed = client.get("/v1/namespaces", headers=auth(KEY_A)).json()["namespaces"]
    assert [n["namespace"] for n in listed] == ["acme", "acme-empty", MARKUP]
    acme = listed[0]
    assert acme["indexed"] and acme["ready"]["basic"] and acme["last_run"]
    assert {t["name"] for t in acme["tables"]} >= {"documents", "entities", "text_units"}
    assert listed[1]["indexed"] is False
    other = client.get("/v1/namespaces", headers=auth(KEY_B)).json()["namespaces"]
    assert [n["namespace"] for n in other] == ["globex"]
    assert client.get("/v1/namespaces").status_code == 401
    assert client.get("/v1/namespaces?api_key=" + KEY_A).status_code == 401  # never from a query string


def test_modes_come_from_the_registry_with_auto_the_default(client: httpx.Client) -> None:
    from pipeline.query import registry

    modes = client.get("/v1/modes", headers=auth(KEY_A)).json()
    assert modes["default"] == "auto"
    assert [m["name"] for m in modes["modes"]] == list(registry.MODES)


def test_a_document_view_gives_the_spans_page_and_section(client: httpx.Client) -> None:
    cited = client.post(
        "/v1/query/basic", json={"namespace": "acme", "question": QUESTION, "top_k": 2}, headers=auth(KEY_A)
    ).json()["result"]["citations"]
    late = max(cited, key=lambda c: c["start_char"])  # on page 2 when the second paragraph is cited
    path = f"/v1/namespaces/acme/documents/{late['document_id']}"
    view = client.get(
        path, params={"start": late["start_char"], "end": late["end_char"]}, headers=auth(KEY_A)
    )
    assert view.status_code == 200, view.text
    v = view.json()
    lo = v["window"]["start"]
    assert v["text"][v["span"]["start"] - lo : v["span"]["end"] - lo].startswith(
        ("Bob", "Ebenezer", "London", "Old")
    )
    assert v["page_start"] in (1, 2) and v["section"] in ("Stave One", "Stave Two") and v["page_count"] == 2
    page2 = client.get(path, params={"page": 2}, headers=auth(KEY_A)).json()
    assert page2["text"].startswith("London") and page2["section"] is None
    full = client.get(path, params={"start": 0, "end": 10, "full": "true"}, headers=auth(KEY_A)).json()
    assert full["window"] == {"start": 0, "end": full["length"]}
    assert client.get(path, params={"start": 5, "end": 999999}, headers=auth(KEY_A)).status_code == 422
    assert client.get("/v1/namespaces/acme/documents/nope", headers=auth(KEY_A)).status_code == 404
    # another tenant's document: refused before anything is read, whether or not it exists
    for ns in ("globex", "nothere"):
        r = client.get(f"/v1/namespaces/{ns}/documents/doc-globex", headers=auth(KEY_A))
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"


def test_an_entitys_neighbourhood_is_sized_by_degree_and_laid_out_without_overlaps(
    client: httpx.Client,
) -> None:
    r = client.get("/v1/namespaces/acme/entities/Bob Cratchit/neighbourhood", headers=auth(KEY_A))
    assert r.status_code == 200, r.text
    g = r.json()
    centre = next(n for n in g["nodes"] if n["id"] == g["centre"])
    assert centre["label"] == "Bob Cratchit" and len(g["nodes"]) > 1 and g["edges"]
    assert all(g["centre"] in (e["from"], e["to"]) for e in g["edges"])
    assert all(MIN_SIZE <= n["size"] <= MAX_SIZE for n in g["nodes"])
    assert (
        overlaps({n["id"]: (n["x"], n["y"]) for n in g["nodes"]}, {n["id"]: n["size"] for n in g["nodes"]})
        == []
    )
    assert g["options"]["physics"] is False
    assert (
        client.get("/v1/namespaces/acme/entities/Nobody/neighbourhood", headers=auth(KEY_A)).status_code
        == 404
    )
    assert (
        client.get(
            "/v1/namespaces/globex/entities/Bob Cratchit/neighbourhood", headers=auth(KEY_A)
        ).status_code
        == 403
    )


def test_the_eval_report_pipeline_eval_wrote_is_served_and_none_elsewhere(client: httpx.Client) -> None:
    report = client.get("/v1/namespaces/acme/eval", headers=auth(KEY_A)).json()["report"]
    assert report["modes"] == ["basic"] and report["metrics"]["basic"]["overall"]["questions"] == 1
    assert "rows" not in report
    assert client.get(f"/v1/namespaces/{MARKUP}/eval", headers=auth(KEY_A)).json()["report"] is None
    assert client.get("/v1/namespaces/acme/eval", headers=auth(KEY_B)).status_code == 403


def test_no_estimate_offline_and_a_refusal_for_another_tenant(client: httpx.Client) -> None:
    body = {"namespace": "acme", "question": QUESTION}
    r = client.post("/v1/estimate/local", json=body, headers=auth(KEY_A))
    assert r.status_code == 200 and r.json()["estimate"] is None and "no model" in r.json()["reason"]
    assert (
        client.post(
            "/v1/estimate/vector", json={"namespace": "acme", "query": "x"}, headers=auth(KEY_A)
        ).json()["estimate"]
        is None
    )
    assert (
        client.post(
            "/v1/estimate/local", json={**body, "namespace": "globex"}, headers=auth(KEY_A)
        ).status_code
        == 403
    )


def test_the_estimate_with_a_model_configured_counts_calls_and_cost(web_data: ServiceData) -> None:
    settings = offline_settings(web_data, llm_provider="openai", llm_model="gpt-4o-mini")
    service = QueryService(settings, embedder=web_data.embedder)
    with serving(service) as url, httpx.Client(base_url=url, timeout=60) as c:
        body = {"namespace": "acme", "question": QUESTION}
        r = c.post("/v1/estimate/basic", json=body, headers=auth(KEY_A))
        auto = c.post("/v1/estimate/auto", json=body, headers=auth(KEY_A))
        local = c.post("/v1/estimate/local", json=body, headers=auth(KEY_A))
    assert r.status_code == 200, r.text
    estimate = r.json()["estimate"]
    assert estimate["mode"] == "basic" and estimate["calls"] >= 1 and estimate["prompt_tokens"] > 0
    assert estimate["cost_usd"] > 0
    # auto's own estimate: its routing call plus the dearest of the modes it may route to, local named
    assert auto.status_code == 200, auto.text
    dearest = auto.json()["estimate"]
    assert dearest["mode"] == "auto" and dearest["cost_usd"] > estimate["cost_usd"]
    assert dearest["routed"] in {"basic", "drift", "global", "lazy"}  # what the web app says it counted
    assert dearest["phases"][0]["phase"] == "route" and dearest["calls"] > estimate["calls"]
    assert any("auto routes to one of" in n for n in dearest["notes"])
    assert any("route to local, which has no estimate" in n for n in dearest["notes"])
    assert local.json() == {"estimate": None, "reason": "local search has no cost estimate"}


def test_the_static_files_are_package_data() -> None:
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text("utf-8"))
    assert pyproject["tool"]["setuptools"]["package-data"]["pipeline.service"] == ["webapp/*"]
    assert {p.name for p in WEBAPP.iterdir()} >= {"index.html", "app.js", "app.css"}


def test_the_entities_an_answer_names_are_found_for_its_chips(client: httpx.Client) -> None:
    text = (
        "- Bob Cratchit worked as Scrooge's clerk. [Data: Sources (1)]\n- Marley had been dead seven years."
    )
    r = client.post("/v1/namespaces/acme/entities/mentioned", json={"text": text}, headers=auth(KEY_A))
    titles = [e["title"] for e in r.json()["entities"]]
    assert "Bob Cratchit" in titles and "Jacob Marley" in titles  # by its alias "Marley"
    assert "Tiny Tim" not in titles
    other = client.post("/v1/namespaces/globex/entities/mentioned", json={"text": text}, headers=auth(KEY_A))
    assert other.status_code == 403
