"""The service's edges, probed as a careless client or an attacker would (issue 72): no key in any log
line, strict request types at every door, capped request headers, idle streams that end, and OpenAI's
error shape at the chat door. Real servers on 127.0.0.1: `graphrag-serve` as a process where its log is
the point, else uvicorn in a thread (`tests.support.service_data.serving`; conftest's `service_url`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import threading
from pathlib import Path

import httpx
import openai
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from deploy.local_cluster import free_port
from pipeline.service.logs import redact, without_query
from pipeline.service.queries import QueryService
from tests.support.connections import KEY_A as CONN_KEY
from tests.support.connections import key_id, open_socket, open_stream, wait_for
from tests.support.connections import query as conn_query
from tests.support.connections import server as connections_server
from tests.support.mcp_server import error_of
from tests.support.serve_process import WAIT_S, start_serve, wait_ready
from tests.support.service_data import BODIES, KEY_A, KEY_B, ServiceData, auth

VECTOR = {"namespace": "acme", "query": "Marley had been dead seven years.", "top_k": 1}
CHAT = {"model": "acme/basic", "messages": [{"role": "user", "content": "Who is Marley?"}]}
WRONG_KEY = "grk_wrong-0123456789abcdefABCDEF"


# ---- keys never written anywhere ----------------------------------------------------------------------------
def test_no_key_reaches_the_server_log_and_a_refused_filter_is_one_line(
    service_data: ServiceData,
    tmp_path: Path,
) -> None:
    port, log_path = free_port(), tmp_path / "serve.log"
    env = {
        **os.environ,
        "PIPELINE_STORAGE_ROOT": str(service_data.storage_root),
        "PIPELINE_API_KEYS_FILE": str(service_data.keys_file),
        "PYTHONUNBUFFERED": "1",
    }
    url = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        proc = start_serve(port, env, log)
    try:
        wait_ready(url, proc)
        with httpx.Client(base_url=url, timeout=WAIT_S) as http:
            # keys in query strings: refused (401), and logged by uvicorn's access log today
            for param in ("api_key", "key", "access_token"):
                assert http.get("/v1/models", params={param: KEY_A}).status_code == 401
            assert http.post("/v1/query/vector", params={"api_key": KEY_B}, json=VECTOR).status_code == 401
            assert http.post("/v1/chat/completions", params={"key": KEY_A}, json=CHAT).status_code == 401
            # keys in headers: served, and refused (another tenant's namespace, a wrong key)
            assert http.post("/v1/query/vector", json=VECTOR, headers=auth(KEY_A)).status_code == 200
            other = http.post("/v1/query/vector", json=VECTOR, headers={"X-API-Key": KEY_B})
            assert other.status_code == 403
            assert http.get("/v1/models", headers=auth(WRONG_KEY)).status_code == 401
            # a filter the table cannot run: refused with 422
            refused = {**VECTOR, "filter": {"n_tokens": {"$gte": "many"}}}
            assert http.post("/v1/query/vector", json=refused, headers=auth(KEY_A)).status_code == 422
    finally:
        proc.terminate()
        proc.wait(timeout=WAIT_S)
    text = log_path.read_text()
    for key in (KEY_A, KEY_B, WRONG_KEY):
        secret = key.removeprefix("grk_")
        assert secret not in text and secret[:12] not in text, f"{key} is in the server log"
    assert '"GET /v1/models?[redacted] HTTP/1.1" 401' in text  # the requests were logged, less their queries
    assert "Traceback" not in text and " ERROR " not in text, text
    filter_lines = [line for line in text.splitlines() if "refused a filter" in line]
    assert len(filter_lines) == 1 and re.search(r" (INFO|WARNING) ", filter_lines[0]), filter_lines


def test_log_redaction_keeps_each_line_and_drops_its_secrets() -> None:
    assert (
        redact("headers: {'authorization': 'Bearer abc.def-123'}")
        == "headers: {'authorization': '[redacted]'}"
    )
    assert redact("X-API-Key: s3cr3t-value") == "X-API-Key: [redacted]"
    assert redact("sent Basic dXNlcjpwYXNzd29yZA== upstream") == "sent Basic [redacted] upstream"
    assert redact(f"key {KEY_A} refused") == "key [redacted] refused"
    assert without_query("/v1/models?api_key=x&b=2") == "/v1/models?[redacted]"
    assert (
        redact("query kind=vector key=21fc3d09d5f7") == "query kind=vector key=21fc3d09d5f7"
    )  # a digest's id


# ---- strict request types at every door -----------------------------------------------------------------------
COERCED = [  # each was taken as another type's value by pydantic's lax mode
    ("vector", {"top_k": True}),
    ("chunks", {"top_k": True}),
    ("basic", {"top_k": True}),
    ("local", {"top_k": True}),
    ("basic", {"top_k": "2"}),
    ("chunks", {"seed": 1.0}),
    ("basic", {"full_text": "yes"}),
    ("basic", {"full_text": 1}),
    ("local", {"question": 5}),
    ("vector", {"stream": "yes"}),
    ("global", {"level": True}),
]


@pytest.mark.parametrize(("kind", "change"), COERCED, ids=[f"{k}-{next(iter(c))}" for k, c in COERCED])
def test_http_bodies_do_not_coerce_types(service_client: httpx.Client, kind: str, change: dict) -> None:
    r = service_client.post(f"/v1/query/{kind}", json={**BODIES[kind], **change}, headers=auth(KEY_A))
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid_request" and next(iter(change)) in error["message"], error


def test_integers_are_still_numbers_where_a_float_is_asked(service_client: httpx.Client) -> None:
    for kind, change in (("basic", {"min_score": 0, "timeout_s": 100}), ("vector", {"timeout_s": 100})):
        r = service_client.post(f"/v1/query/{kind}", json={**BODIES[kind], **change}, headers=auth(KEY_A))
        assert r.status_code == 200, r.text


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32", "latin-1"])
def test_a_body_that_is_not_utf8_is_refused(service_client: httpx.Client, encoding: str) -> None:
    body = json.dumps({**BODIES["basic"], "question": "Who is Marley, café owner?"}, ensure_ascii=False)
    headers = {**auth(KEY_A), "Content-Type": "application/json"}
    r = service_client.post("/v1/query/basic", content=body.encode(encoding), headers=headers)
    assert r.status_code == 422 and "UTF-8" in r.json()["error"]["message"], r.text
    assert service_client.post("/v1/query/basic", content=body.encode(), headers=headers).status_code == 200


def test_mcp_tool_arguments_do_not_coerce_types(service_url: str) -> None:
    async def run() -> list[dict]:
        http = create_mcp_http_client(headers=auth(KEY_A))
        async with http, Client(streamable_http_client(f"{service_url}/mcp", http_client=http)) as mcp:
            errors = []
            for tool, change in (("vector_query", {"top_k": True}), ("basic_search", {"full_text": "yes"})):
                kind = "vector" if tool == "vector_query" else "basic"
                errors.append(error_of(await mcp.call_tool(tool, {**BODIES[kind], **change})))
            fine = await mcp.call_tool("vector_query", {**BODIES["vector"], "timeout_s": 100})
            assert not fine.is_error, fine.content
            return errors

    errors = asyncio.run(asyncio.wait_for(run(), timeout=WAIT_S))  # guards against a hang only
    assert [e["code"] for e in errors] == ["invalid_request"] * 2, errors
    assert "top_k" in errors[0]["message"] and "full_text" in errors[1]["message"]


@pytest.mark.parametrize(
    "change",
    [{"stream": "yes"}, {"stream": 1}, {"messages": [{"role": "user", "content": 5}]}, {"model": 7}],
    ids=["stream-yes", "stream-1", "content-5", "model-7"],
)
def test_the_chat_door_does_not_coerce_types(service_url: str, change: dict) -> None:
    r = httpx.post(
        f"{service_url}/v1/chat/completions", json={**CHAT, **change}, headers=auth(KEY_A), timeout=WAIT_S
    )
    assert r.status_code == 400, r.text
    assert r.json()["error"]["type"] == "invalid_request_error"


# ---- request headers capped -------------------------------------------------------------------------------
def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def read_reply(sock: socket.socket) -> bytes:
    """What the server sends until it closes (a reset after its answer ends the reading too)."""
    reply = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            reply += chunk
    return reply


def test_an_unfinished_head_past_the_cap_is_answered_431_before_it_ends(service_url: str) -> None:
    """The head never ends (no blank line): only a server that refuses before reading it all answers."""
    sock = open_socket(port_of(service_url))
    sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Filler: " + b"a" * 20_000)
    reply = read_reply(sock)
    sock.close()
    assert reply.startswith(b"HTTP/1.1 431 "), reply[:200]
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "headers_too_large"


def test_an_8mb_header_is_answered_431_not_401(service_url: str) -> None:
    sock = open_socket(port_of(service_url))
    head = b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Filler: " + b"a" * (8 << 20) + b"\r\n\r\n"

    def send() -> None:
        with contextlib.suppress(OSError):  # the server stops reading once it has answered
            sock.sendall(head)

    sender = threading.Thread(target=send)
    sender.start()
    reply = read_reply(sock)
    sock.close()
    sender.join()
    assert reply.startswith(b"HTTP/1.1 431 "), reply[:200]


def test_a_finished_head_past_the_cap_is_431_before_the_key_is_checked(service_url: str) -> None:
    big = {"X-Filler": "a" * 20_000}
    for headers in (big, {**big, **auth(KEY_A)}):
        r = httpx.get(f"{service_url}/v1/models", headers=headers, timeout=WAIT_S)
        assert r.status_code == 431 and r.json()["error"]["code"] == "headers_too_large", r.text
    fine = httpx.get(
        f"{service_url}/v1/models", headers={"X-Filler": "a" * 12_000, **auth(KEY_A)}, timeout=WAIT_S
    )
    assert fine.status_code == 200, fine.text  # under the default 16 KB


def test_bodies_on_one_keep_alive_connection_never_add_up_to_a_431(service_url: str) -> None:
    # Each request's head is small; only a head's own bytes count towards the cap, never the body read
    # with it in one chunk: two 3.5 KB requests, each sent whole in one write on one connection, were
    # counted together with the next ones and the fifth was answered 431.
    body = json.dumps({"namespace": "acme", "query": "Marley " * 480, "top_k": 1}).encode()
    head = (
        f"POST /v1/query/vector HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY_A}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port_of(service_url)), timeout=WAIT_S) as sock:
        reader = sock.makefile("rb")
        for _ in range(6):
            sock.sendall(head + body)
            status = reader.readline()
            length = 0
            while (line := reader.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            reader.read(length)
            assert status.startswith(b"HTTP/1.1 200 "), status


def test_the_header_cap_is_a_setting(tmp_path: Path) -> None:
    with connections_server(tmp_path, service_max_header_bytes=2048) as (_svc, port):
        url = f"http://127.0.0.1:{port}/v1/models"
        headers = {"Authorization": f"Bearer {CONN_KEY}"}
        assert httpx.get(url, headers={**headers, "X-Filler": "a" * 1000}, timeout=WAIT_S).status_code == 200
        assert httpx.get(url, headers={**headers, "X-Filler": "a" * 3000}, timeout=WAIT_S).status_code == 431


# ---- idle means idle ----------------------------------------------------------------------------------------
MAX_PINGS = 200  # far more than the idle bound lets through (0.5 s of 0.02 s pings): the stream never ended


def read_stream_end(sock: socket.socket) -> tuple[bytes, int]:
    """A `GET /mcp` stream read until its chunked body ends, or until MAX_PINGS pings came without an end;
    (what was read, the pings in it)."""
    read = b""
    while not read.endswith(b"0\r\n\r\n") and read.count(b": ping") < MAX_PINGS:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before the stream ended: {read[-200:]!r}"
        read += chunk
    return read, read.count(b": ping")


def test_idle_mcp_streams_end_though_pinged_and_give_their_key_its_slots_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sse_starlette import EventSourceResponse

    monkeypatch.setattr(EventSourceResponse, "DEFAULT_PING_INTERVAL", 0.02)  # the MCP library's 15 s, shrunk
    settings = {"service_key_concurrency": 4, "service_stream_idle_s": 0.5}
    with connections_server(tmp_path, **settings) as (svc, port):
        streams = [open_stream(port, CONN_KEY) for _ in range(4)]  # every slot of the key
        ends = [read_stream_end(sock) for sock in streams]
        for sock in streams:
            sock.close()
        for read, pings in ends:
            assert read.startswith(b"HTTP/1.1 200") and b"text/event-stream" in read
            assert pings < MAX_PINGS, "the pings kept an idle stream open"
        assert sum(pings for _, pings in ends) > 0  # they were pinged while idle
        wait_for(lambda: svc.limiter.in_flight(key_id(CONN_KEY)) == 0)
        assert conn_query(port, CONN_KEY, "nsa").status_code == 409  # admitted (the namespace is not indexed)


# ---- OpenAI-shaped errors at the chat door ----------------------------------------------------------------------
def openai_client(url: str, key: str = KEY_A) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=WAIT_S)


def assert_openai_shape(error: dict, kind: str) -> None:
    assert set(error) >= {"message", "type", "param", "code"} and error["message"], error
    assert error["type"] == kind, error


def test_the_chat_doors_errors_have_openais_shape(service_url: str, offline_service: QueryService) -> None:
    client_a = openai_client(service_url)
    with pytest.raises(openai.AuthenticationError) as refused:
        openai_client(service_url, WRONG_KEY).chat.completions.create(**CHAT)
    assert_openai_shape(refused.value.body, "authentication_error")
    no_key = httpx.get(f"{service_url}/v1/models", timeout=WAIT_S)
    assert no_key.status_code == 401 and no_key.headers["www-authenticate"] == "Bearer"
    assert_openai_shape(no_key.json()["error"], "authentication_error")
    with pytest.raises(openai.NotFoundError) as refused:
        client_a.chat.completions.create(**{**CHAT, "model": "acme/nosuch"})
    assert_openai_shape(refused.value.body, "not_found_error")
    with pytest.raises(openai.NotFoundError) as refused:
        client_a.models.retrieve("acme/basic")  # GET /v1/models/{id}: not served
    assert_openai_shape(refused.value.body, "not_found_error")
    with pytest.raises(openai.NotFoundError) as refused:
        client_a.embeddings.create(model="acme/basic", input="x")
    assert_openai_shape(refused.value.body, "not_found_error")
    long_chat = {**CHAT, "messages": [{"role": "user", "content": "x" * 5000}]}  # past the 4096-byte cap
    with pytest.raises(openai.APIStatusError) as refused:
        client_a.chat.completions.create(**long_chat)
    assert refused.value.status_code == 413
    assert_openai_shape(refused.value.body, "invalid_request_error")
    with pytest.raises(openai.BadRequestError) as refused:
        client_a.chat.completions.create(**CHAT, stream="yes")  # type: ignore[call-overload]
    assert_openai_shape(refused.value.body, "invalid_request_error")
    assert refused.value.body["param"] == "stream"


@pytest.mark.parametrize("body", [json.dumps(CHAT).encode("utf-16"), b"[" * 100 + b"]" * 100, b"{not json"])
def test_a_chat_body_that_does_not_parse_is_openais_400(service_url: str, body: bytes) -> None:
    headers = {**auth(KEY_A), "Content-Type": "application/json"}
    r = httpx.post(f"{service_url}/v1/chat/completions", content=body, headers=headers, timeout=WAIT_S)
    assert r.status_code == 400, r.text
    assert_openai_shape(r.json()["error"], "invalid_request_error")


def test_the_chat_doors_429_is_openais_with_retry_after(
    service_url: str, offline_service: QueryService
) -> None:
    held = []
    try:  # idle streams hold each slot of the key (the service's concurrency is 2)
        for _ in range(offline_service.settings.service_key_concurrency):
            held.append(open_stream(port_of(service_url), KEY_A))
            assert held[-1].recv(65536).startswith(b"HTTP/1.1 200")
        with pytest.raises(openai.RateLimitError) as refused:
            openai_client(service_url).chat.completions.create(**CHAT)
        assert_openai_shape(refused.value.body, "rate_limit_error")
        assert int(refused.value.response.headers["retry-after"]) >= 1
        native = httpx.post(
            f"{service_url}/v1/query/vector", json=VECTOR, headers=auth(KEY_A), timeout=WAIT_S
        )
        assert native.status_code == 429 and "type" not in native.json()["error"]  # the service's own shape
    finally:
        for sock in held:
            sock.close()
    wait_for(lambda: offline_service.limiter.in_flight() == 0)


def test_the_chat_doors_5xx_is_openais_api_error(tmp_path: Path) -> None:
    with connections_server(tmp_path) as (_svc, port):
        (tmp_path / "keys.json").write_text("{not a keys file")  # read on every request: 503 until fixed
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=CONN_KEY, max_retries=0)
        with pytest.raises(openai.InternalServerError) as refused:
            client.chat.completions.create(**{**CHAT, "model": "nsa/basic"})
        assert refused.value.status_code == 503
        assert_openai_shape(refused.value.body, "api_error")
        assert refused.value.body["code"] == "keys_unavailable"
