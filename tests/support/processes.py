"""Running worker processes in a test so that a failing one can never hang the suite."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_to_completion(processes: list[Any], timeout: float = 180) -> None:
    """Start the (daemon) processes, wait for each and assert it exited cleanly; whatever is still alive
    after a failure is killed, so a worker blocked on a dead peer is not waited for at exit."""
    for p in processes:
        p.start()
    try:
        for p in processes:
            p.join(timeout=timeout)
            assert p.exitcode == 0, f"{p.name} exited with {p.exitcode}"
    finally:
        for p in processes:
            if p.is_alive():
                p.kill()
                p.join(timeout=30)


class LoggedServer:
    """A server process of a test, its output in `log_path`: waited for until ready, stopped by PID."""

    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    def launch(self, command: list[str], **popen: Any) -> None:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                **popen,
            )

    def wait_ready(self, ready: Callable[[], bool], timeout_s: float, what: str) -> None:
        """Until `ready()` (an OSError counts as not yet); RuntimeError with the log's tail if the process
        exits or the time runs out (a guard against a hang only)."""
        assert self.process is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{what} exited with {self.process.returncode}: {self.tail()}")
            try:
                if ready():
                    return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{what} not ready after {timeout_s:.0f}s: {self.tail()}")

    def tail(self, chars: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        from deploy.local_cluster import stop_process

        process, self.process = self.process, None
        stop_process(process)


@contextlib.contextmanager
def graphrag_serve(env: dict[str, str], log_path: Path) -> Iterator[str]:
    """`python -m pipeline.service serve` in its own process on a free port with `env`; yields its URL."""
    import httpx

    from deploy.local_cluster import free_port

    server = LoggedServer()
    server.log_path = log_path
    port = free_port()
    server.launch(
        [sys.executable, "-m", "pipeline.service", "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=REPO_ROOT,
        env={**os.environ, **env},
    )
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(f"{base}/readyz", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        server.wait_ready(ready, 600, "graphrag-serve")
        yield base
    finally:
        server.stop()
