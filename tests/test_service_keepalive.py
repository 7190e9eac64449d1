"""A 500 never costs the connection: an unhandled error is answered as a clean 500 and the client's
keep-alive connection stays usable, against the real uvicorn server on 127.0.0.1, one client making two
requests on one connection (`http.client`, which would otherwise meet a reset or quietly reconnect)."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

import pytest

from pipeline.service.queries import QueryService
from tests.support.service_data import KEY_A, ServiceData, auth, offline_settings, serving


def test_after_an_unhandled_error_the_same_connection_serves_the_next_request(
    service_data: ServiceData, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = QueryService(offline_settings(service_data), embedder=service_data.embedder)
    status = service.namespace_status
    asked: list[str] = []

    def broken_once(principal: Any, namespace: str) -> dict[str, Any]:
        asked.append(namespace)
        if len(asked) == 1:
            raise RuntimeError("a bug no handler knows")
        return status(principal, namespace)

    monkeypatch.setattr(service, "namespace_status", broken_once)
    with serving(service) as url:
        parts = urlsplit(url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
        try:
            conn.request("GET", "/v1/namespaces/acme/status", headers=auth(KEY_A))
            first = conn.getresponse()
            body = json.loads(first.read())
            sock = conn.sock
            assert first.status == 500 and body["error"]["code"] == "internal_error"
            assert "a bug" not in json.dumps(body)  # the detail is in the server's log, not the answer
            assert first.getheader("connection", "").lower() != "close" and sock is not None
            conn.request("GET", "/v1/namespaces/acme/status", headers=auth(KEY_A))
            second = conn.getresponse()
            answer = json.loads(second.read())
            assert second.status == 200 and answer["namespace"] == "acme"
            assert conn.sock is sock  # the same connection: it was neither reset nor reopened
        finally:
            conn.close()
    assert asked == ["acme", "acme"]
