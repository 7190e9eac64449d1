"""A fault-injecting HTTP proxy for OpenAI-compatible servers, on 127.0.0.1.

Each request takes the next fault from a scripted schedule ("ok" once the schedule is empty):

    ok            forward to the upstream server and return its answer
    429           answer 429 with a Retry-After header (nothing reaches the server)
    500           answer 500
    401           answer 401 (a client error: must not be retried)
    hang          send nothing for `hang_s` seconds (past the client's timeout), then close
    drop          close the connection without an answer
    garble        forward, then return the server's body cut in half (the HTTP JSON is broken)
    bad_content   forward, then replace the model's message with prose that is not JSON
    wrap_content  forward, then wrap the model's message in a code fence and chatter
    length        forward, then cut the model's message in half with `finish_reason: "length"`, as a
                  model stopped at max_tokens answers (the HTTP body itself is whole)
    stall         a streamed request: send the stream's headers and one token, then nothing until the
                  client closes the connection (a server stuck mid-reply); `stalls_closed` counts the
                  closes. An unstreamed request gets a hang
    plain         answer a streamed request with the whole JSON completion (a server that cannot stream)

A request that asks for a stream (`"stream": true`) gets server-sent events (tests/support/sse.py): an
"ok" one forwarded is relayed chunk by chunk as the upstream server sends them (`relayed` records each
relay: chunks and timestamps); for the faults that rewrite a reply the proxy asks upstream for a whole
one, rewrites it and streams the result. `events` lists, in order, each request received and each
stalled stream the client closed, so a test can show that nothing was sent again before the close.

`fault_when(match, fault)` gives `fault` to every request that `match` accepts instead of the schedule's
(which such a request does not consume): e.g. cut off every reply about one text unit.

With `upstream=None` it answers "ok" requests itself with a canned completion (for benchmarks that
measure the client, not the model). `forwarded` counts the requests that reached the upstream server,
`max_in_flight` the most requests it was handling at once.

Faults on events, not on time: `hold(match, from_nth=N)` keeps the Nth request that `match` accepts,
and every later one it accepts, received but unanswered until the test calls `release()`. The test
waits for the requests to be held (`Hold.wait_held`), acts while they are certainly in flight (kills
the process that sent them, cancels a batch) and then releases them. `client_pid` says which process
sent a held request. `wait_idle` waits until every request received has been answered.
"""

from __future__ import annotations

import hashlib
import json
import select
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tests.support.sse import event, to_events, unstreamed, wants_stream

FAULTS = (
    "ok",
    "429",
    "500",
    "401",
    "hang",
    "drop",
    "garble",
    "bad_content",
    "wrap_content",
    "length",
    "stall",
    "plain",
)


@dataclass
class Relay:
    """One streamed reply relayed from upstream: its request number, chunks and when they went out."""

    number: int
    chunks: int = 0
    started: float = 0.0  # time.monotonic() when the request arrived
    last_chunk: float = 0.0
    client_closed: bool = False


@dataclass(frozen=True)
class ProxyRequest:
    """One request as the proxy received it."""

    number: int  # 1-based, in arrival order among all the requests the proxy received
    path: str
    body: Any  # the parsed JSON body; None when there is none or it is not JSON
    client_port: int  # the sender's local TCP port (see `client_pid`)


