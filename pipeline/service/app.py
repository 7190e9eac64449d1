"""The HTTP API: FastAPI under uvicorn. `graphrag-serve` (or `make serve`) starts it.

Every `/v1/` request is authenticated before its body is read (401), its namespace checked against
the key (403, the same answer whether or not the namespace exists), then handed to `QueryService`.
The MCP server's streamable-HTTP endpoint is mounted at `/mcp` with the same keys.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import FastAPI, Path, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from pipeline.core.namespace import NAMESPACE_PATTERN
from pipeline.query import registry
from pipeline.query.caches.index_cache import freeze_indexes_after_build
from pipeline.query.common.mode import Mode
from pipeline.service.asgi import HttpMiddleware
from pipeline.service.caller import Caller
from pipeline.service.clean_errors import CleanErrors
from pipeline.service.connections import ConnectionGuard
from pipeline.service.errors import InvalidRequest, ServiceError, send_error
from pipeline.service.headers import HeaderLimitMiddleware, capped_protocol
from pipeline.service.limits import MAX_JSON_DEPTH, BodyLimitMiddleware, json_depth
from pipeline.service.logs import redact_logs
from pipeline.service.models import ErrorResponse, NamespaceStatus, QueryResponse, body_of
from pipeline.service.process import limit_compute_threads, limit_malloc_arenas
from pipeline.service.queries import QueryService
from pipeline.service.streams import STREAMED, event_response, wants_events
from pipeline.service.uploads.routes import UPLOAD_PATH, install_uploads
from pipeline.service.warm import WarmOnSelect, install_warm
from pipeline.settings import Settings, load_settings

if TYPE_CHECKING:
    import uvicorn

log = logging.getLogger("pipeline.service")

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": text}
    for code, text in {
        401: "missing or unknown API key",
        403: "the key does not cover this namespace",
        409: "index_not_ready: the namespace has no index for this query yet",
        413: "request body too large",
        408: "request_timeout: the request's body did not arrive in time",
        422: "invalid request (bad JSON, a field out of range, an unknown field, JSON nested too deeply)",
        429: "too many queries in flight for this key",
        503: "keys_unavailable: the server's API keys file is missing, unreadable or invalid; "
        "index_damaged: a table of the namespace does not read (detail names it and the repair)",
        504: "deadline exceeded: the query was cancelled; detail holds what was done",
    }.items()
}


class AuthMiddleware(HttpMiddleware):
    """Authenticates `/v1/` and `/mcp` requests from their headers before any body is read."""

    def __init__(self, app: ASGIApp, service: QueryService) -> None:
        super().__init__(app)
        self.service = service

    def handles(self, scope: Scope) -> bool:
        return scope["path"].startswith(("/v1/", "/mcp"))

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            scope["graphrag.principal"] = self.service.authenticate(headers)
        except ServiceError as exc:
            await send_error(send, exc)
            return
        await self.app(scope, receive, send)


def _error_response(exc: ServiceError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)


def _validation_error(exc: RequestValidationError) -> JSONResponse:
    # Only location, message and type: pydantic's `input` would echo the body back, `ctx` may not serialize.
    errors = [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg")), "type": str(e.get("type"))}
        for e in exc.errors()
    ]
    message = (
        "; ".join(f"{'.'.join(e['loc'][1:] or e['loc'])}: {e['msg']}" for e in errors) or "invalid request"
    )
    return _error_response(InvalidRequest(message, detail=errors))


NESTED_TOO_DEEPLY = (
    f"request body is nested too deeply: at most {MAX_JSON_DEPTH} levels of JSON arrays and objects"
)


NOT_UTF8 = "request body is not UTF-8: JSON bodies are UTF-8 encoded"


def is_utf8(body: bytes) -> bool:
    """Whether `body` is UTF-8 text. The JSON parser behind FastAPI guesses UTF-16 and UTF-32 from a
    body's first bytes and took them; the API says UTF-8. A NUL byte, which JSON text never holds raw,
    is how UTF-16 or UTF-32 without a byte order mark shows (it is valid UTF-8)."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\x00" not in body


