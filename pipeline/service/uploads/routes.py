"""The documents API's changes and runs (`install_uploads`); the documents list is in `web.py`.

- `POST /v1/namespaces` `{"namespace": NAME}`: a managed namespace (a `write: true` key) -> 201;
- `POST /v1/namespaces/{ns}/documents` (multipart, parts named `file`) -> 202 with the documents and run;
- `PUT /v1/namespaces/{ns}/documents/{id}` (multipart, one `file`): replace -> 202;
- `DELETE /v1/namespaces/{ns}/documents/{id}` -> 202;
- `POST /v1/namespaces/{ns}/documents/{id}/retry`, `POST /v1/namespaces/{ns}/documents/retry` -> 202;
- `GET /v1/namespaces/{ns}/runs`, `.../runs/{id}`, `.../runs/{id}/events` (Server-Sent Events);
- `GET /v1/namespaces/{ns}/changes`: who changed what, when (key ids, never keys).
The key is checked before any body is read: a read-only key's upload is refused without reading it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import FastAPI, Path, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from pipeline.core.namespace import NAMESPACE_PATTERN
from pipeline.service.caller import Caller
from pipeline.service.errors import InvalidRequest
from pipeline.service.streams import sse
from pipeline.service.uploads import changes
from pipeline.service.uploads.actions import Uploads
from pipeline.service.uploads.intake import DocumentNotFound, Incoming
from pipeline.service.uploads.runs import POLL_S, summary

NamespaceParam = Annotated[str, Path(pattern=NAMESPACE_PATTERN.pattern)]
IdParam = Annotated[str, Path(pattern=r"^[0-9a-f]{24}$")]
RunParam = Annotated[str, Path(pattern=r"^[0-9TZ]{15}-[0-9a-f]{6}$")]
MAX_PARTS = 100
STATUS_EVERY_S = 10.0  # a live run's stream says where it is at least this often (long quiet stages)
# The upload routes, whose bodies may be as large as `service_upload_max_request_bytes`.
UPLOAD_PATH = re.compile(r"^/v1/namespaces/[^/]+/documents(/[0-9a-f]{24})?$")

ACCEPTED = {202: {"description": "accepted: the documents and the run that takes them in"}}


def _multipart(many: bool) -> dict[str, Any]:
    """The upload's body for the OpenAPI document (the route reads the form itself, streaming files)."""
    part = {"type": "string", "format": "binary"}
    files = {"type": "array", "items": part} if many else part
    schema = {"type": "object", "properties": {"file": files}, "required": ["file"]}
    return {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": schema}}}}


class NewNamespace(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    namespace: str = Field(pattern=NAMESPACE_PATTERN.pattern, description="The new namespace's name")


async def _parts(
    uploads: Uploads, request: Request, caller: Any, namespace: str, most: int
) -> list[Incoming]:
    form = await request.form(max_files=most, max_fields=10)
    files = [v for k, v in form.multi_items() if k == "file" and not isinstance(v, str)]
    if not files:
        await form.close()
        raise InvalidRequest("send the documents as multipart/form-data parts named 'file'")
    parts: list[Incoming] = []
    try:
        for upload in files:
            parts.append(
                await asyncio.to_thread(uploads.receive, caller, namespace, upload.filename, upload.file)
            )
    except BaseException:
        for part in parts:
            part.discard()
        raise
    finally:
        await form.close()
    return parts


def install_uploads(app: FastAPI, uploads: Uploads) -> None:
    @app.post("/v1/namespaces", status_code=201, tags=["documents"])
    async def create_namespace(body: NewNamespace, caller: Caller) -> dict[str, Any]:
        """Create a managed namespace: the service owns its input folder; it becomes the tenant's (every
        key of the tenant reads it, its `write: true` keys change it). 409 when the name is taken."""
        return await asyncio.to_thread(uploads.create_namespace, caller, body.namespace)

    @app.post(
        "/v1/namespaces/{namespace}/documents",
        status_code=202,
        responses=ACCEPTED,
        tags=["documents"],
        openapi_extra=_multipart(many=True),
    )
    async def upload(namespace: NamespaceParam, request: Request, caller: Caller) -> dict[str, Any]:
        """Upload documents (multipart parts named `file`): each is queued for the namespace's next run,
        or reported `duplicate` when the namespace holds the same bytes. 413: a file over the size limit
        or the namespace's quota; 409: a name the namespace holds (replace it with PUT)."""
        uploads.check_write(caller, namespace)
        parts = await _parts(uploads, request, caller, namespace, MAX_PARTS)
        return await asyncio.to_thread(uploads.add, caller, namespace, parts)

    @app.put(
        "/v1/namespaces/{namespace}/documents/{document_id}",
        status_code=202,
        responses=ACCEPTED,
        tags=["documents"],
        openapi_extra=_multipart(many=False),
    )
    async def replace(
        namespace: NamespaceParam, document_id: IdParam, request: Request, caller: Caller
    ) -> dict[str, Any]:
        """Replace a document's file (one multipart part named `file`); the next run re-indexes it alone."""
        uploads.check_write(caller, namespace)
        parts = await _parts(uploads, request, caller, namespace, 1)
        return await asyncio.to_thread(uploads.replace, caller, namespace, document_id, parts[0])

    @app.delete(
        "/v1/namespaces/{namespace}/documents/{document_id}",
        status_code=202,
        responses=ACCEPTED,
        tags=["documents"],
    )
    async def delete(namespace: NamespaceParam, document_id: IdParam, caller: Caller) -> dict[str, Any]:
        """Delete a document: its file now, and its text units, entities, relationships, claims and
        reports from every table in the run that follows (which re-clusters)."""
        return await asyncio.to_thread(uploads.delete, caller, namespace, document_id)

    @app.post(
        "/v1/namespaces/{namespace}/documents/{document_id}/retry",
        status_code=202,
        responses=ACCEPTED,
        tags=["documents"],
    )
    async def retry_one(namespace: NamespaceParam, document_id: IdParam, caller: Caller) -> dict[str, Any]:
        """Run a failed document again (409 when it has not failed)."""
        return await asyncio.to_thread(uploads.retry, caller, namespace, document_id)

    @app.post(
        "/v1/namespaces/{namespace}/documents/retry", status_code=202, responses=ACCEPTED, tags=["documents"]
    )
    async def retry_all(namespace: NamespaceParam, caller: Caller) -> dict[str, Any]:
        """Run every failed document of the namespace again."""
        return await asyncio.to_thread(uploads.retry, caller, namespace, None)

    @app.get("/v1/namespaces/{namespace}/runs", tags=["documents"])
    async def runs(namespace: NamespaceParam, caller: Caller) -> dict[str, Any]:
        """The namespace's runs for its uploads, newest first: status, stage timings, rows, model calls,
        tokens, cost, failures and the Dagster run id."""
        caller.authorize(namespace)
        return {"namespace": namespace, "runs": await asyncio.to_thread(uploads.runs.records, namespace)}

    @app.get("/v1/namespaces/{namespace}/runs/{run_id}", tags=["documents"])
    async def run(namespace: NamespaceParam, run_id: RunParam, caller: Caller) -> dict[str, Any]:
        """One run (404 when the namespace has no such run)."""
        caller.authorize(namespace)
        return _found(await asyncio.to_thread(uploads.runs.record, namespace, run_id), run_id)

    @app.get("/v1/namespaces/{namespace}/runs/{run_id}/events", tags=["documents"])
    async def run_events(namespace: NamespaceParam, run_id: RunParam, caller: Caller) -> StreamingResponse:
        """The run's progress as Server-Sent Events from its start: `stage_started`, `stage_progress`,
        `asset_materialized` (with its rows), `stage_finished` (with its seconds), `status` now and then
        while it runs, and last `run` with its final status, failures and Dagster run id."""
        caller.authorize(namespace)
        _found(await asyncio.to_thread(uploads.runs.record, namespace, run_id), run_id)
        return StreamingResponse(_events(uploads, namespace, run_id), media_type="text/event-stream")

    @app.get("/v1/namespaces/{namespace}/changes", tags=["documents"])
    async def change_log(namespace: NamespaceParam, caller: Caller) -> dict[str, Any]:
        """Every change made to the namespace's documents through the API: who (tenant, key id), what,
        which document, when, and the run that took it in."""
        caller.authorize(namespace)
        return {
            "namespace": namespace,
            "changes": await asyncio.to_thread(changes.read, uploads.settings, namespace),
        }


def _found(record: dict[str, Any] | None, run_id: str) -> dict[str, Any]:
    if record is None:
        raise DocumentNotFound(f"no run {run_id!r} in this namespace")
    return record


async def _events(uploads: Uploads, namespace: str, run_id: str) -> AsyncIterator[bytes]:
    offset, quiet = 0, 0.0
    while True:
        found, offset, ended = await asyncio.to_thread(uploads.runs.read_events, namespace, run_id, offset)
        for event in found:
            yield sse(event.get("event", "event"), event)
        if ended is not None:
            yield sse("run", summary(ended))
            return
        quiet = 0.0 if found else quiet + POLL_S
        if quiet >= STATUS_EVERY_S:
            quiet = 0.0
            record = await asyncio.to_thread(uploads.runs.record, namespace, run_id) or {}
            yield sse("status", {"status": record.get("status"), "run": run_id})
        await asyncio.sleep(POLL_S)
