"""`graphrag-serve` as a subprocess for the service benches (bench_serve_load, bench_stream): a free port on
127.0.0.1, its log in the work folder, and the wait until `/readyz` says the models are loaded."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_graphrag_serve(work: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """The server under `env` (storage root, keys file, provider), once ready; (process, base URL)."""
    port = free_port()
    server = subprocess.Popen(
        [str(ROOT / ".venv" / "bin" / "graphrag-serve"), "--port", str(port), "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(work / "server.log").open("w"),
    )
    base = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=base, timeout=30.0) as http:
        for _ in range(600):  # the models load in a few seconds; bounded at 10 minutes
            if server.poll() is not None:
                raise RuntimeError(f"graphrag-serve exited: {(work / 'server.log').read_text()[-2000:]}")
            with contextlib.suppress(httpx.TransportError):
                if http.get("/readyz").status_code == 200:
                    break
            time.sleep(1)
    return server, base
