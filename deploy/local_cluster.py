"""Local stand-ins for a cluster's services, on 127.0.0.1 (`make cluster-demo`, the scale-out tests and
bench): a dask.distributed scheduler and N worker processes started with `dask scheduler` /
`dask worker` as on real hosts, PostgreSQL from the pgserver wheel, S3 from moto's server mode.

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
import urllib.request
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
        log = (self.log_dir / f"{name}.log") if self.log_dir is not None else None
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
        # the child keeps its own copy of the log's descriptor; the parent's closes with the block
        with open(log or os.devnull, "wb") as out:
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


class MotoServer:
    """An S3-compatible server: one `moto_server` process (a dev dependency, found beside
    `sys.executable`, never on PATH) on a free 127.0.0.1 port, stopped by PID."""

    def __init__(
        self, log_path: Path, access_key: str = "test", secret_key: str = "test", region: str = "us-east-1"
    ) -> None:
        self.log_path = log_path
        self.access_key, self.secret_key, self.region = access_key, secret_key, region
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, ready_timeout_s: float = 30.0) -> MotoServer:
        binary = Path(sys.executable).parent / "moto_server"
        if not binary.is_file():
            raise RuntimeError(f"{binary} is missing: install the dev dependencies (`make install`)")
        self.port = free_port()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [str(binary), "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + ready_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"moto_server exited with {self.process.returncode}: {self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.endpoint_url}/moto-api/", timeout=2):
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"moto_server not ready after {ready_timeout_s:.0f}s: {self.tail()}")

    def tail(self, chars: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def create_bucket(self, name: str) -> None:
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
        )
        client.create_bucket(Bucket=name)

    def stop(self) -> None:
        process, self.process = self.process, None
        stop_process(process)


def stop_process(process: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM, then SIGKILL if it has not exited within 10 s; nothing for a process already gone."""
    if process is None or process.poll() is not None:
        return
    os.kill(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


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
        urls[name] = with_database(base, name)
    return server, urls


def with_database(uri: str, database: str) -> str:
    """pgserver's URI names database `postgres` and a Unix socket in the query string."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(uri)
    return urlunsplit((parts.scheme, parts.netloc, f"/{database}", parts.query, parts.fragment))
