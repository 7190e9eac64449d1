"""The web app at `/` of `graphrag-serve`, and the JSON it reads besides answers.

The page is hand-written HTML, CSS and JavaScript in `webapp/` (package data: it works from an installed
wheel), with nothing from a CDN: the graph view draws with vis-network from the pinned pyvis package, as
graph.html does. Its key stays in the tab's session storage and goes out as a bearer header; the page's
Content-Security-Policy allows scripts from this server only, so even a text that reached the DOM as
markup could not run.

Its endpoints, under `/v1/` (authenticated like every `/v1/` route, each namespace checked against the
key: 403 whether or not it exists):
- `GET /v1/modes`: the registered query modes, for the mode choice, with their options as JSON Schema;
- `GET /v1/namespaces`: the key's namespaces with their index status, last run and indexing method;
- `GET /v1/namespaces/{ns}/documents`: its documents and their status (`pipeline.service.documents`);
- `GET /v1/namespaces/{ns}/documents/{id}/chunks`: its text units with pages, section and entities;
- `GET /v1/namespaces/{ns}/documents/{id}`: a document's text around a cited span, its page and section;
- `GET /v1/namespaces/{ns}/entities/{entity}/neighbourhood`: an entity and its neighbours, drawable;
- `GET /v1/namespaces/{ns}/entities?q=&type=&limit=`: entities by name, and the namespace's types;
- `GET /v1/namespaces/{ns}/entities/{entity}`: an entity's description, type, degree and passages;
- `GET /v1/namespaces/{ns}/reports/{community}`: a community report and the passages it rests on;
- `POST /v1/namespaces/{ns}/entities/mentioned`: the entities an answer names, for its chips;
- `GET /v1/namespaces/{ns}/eval`: the namespace's last `pipeline eval` report, or null;
- `POST /v1/estimate/{mode}`: what the question would cost with the configured model, or null offline;
- `POST /v1/condense`: a conversation's follow-up as a standalone question (`follow_up`).
"""

from __future__ import annotations

import asyncio
from importlib import resources
from pathlib import Path as FsPath
from typing import Annotated, Any

from fastapi import FastAPI, Path, Query
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field

from pipeline.core.namespace import NAMESPACE_PATTERN
from pipeline.io.store import NamespaceStore, TableNotFoundError
from pipeline.ops.graph_view import vis_network_files
from pipeline.query import registry
from pipeline.query.common.mode import Mode
from pipeline.service import browse, documents, entity_view, report_view
from pipeline.service.auth import Principal
from pipeline.service.caller import Caller
from pipeline.service.errors import ServiceError
from pipeline.service.follow_up import install_follow_up
from pipeline.service.models import body_of
from pipeline.service.queries import QueryService, not_ready

WEBAPP = FsPath(str(resources.files("pipeline.service") / "webapp"))
# Scripts, styles and connections from this server only; no plugin, no framing by another site. Images
# also from blob: URLs: a PDF's page (pageview.js) is fetched with the key's header, which an <img src>
# cannot send, and shown from an object URL of what came back; 'self' does not cover blob: URLs.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


