"""Bounded connections over real sockets on 127.0.0.1: a stalled request body is cut (408, then the
server closes the connection), an idle `GET /mcp` stream is ended, and both hold a slot of their key's
concurrency while open.

Every wait here is for an event (the server's answer, EOF, the end of a stream, a slot counted or given
back); the socket timeouts only guard against a hang. The timeouts under test are set small.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.support.connections import (
    KEY_A,
    KEY_B,
    key_id,
    open_socket,
    open_stream,
    query,
    server,
    wait_for,
)


def stall_body(port: int, key: str) -> socket.socket:
    """A query whose headers promise 200 bytes of body, of which 10 are sent."""
    sock = open_socket(port)
    sock.sendall(
        b"POST /v1/query/vector HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + f"Authorization: Bearer {key}\r\nContent-Length: 200\r\n\r\n".encode()
        + b'{"namespac'
    )
    return sock


def read_to_eof(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_a_stalled_body_is_answered_408_and_its_connection_closed(tmp_path: Path) -> None:
    with server(tmp_path, service_body_timeout_s=0.2) as (svc, port):
        sock = stall_body(port, KEY_A)
        reply = read_to_eof(sock)  # returns only once the server has closed the connection
        assert reply.startswith(b"HTTP/1.1 408"), reply
        assert b'"request_timeout"' in reply and b"connection: close" in reply.lower()
        wait_for(lambda: svc.limiter.in_flight(key_id(KEY_A)) == 0)  # and its slot is given back
        assert query(port, KEY_A, "nsa").status_code == 409  # the key works again


def test_a_stalled_body_holds_a_slot_of_its_key(tmp_path: Path) -> None:
    # the body's deadline far off: the stall must still be there when the second query asks
    with server(tmp_path, service_key_concurrency=1, service_body_timeout_s=600) as (svc, port):
        sock = stall_body(port, KEY_A)
        wait_for(lambda: svc.limiter.in_flight(key_id(KEY_A)) == 1)
        refused = query(port, KEY_A, "nsa")
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_requests"
        assert query(port, KEY_B, "nsb").status_code == 409  # another key is not affected
        sock.close()  # the client leaves: its slot is given back
        wait_for(lambda: svc.limiter.in_flight(key_id(KEY_A)) == 0)
        assert query(port, KEY_A, "nsa").status_code == 409


def test_a_body_that_arrives_in_time_is_served(tmp_path: Path) -> None:
    with server(tmp_path, service_body_timeout_s=600) as (svc, port):
        sock = stall_body(port, KEY_A)
        wait_for(lambda: svc.limiter.in_flight(key_id(KEY_A)) == 1)
        rest = b'e": "nsa", "query": "x"}'
        sock.sendall(rest + b" " * (200 - 10 - len(rest)))
        reply = sock.recv(65536)
        assert reply.startswith(b"HTTP/1.1 409"), reply  # served: the namespace is not indexed
        sock.close()


def test_an_idle_mcp_stream_is_ended_and_gives_its_slot_back(tmp_path: Path) -> None:
    with server(tmp_path, service_stream_idle_s=0.2) as (svc, port):
        sock = open_stream(port, KEY_A)
        data = b""
        while not data.endswith(b"0\r\n\r\n"):  # the chunked body's last chunk: the stream has ended
            chunk = sock.recv(65536)
            assert chunk, f"connection closed before the stream ended: {data!r}"
            data += chunk
        assert data.startswith(b"HTTP/1.1 200") and b"text/event-stream" in data
        wait_for(lambda: svc.limiter.in_flight(key_id(KEY_A)) == 0)
        sock.close()


def test_an_open_mcp_stream_holds_a_slot_of_its_key(tmp_path: Path) -> None:
    with server(tmp_path, service_key_concurrency=1, service_stream_idle_s=600) as (svc, port):
        sock = open_stream(port, KEY_A)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        wait_for(lambda: svc.limiter.in_flight(key_id(KEY_A)) == 1)
        assert query(port, KEY_A, "nsa").status_code == 429
        sock.close()
        wait_for(lambda: svc.limiter.in_flight(key_id(KEY_A)) == 0)
        assert query(port, KEY_A, "nsa").status_code == 409


@pytest.mark.parametrize("field", ["service_body_timeout_s", "service_stream_idle_s"])
def test_the_timeouts_are_settings(field: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(f"PIPELINE_{field.upper()}", "2.5")
    from pipeline.settings import load_settings

    assert getattr(load_settings(), field) == 2.5
