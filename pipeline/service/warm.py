"""The service's warm start: what a namespace's first question loads, loaded before the question comes.

One background thread (`Warmer`) first loads the process's pieces (LanceDB's import, the tokenizer,
the deferred-report writer's modules: `pipeline.query.warm.warm_process`), then warms namespaces one at a
time (`warm_namespace`: the structures every mode's question builds, into the caches questions read). It
starts with the process, beside the model loading that `/readyz` waits for, and it takes:

- at start-up, the namespaces the keys file names (at most `index_cache.MAX_NAMESPACES`, the number the
  caches keep);
- later, a namespace a key selects: `GET /v1/namespaces/{ns}/status`, its documents list (what the web app
  reads when a namespace is chosen) or `POST /v1/namespaces/{ns}/warm`, each after the key's check.

Nothing waits for it: a request that triggers a warm is answered at once with the namespace's state
(`queued`, `warming`, `warm`, `not_indexed` or `failed`), and a question that arrives mid-warm finds
each structure built, or waits for the one under way instead of building its own. A warm namespace is
warmed again only once its committed index version changed (a re-index); a second request is free.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import Path
from starlette.types import ASGIApp, Receive, Scope, Send

from pipeline.core.namespace import NAMESPACE_PATTERN
from pipeline.io.store import NamespaceStore
from pipeline.query.caches.index_cache import MAX_NAMESPACES, held_versions
from pipeline.query.warm import warm_namespace, warm_process
from pipeline.service.caller import Caller
from pipeline.settings import Settings

if TYPE_CHECKING:
    from fastapi import FastAPI

# The query service (`pipeline.service.queries`, which makes the `Warmer`) is typed `Any` here: an import
# back would be a cycle.
QueryService = Any

log = logging.getLogger("pipeline.service")

State = Literal["queued", "warming", "warm", "not_indexed", "failed"]
PENDING: frozenset[State] = frozenset({"queued", "warming"})


@dataclass
class Warmth:
    """A namespace's warm start as `POST /v1/namespaces/{ns}/warm` and its status report it."""

    state: State
    index_version: int | None = None  # the committed index version its structures were built from
    loaded: list[str] = field(default_factory=list)  # the structures held
    absent: list[str] = field(default_factory=list)  # those of modes it lacks the tables for
    failed: dict[str, str] = field(default_factory=dict)  # structure -> the error's type
    seconds: float | None = None  # the last warm's time (near 0 when everything was held already)
    warmed_at: str | None = None  # when it was last warmed (unchanged by a free second request)


