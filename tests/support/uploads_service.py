"""A real `graphrag-serve` whose keys may change documents (issue 70), for the tests that upload through
the API (`tests/test_document_uploads.py`) and through the web app (`tests/test_web_documents.py`).

Its keys file holds four keys: acme's `write: true` key (`WRITER`, which may create namespaces), acme's
read-only key (`READER`), an acme key that may write only namespace `other` (`SCOPED`), and another
tenant's `write: true` key (`OTHER`). It embeds through the real MiniLM behind HTTP
(`tests.support.minilm_http`), whose `/hold` keeps one embeddings request unanswered: the fixed point
inside a run at which a test uploads more, kills the run's process or looks at its progress. Each change
runs `pipeline index` through the real Dagster instance in its `DAGSTER_HOME`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from pipeline.service.auth import hash_key
from tests.support.minilm_http import MiniLMServer
from tests.support.processes import graphrag_serve

WRITER, READER, SCOPED, OTHER = "grk_up-writer-01", "grk_up-reader-01", "grk_up-scoped-01", "grk_up-globex-01"
FILE_LIMIT, QUOTA_BYTES = 300_000, 1_500_000
HANG_GUARD_S = 600  # a bound on a hang only: every wait ends on an event


@dataclass
class Served:
    url: str
    storage: Path
    input_root: Path
    dagster_home: Path
    embedder: MiniLMServer

    def client(self, key: str) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {key}"}, timeout=HANG_GUARD_S
        )


@contextmanager
def uploads_service(root: Path, embedder: MiniLMServer, dagster_home: Path) -> Iterator[Served]:
    """The service over storage, input and keys under `root` (an operator's folder `operator-docs`
    included, not opened to uploads), its runs in the Dagster instance of `dagster_home`."""
    (root / "input" / "operator-docs").mkdir(parents=True)
    keys = root / "keys.yaml"
    keys.write_text(
        "tenants:\n"
        f"  acme: {{key_sha256: {hash_key(WRITER)}, namespaces: [operator-docs], write: true}}\n"
        f"  acme-reader: {{tenant: acme, key_sha256: {hash_key(READER)}, namespaces: []}}\n"
        f"  acme-scoped: {{tenant: acme, key_sha256: {hash_key(SCOPED)}, namespaces: [], write: [other]}}\n"
        f"  globex: {{key_sha256: {hash_key(OTHER)}, namespaces: [], write: true}}\n",
        encoding="utf-8",
    )
    env = {
        **embedder.env(),
        "PIPELINE_API_KEYS_FILE": str(keys),
        "PIPELINE_STORAGE_ROOT": str(root / "storage"),
        "PIPELINE_INPUT_ROOT": str(root / "input"),
        "DAGSTER_HOME": str(dagster_home),
        "PIPELINE_SERVICE_UPLOAD_MAX_FILE_BYTES": str(FILE_LIMIT),
        "PIPELINE_SERVICE_NAMESPACE_MAX_BYTES": str(QUOTA_BYTES),
    }
    with graphrag_serve(env, root / "serve.log") as url:
        yield Served(url, root / "storage", root / "input", dagster_home, embedder)
