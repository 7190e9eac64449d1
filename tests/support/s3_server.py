"""A throwaway S3-compatible server for the tests: moto in server mode on a free 127.0.0.1 port.

`moto_server` is a dev dependency installed into the same virtualenv as the interpreter running the
tests, so it is looked up beside `sys.executable`, never on PATH. The `s3_bucket` fixture starts one
server per test session, creates a bucket and gives its endpoint and keys; each test picks its own prefix.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ACCESS_KEY = "test"
SECRET_KEY = "test"
REGION = "us-east-1"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MotoServer:
    """One `moto_server` process, stopped by PID."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, ready_timeout_s: float = 30.0) -> MotoServer:
        binary = Path(sys.executable).parent / "moto_server"
        if not binary.is_file():
            raise RuntimeError(f"{binary} is missing: install the dev dependencies (`make install`)")
        self.port = _free_port()
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
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )
        client.create_bucket(Bucket=name)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@dataclass(frozen=True)
class S3Bucket:
    """A bucket on the test server, and what the pipeline needs to reach it."""

    endpoint_url: str
    bucket: str
    access_key_id: str = ACCESS_KEY
    secret_access_key: str = SECRET_KEY
    region: str = REGION

    def uri(self, prefix: str = "") -> str:
        """``s3://<bucket>/<prefix>``; pass a prefix unique to the test so that tests share no objects."""
        return f"s3://{self.bucket}/{prefix.strip('/')}" if prefix else f"s3://{self.bucket}"

    def env(self, prefix: str = "") -> dict[str, str]:
        """PIPELINE_* variables pointing the storage root at ``uri(prefix)`` on this server."""
        return {
            "PIPELINE_STORAGE_ROOT": self.uri(prefix),
            "PIPELINE_S3_ENDPOINT_URL": self.endpoint_url,
            "PIPELINE_S3_REGION": self.region,
            "PIPELINE_S3_ACCESS_KEY_ID": self.access_key_id,
            "PIPELINE_S3_SECRET_ACCESS_KEY": self.secret_access_key,
        }


@pytest.fixture(scope="session")
def s3_bucket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Bucket]:
    """An empty bucket on a moto S3 server started for this test session."""
    server = MotoServer(tmp_path_factory.mktemp("moto") / "server.log").start()
    try:
        name = f"test-{uuid.uuid4().hex[:12]}"
        server.create_bucket(name)
        yield S3Bucket(server.endpoint_url, name)
    finally:
        server.stop()
