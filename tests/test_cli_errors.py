"""A user's mistake in the CLI is one line on stderr and an exit code, never a traceback: a blank
question in every query mode, `query vector` on a namespace not indexed or with a bad `--filter`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.support.namespace_copy import copy_namespace

MODES = ("vector", "chunks", "global", "local", "drift", "basic", "lazy", "auto")


@pytest.fixture(scope="module")
def root(sample_book: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the indexed sample book (namespace 'demo'): queries here write nothing to the shared one."""
    storage = tmp_path_factory.mktemp("cli_errors") / "storage"
    copy_namespace(sample_book / "demo", storage / "demo")
    return storage


def run_cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assets", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PIPELINE_STORAGE_ROOT": str(root)},
        cwd=REPO_ROOT,
        timeout=600,
    )


def one_line(out: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in out.stderr + out.stdout, out.stderr[-3000:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr[-3000:]
    return lines[0]


@pytest.mark.parametrize("mode", MODES)
def test_a_blank_question_is_one_line_and_exit_2(root: Path, mode: str) -> None:
    for blank in ("", "   "):
        out = run_cli(root, "query", mode, "--namespace", "demo", blank)
        assert out.returncode == 2, (mode, out.returncode, out.stderr[-3000:])
        assert one_line(out) == "error: the question is blank: it must contain a non-blank character"
        assert out.stdout == ""


def test_vector_on_a_namespace_not_indexed_is_not_ready_without_a_traceback(root: Path) -> None:
    out = run_cli(root, "query", "vector", "--namespace", "never-indexed", "ferry")
    assert out.returncode == 3, out.stderr[-3000:]
    assert out.stdout.startswith("[status: index_not_ready; ") and "never-indexed" in out.stdout
    assert out.stderr == ""


@pytest.mark.parametrize(
    ("flt", "says"),
    [
        ('{"no_such_field": 1}', "filter field 'no_such_field'"),
        ('{"n_tokens": {"$regex": "x"}}', "$regex"),
    ],
)
def test_vector_with_a_bad_filter_is_one_line_and_exit_2(root: Path, flt: str, says: str) -> None:
    out = run_cli(root, "query", "vector", "--namespace", "demo", "--filter", flt, "Scrooge")
    assert out.returncode == 2, out.stderr[-3000:]
    line = one_line(out)
    assert line.startswith("error: ") and says in line and "FilterError" not in line
    assert out.stdout == ""
