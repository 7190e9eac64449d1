"""Runs one query for one tenant against one namespace, with a deadline, cancellation and bounded output.

Both front ends (HTTP in `app.py`, MCP in `mcp_server.py`) come here. Each query builds its own
`NamespaceStore` and engine, so nothing a request touches is shared with another tenant's request;
only the embedding model (read-only weights) is shared. The query runs on a worker thread with its
own event loop: CPU stages (index loading, embedding) then never stall the server, and the worker
gets the deadline and a `threading.Event` that is set when the deadline passes or the client leaves,
which stops its LLM calls (their connections are closed) and its remaining stages.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pipeline.chunk_graph.errors import SnapshotError
from pipeline.core import schema
from pipeline.embeddings.base import Embedder
from pipeline.engine.base import Engine
from pipeline.io.damage import IndexDamaged
from pipeline.io.repair import diagnose, find_damage
from pipeline.io.store import NamespaceStore, TableNotFoundError
from pipeline.llm.batch import deadline_in, remaining, stopped
from pipeline.llm.errors import LLMError
from pipeline.query import registry
from pipeline.query.common.events import Sink
from pipeline.service.auth import KeyStore, Principal, key_from_headers
from pipeline.service.errors import (
    DeadlineExceeded,
    IndexDamagedError,
    IndexNotReady,
    InvalidRequest,
    ServiceError,
)
from pipeline.service.lanes import Lanes, send_queued
from pipeline.service.limits import KeyLimiter, KeyRateLimiter, OutputBounds, bound_result
from pipeline.service.models import kind_of
from pipeline.service.modes import Work, answer
from pipeline.service.shared_limits import PgKeyLimiter, PgKeyRateLimiter
from pipeline.service.upstream import UpstreamError, llm_failure
from pipeline.settings import Settings

log = logging.getLogger("pipeline.service")

# After the deadline the worker gets this long to notice it and hand back what it has done.
GRACE_S = 1.0


# Which worker pool runs each kind: its mode's `lane`. Retrieval-only queries take about a tenth of a
# second offline, a graph query up to a few seconds: in one first-come queue, 16 clients left basic
# searches waiting seconds behind DRIFT and global ones (bench/bench_serve_load.py). Each lane has its
# own threads, so a quick query starts at once however many graph queries wait their turn.
def lane_of(kind: str) -> str:
    return registry.mode(kind).lane


def bad_requests() -> tuple[type[Exception], ...]:
    """What the registered modes raise for a request they cannot take (422 invalid_request)."""
    return tuple(e for mode in registry.MODES.values() for e in mode.errors)


# The answer to a query (`QueryService.finish`), also what an MCP tool returns of a stream's `done`.
ANSWER_KEYS = ("namespace", "kind", "status", "truncated", "duration_s", "result")
__all__ = ["ANSWER_KEYS", "Query", "QueryService", "UpstreamError", "llm_failure"]


@dataclass
class Query:
    """One admitted query: who asked what, its clocks and cancel signal, and the worker running it."""

    principal: Principal
    kind: str
    namespace: str
    timeout: float
    deadline: float
    cancel: threading.Event = field(default_factory=threading.Event)
    began: threading.Event = field(default_factory=threading.Event)  # a worker of its lane took it up
    started: float = field(default_factory=time.monotonic)
    worker: asyncio.Future[dict[str, Any]] = None  # type: ignore[assignment]

    def to_deadline(self) -> float:
        return remaining(self.deadline) or 0.0

    def left(self) -> float:
        """Seconds to wait for the worker: to the deadline, then the grace to notice it and hand back."""
        return self.to_deadline() + GRACE_S

    async def wait(self) -> None:
        """Until the worker is done or its time is up (`left`); `QueryService.finish` tells which."""
        await asyncio.wait({self.worker}, timeout=self.left())

    def log(self, outcome: str) -> None:
        # key_id is a prefix of the key's digest: it tells keys apart in logs without revealing one.
        log.info(
            "query kind=%s tenant=%s key=%s namespace=%s outcome=%s duration_s=%.3f",
            self.kind,
            self.principal.tenant,
            self.principal.key_id,
            self.namespace,
            outcome,
            time.monotonic() - self.started,
        )


class QueryService:
    def __init__(
        self,
        settings: Settings,
        *,
        keys: KeyStore | None = None,
        embedder: Embedder | None = None,
        engine_factory: Callable[[], Engine] | None = None,
    ) -> None:
        self.settings = settings
        self.keys = keys if keys is not None else KeyStore(settings.api_keys_file)
        from pipeline.service.uploads.actions import Uploads

        self.uploads = Uploads(settings)  # managed namespaces, their changes and index runs
        from pipeline.service.warm import Warmer

        self.warmer = Warmer(settings)  # what a namespace's first question loads, loaded ahead of it
        # Shared by every process on one PostgreSQL when configured, else this process's own count.
        limits_url = settings.service_limits_url
        self.limiter: KeyLimiter | PgKeyLimiter = (
            PgKeyLimiter(limits_url.get_secret_value(), settings.service_key_concurrency)
            if limits_url is not None
            else KeyLimiter(settings.service_key_concurrency)
        )
        rate, window = settings.service_key_rate, settings.service_key_rate_window_s
        self.rate: KeyRateLimiter | PgKeyRateLimiter | None = None
        if rate is not None:
            self.rate = (
                PgKeyRateLimiter(limits_url.get_secret_value(), rate, window)
                if limits_url is not None
                else KeyRateLimiter(rate, window)
            )
        self.bounds = OutputBounds(
            settings.service_max_answer_chars,
            settings.service_max_evidence_items,
            settings.service_max_text_chars,
        )
        from pipeline.runtime import engine_factory as default_factory
        from pipeline.runtime import graph_query_workers

        self._engine_factory = engine_factory if engine_factory is not None else default_factory(settings)
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self.warm = threading.Event()
        self._admission = ThreadPoolExecutor(max_workers=4, thread_name_prefix="admission")
        self.lanes = Lanes({"quick": settings.service_quick_workers, "graph": graph_query_workers(settings)})

    def close(self) -> None:
        """Stop taking new work, without waiting. Queued queries still run to their `finally` (at once,
        if their deadline has passed): each gives back its key's slot, which with shared limits is a
        row in PostgreSQL that would otherwise outlive this process."""
        for pool in (*self.lanes.values(), self._admission):
            pool.shutdown(wait=False)
        self.uploads.close()
        self.warmer.close()

    # ---- shared, read-only pieces ---------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        with self._embedder_lock:
            if self._embedder is None:
                from pipeline.runtime import cached_embedder

                self._embedder = cached_embedder(self.settings)
            return self._embedder

    def warm_up(self) -> None:
        """Load the embedding model and the question parse's NER model (seconds each) so the first
        query does not pay for them; sets `warm`."""
        from pipeline.core.ner import ner_model

        inner = getattr(self.embedder, "embedder", self.embedder)
        inner.embed(["warm-up"])  # bypass the cache: a cache hit would not load the model
        ner_model()  # every mode's offline question parse (and global's broad-question test) reads it
        self.warm.set()

    def new_engine(self) -> Engine:
        # One engine per query: its usage counters and connection pool belong to that query alone.
        return self._engine_factory()

    def authenticate(self, headers: Mapping[str, str]) -> Principal:
        """The key's principal, with the namespaces its tenant created through the API."""
        principal = self.keys.authenticate(key_from_headers(headers))
        return principal.with_namespaces(self.uploads.managed.owned_by(principal.tenant))

    # ---- a query --------------------------------------------------------------------------------
    async def run(self, principal: Principal, request: Any) -> dict[str, Any]:
        """Answer `request`, the HTTP body of a registered mode (`models.body_of`)."""
        query = await self.start(principal, request)
        try:
            await query.wait()
        except asyncio.CancelledError:  # the client went away: stop the work too
            query.cancel.set()
            raise
        return self.finish(query)

    def stream(self, principal: Principal, request: Any) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """`run`'s query, as its events (`pipeline.query.common.events`) while it runs, ending with one
        `done` (its `result` is `run`'s) or `error`. A failure before the first event is raised as
        `run` raises it; closing the iterator early (the client left) cancels the query's work."""
        from pipeline.service.streams import query_events

        return query_events(self, principal, request)

    async def start(self, principal: Principal, request: Any, events: Sink | None = None) -> Query:
        """The query authorised, admitted and handed to a worker of its lane; `events` hears it."""
        kind = kind_of(request)
        namespace = principal.authorize(request.namespace)
        timeout = min(
            request.timeout_s or self.settings.service_timeout_s, self.settings.service_max_timeout_s
        )
        query = Query(principal, kind, namespace, timeout, deadline_in(timeout))
        await self._admitted(principal.key_id)
        lane = lane_of(kind)
        ahead = self.lanes.enter(lane)  # None: a worker is free
        try:
            if ahead is not None and events is not None:
                await send_queued(self.settings, query, lane, ahead, self.lanes.workers[lane], events)
            query.worker = asyncio.get_running_loop().run_in_executor(
                self.lanes[lane], self._work, query, request, events
            )
        except BaseException:
            self.lanes.leave(lane)
            self.limiter.release(principal.key_id)
            raise
        return query

    def finish(self, query: Query) -> dict[str, Any]:
        """The response to a query whose worker is done (`Query.wait`): its result, bounded; the
        service's error when it failed, was cancelled or is still running past its deadline."""
        kind, timeout, worker = query.kind, query.timeout, query.worker
        outcome = "?"
        try:
            if not worker.done():
                query.cancel.set()
                outcome = "deadline"
                raise DeadlineExceeded(
                    f"the {kind} query did not finish within {timeout:g}s and was cancelled",
                    detail={
                        "timeout_s": timeout,
                        "done": "unknown: the query was inside a stage"
                        if query.began.is_set()
                        else f"nothing: it waited for a free {lane_of(kind)}-query worker",
                    },
                )
            result = worker.result()
            bounded, truncated = bound_result(kind, result, self.bounds)
            outcome = bounded.get("status", "?")
            if outcome == "cancelled":
                raise DeadlineExceeded(
                    f"the {kind} query did not finish within {timeout:g}s and was cancelled",
                    detail={"timeout_s": timeout, "reason": bounded.get("reason"), "partial": bounded},
                )
            duration = round(time.monotonic() - query.started, 3)
            return dict(
                zip(ANSWER_KEYS, (query.namespace, kind, outcome, truncated, duration, bounded), strict=True)
            )
        except ServiceError as exc:
            outcome = exc.code if outcome == "?" else outcome
            raise
        finally:
            query.log(outcome)

    def _admit(self, key_id: str) -> None:
        """A concurrency slot, then a place in the rate window: a query refused by either is counted by
        neither. With shared limits each is a PostgreSQL round trip."""
        self.limiter.acquire(key_id)
        if self.rate is None:
            return
        try:
            self.rate.check(key_id)
        except BaseException:
            self.limiter.release(key_id)
            raise

    async def _admitted(self, key_id: str) -> None:
        """`_admit` off the event loop (it may wait on the database), on threads of its own so that it
        never queues behind running queries; a slot taken after the client left is given back."""
        admission = asyncio.get_running_loop().run_in_executor(self._admission, self._admit, key_id)
        try:
            await asyncio.shield(admission)
        except asyncio.CancelledError:

            def give_back(done: asyncio.Future[None]) -> None:
                if not done.cancelled() and done.exception() is None:
                    self.limiter.release(key_id)

            admission.add_done_callback(give_back)
            raise

    def _work(self, query: Query, request: Any, events: Sink | None) -> dict[str, Any]:
        query.began.set()
        kind, namespace, deadline, cancel = query.kind, query.namespace, query.deadline, query.cancel
        store: NamespaceStore | None = None
        try:
            if stopped(cancel, deadline):  # it waited for a worker past its deadline, or its client left
                return {"status": "cancelled", "reason": "the deadline passed before a worker was free"}
            store = NamespaceStore.from_settings(self.settings, namespace)
            if not store.exists():  # checked first so that a query never creates the folder
                raise TableNotFoundError("no tables at all")
            store = store.pinned()  # one committed index version for every read of this request
            work = Work(store, self.settings, self.new_engine, self.embedder, deadline, cancel, events)
            return answer(work, kind, request)
        except IndexDamaged as exc:
            raise damaged(exc) from None
        except TableNotFoundError as exc:
            raise not_ready(namespace, kind, exc) from None
        except SnapshotError as exc:
            raise IndexNotReady(
                f"namespace {namespace!r}: its chunk graph cannot be loaded ({exc}); re-index it"
            ) from None
        except bad_requests() as exc:
            raise InvalidRequest(str(exc), detail=getattr(exc, "detail", None)) from None
        except LLMError as exc:
            raise llm_failure(exc, f"query kind={kind}") from None
        except ServiceError:
            raise
        except Exception:
            # A Lance data file cut short fails deep in a search, naming no table: look for one.
            found = diagnose(store)
            if found is None:
                raise
            raise damaged(found) from None
        finally:
            self.lanes.leave(lane_of(kind))
            self.limiter.release(query.principal.key_id)  # only now has the work really stopped

    # ---- status ---------------------------------------------------------------------------------
    def namespace_status(self, principal: Principal, namespace: str) -> dict[str, Any]:
        principal.authorize(namespace)
        store = NamespaceStore.from_settings(self.settings, namespace)
        try:
            for found in find_damage(store) if store.exists() else ():
                raise found
        except IndexDamaged as exc:
            raise damaged(exc) from None
        tables = [
            {"name": t.name, "kind": t.kind, "rows": t.rows, "materialized_at": t.modified}
            for t in store.tables()
        ]
        modified = store.file_modified(schema.CHUNK_GRAPH_SNAPSHOT)
        if modified is not None:
            tables.append(
                {
                    "name": "chunk_graph",
                    "kind": "snapshot",
                    "rows": _snapshot_nodes(store),
                    "materialized_at": modified,
                }
            )
        present = {(t["kind"], t["name"]) for t in tables}
        ready = {kind: all(need in present for need in m.needs) for kind, m in registry.MODES.items()}
        return {"namespace": namespace, "indexed": bool(tables), "tables": tables, "ready": ready}