class _Route(APIRoute):
    """Refuses a body that is not UTF-8, or a JSON body nested deeper than MAX_JSON_DEPTH, before FastAPI
    parses it (the body is read once: FastAPI reuses what `request.body()` read). A multipart body (an
    upload) is left to its route's form parser."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def checked(request: Request) -> Response:
            # A document upload's parts are files, streamed to disk by the form parser, never read whole
            multipart = request.headers.get("content-type", "").startswith("multipart/form-data")
            if request.method in ("POST", "PUT", "PATCH") and not multipart:
                try:
                    body = await request.body()
                except ClientDisconnect:  # nobody to answer; not a server error
                    return Response(status_code=400)
                if not is_utf8(body):
                    raise InvalidRequest(NOT_UTF8)
                if json_depth(body) > MAX_JSON_DEPTH:
                    raise InvalidRequest(NESTED_TOO_DEEPLY)
            return await handler(request)

        return checked


def _internal_error(exc: Exception) -> JSONResponse:
    log.error("unhandled %s: %s", type(exc).__name__, exc, exc_info=exc)
    return _error_response(ServiceError("internal error; the server log has the details"))


def _http_error(exc: HTTPException) -> JSONResponse:
    if exc.status_code == 400:  # FastAPI's answer to a body it cannot decode (e.g. not UTF-8)
        if isinstance(exc.__cause__, RecursionError):
            return _error_response(InvalidRequest(NESTED_TOO_DEEPLY))
        return _error_response(InvalidRequest("request body is not valid JSON (UTF-8 encoded)"))
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    body = {"error": {"code": code, "message": str(exc.detail)}}
    return JSONResponse(body, status_code=exc.status_code, headers=getattr(exc, "headers", None))


def _query_route(app: FastAPI, service: QueryService, mode: Mode) -> None:
    """`POST /v1/query/<mode>` taking the mode's body model (its options are the mode's request model),
    described by the mode's record."""

    async def endpoint(body: Any, caller: Caller, request: Request) -> Any:
        if wants_events(body, request.headers):  # `"stream": true` or Accept: text/event-stream
            return await event_response(service, caller, body)
        return await service.run(caller, body)

    endpoint.__annotations__ = {
        "body": body_of(mode),
        "caller": Caller,
        "request": Request,
        "return": dict[str, Any],
    }
    endpoint.__name__ = endpoint.__qualname__ = f"query_{mode.name}"
    endpoint.__doc__ = mode.doc("http")
    path = f"/v1/query/{mode.name}"
    responses = {**ERRORS, 200: STREAMED}
    app.post(path, response_model=QueryResponse, responses=responses, tags=["query"])(endpoint)


def create_app(
    service: QueryService | None = None, *, settings: Settings | None = None, mcp: bool = True
) -> FastAPI:
    settings = settings or (service.settings if service else load_settings())
    service = service or QueryService(settings)
    mcp_server = None
    if mcp:
        from pipeline.service.mcp_server import build_mcp_server

        mcp_server = build_mcp_server(service)
        mcp_routes = mcp_server.streamable_http_app(
            streamable_http_path="/mcp",
            stateless_http=True,  # every call carries its key; no session state to pin to a tenant
            json_response=True,
            max_request_body_size=settings.service_max_body_bytes,
        ).routes

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        threading.Thread(target=_warm_up, args=(service,), name="warm-up", daemon=True).start()
        # Beside the models: what the keys file's namespaces' first questions load (`warm`)
        service.warmer.start(service.keys.namespaces() if settings.service_warm_start else ())
        # Runs a stopped service left queued start; those it left running are settled (`uploads.runs`).
        threading.Thread(target=service.uploads.resume, name="resume-runs", daemon=True).start()
        try:
            if mcp_server is None:
                yield
            else:
                async with mcp_server.session_manager.run():
                    yield
        finally:
            service.close()

    app = FastAPI(
        title="GraphRAG query service",
        version="1",
        description="Global, local, DRIFT, basic, chunk-graph and vector queries over one tenant's namespace per request.",
        lifespan=lifespan,
    )
    app.router.route_class = _Route  # before any route is added
    app.state.service = service
    app.add_middleware(CleanErrors, respond=_internal_error)  # innermost: the others see a 500 answered
    app.add_middleware(WarmOnSelect, warmer=service.warmer)  # inside the authentication: it reads the key
    app.add_middleware(  # inside the authentication: it counts the request's key
        ConnectionGuard,
        limiter=service.limiter,
        body_timeout_s=settings.service_body_timeout_s,
        stream_idle_s=settings.service_stream_idle_s,
    )
    app.add_middleware(AuthMiddleware, service=service)
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=settings.service_max_body_bytes,
        upload_max_bytes=settings.service_upload_max_request_bytes,
        upload_paths=UPLOAD_PATH,
    )
    app.add_middleware(HeaderLimitMiddleware, max_bytes=settings.service_max_header_bytes)  # outermost
    app.add_exception_handler(ServiceError, lambda _r, exc: _error_response(exc))
    app.add_exception_handler(RequestValidationError, lambda _r, exc: _validation_error(exc))
    app.add_exception_handler(HTTPException, lambda _r, exc: _http_error(exc))

    @app.exception_handler(Exception)  # what a middleware outside CleanErrors raises
    async def _internal(_request: Request, exc: Exception) -> JSONResponse:
        return _internal_error(exc)

    for mode in registry.MODES.values():  # as registered when the app is built
        _query_route(app, service, mode)

    from pipeline.service.openai_compat import install_openai

    install_openai(app, service)  # /v1/models, /v1/chat/completions; CORS when origins are set

    from pipeline.service.page_images import install_page_images
    from pipeline.service.web import install_web

    install_web(app, service)  # the web app at /, and the /v1/ reads it needs besides answers
    install_page_images(app, service)  # a PDF's pages as PNGs and a cited span's boxes on them
    install_uploads(app, service.uploads)  # documents in: managed namespaces, changes, runs
    install_warm(app, service)  # POST /v1/namespaces/{ns}/warm

    @app.get(
        "/v1/namespaces/{namespace}/status", response_model=NamespaceStatus, responses=ERRORS, tags=["status"]
    )
    async def namespace_status(
        namespace: Annotated[str, Path(pattern=NAMESPACE_PATTERN.pattern)], caller: Caller
    ) -> dict[str, Any]:
        """Which tables are materialized, when, with how many rows, and which query kinds are ready; `warm`:
        how far the service has loaded what its first question reads (reading the status starts it)."""
        status = await asyncio.to_thread(service.namespace_status, caller, namespace)
        return {**status, "warm": service.warmer.state(namespace)}

    @app.get("/healthz", tags=["ops"])
    async def health() -> dict[str, str]:
        """The process is up and serving."""
        return {"status": "ok"}

    @app.get(
        "/readyz",
        tags=["ops"],
        responses={503: {"description": "still loading the embedding and NER models"}},
    )
    async def ready() -> JSONResponse:
        """Ready once the embedding model is loaded (queries would otherwise wait for it). `warm` counts the
        namespaces by the state of their warm start, which readiness does not wait for."""
        if not service.warm.is_set():
            return JSONResponse({"status": "starting"}, status_code=503)
        warm = service.warmer.counts()
        return JSONResponse({"status": "ready", "in_flight": service.limiter.in_flight(), "warm": warm})

    if mcp_server is not None:
        app.router.routes.extend(mcp_routes)
    return app


