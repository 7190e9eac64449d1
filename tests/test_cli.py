"""The CLI as a user runs it: a subprocess, a real Dagster instance, real storage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import make_dagster_home
from tests.support.cli import run_cli


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory):
    base = tmp_path_factory.mktemp("cli")
    (base / "input").mkdir()
    (base / "input" / "notes.txt").write_text(
        "The lighthouse keeper Elin Varga logs every ship passing Skerry Point.\n\n"
        "In winter the ferry to Halvik stops running and the keeper orders supplies by radio.",
        encoding="utf-8",
    )
    env = dict(os.environ)
    env.update(
        DAGSTER_HOME=str(make_dagster_home(base / "dagster_home")),
        PIPELINE_STORAGE_ROOT=str(base / "storage"),
        PIPELINE_CHUNK_SIZE="40",
        PIPELINE_CHUNK_OVERLAP="8",
    )
    return base, env


def test_index_status_and_query(cli_env):
    base, env = cli_env
    out = run_cli(env, "index", "--namespace", "tiny", "--input", str(base / "input"))
    assert out.returncode == 0, out.stderr[-3000:]
    assert "SUCCESS" in out.stdout and "✔ text_unit_embeddings" in out.stdout
    # quiet by default: no Dagster event stream, no library debug or Lance "new table" warnings
    printed = out.stdout + out.stderr
    for noise in ("STEP_START", "DEBUG", "No existing dataset", "llm_calls=0"):
        assert noise not in printed, noise

    status = run_cli(env, "status", "--namespace", "tiny")
    assert status.returncode == 0
    assert "documents" in status.stdout and "text_units" in status.stdout and "lancedb" in status.stdout

    q = run_cli(env, "query", "vector", "--namespace", "tiny", "--top-k", "1", "--json", "ferry in winter")
    assert q.returncode == 0, q.stderr[-2000:]
    (hit,) = json.loads(q.stdout)
    assert "ferry" in hit["text"] and hit["document_title"] == "notes.txt"
    doc = (base / "input" / "notes.txt").read_text(encoding="utf-8")
    assert doc[hit["start_char"] : hit["end_char"]] == hit["text"]


def test_invalid_namespace_is_refused_before_any_work(cli_env):
    _, env = cli_env
    out = run_cli(env, "index", "--namespace", "Tenant A")
    assert out.returncode == 2 and "invalid namespace" in out.stderr


def test_status_of_an_unknown_namespace_says_so(cli_env):
    _, env = cli_env
    out = run_cli(env, "status", "--namespace", "never-indexed")
    assert out.returncode == 1 and "has no tables" in out.stdout


def test_every_query_before_index_is_index_not_ready_as_in_the_http_api(cli_env):
    _, env = cli_env
    for kind in ("vector", "local", "global", "drift", "basic", "lazy", "auto"):
        out = run_cli(env, "query", kind, "--namespace", "never-indexed", "anything")
        assert out.returncode == 3, (kind, out.stderr[-2000:])
        assert out.stdout.startswith("[status: index_not_ready; ") and "materialize" in out.stdout, kind


def test_console_script_is_installed():
    script = Path(sys.executable).parent / "pipeline"
    assert script.exists()
    out = subprocess.run([str(script), "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "index" in out.stdout


def test_verbose_index_brings_back_the_dagster_events(cli_env):
    base, env = cli_env
    out = run_cli(env, "-v", "index", "--namespace", "tiny", "--input", str(base / "input"))
    assert out.returncode == 0, out.stderr[-3000:]
    printed = out.stdout + out.stderr
    assert "STEP_START" in printed and "ASSET_MATERIALIZATION" in printed


def test_index_json_is_the_run_for_machines(cli_env):
    base, env = cli_env
    out = run_cli(env, "index", "--namespace", "tiny", "--input", str(base / "input"), "--json")
    assert out.returncode == 0, out.stderr[-3000:]
    run = json.loads(out.stdout)  # stdout is the JSON alone
    assert run["success"] is True and run["failures"] == []
    by_asset = {s["asset"]: s["metadata"] for s in run["steps"]}
    assert by_asset["text_units"]["rows"] >= 1 and "report_embeddings" in by_asset
    assert by_asset["text_units"]["dagster/row_count"] == by_asset["text_units"]["rows"]
    assert {"name": "start_char", "type": "int64"} in by_asset["text_units"]["dagster/column_schema"]


def test_a_failing_stage_is_named_on_stderr(cli_env):
    base, env = cli_env
    out = run_cli(env, "index", "--namespace", "broken", "--input", str(base / "no-such-folder"))
    assert out.returncode == 1
    assert "✘ input_documents" in out.stdout and "FAILED" in out.stdout
    assert "error: stage input_documents: FileNotFoundError" in out.stderr, out.stderr


def test_summary_table_shows_only_counters_that_are_not_zero():
    from rich.console import Console

    from assets.cli.index_display import print_outcome
    from assets.runs import IndexRunResult, StepSummary

    zeros = {"llm_calls": 0, "llm_cache_hits": 0, "llm_prompt_tokens": 0, "llm_cost_usd": 0.0}
    result = IndexRunResult(
        ["run-1"],
        True,
        [
            StepSummary("documents", {"rows": 3, **zeros}),
            StepSummary(
                "extracted_graph",
                {**zeros, "rows": 3, "llm_calls": 7, "llm_prompt_tokens": 1200, "llm_cost_usd": 0.0012},
            ),
        ],
        [],
    )
    console = Console(record=True, width=120)
    print_outcome(result, 1.0, console)
    text = console.export_text()
    assert "model calls" in text and "tokens in" in text and "cost USD" in text and "1,200" in text
    assert "cache hits" not in text and "tokens out" not in text  # zero everywhere: no column
