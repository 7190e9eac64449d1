"""How promptly the LLM client stops: cancellation, batch and call deadlines, Retry-After; prints JSON.

    .venv/bin/python bench/bench_llm_cancel.py [--repeats 5]

The timing figures that tests/test_llm_batch.py and tests/test_llm_client.py used to assert (the tests
now check the events instead: the call was cut while its request was still unanswered, the wait handed
to the retry loop was the server's Retry-After). Requests are held unanswered by the fault proxy
(`FaultProxy.hold`), so each figure is the client's reaction time, not a server's:

- cancel_to_return_s: a batch of 20 (concurrency 8, the first 8 answered, the next 8 held in flight)
  from `cancel.set()` to `run_batch` returning;
- batch_deadline_overshoot_s: a batch of 12 whose requests are all held, from its deadline to its return;
- call_deadline_overshoot_s: one held call with a deadline, from the deadline to LLMTimeoutError;
- retry_after_wait_s: one 429 with Retry-After 0.5 then an answer: the whole call's wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.caches.sqlite_llm import LLMCache  # noqa: E402
from pipeline.engine.summarize import Summary  # noqa: E402
from pipeline.llm import LLMClient, LLMTimeoutError, deadline_in  # noqa: E402
from pipeline.llm.retry import Backoff  # noqa: E402
from tests.support.fault_proxy import FaultProxy  # noqa: E402

WAIT_S = 60.0


def _client(proxy: FaultProxy, tmp: Path, concurrency: int) -> LLMClient:
    return LLMClient(
        model="canned",
        api_key="bench",
        base_url=proxy.base_url,
        timeout_s=600,
        max_retries=2,
        concurrency=concurrency,
        json_mode="json_object",
        cache=LLMCache(tmp / f"llm-{time.monotonic_ns()}.sqlite"),
        backoff=Backoff(0.05, 0.2),
    )


def _call(client: LLMClient, i: int, **kw):  # noqa: ANN003, ANN202
    messages = [{"role": "user", "content": f"item {i}"}]
    return client.complete_json(messages, Summary, task="bench", prompt_version="v1", **kw)


def cancel_to_return(tmp: Path) -> float:
    with FaultProxy(None) as proxy, ThreadPoolExecutor(1) as pool:
        client = _client(proxy, tmp, 8)
        hold = proxy.hold(from_nth=9)
        cancel = threading.Event()
        batch = pool.submit(client.run_batch, list(range(20)), lambda i: _call(client, i), cancel=cancel)
        hold.wait_held(8, WAIT_S)
        started = time.monotonic()
        cancel.set()
        batch.result(WAIT_S)
        elapsed = time.monotonic() - started
        hold.release()
        return elapsed


def batch_deadline_overshoot(tmp: Path, seconds: float = 0.5) -> float:
    with FaultProxy(None) as proxy:
        client = _client(proxy, tmp, 2)
        hold = proxy.hold()
        deadline = deadline_in(seconds)
        client.run_batch(list(range(12)), lambda i: _call(client, i), deadline=deadline)
        overshoot = time.monotonic() - deadline
        hold.release()
        return overshoot


def call_deadline_overshoot(tmp: Path, seconds: float = 0.5) -> float:
    with FaultProxy(None) as proxy:
        client = _client(proxy, tmp, 2)
        hold = proxy.hold()
        deadline = deadline_in(seconds)
        with contextlib.suppress(LLMTimeoutError):
            client.run_sync(_call(client, 0, deadline=deadline))
        overshoot = time.monotonic() - deadline
        hold.release()
        return overshoot


def retry_after_wait(tmp: Path) -> float:
    with FaultProxy(None, retry_after_s=0.5) as proxy:
        client = _client(proxy, tmp, 2)
        proxy.script("429")
        started = time.monotonic()
        client.run_sync(_call(client, 0))
        return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    figures = {
        "cancel_to_return_s": cancel_to_return,
        "batch_deadline_overshoot_s": batch_deadline_overshoot,
        "call_deadline_overshoot_s": call_deadline_overshoot,
        "retry_after_wait_s": retry_after_wait,
    }
    out: dict = {"repeats": args.repeats, "retry_after_s": 0.5}
    with tempfile.TemporaryDirectory() as tmp:
        for name, measure in figures.items():
            values = sorted(measure(Path(tmp)) for _ in range(args.repeats))
            out[name] = {"median": round(statistics.median(values), 3), "max": round(values[-1], 3)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