def damaged(exc: IndexDamaged) -> IndexDamagedError:
    # The reader's own error names server paths (and LanceDB's, Rust sources): logged, not answered.
    log.warning("namespace %s: %s (%s)", exc.namespace, exc, exc.__cause__ or exc.reason)
    return IndexDamagedError(str(exc), detail=exc.detail())


def not_ready(namespace: str, kind: str, exc: Exception) -> IndexNotReady:
    # The library's message names file paths on the server; the caller gets the missing table only.
    found = re.search(r"table '([^']+)'", str(exc)) or re.search(r"(chunk graph)", str(exc))
    missing = f" (missing: {found.group(1)})" if found else ""
    return IndexNotReady(
        f"namespace {namespace!r} has no {kind} index yet{missing}; "
        f"index it first: pipeline index --namespace {namespace}",
        detail={"namespace": namespace, "query": kind, "missing": found.group(1) if found else None},
    )


def _snapshot_nodes(store: NamespaceStore) -> int | None:
    import pyarrow as pa

    try:
        # Random access: counting reads the batches' headers, not their columns (ranged reads on S3).
        with store.open_input_file(schema.CHUNK_GRAPH_SNAPSHOT) as source:
            return pa.ipc.open_file(source).count_rows()
    except Exception:  # noqa: BLE001 - a status page reports an unreadable snapshot as unknown rows
        return None
