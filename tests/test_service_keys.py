"""The keys file fails closed: missing, unreadable or with any invalid entry, every key is refused (503,
with a body that says why and one log line), and a revoked key is refused on its very next request.

Real HTTP on 127.0.0.1; the namespace status endpoint needs no index (an authorized key gets 200 for an
empty namespace), so no model is loaded.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pipeline.service.auth import hash_key
from pipeline.service.queries import QueryService
from pipeline.settings import Settings
from tests.support.service_data import serving

KEY_A = "grk_keys-test-a-0123456789abcdef"
KEY_B = "grk_keys-test-b-fedcba9876543210"
KEY_C = "grk_keys-test-c-0000000000000000"


def keys_text(entries: dict[str, tuple[str, list[str]]]) -> str:
    """tenant -> (key_sha256 as written, namespaces), as the YAML an operator writes."""
    return "tenants:\n" + "".join(
        f"  {t}:\n    key_sha256: {d}\n    namespaces: [{', '.join(ns)}]\n" for t, (d, ns) in entries.items()
    )


VALID = {"a": (hash_key(KEY_A), ["nsa"]), "b": (hash_key(KEY_B), ["nsb"])}


@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    path = tmp_path / "keys.yaml"
    path.write_text(keys_text(VALID))
    return path


@pytest.fixture
def client(tmp_path: Path, keys_file: Path) -> Iterator[httpx.Client]:
    settings = Settings(storage_root=tmp_path / "storage", api_keys_file=keys_file)
    with serving(QueryService(settings)) as url, httpx.Client(base_url=url, timeout=60) as c:
        yield c


def status(client: httpx.Client, key: str, namespace: str) -> httpx.Response:
    return client.get(f"/v1/namespaces/{namespace}/status", headers={"Authorization": f"Bearer {key}"})


def assert_refused_closed(r: httpx.Response, why: str) -> None:
    assert r.status_code == 503, r.text
    error = r.json()["error"]
    assert error["code"] == "keys_unavailable" and why in error["message"], error
    assert KEY_A not in r.text and KEY_B not in r.text


def keys_log(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "keys file" in r.getMessage()]


def test_revoked_tenant_next_to_a_malformed_entry_refuses_every_key(
    client: httpx.Client, keys_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert status(client, KEY_A, "nsa").status_code == 200
    # tenant a removed, and b's entry broken by the same edit: a must not keep its old access
    keys_file.write_text(keys_text({"b": ("not-a-digest", ["nsb"])}))
    with caplog.at_level(logging.INFO, logger="pipeline.service"):
        for _ in range(3):
            assert_refused_closed(status(client, KEY_A, "nsa"), "invalid entry")
            assert_refused_closed(status(client, KEY_B, "nsb"), "invalid entry")
    lines = keys_log(caplog)
    assert len(lines) == 1, lines  # one line per change of the file, not one per request
    assert "'b'" in lines[0] and "key_sha256" in lines[0] and "not-a-digest" not in lines[0]
    # fixed: b reads again, a (revoked) stays out
    keys_file.write_text(keys_text({"b": VALID["b"]}))
    assert status(client, KEY_B, "nsb").status_code == 200
    assert status(client, KEY_A, "nsa").status_code == 401


def test_a_deleted_keys_file_refuses_every_key_until_it_is_back(
    client: httpx.Client, keys_file: Path
) -> None:
    assert status(client, KEY_A, "nsa").status_code == 200
    keys_file.unlink()
    assert_refused_closed(status(client, KEY_A, "nsa"), "missing")
    keys_file.write_text(keys_text(VALID))
    assert status(client, KEY_A, "nsa").status_code == 200


def test_an_unreadable_keys_file_refuses_every_key(client: httpx.Client, keys_file: Path) -> None:
    assert status(client, KEY_A, "nsa").status_code == 200
    keys_file.unlink()
    keys_file.mkdir()  # exists, but cannot be read as a file (root ignores permission bits)
    assert_refused_closed(status(client, KEY_A, "nsa"), "unreadable")


def test_invalid_yaml_refuses_every_key_and_logs_no_key(
    client: httpx.Client, keys_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A plain key pasted by mistake into a broken file must not reach the log through YAML's snippet.
    keys_file.write_text(f"tenants:\n  a:\n    key_sha256: [{KEY_C}\n")
    with caplog.at_level(logging.INFO, logger="pipeline.service"):
        assert_refused_closed(status(client, KEY_A, "nsa"), "invalid")
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert keys_log(caplog) and KEY_C not in text


def test_a_revoked_key_is_refused_on_its_next_request_even_at_the_same_size_and_mtime(
    client: httpx.Client, keys_file: Path
) -> None:
    assert status(client, KEY_A, "nsa").status_code == 200
    before = keys_file.stat()
    # a's digest rotated to another key's: same size, and the old mtime put back
    keys_file.write_text(keys_text({"a": (hash_key(KEY_C), ["nsa"]), "b": VALID["b"]}))
    os.utime(keys_file, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert keys_file.stat().st_size == before.st_size
    assert status(client, KEY_A, "nsa").status_code == 401
    assert status(client, KEY_C, "nsa").status_code == 200


def test_a_keys_file_invalid_at_start_refuses_and_recovers(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"a": {"key_sha256": "nope", "namespaces": ["nsa"]}}))
    settings = Settings(storage_root=tmp_path / "storage", api_keys_file=keys)
    with serving(QueryService(settings)) as url, httpx.Client(base_url=url, timeout=60) as c:
        assert_refused_closed(status(c, KEY_A, "nsa"), "invalid entry")
        keys.write_text(json.dumps({"a": {"key_sha256": hash_key(KEY_A), "namespaces": ["nsa"]}}))
        assert status(c, KEY_A, "nsa").status_code == 200
