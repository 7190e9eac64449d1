"""A throwaway PostgreSQL 16 server with pgvector for the tests: `pgserver` (PyPI) bundles both and
starts one on a Unix socket in under a second. Session-scoped; stopped at the end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def pg_dsn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import pgserver  # a dev dependency that `make test` installs: missing must fail, not skip

    # Short path: the server's Unix socket lives in the data folder (sockets allow ~107 characters).
    server = pgserver.get_server(tmp_path_factory.mktemp("pg"), cleanup_mode="stop")
    try:
        server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
        yield server.get_uri()
    finally:
        server.cleanup()