class Mentioned(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    text: str = Field(max_length=20_000, description="The text to find entity names in (an answer)")


NamespaceParam = Annotated[str, Path(pattern=NAMESPACE_PATTERN.pattern)]


def install_web(app: FastAPI, service: QueryService) -> None:
    """The page at `/`, its files under `/app/`, vis-network under `/vendor/`, and its `/v1/` reads."""
    _install_page(app)
    _install_reads(app, service)
    install_follow_up(app, service)
    for mode in registry.MODES.values():
        _estimate_route(app, service, mode)


def _install_page(app: FastAPI) -> None:
    @app.get("/", include_in_schema=False)
    async def page() -> Response:
        return HTMLResponse((WEBAPP / "index.html").read_text("utf-8"), headers=PAGE_HEADERS)

    script, style = vis_network_files()
    vendor = {"vis-network.min.js": (script, "text/javascript"), "vis-network.css": (style, "text/css")}

    @app.get("/vendor/{name}", include_in_schema=False)
    async def vendored(name: str) -> Response:
        if name not in vendor:
            return Response(status_code=404)
        body, media = vendor[name]
        return Response(
            body, media_type=f"{media}; charset=utf-8", headers={"X-Content-Type-Options": "nosniff"}
        )

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        # No icon: the request every browser makes gets an empty answer, not a 404 in the log.
        return Response(status_code=204)

    app.mount("/app", StaticFiles(directory=WEBAPP), name="webapp")


def _store(service: QueryService, caller: Principal, namespace: str) -> NamespaceStore:
    return NamespaceStore.from_settings(service.settings, caller.authorize(namespace))


def _install_reads(app: FastAPI, service: QueryService) -> None:
    @app.get("/v1/modes", tags=["web app"])
    async def modes(caller: Caller) -> dict[str, Any]:
        """The registered query modes: name, summary, the body's text field, whether it calls a model,
        whether it has a cost estimate, and its options as JSON Schema (its request model's: types,
        bounds, defaults, descriptions), from which the page builds its settings form."""
        return {
            "default": "auto" if "auto" in registry.MODES else next(iter(registry.MODES)),
            "modes": [
                {
                    "name": m.name,
                    "summary": m.summary,
                    "question": m.question,
                    "uses_model": m.uses_model,
                    "estimate": m.uses_model and m.estimate is not None,
                    "options": m.options.model_json_schema(),
                }
                for m in registry.MODES.values()
            ],
        }

    @app.get("/v1/namespaces", tags=["web app"])
    async def namespaces(caller: Caller) -> dict[str, Any]:
        """The key's namespaces, each with its index status (tables, last run, indexing method), or the
        error its status gave."""
        return {"namespaces": await asyncio.to_thread(_statuses, service, caller)}

    @app.get("/v1/namespaces/{namespace}/documents", tags=["documents"])
    async def document_list(namespace: NamespaceParam, caller: Caller) -> dict[str, Any]:
        """The namespace's documents: id, name, type, size, pages, content hash, status (`queued`,
        `parsing`, `indexed`, `failed` with its reason, e.g. `encrypted` or `run_killed`, `deleted`), the
        run that last touched it, and whether this key may change them (`writable`)."""
        store = _store(service, caller, namespace)
        return await asyncio.to_thread(service.uploads.documents, caller, store)

    @app.get("/v1/namespaces/{namespace}/documents/{document_id}/chunks", tags=["documents"])
    async def document_chunks(namespace: NamespaceParam, document_id: str, caller: Caller) -> dict[str, Any]:
        """A document's text units in order: characters, pages, section, tokens, text and the entities
        extracted from each (404: no such document in the committed index)."""
        store = _store(service, caller, namespace)
        return await asyncio.to_thread(documents.document_chunks, store, document_id)

    @app.get("/v1/namespaces/{namespace}/documents/{document_id}", tags=["web app"])
    async def document(
        namespace: NamespaceParam,
        document_id: str,
        caller: Caller,
        start: Annotated[int | None, Query(ge=0)] = None,
        end: Annotated[int | None, Query(ge=0)] = None,
        page: Annotated[int | None, Query(ge=1)] = None,
        full: bool = False,
    ) -> dict[str, Any]:
        """A document's text around the characters [start, end) (a citation's span), or page `page`, or
        with `full` as much of it as one answer carries; the span's pages and section from its layout."""
        store = _store(service, caller, namespace)
        return await asyncio.to_thread(browse.document_view, store, document_id, start, end, page, full)

    @app.get("/v1/namespaces/{namespace}/entities/{entity}/neighbourhood", tags=["web app"])
    async def entity_neighbourhood(
        namespace: NamespaceParam,
        entity: str,
        caller: Caller,
        limit: Annotated[int, Query(ge=1, le=200)] = browse.NEIGHBOURS,
    ) -> dict[str, Any]:
        """An entity (id or title) and its neighbours, the heaviest relationships first, as drawable
        nodes (sized by degree, placed without overlaps) and edges."""
        store = _store(service, caller, namespace)
        return await asyncio.to_thread(browse.neighbourhood, store, entity, limit)

    @app.get("/v1/namespaces/{namespace}/entities", tags=["web app"])
    async def entity_search(
        namespace: NamespaceParam,
        caller: Caller,
        q: Annotated[str, Query(max_length=entity_view.MAX_QUERY_CHARS)] = "",
        kind: Annotated[str | None, Query(alias="type", max_length=200)] = None,
        limit: Annotated[int, Query(ge=1, le=entity_view.MAX_SEARCH_LIMIT)] = entity_view.SEARCH_LIMIT,
    ) -> dict[str, Any]:
        """The entities whose title or an alias holds `q` (case-insensitive), of `type` when given: exact
        titles first, then prefixes, then the best connected; with `total` and every entity type of the
        namespace with its count (`types`)."""
        store = _store(service, caller, namespace)
        return await asyncio.to_thread(entity_view.search, store, q, kind, limit)

    @app.get("/v1/namespaces/{namespace}/entities/{entity}", tags=["web app"])
    async def entity_details(namespace: NamespaceParam, entity: str, caller: Caller) -> dict[str, Any]:
        """An entity (id or title): description, type, degree, aliases and the passages it was
        extracted from, each with its document, characters, pages and section (404: no such entity)."""
        store = _store(service, caller, namespace)
        return await asyncio.to_thread(entity_view.details, store, entity)

    @app.get("/v1/namespaces/{namespace}/reports/{community}", tags=["web app"])
    async def community_report(namespace: NamespaceParam, community: int, caller: Caller) -> dict[str, Any]:
        """Community `community`'s report (title, summary, findings, rating) and the passages it rests
        on, each with its document, characters, pages and section (404: no such report)."""
        store = _store(service, caller, namespace)
        return await asyncio.to_thread(report_view.community_report, store, community)

    @app.post("/v1/namespaces/{namespace}/entities/mentioned", tags=["web app"])
    async def entities_mentioned(
        namespace: NamespaceParam, body: Mentioned, caller: Caller
    ) -> dict[str, Any]:
        """The namespace's entities named in `text` (an answer), the best connected first: the answer's
        entity chips when its context listed none."""
        store = _store(service, caller, namespace)
        return {"entities": await asyncio.to_thread(browse.mentioned, store, body.text)}

    @app.get("/v1/namespaces/{namespace}/eval", tags=["web app"])
    async def namespace_eval(namespace: NamespaceParam, caller: Caller) -> dict[str, Any]:
        """The namespace's last `pipeline eval` report (metrics per mode), or null when it has none."""
        store = _store(service, caller, namespace)
        return {"namespace": namespace, "report": await asyncio.to_thread(browse.eval_report, store)}


def _statuses(service: QueryService, caller: Principal) -> list[dict[str, Any]]:
    out = []
    for namespace in sorted(caller.namespaces):
        try:
            status = service.namespace_status(caller, namespace)
        except ServiceError as exc:
            out.append({"namespace": namespace, "indexed": False, "error": exc.body()["error"]})
            continue
        runs = [t["materialized_at"] for t in status["tables"] if t["materialized_at"] is not None]
        store = NamespaceStore.from_settings(service.settings, namespace)
        method = browse.index_method(store) if status["indexed"] else None
        writable = service.uploads.may_write(caller, namespace)
        out.append(
            {**status, "last_run": max(runs) if runs else None, "method": method, "writable": writable}
        )
    return out


def _estimate_route(app: FastAPI, service: QueryService, mode: Mode) -> None:
    """`POST /v1/estimate/<mode>` with the mode's query body: the model calls, tokens and cost the question
    can take (`pipeline query <mode> --estimate`), sending nothing; null with no model configured."""

    async def endpoint(body: Any, caller: Caller) -> dict[str, Any]:
        namespace = caller.authorize(body.namespace)
        settings = service.settings
        if not mode.uses_model:
            return {"estimate": None, "reason": f"{mode.name} search calls no model"}
        if settings.llm_provider == "offline":
            return {"estimate": None, "reason": "no model is configured: answers are written offline"}
        if mode.estimate is None:
            return {"estimate": None, "reason": f"{mode.name} search has no cost estimate"}
        store = NamespaceStore.from_settings(settings, namespace)
        question = getattr(body, mode.question)
        await asyncio.to_thread(service.limiter.acquire, caller.key_id)  # 429 like a query
        try:
            found = await asyncio.to_thread(_estimated, service, mode, store, question, body.given())
        except TableNotFoundError as exc:
            raise not_ready(namespace, mode.name, exc) from None
        finally:
            service.limiter.release(caller.key_id)
        return {"estimate": found}

    endpoint.__annotations__ = {"body": body_of(mode), "caller": Caller, "return": dict[str, Any]}
    endpoint.__name__ = endpoint.__qualname__ = f"estimate_{mode.name}"
    endpoint.__doc__ = _estimate_route.__doc__
    app.post(f"/v1/estimate/{mode.name}", tags=["web app"])(endpoint)


def _estimated(
    service: QueryService, mode: Mode, store: NamespaceStore, question: str, given: dict[str, Any]
) -> dict[str, Any]:
    found = registry.estimate(
        mode.name, question, given, settings=service.settings, store=store, embedder=service.embedder
    )
    return found.to_dict()