class Hold:
    """Requests kept received but unanswered until `release()`; see `FaultProxy.hold`.

    `match` is called for every request the proxy receives while the hold is active, one call at a
    time in arrival order (so a stateful `match` needs no lock of its own)."""

    def __init__(self, match: Callable[[ProxyRequest], bool], from_nth: int) -> None:
        if from_nth < 1:
            raise ValueError(f"from_nth must be >= 1, got {from_nth}")
        self._match = match
        self._from_nth = from_nth
        self._matched = 0
        self._held: list[ProxyRequest] = []
        self._answered = 0
        self.errors: list[str] = []  # what `match` raised (that request was not held)
        self._cond = threading.Condition()
        self._released = threading.Event()

    @property
    def held(self) -> list[ProxyRequest]:
        """Every request held so far, in arrival order (released ones included)."""
        with self._cond:
            return list(self._held)

    @property
    def released(self) -> bool:
        return self._released.is_set()

    def wait_held(
        self, n: int = 1, timeout: float = 120.0, alive: Callable[[], bool] | None = None
    ) -> list[ProxyRequest]:
        """Block until `n` requests are held; TimeoutError after `timeout` s, or as soon as `alive()`
        says the client is gone. A generous timeout: it only bounds how long a broken run hangs."""
        end = time.monotonic() + timeout
        with self._cond:
            while len(self._held) < n:
                left = end - time.monotonic()
                if left <= 0 or (alive is not None and not alive()):
                    raise TimeoutError(
                        f"{len(self._held)} of {n} requests held; matched {self._matched}; "
                        f"match errors: {self.errors[:3]}"
                    )
                self._cond.wait(min(left, 0.1))
            return list(self._held)

    def wait_answered(self, timeout: float = 120.0) -> None:
        """Block until every held request has been answered (or its answer failed to go out)
        after `release()`."""
        end = time.monotonic() + timeout
        with self._cond:
            while self._answered < len(self._held):
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{self._answered} of {len(self._held)} held requests answered")
                self._cond.wait(min(left, 0.1))

    def release(self) -> None:
        """Answer the held requests and hold nothing more."""
        with self._cond:
            self._released.set()
            self._cond.notify_all()

    # ---- used by the proxy -----------------------------------------------------------------------
    def _offer(self, request: ProxyRequest) -> bool:
        with self._cond:
            if self._released.is_set():
                return False
            try:
                matched = self._match(request)
            except Exception as exc:  # noqa: BLE001 - a broken `match` must not break the proxy
                self.errors.append(f"request {request.number}: {type(exc).__name__}: {exc}")
                return False
            if not matched:
                return False
            self._matched += 1
            if self._matched < self._from_nth:
                return False
            self._held.append(request)
            self._cond.notify_all()
            return True

    def _wait_release(self) -> None:
        self._released.wait()

    def _note_answered(self) -> None:
        with self._cond:
            self._answered += 1
            self._cond.notify_all()


def client_pid(request: ProxyRequest, candidates: Iterable[int]) -> int | None:
    """Which of `candidates` (pids) owns the TCP connection a request came on, while it is still open
    (a held request's connection is: its sender waits for the answer)."""
    import psutil

    for pid in candidates:
        try:
            connections = psutil.Process(pid).net_connections(kind="tcp")
        except psutil.NoSuchProcess:
            continue
        if any(c.laddr and c.laddr.port == request.client_port for c in connections):
            return pid
    return None


