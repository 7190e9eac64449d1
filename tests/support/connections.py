"""A service over two keys (a: namespace nsa, b: nsb, both empty) under uvicorn, and raw sockets to it:
for tests of connections as the server sees them (stalled bodies, idle streams, the slots they hold).
Socket timeouts only guard against a hang; `wait_for` polls for an event without a clock."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from pipeline.service.auth import hash_key
from pipeline.service.queries import QueryService
from pipeline.settings import Settings
from tests.support.service_data import serving

KEY_A = "grk_conn-a-0123456789abcdef"


KEY_B = "grk_conn-b-fedcba9876543210"


HANG_GUARD_S = 120


@contextmanager
def server(tmp_path: Path, **settings: object) -> Iterator[tuple[QueryService, int]]:
    keys = tmp_path / "keys.json"
    keys.write_text(
        json.dumps(
            {
                "a": {"key_sha256": hash_key(KEY_A), "namespaces": ["nsa"]},
                "b": {"key_sha256": hash_key(KEY_B), "namespaces": ["nsb"]},
            }
        )
    )
    svc = QueryService(Settings(storage_root=tmp_path / "storage", api_keys_file=keys, **settings))
    with serving(svc) as url:
        yield svc, int(url.rsplit(":", 1)[1])


def key_id(key: str) -> str:
    return hash_key(key)[:12]


def wait_for(condition: Callable[[], bool]) -> None:
    """Until `condition` holds (an event inside the server). No clock here: pytest-timeout is the suite's
    hang guard, so a condition that never holds fails the test there instead of racing a deadline."""
    while not condition():
        time.sleep(0.01)  # a poll interval, not a wait for something to happen


def open_socket(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(HANG_GUARD_S)
    return sock


def open_stream(port: int, key: str) -> socket.socket:
    sock = open_socket(port)
    sock.sendall(
        f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {key}\r\n".encode()
        + b"Accept: text/event-stream\r\n\r\n"
    )
    return sock


def query(port: int, key: str, namespace: str) -> httpx.Response:
    return httpx.post(
        f"http://127.0.0.1:{port}/v1/query/vector",
        json={"namespace": namespace, "query": "x"},
        headers={"Authorization": f"Bearer {key}"},
        timeout=HANG_GUARD_S,
    )
