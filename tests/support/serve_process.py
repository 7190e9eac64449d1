"""`graphrag-serve` as its own process (`python -m pipeline.service serve` on 127.0.0.1): `start_serve`
launches it with its output to a log, `wait_ready` waits until `/readyz` answers 200 (or the process ends);
WAIT_S only bounds how long a broken service could hang a test."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx

from tests.support.processes import REPO_ROOT

WAIT_S = 120.0  # only bounds how long a broken service could hang the test


def start_serve(port: int, env: dict[str, str], log) -> subprocess.Popen:  # noqa: ANN001
    cmd = [sys.executable, "-m", "pipeline.service", "serve", "--host", "127.0.0.1", "--port", str(port)]
    return subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def wait_ready(url: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} never became ready (exit {proc.poll()})")