class FaultProxy:
    def __init__(
        self,
        upstream: str | None,
        *,
        latency_s: float = 0.0,
        retry_after_s: float = 1.0,
        hang_s: float = 30.0,
        canned_content: str = '{"summary": "canned"}',
        embedding_dim: int = 8,
        responder: Callable[[dict[str, Any]], str | dict[str, Any]] | None = None,
    ) -> None:
        self.upstream = urlsplit(upstream) if upstream else None
        self.latency_s = latency_s
        self.retry_after_s = retry_after_s
        self.hang_s = hang_s
        self.canned_content = canned_content
        # A scripted model for tests that need a different reply per request: request JSON -> content.
        self.responder = responder
        self.embedding_dim = embedding_dim
        self.received = 0
        self.forwarded = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.served: list[tuple[str, str]] = []  # (path, fault) per request, in arrival order
        self.events: list[str] = []  # "received N", "stall N closed" in the order they happened
        self.relayed: list[Relay] = []
        self.stalls_closed = 0
        self.authorizations: set[str] = set()
        self._schedule: deque[str] = deque()
        self._holds: list[Hold] = []
        self._rules: list[tuple[Callable[[ProxyRequest], bool], str]] = []
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- control ---------------------------------------------------------------------------------
    def script(self, *faults: str) -> FaultProxy:
        """Append faults to the schedule; each request consumes one."""
        unknown = [f for f in faults if f not in FAULTS]
        if unknown:
            raise ValueError(f"unknown faults {unknown}; use {FAULTS}")
        with self._lock:
            self._schedule.extend(faults)
        return self

    def fault_when(self, match: Callable[[ProxyRequest], bool], fault: str) -> FaultProxy:
        """Serve `fault` to every request `match` accepts (the first rule that accepts wins); `match`
        is called under the proxy's lock, one request at a time."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; use {FAULTS}")
        with self._lock:
            self._rules.append((match, fault))
        return self

    def hold(self, match: Callable[[ProxyRequest], bool] | None = None, *, from_nth: int = 1) -> Hold:
        """Hold the `from_nth`-th request that `match` accepts (every request when None) and every later
        one it accepts: received, counted, not answered until `Hold.release()` (or `stop()`)."""
        hold = Hold(match or (lambda _request: True), from_nth)
        with self._lock:
            self._holds.append(hold)
        return hold

    def wait_idle(self, timeout: float = 120.0) -> None:
        """Block until no request is being handled (every one received has been answered)."""
        with self._idle:
            if not self._idle.wait_for(lambda: self.in_flight == 0, timeout):
                raise TimeoutError(f"{self.in_flight} requests still in flight")

    def pending(self) -> list[str]:
        with self._lock:
            return list(self._schedule)

    def reset_counts(self) -> None:
        with self._lock:
            self.received = self.forwarded = self.max_in_flight = 0
            self.served.clear()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the proxy first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FaultProxy:
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            holds = list(self._holds)
        for hold in holds:
            hold.release()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- used by the handler ---------------------------------------------------------------------
    def _next(
        self,
        path: str,
        authorization: str | None,
        request: Callable[[int], ProxyRequest] | None = None,
    ) -> tuple[str, int]:
        """The request's fault and its number (1-based, in arrival order); `request(number)` builds
        what a `fault_when` rule sees."""
        with self._lock:
            ruled = None
            if self._rules and request is not None:
                seen = request(self.received + 1)
                ruled = next((f for match, f in self._rules if match(seen)), None)
            fault = ruled or (self._schedule.popleft() if self._schedule else "ok")
            self.received += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.served.append((path, fault))
            self.events.append(f"received {self.received}")
            if authorization:
                self.authorizations.add(authorization)
            return fault, self.received

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1
            self._idle.notify_all()

    def _hold_for(self, request: ProxyRequest) -> Hold | None:
        with self._lock:
            holds = list(self._holds)
        for hold in holds:
            if hold._offer(request):
                return hold
        return None

    def _count_forward(self) -> None:
        with self._lock:
            self.forwarded += 1

    def _outgoing(self, body: bytes) -> bytes:
        """The body sent upstream for a request's body (a subclass may rewrite requests)."""
        return body

    def _intercepts(self, body: bytes) -> bool:
        """Whether a request is answered with the canned completion instead of going upstream."""
        return False

    def _note_stall_closed(self, number: int) -> None:
        with self._lock:
            self.stalls_closed += 1
            self.events.append(f"stall {number} closed")

    def _forward(
        self, method: str, path: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int, bytes, str]:
        if self.upstream is None:
            return 200, self._canned(path, body), "application/json"
        self._count_forward()
        conn = HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=600)
        try:
            conn.request(method, path, body=self._outgoing(body), headers=headers)
            response = conn.getresponse()
            return response.status, response.read(), response.getheader("Content-Type", "application/json")
        finally:
            conn.close()

    def _message(self, request: dict[str, Any]) -> dict[str, Any]:
        """The canned assistant message; a responder may answer a dict of message fields instead of the
        content (e.g. `reasoning_content` beside it, as thinking models' servers send)."""
        answer = self.responder(request) if self.responder else self.canned_content
        fields = answer if isinstance(answer, dict) else {"content": answer}
        return {"role": "assistant", **fields}

    def _canned(self, path: str, body: bytes) -> bytes:
        request: dict[str, Any] = json.loads(body or b"{}")
        if path.endswith("/embeddings"):
            inputs = request.get("input") or []
            inputs = [inputs] if isinstance(inputs, str) else inputs
            data = [
                {"object": "embedding", "index": i, "embedding": _fake_vector(text, self.embedding_dim)}
                for i, text in enumerate(inputs)
            ]
            usage = {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}
            return json.dumps({"object": "list", "data": data, "model": "canned", "usage": usage}).encode()
        return json.dumps(
            {
                "id": "canned",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": request.get("model", "canned"),
                "choices": [{"index": 0, "finish_reason": "stop", "message": self._message(request)}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        ).encode()


def _fake_vector(text: str, dim: int) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i % len(digest)] - 128) / 128 for i in range(dim)]


