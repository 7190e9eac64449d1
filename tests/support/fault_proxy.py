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

With `upstream=None` it answers "ok" requests itself with a canned completion (for benchmarks that
measure the client, not the model). `forwarded` counts the requests that reached the upstream server,
`max_in_flight` the most requests it was handling at once.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

FAULTS = ("ok", "429", "500", "401", "hang", "drop", "garble", "bad_content", "wrap_content")


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
        responder: Callable[[dict[str, Any]], str] | None = None,
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
        self.authorizations: set[str] = set()
        self._schedule: deque[str] = deque()
        self._lock = threading.Lock()
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
    def _next(self, path: str, authorization: str | None) -> str:
        with self._lock:
            fault = self._schedule.popleft() if self._schedule else "ok"
            self.received += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.served.append((path, fault))
            if authorization:
                self.authorizations.add(authorization)
            return fault

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _count_forward(self) -> None:
        with self._lock:
            self.forwarded += 1

    def _forward(
        self, method: str, path: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int, bytes, str]:
        if self.upstream is None:
            return 200, self._canned(path, body), "application/json"
        self._count_forward()
        conn = HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=600)
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.read(), response.getheader("Content-Type", "application/json")
        finally:
            conn.close()

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
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {
                            "role": "assistant",
                            "content": self.responder(request) if self.responder else self.canned_content,
                        },
                    }
                ],
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
        fault = owner._next(self.path, self.headers.get("Authorization"))
        try:
            self._serve(fault, body)
        finally:
            owner._done()

    def _serve(self, fault: str, body: bytes) -> None:
        owner = self.owner
        if owner.latency_s:
            time.sleep(owner.latency_s)
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
        status, payload, content_type = owner._forward(self.command, self.path, body, headers)
        if fault == "garble" and status == 200:
            payload = payload[: len(payload) // 2]
        elif fault == "bad_content" and status == 200:
            payload = _rewrite_content(payload, lambda _c: "Sorry, I would rather answer in prose today.")
        elif fault == "wrap_content" and status == 200:
            payload = _rewrite_content(payload, lambda c: f"Here you go:\n```json\n{c}\n```\nAnything else?")
        self._send(status, payload, content_type)

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
