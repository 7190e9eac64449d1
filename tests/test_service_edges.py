"""The service's edges, probed as a careless client or an attacker would (issue 72): no key in any log
line, strict request types at every door, capped request headers, idle streams that end, and OpenAI's
error shape at the chat door. Real servers on 127.0.0.1: `graphrag-serve` as a process where its log is
the point, else uvicorn in a thread (`tests.test_service.serving`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import httpx

from deploy.local_cluster import free_port
from pipeline.service.logs import redact, without_query
from tests.test_service import KEY_A, KEY_B, ServiceData, auth, data  # noqa: F401 - the module's data fixture
from tests.test_service_shared_limits import WAIT_S, _serve, _wait_ready

VECTOR = {"namespace": "acme", "query": "Marley had been dead seven years.", "top_k": 1}
CHAT = {"model": "acme/basic", "messages": [{"role": "user", "content": "Who is Marley?"}]}
WRONG_KEY = "grk_wrong-0123456789abcdefABCDEF"


# ---- keys never written anywhere ----------------------------------------------------------------------------
def test_no_key_reaches_the_server_log_and_a_refused_filter_is_one_line(
    data: ServiceData,  # noqa: F811
    tmp_path: Path,
) -> None:
    port, log_path = free_port(), tmp_path / "serve.log"
    env = {
        **os.environ,
        "PIPELINE_STORAGE_ROOT": str(data.storage_root),
        "PIPELINE_API_KEYS_FILE": str(data.keys_file),
        "PYTHONUNBUFFERED": "1",
    }
    url = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        proc = _serve(port, env, log)
    try:
        _wait_ready(url, proc)
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