def _rewrite_content(body: bytes, rewrite: Callable[[str], str]) -> bytes:
    try:
        data = json.loads(body)
        message = data["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        return body
    message["content"] = rewrite(message.get("content") or "")
    return json.dumps(data).encode()


def _cut_off(body: bytes) -> bytes:
    try:
        data = json.loads(body)
        choice = data["choices"][0]
        content = choice["message"].get("content") or ""
    except (ValueError, KeyError, IndexError, TypeError):
        return body
    choice["message"]["content"] = content[: len(content) // 2]
    choice["finish_reason"] = "length"
    return json.dumps(data).encode()


class _Handler(BaseHTTPRequestHandler):
    owner: FaultProxy
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, the body waits for the client's delayed
    # ACK (~40 ms a response), which would swamp any latency the proxy is asked to inject.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: tests read the counters instead

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        owner = self.owner
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        fault, number = owner._next(
            self.path, self.headers.get("Authorization"), lambda n: self._request(n, body)
        )
        try:
            hold = owner._hold_for(self._request(number, body))
            if hold is None:
                self._serve(fault, body, number)
                return
            hold._wait_release()
            try:
                self._serve(fault, body, number)
            finally:
                hold._note_answered()
        finally:
            owner._done()

    def _request(self, number: int, body: bytes) -> ProxyRequest:
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        return ProxyRequest(number, self.path, parsed, self.client_address[1])

    def _serve(self, fault: str, body: bytes, number: int) -> None:
        owner = self.owner
        if owner.latency_s:
            time.sleep(owner.latency_s)
        request = self._request(number, body).body
        streamed = wants_stream(request) and self.path.endswith("/chat/completions")
        if fault == "stall" and streamed:
            self._stall(number)
            return
        if fault == "stall":
            fault = "hang"
        if fault == "drop":
            self.close_connection = True
            self.connection.close()
            return
        if fault == "hang":
            owner._stopping.wait(owner.hang_s)
            self.close_connection = True
            self.connection.close()
            return
        if fault in ("429", "500", "401"):
            status = int(fault)
            message = {429: "rate limited", 500: "server error", 401: "invalid api key"}[
                status
            ] + " (injected)"
            payload = json.dumps({"error": {"message": message, "type": "injected", "code": None}}).encode()
            extra = {"Retry-After": f"{owner.retry_after_s:g}"} if status == 429 else {}
            self._send(status, payload, "application/json", extra)
            return
        headers = {
            k: v for k, v in self.headers.items() if k.lower() in ("content-type", "authorization", "accept")
        }
        intercepted = owner.upstream is not None and owner._intercepts(body)
        if streamed and fault == "ok" and owner.upstream is not None and not intercepted:
            self._relay(body, headers, number)
            return
        sent = unstreamed(request) if streamed else body
        if intercepted:
            status, payload, content_type = 200, owner._canned(self.path, sent), "application/json"
        else:
            status, payload, content_type = owner._forward(self.command, self.path, sent, headers)
        if fault == "bad_content" and status == 200:
            payload = _rewrite_content(payload, lambda _c: "Sorry, I would rather answer in prose today.")
        elif fault == "length" and status == 200:
            payload = _cut_off(payload)
        elif fault == "wrap_content" and status == 200:
            payload = _rewrite_content(payload, lambda c: f"Here you go:\n```json\n{c}\n```\nAnything else?")
        if streamed and status == 200 and fault != "plain":
            payload, content_type = to_events(payload, request), "text/event-stream"
        if fault == "garble" and status == 200:
            payload = payload[: len(payload) // 2]
        self._send(status, payload, content_type)

    def _start_stream(self) -> None:
        """Headers of a streamed reply: its body runs until the connection closes."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _stall(self, number: int) -> None:
        owner = self.owner
        try:
            self._start_stream()
            first = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "{"}}]}
            self.wfile.write(event({"object": "chat.completion.chunk", "model": "stalled", **first}))
        except (BrokenPipeError, ConnectionResetError):
            owner._note_stall_closed(number)
            return
        while not owner._stopping.is_set():
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable and not self.connection.recv(1):  # EOF: the client closed the stream
                owner._note_stall_closed(number)
                return

    def _relay(self, body: bytes, headers: dict[str, str], number: int) -> None:
        """Forward a streamed request and pass each chunk on as it arrives; a client that goes away
        closes the upstream connection too, as a client connected to the server itself would."""
        owner = self.owner
        assert owner.upstream is not None
        owner._count_forward()
        relay = Relay(number, started=time.monotonic())
        with owner._lock:
            owner.relayed.append(relay)
        conn = HTTPConnection(owner.upstream.hostname, owner.upstream.port, timeout=600)
        try:
            conn.request(self.command, self.path, body=owner._outgoing(body), headers=headers)
            response = conn.getresponse()
            if response.status != 200:
                payload = response.read()
                self._send(response.status, payload, response.getheader("Content-Type", "application/json"))
                return
            self._start_stream()
            while chunk := response.read1(65536):
                self.wfile.write(chunk)
                relay.chunks += 1
                relay.last_chunk = time.monotonic()
        except (BrokenPipeError, ConnectionResetError):
            relay.client_closed = True
        finally:
            conn.close()

    def _send(
        self, status: int, payload: bytes, content_type: str, extra: dict[str, str] | None = None
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (timeout, cancellation)


def main() -> None:
    """Serve as a separate process (benchmarks): prints the base URL, runs until terminated."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(description="fault-injecting proxy for OpenAI-compatible servers")
    parser.add_argument("--upstream", default=None, help="server base URL; canned answers when omitted")
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with FaultProxy(args.upstream, latency_s=args.latency) as proxy:
        print(proxy.base_url, flush=True)
        stop.wait()


if __name__ == "__main__":
    main()
