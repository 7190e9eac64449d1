"""The per-key limits shared by two real `graphrag-serve` processes through PostgreSQL (pgserver): a query
held in one process (its LLM call kept unanswered by the fault proxy: an event, not a clock) takes the
key's only slot, and the other process refuses the same key with 429 until it is released; and the
per-key rate, counted by both processes together."""

from __future__ import annotations

import os
import threading

import httpx
import pytest

from deploy.local_cluster import free_port
from pipeline.service.errors import TooManyRequests
from pipeline.service.limits import KeyRateLimiter
from pipeline.settings import Settings
from tests.support.fault_proxy import FaultProxy
from tests.support.pg import pg_dsn  # noqa: F401 - the session-scoped PostgreSQL fixture
from tests.support.scripted_global_model import scripted_model
from tests.support.serve_process import WAIT_S, start_serve, wait_ready
from tests.support.service_data import KEY_A, KEY_B, auth, build_service_data


def test_two_service_processes_sharing_postgresql_enforce_one_per_key_limit(tmp_path, pg_dsn):  # noqa: F811
    data = build_service_data(tmp_path / "data")
    vector = {"namespace": "acme", "query": "Marley had been dead seven years.", "top_k": 1}
    with FaultProxy(None, responder=scripted_model) as proxy:
        hold = proxy.hold()  # every LLM request stays unanswered until released
        env = {
            **os.environ,
            "PIPELINE_STORAGE_ROOT": str(data.storage_root),
            "PIPELINE_API_KEYS_FILE": str(data.keys_file),
            "PIPELINE_SERVICE_KEY_CONCURRENCY": "1",
            "PIPELINE_SERVICE_LIMITS_URL": pg_dsn,
            "PIPELINE_SERVICE_TIMEOUT_S": "110",
            "PIPELINE_LLM_PROVIDER": "openai",
            "PIPELINE_LLM_BASE_URL": proxy.base_url,
            "PIPELINE_LLM_API_KEY_ENV": "SHARED_LIMITS_TEST_KEY",
            "SHARED_LIMITS_TEST_KEY": "sk-test",
            "PIPELINE_LLM_MAX_RETRIES": "0",
            "PIPELINE_LLM_TIMEOUT_S": "600",
        }
        urls, procs = [], []
        try:
            for name in ("a", "b"):
                port = free_port()
                with open(tmp_path / f"{name}.log", "wb") as log:
                    procs.append(start_serve(port, env, log))
                urls.append(f"http://127.0.0.1:{port}")
            for url, proc in zip(urls, procs, strict=True):
                wait_ready(url, proc)
            answer: dict = {}

            def held_query() -> None:
                body = {"namespace": "acme", "question": "What is Scrooge's business?", "timeout_s": 100}
                answer["r"] = httpx.post(
                    f"{urls[0]}/v1/query/global", json=body, headers=auth(KEY_A), timeout=WAIT_S
                )

            worker = threading.Thread(target=held_query)
            worker.start()
            hold.wait_held(1, WAIT_S)  # process A's query is in flight: it holds the key's one slot
            refused = httpx.post(
                f"{urls[1]}/v1/query/vector", json=vector, headers=auth(KEY_A), timeout=WAIT_S
            )
            assert refused.status_code == 429, refused.text
            assert refused.json()["error"]["code"] == "too_many_requests" and refused.headers["retry-after"]
            other = httpx.post(
                f"{urls[1]}/v1/query/vector",
                json={**vector, "namespace": "globex"},
                headers=auth(KEY_B),
                timeout=WAIT_S,
            )
            assert other.status_code == 200, other.text  # another key is not limited by it
            hold.release()
            worker.join(WAIT_S)
            assert answer["r"].status_code == 200, answer["r"].text
            again = httpx.post(f"{urls[1]}/v1/query/vector", json=vector, headers=auth(KEY_A), timeout=WAIT_S)
            assert again.status_code == 200, again.text  # the slot came back when A's query ended
        finally:
            hold.release()
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=WAIT_S)


def test_the_per_key_rate_is_a_sliding_window_counted_by_the_process():
    now = [1000.0]
    limiter = KeyRateLimiter(2, window_s=60, clock=lambda: now[0])
    limiter.check("k1")
    now[0] += 10
    limiter.check("k1")
    limiter.check("k2")  # another key has its own window
    now[0] += 20
    with pytest.raises(TooManyRequests) as refused:
        limiter.check("k1")
    assert refused.value.headers["Retry-After"] == "30"  # the first query leaves the window at +60
    now[0] += 30  # now the first query is 60 s old: out of the window
    limiter.check("k1")
    with pytest.raises(TooManyRequests):
        limiter.check("k1")  # the refusal above was not counted, the two in the window are


def test_two_service_processes_sharing_postgresql_enforce_one_per_key_rate(tmp_path, pg_dsn):  # noqa: F811
    data = build_service_data(tmp_path / "data")
    vector = {"namespace": "acme", "query": "Marley had been dead seven years.", "top_k": 1}
    env = {
        **os.environ,
        "PIPELINE_STORAGE_ROOT": str(data.storage_root),
        "PIPELINE_API_KEYS_FILE": str(data.keys_file),
        "PIPELINE_SERVICE_LIMITS_URL": pg_dsn,
        "PIPELINE_SERVICE_KEY_RATE": "2",
        # An hour: the three queries below fall in one window however slow the machine (no clock race).
        "PIPELINE_SERVICE_KEY_RATE_WINDOW_S": "3600",
    }
    urls, procs = [], []
    try:
        for name in ("a", "b"):
            port = free_port()
            with open(tmp_path / f"{name}.log", "wb") as log:
                procs.append(start_serve(port, env, log))
            urls.append(f"http://127.0.0.1:{port}")
        for url, proc in zip(urls, procs, strict=True):
            wait_ready(url, proc)
        first = httpx.post(f"{urls[0]}/v1/query/vector", json=vector, headers=auth(KEY_A), timeout=WAIT_S)
        second = httpx.post(f"{urls[1]}/v1/query/vector", json=vector, headers=auth(KEY_A), timeout=WAIT_S)
        assert first.status_code == second.status_code == 200, (first.text, second.text)
        third = httpx.post(f"{urls[0]}/v1/query/vector", json=vector, headers=auth(KEY_A), timeout=WAIT_S)
        assert third.status_code == 429 and "3600 s" in third.json()["error"]["message"]
        assert 1 <= int(third.headers["retry-after"]) <= 3600
        other = httpx.post(
            f"{urls[1]}/v1/query/vector",
            json={**vector, "namespace": "globex"},
            headers=auth(KEY_B),
            timeout=WAIT_S,
        )
        assert other.status_code == 200  # another key's rate is its own
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=WAIT_S)


def test_a_limits_url_that_is_not_postgresql_is_a_clear_error():
    with pytest.raises(ValueError, match="PIPELINE_SERVICE_LIMITS_URL"):
        Settings(service_limits_url="redis://127.0.0.1:6379")