class Warmer:
    """Warms namespaces on one background thread; every method answers at once but `wait`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.process_warm = threading.Event()  # the process's pieces are loaded
        self._changed = threading.Condition()
        self._pending: deque[str] = deque()
        self._states: dict[str, Warmth] = {}
        self._thread: threading.Thread | None = None
        self._closed = False

    def start(self, namespaces: Iterable[str] = ()) -> None:
        """Start the thread (the process's pieces first), then warm `namespaces`: those the caches keep."""
        with self._changed:
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._run, name="warm-start", daemon=True)
                self._thread.start()
        for namespace in sorted(namespaces)[:MAX_NAMESPACES]:
            self.request(namespace)

    def request(self, namespace: str) -> dict[str, Any]:
        """Warm `namespace` (an authorised one) unless it is under way; its state now. A warm namespace
        is checked against its index version in the background and rebuilt only when it changed."""
        self.start()
        with self._changed:
            current = self._states.get(namespace)
            if current is None or current.state not in PENDING:
                if namespace not in self._pending:
                    self._pending.append(namespace)
                if current is None or current.state != "warm":
                    self._states[namespace] = Warmth("queued")
                self._changed.notify_all()
            return asdict(self._states[namespace])

    def state(self, namespace: str) -> dict[str, Any] | None:
        """The namespace's state, or None when it was never asked for."""
        with self._changed:
            found = self._states.get(namespace)
            return asdict(found) if found is not None else None

    def wait(self, namespace: str, timeout: float) -> dict[str, Any] | None:
        """Its state once neither queued nor warming nor waiting for a check, or after `timeout` seconds
        (tests and benches; the service never waits)."""
        with self._changed:
            self._changed.wait_for(
                lambda: (
                    namespace not in self._pending
                    and (self._states.get(namespace) is None or self._states[namespace].state not in PENDING)
                ),
                timeout=timeout,
            )
            return self.state(namespace)

    def counts(self) -> dict[str, int]:
        """How many namespaces are in each state (`/readyz` says this much: no names to an anonymous call)."""
        with self._changed:
            found: dict[str, int] = {}
            for warmth in self._states.values():
                found[warmth.state] = found.get(warmth.state, 0) + 1
            return found

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._pending.clear()
            self._changed.notify_all()

    # ---- the thread -----------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            from pipeline.runtime import report_writer

            warm_process(self.settings.encoding)
            report_writer(self.settings)  # its modules: a global question's first-use writer
        except Exception as exc:  # noqa: BLE001 - a first question then pays for these itself
            log.warning("warm start: the process's pieces did not load: %s: %s", type(exc).__name__, exc)
        self.process_warm.set()
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._pending or self._closed)
                if self._closed:
                    return
                namespace = self._pending[0]  # left queued until done: `wait` sees it pending
            self._warm(namespace)
            with self._changed:
                self._pending.popleft()
                self._changed.notify_all()

    def _warm(self, namespace: str) -> None:
        prior = self.state(namespace)
        try:
            store = NamespaceStore.from_settings(self.settings, namespace)
            if not store.exists():
                self._set(namespace, Warmth("not_indexed"))
                return
            pinned = store.pinned()  # as a question reads it: the same versions, the same cache entries
            version = pinned.manifest.version if pinned.manifest is not None else None
            if _still_warm(prior, version, pinned):
                return  # a second request costs a manifest read and a look at the caches
            self._set(namespace, Warmth("warming", version))
            warmed = warm_namespace(pinned)
        except Exception as exc:  # noqa: BLE001 - the namespace's questions will say what is wrong
            log.warning("warm start of namespace %s failed: %s: %s", namespace, type(exc).__name__, exc)
            self._set(namespace, Warmth("failed", failed={"namespace": type(exc).__name__}))
            return
        log.info("namespace %s warm in %.2fs: %s", namespace, warmed.seconds, ", ".join(warmed.loaded))
        now = datetime.now(UTC).isoformat(timespec="seconds")
        state: State = "failed" if warmed.failed and not warmed.loaded else "warm"
        self._set(
            namespace,
            Warmth(state, version, warmed.loaded, warmed.absent, warmed.failed, warmed.seconds, now),
        )

    def _set(self, namespace: str, warmth: Warmth) -> None:
        with self._changed:
            self._states[namespace] = warmth
            self._changed.notify_all()


def _still_warm(prior: dict[str, Any] | None, version: int | None, store: NamespaceStore) -> bool:
    """Warmed at this committed version and still held by the caches (they keep `MAX_NAMESPACES`:
    warming more evicts the least recently used). An index without a manifest (written before them) has
    no version to compare: its questions check each structure against its tables, as they always do."""
    if prior is None or prior["state"] != "warm":
        return False
    return prior["index_version"] == version and bool(held_versions(store))


# ---- the doors ------------------------------------------------------------------------------------
# A key selects a namespace by reading its status or its documents (the web app's first reads of it).
_SELECTS = re.compile(r"^/v1/namespaces/([^/]+)/(?:status|documents)$")


class WarmOnSelect:
    """Warms the namespace of a `GET /v1/namespaces/{ns}/status` or `.../documents` whose key may read it
    (inside the key's check: `graphrag.principal` is set), then hands the request on unchanged."""

    def __init__(self, app: ASGIApp, warmer: Warmer) -> None:
        self.app = app
        self.warmer = warmer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            found = _SELECTS.match(scope["path"])
            principal = scope.get("graphrag.principal")
            if found and principal is not None and found.group(1) in principal.namespaces:
                self.warmer.request(found.group(1))
        await self.app(scope, receive, send)


def install_warm(app: FastAPI, service: QueryService) -> None:
    """`POST /v1/namespaces/{ns}/warm`, and the warm on a namespace's first reads (`WarmOnSelect`)."""

    @app.post("/v1/namespaces/{namespace}/warm", tags=["status"])
    async def warm(
        namespace: Annotated[str, Path(pattern=NAMESPACE_PATTERN.pattern)], caller: Caller
    ) -> dict[str, Any]:
        """Load what the namespace's first question reads, in the background; answers at once with its
        state: `queued`, `warming`, `warm` (with the structures held and the index version they were
        built from), `not_indexed` or `failed`. A warm namespace is rebuilt only after a re-index."""
        return {"namespace": namespace, **service.warmer.request(caller.authorize(namespace))}
