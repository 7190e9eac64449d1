"""A throwaway S3-compatible server for the tests: moto in server mode on a free 127.0.0.1 port
(`deploy.local_cluster.MotoServer`, which `make cluster-demo` uses too).

`moto_server` is a dev dependency installed into the same virtualenv as the interpreter running the
tests, so it is looked up beside `sys.executable`, never on PATH. The `s3_bucket` fixture starts one
server per test session, creates a bucket and gives its endpoint and keys; each test picks its own prefix.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from deploy.local_cluster import MotoServer

ACCESS_KEY = "test"
SECRET_KEY = "test"
REGION = "us-east-1"


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

    def compute_logs_env(self) -> dict[str, str]:
        """What deploy/dagster.cluster.yaml's S3 compute log manager reads: this bucket and server, and
        the standard AWS credentials and region (boto3's chain)."""
        return {
            "DAGSTER_COMPUTE_LOGS_BUCKET": self.bucket,
            "DAGSTER_COMPUTE_LOGS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
            "AWS_DEFAULT_REGION": self.region,
        }

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
    server = MotoServer(
        tmp_path_factory.mktemp("moto") / "server.log", ACCESS_KEY, SECRET_KEY, REGION
    ).start()
    try:
        name = f"test-{uuid.uuid4().hex[:12]}"
        server.create_bucket(name)
        yield S3Bucket(server.endpoint_url, name)
    finally:
        server.stop()
