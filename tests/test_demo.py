"""`make demo` as a new user runs it: the real Makefile target, the real CLI, on the sample book.

The index it starts from is a copy of the session's sample book (`conftest.sample_book`), so the
demo's own index run finds every embedding and report cached and re-materializes in seconds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, make_dagster_home

STAGES = [
    "input_documents",
    "base_text_units",
    "documents",
    "text_units",
    "extracted_graph",
    "text_unit_embeddings",
    "entities_and_relationships",
    "chunk_graph",
    "claims",
    "communities",
    "community_reports",
    "report_embeddings",
]


@pytest.fixture(scope="module")
def demo_output(sample_book: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    base = tmp_path_factory.mktemp("make_demo")
    storage = base / "storage"
    shutil.copytree(sample_book, storage)
    venv = Path(sys.executable).parent.parent
    env = dict(os.environ)
    env.update(PIPELINE_STORAGE_ROOT=str(storage), DAGSTER_HOME=str(make_dagster_home(base / "dagster_home")))
    # -o: the venv's install stamp counts as up to date (the test runs inside that venv already)
    out = subprocess.run(
        ["make", "--no-print-directory", "-o", str(venv / ".installed"), "demo", f"VENV={venv}"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=1200,
    )
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    return out.stdout + out.stderr


def test_make_demo_fits_on_two_screens_with_a_progress_line_per_stage(demo_output: str) -> None:
    lines = demo_output.splitlines()
    assert len(lines) <= 120, "\n".join(lines)
    for stage in STAGES:
        assert sum(1 for line in lines if line.startswith(f"  ✔ {stage} ")) == 1, stage
    assert "STEP_START" not in demo_output and "DEBUG" not in demo_output
    assert "No existing dataset" not in demo_output