def _warm_up(service: QueryService) -> None:
    try:
        service.warm_up()
    except Exception as exc:  # noqa: BLE001 - readiness stays false; the log says why
        log.error("warm-up failed: %s: %s", type(exc).__name__, exc)


def main(argv: list[str] | None = None) -> int:
    import uvicorn

    parser = argparse.ArgumentParser(prog="graphrag-serve", description="GraphRAG query service (HTTP + MCP)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    settings = load_settings()
    if settings.service_malloc_arenas:  # before the worker threads exist and take arenas of their own
        limit_malloc_arenas(settings.service_malloc_arenas)
    if settings.service_compute_threads:  # before torch loads with the embedding model
        limit_compute_threads(settings.service_compute_threads)
    freeze_indexes_after_build()
    if settings.api_keys_file is None:
        log.warning("PIPELINE_API_KEYS_FILE is not set: every /v1/ request will be refused with 401")
    # the address to type: a wildcard bind is reached through the loopback from this machine
    shown = "127.0.0.1" if args.host in ("0.0.0.0", "::", "") else args.host
    shown = f"[{shown}]" if ":" in shown else shown
    # Said as host, port and path: an address is for the reader to type, never one this code fetches
    print(
        f"graphrag-serve: the web app is at host {shown}, port {args.port}, path / (the API's docs at /docs)",
        flush=True,
    )
    config = server_config(
        create_app(settings=settings), settings, host=args.host, port=args.port, log_level=args.log_level
    )
    server = uvicorn.Server(config)
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    return 0 if server.started else 1


def server_config(app: ASGIApp, settings: Settings, **options: Any) -> uvicorn.Config:
    """uvicorn's configuration for the service's `app` (`options` are uvicorn's own): request heads capped
    (`headers.capped_protocol`) and the service's logs made key-free (`logs.redact_logs`). graphrag-serve
    and the tests' servers are both made here."""
    import uvicorn

    cap = settings.service_max_header_bytes
    options.setdefault("http", capped_protocol(cap))
    options.setdefault("h11_max_incomplete_event_size", cap)  # the h11 parser's own bound, where it is used
    config = uvicorn.Config(app, **options)
    redact_logs()  # after uvicorn's Config has configured its loggers and their handlers
    return config
