"""A dask.distributed cluster on this machine: one scheduler and N worker processes, each started with
`dask scheduler` / `dask worker` as on real hosts (`make cluster-demo`, the scale-out tests and bench).

Each worker is its own `dask worker` command with one thread (Dagster steps are not thread-safe) under
a nanny, which restarts it if it dies; the scheduler then re-runs the task it held on a free worker.
Workers import this project, so they start in the repository root with PYTHONPATH set to it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalDaskCluster:
    def __init__(self, n_workers: int = 2, env: dict[str, str] | None = None, log_dir: Path | None = None):
        self.n_workers = n_workers
        self.env = {**os.environ, **(env or {})}
        self.env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(PROJECT_ROOT), self.env.get("PYTHONPATH", "")) if p
        )
        # One task per worker thread at a time, the rest queued at the scheduler: a Dagster step runs for
        # minutes, and dask's default (1.1) lets a busy worker hold a second step another worker could run.
        self.env.setdefault("DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION", "1.0")
        self.log_dir = log_dir
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen[bytes]] = []

    def _spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        dask = str(Path(sys.executable).with_name("dask"))
        out: Any = subprocess.DEVNULL
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            out = open(self.log_dir / f"{name}.log", "wb")  # noqa: SIM115 - the process owns it
        proc = subprocess.Popen(
            [dask, *args], cwd=PROJECT_ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT
        )
        self.procs.append(proc)
        return proc

    def start(self, timeout_s: float = 120.0) -> LocalDaskCluster:
        self._spawn(
            "scheduler", "scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"
        )
        for i in range(self.n_workers):
            self._spawn(
                f"worker-{i}",
                "worker",
                self.address,
                "--name",
                f"worker-{i}",
                "--nthreads",
                "1",
                "--no-dashboard",
                "--host",
                "127.0.0.1",
            )
        self.wait_for_workers(self.n_workers, timeout_s)
        return self

    def client(self) -> Any:
        from dask.distributed import Client

        return Client(self.address, timeout=30, set_as_default=False)

    def wait_for_workers(self, n: int, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"a dask process exited with {proc.returncode}: {proc.args}")
            try:
                with self.client() as client:
                    client.wait_for_workers(n, timeout=max(1.0, deadline - time.monotonic()))
                    return
            except (OSError, TimeoutError) as exc:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{n} dask workers did not register at {self.address}") from exc
                time.sleep(0.5)

    def worker_pids(self) -> dict[str, int]:
        """Worker address -> pid of the process that runs its tasks (the nanny's child)."""
        with self.client() as client:
            return client.run(os.getpid)

    def busy_workers(self) -> dict[str, list[str]]:
        """Worker address -> keys of the tasks it is running now."""
        with self.client() as client:
            return {addr: [str(k) for k in keys] for addr, keys in client.processing().items() if keys}

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()

    def __enter__(self) -> LocalDaskCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_postgres(data_dir: Path, databases: list[str]) -> tuple[Any, dict[str, str]]:
    """A PostgreSQL server from the pgserver wheel (no system install) and a URL per database."""
    import pgserver

    server = pgserver.get_server(data_dir, cleanup_mode="stop")
    urls = {}
    base = server.get_uri()
    for name in databases:
        exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}';")
        if "1 row" not in exists:
            server.psql(f'CREATE DATABASE "{name}";')
        urls[name] = _with_database(base, name)
    return server, urls


def _with_database(uri: str, database: str) -> str:
    """pgserver's URI names database `postgres` and a Unix socket in the query string."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(uri)
    return urlunsplit((parts.scheme, parts.netloc, f"/{database}", parts.query, parts.fragment))
