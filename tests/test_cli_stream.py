"""`pipeline query <mode> --stream` as a user runs it (a subprocess over a real index): the terminal shows
what it shows without --stream, the answer printed as it was written; with --json, one JSON line per
event in the order they happened, the deltas joining to the answer of the closing `done`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT
from tests.support.service_data import ServiceData

QUESTION = "How is Scrooge related to Bob Cratchit?"


def query(data: ServiceData, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PIPELINE_STORAGE_ROOT": str(data.storage_root)}
    return subprocess.run(
        [sys.executable, "-m", "assets", "query", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=300,
    )


@pytest.mark.parametrize("mode", ["local", "auto"])
def test_streamed_output_is_the_unstreamed_output(service_data: ServiceData, mode: str) -> None:
    plain = query(service_data, mode, "--namespace", "acme", QUESTION)
    streamed = query(service_data, mode, "--namespace", "acme", "--stream", QUESTION)
    assert plain.returncode == streamed.returncode == 0, streamed.stderr[-2000:]
    assert "[Data: Sources" in plain.stdout
    assert streamed.stdout == plain.stdout


def test_stream_json_prints_each_event_as_it_happens(service_data: ServiceData, tmp_path: Path) -> None:
    out = query(service_data, "basic", "--namespace", "acme", "--stream", "--json", "--top-k", "2", QUESTION)
    assert out.returncode == 0, out.stderr[-2000:]
    lines: list[dict[str, Any]] = [json.loads(line) for line in out.stdout.splitlines()]
    kinds = [line["event"] for line in lines]
    assert kinds[0] == "route" and kinds[1] == "context" and kinds[-1] == "done"
    assert kinds.count("delta") > 1
    result = lines[-1]["data"]["result"]
    assert "".join(line["data"]["text"] for line in lines if line["event"] == "delta") == result["answer"]
    assert [s["text_unit_id"] for s in lines[1]["data"]["sources"]] == [
        s["text_unit_id"] for s in result["sources"]
    ]
