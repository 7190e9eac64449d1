"""`pipeline index` tells the truth about a run that lost text units to the model: through the CLI, a real
Dagster instance and the scripted OpenAI-compatible server (tests/support/fault_proxy.py, streamed
replies), ten one-paragraph documents, so ten text units.

- a model that fails every unit: the run fails at extracted_graph, the CLI exits non-zero naming the
  stage and the count, and the rows it could write are on disk (failed_extractions has all ten);
- a model that fails one unit of ten: the run succeeds (exit 0) with one warning line naming it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pipeline.core import schema
from pipeline.index.report import Check, Loss, StageReport
from pipeline.io.store import NamespaceStore
from tests.conftest import make_dagster_home
from tests.support.cli import run_cli
from tests.support.fault_proxy import FaultProxy
from tests.support.graph_model import ScriptedGraphModel

MARKER = "Quillon"  # the one document whose extraction never validates in the 1-of-10 run
PROSE = "Sorry, I would rather answer in prose today."
PEOPLE = ["Anna Berg", "Bruno Costa", "Clara Dahl", "Dario Esposito", "Elin Varga"]


def _documents(folder: Path) -> Path:
    folder.mkdir()
    for i in range(10):
        a, b = PEOPLE[i % 5], PEOPLE[(i + 1) % 5]
        place = MARKER if i == 3 else f"Harbour {i}"
        (folder / f"note_{i}.txt").write_text(f"{a} met {b} at {place} on a grey morning.", encoding="utf-8")
    return folder


def _env(tmp_path: Path, base_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DAGSTER_HOME=str(make_dagster_home(tmp_path / "dagster_home")),
        PIPELINE_STORAGE_ROOT=str(tmp_path / "storage"),
        PIPELINE_LLM_PROVIDER="openai",
        PIPELINE_LLM_BASE_URL=base_url,
        PIPELINE_LLM_MODEL="scripted",
        PIPELINE_LLM_JSON_MODE="json_object",
        PIPELINE_LLM_MAX_RETRIES="0",
        PIPELINE_EXTRACTION_MAX_GLEANINGS="0",
        PIPELINE_EXTRACTION_PACK_TOKENS="0",  # one request per unit: the counts below are per unit
    )
    return env


def _index(tmp_path: Path, responder: Any) -> tuple[Any, FaultProxy]:
    folder = _documents(tmp_path / "input")
    with FaultProxy(None, responder=responder) as proxy:
        out = run_cli(_env(tmp_path, proxy.base_url), "index", "--namespace", "notes", "--input", str(folder))
    return out, proxy


def test_a_model_that_fails_every_unit_fails_the_run_naming_the_stage_and_the_count(tmp_path: Path) -> None:
    out, proxy = _index(tmp_path, lambda _request: PROSE)
    assert out.returncode != 0, out.stdout[-3000:]
    assert "FAILED" in out.stdout and "SUCCESS" not in out.stdout
    assert "extracted_graph: 10 of 10 text units failed" in out.stderr, out.stderr[-3000:]
    assert "LLMValidationError" in out.stderr  # the first reasons come with the count
    assert "error: stage extracted_graph: extracted_graph: 10 of 10" in out.stderr  # no exception class name
    # every unit was asked (and repaired once), then the stage wrote what it had before failing
    assert proxy.received == 20
    store = NamespaceStore(tmp_path / "storage", "notes")
    failed = store.read_table(schema.FAILED_EXTRACTIONS).to_pylist()
    assert len({f["text_unit_id"] for f in failed}) == 10
    assert not store.has_table(schema.ENTITIES)  # nothing downstream ran on an empty graph


def test_one_failed_unit_of_ten_is_a_success_with_one_warning_line(tmp_path: Path) -> None:
    model = ScriptedGraphModel()

    def responder(request: dict[str, Any]) -> str:
        # the marked unit's extraction and its repair (which resends the conversation) get prose
        messages = request["messages"]
        marked = "extract a knowledge graph" in messages[0]["content"] and MARKER in str(messages)
        return PROSE if marked else model(request)

    out, _proxy = _index(tmp_path, responder)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "SUCCESS" in out.stdout
    warnings = [line for line in out.stdout.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: extracted_graph: 1 of 10 text units failed; their rows and reasons are in the failed_* "
        "table, a re-run retries them"
    ]
    store = NamespaceStore(tmp_path / "storage", "notes")
    assert store.read_table(schema.FAILED_EXTRACTIONS).num_rows == 1
    assert store.has_table(schema.COMMUNITY_REPORTS)


def test_the_share_rule_fails_all_or_more_than_the_share_and_nothing_less() -> None:
    def loss(failed: int, total: int, share: float = 0.5) -> Loss:
        return Loss("extracted_graph", "text units", total, failed, ["why"], share)

    assert not loss(0, 10).fatal and not loss(5, 10).fatal  # half is not more than half
    assert loss(6, 10).fatal and loss(1, 1).fatal and loss(10, 10, share=0.99).fatal
    assert loss(1, 10, share=0.0).fatal  # a share of 0: any loss fails the stage
    report = StageReport(rows=10, loss=loss(1, 10))
    assert report.fatal_loss() is None
    assert report.all_metadata()["lost"] == "extracted_graph: 1 of 10 text units failed"
    assert "lost" not in StageReport(rows=10, loss=loss(0, 10)).all_metadata()
    assert "6 of 10 text units failed (more than 50%" in (
        StageReport(rows=10, loss=loss(6, 10)).fatal_loss() or ""
    )


def test_a_check_of_counts_passes_only_when_every_count_is_zero_and_says_each_count() -> None:
    clean = Check.of_counts("levels_nest", {"broken_parent_links": 0, "roots_below_level_0": 0})
    assert clean.passed and clean.severity == "error"
    broken = Check.of_counts(
        "levels_nest", {"broken_parent_links": 0, "roots_below_level_0": 2}, severity="warn"
    )
    assert not broken.passed and broken.severity == "warn"
    assert broken.metadata == {"broken_parent_links": 0, "roots_below_level_0": 2}
