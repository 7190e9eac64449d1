"""Blocking asset checks stop a namespace's run where its index went bad: a scripted OpenAI-compatible
server on 127.0.0.1 answers prose instead of extraction JSON for most text units, so
`extraction_failure_share` fails, and the instance records no materialization of the reports or the
report embeddings for that partition, with the check's reason readable on its evaluation."""

from __future__ import annotations

import json

import pytest
from dagster import AssetKey, AssetRecordsFilter, DagsterEventType

from assets.launch import add_namespace
from tests.support.env import scoped_env
from tests.support.fault_proxy import FaultProxy

NAMESPACE = "garbage_extraction"
GOOD = "Marie Curie was born in Warsaw and later moved to Paris to study physics."
BAD = [
    "The lighthouse keeper counted ships every night along the northern coast.",
    "A quiet orchard grew apples that nobody ever picked in the autumn months.",
    "Old railway timetables listed trains that had stopped running long ago.",
]


def garbage_reply(request: dict) -> str:
    """The scripted server's answer (FaultProxy's responder): extraction JSON for the paragraph about
    Curie; a refusal in prose for every other unit."""
    messages = request["messages"]
    text = json.dumps(messages)
    if "community of entities in a knowledge graph" in text:
        return json.dumps(
            {"title": "T", "summary": "S", "findings": [], "rating": 1, "rating_explanation": "R"}
        )
    if "You merge descriptions" in text:
        return json.dumps({"summary": "merged"})
    if "Curie" in messages[-1]["content"].rsplit("Text:\n", 1)[-1]:
        return json.dumps(
            {
                "entities": [
                    {"name": "Marie Curie", "type": "person", "description": "A physicist."},
                    {"name": "Paris", "type": "geo", "description": "A city."},
                ],
                "relationships": [
                    {"source": "Marie Curie", "target": "Paris", "description": "Lived.", "strength": 5}
                ],
                "claims": [],
            }
        )
    return "I am sorry, I cannot help with that."


@pytest.fixture(scope="module")
def blocked(tmp_path_factory: pytest.TempPathFactory, dagster_instance):
    input_dir = tmp_path_factory.mktemp("garbage_input")
    (input_dir / "mixed.txt").write_text("\n\n".join([GOOD, *BAD]), encoding="utf-8")
    env = {
        "PIPELINE_STORAGE_ROOT": str(tmp_path_factory.mktemp("garbage_storage")),
        "PIPELINE_CHUNK_SIZE": "20",
        "PIPELINE_CHUNK_OVERLAP": "0",
        "PIPELINE_LLM_PROVIDER": "openai",
        "PIPELINE_EXTRACTION_PACK_TOKENS": "0",
        "PIPELINE_LLM_MODEL": "scripted",
        "PIPELINE_LLM_MAX_RETRIES": "0",
    }
    from assets.definitions import defs

    job = defs.resolve_job_def("index_namespace")
    config = {"ops": {"input_documents": {"config": {"input_dir": str(input_dir)}}}}
    with (
        FaultProxy(None, responder=garbage_reply) as server,
        scoped_env(**env, PIPELINE_LLM_BASE_URL=server.base_url),
    ):
        add_namespace(dagster_instance, NAMESPACE)
        result = job.execute_in_process(
            partition_key=NAMESPACE, instance=dagster_instance, run_config=config, raise_on_error=False
        )
    return dagster_instance, result


def _materialized(instance, asset: str) -> int:
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey(asset), asset_partitions=[NAMESPACE]), limit=10
    ).records
    return len(records)


def test_extraction_check_blocks_the_reports_and_embeddings(blocked) -> None:
    instance, result = blocked
    assert not result.success
    evaluations = [
        entry.dagster_event.event_specific_data
        for entry in instance.all_logs(result.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION)
    ]
    check = next(c for c in evaluations if c.check_name == "extraction_failure_share")
    assert not check.passed and check.blocking and check.severity.value == "ERROR"
    failed, total = check.metadata["failed"].value, check.metadata["total"].value
    assert total >= 3 and failed == total - 1  # every unit but Curie's
    assert check.description.startswith(f"extracted_graph: {failed} of {total} text units failed"), (
        check.description
    )
    assert "PIPELINE_CHECK_MAX_FAILED_SHARE" in check.description
    assert check.metadata["limit"].value == 0.2
    # the asset itself landed (its failures can be inspected); nothing built on it did
    assert _materialized(instance, "extracted_graph") == 1
    for downstream in ("entities", "community_reports", "report_embeddings", "index_version"):
        assert _materialized(instance, downstream) == 0, downstream
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert failure.step_key == "extracted_graph"
    assert "extraction_failure_share" in failure.step_failure_data.error.message


def test_the_run_summary_gives_the_checks_reason(blocked) -> None:
    from assets.runs import summarize_run

    failures = summarize_run(blocked[1]).failures
    # the CLI prints "error: stage <step>: <reason>" from these
    assert any(
        f.startswith("extracted_graph: extracted_graph: ") and "text units failed" in f for f in failures
    ), failures


def test_blocking_checks_are_declared_blocking() -> None:
    from assets.definitions import defs

    graph = defs.get_repository_def().asset_graph
    blocking = {
        (k.asset_key.to_user_string(), k.name)
        for k in graph.asset_check_keys
        if graph.get_check_spec(k).blocking
    }
    assert blocking == {
        ("extracted_graph", "extraction_failure_share"),
        ("entities", "entities_from_corpus"),
        ("relationships", "relationships_reference_entities"),
        ("text_unit_embeddings", "vector_dimension_matches_table"),
        ("report_embeddings", "vector_dimension_matches_table"),
        ("community_reports", "report_failure_share"),
        ("community_reports", "citations_resolve"),
    }
    warn = next(k for k in graph.asset_check_keys if k.name == "no_failed_extractions")
    assert not graph.get_check_spec(warn).blocking


# ---- each blocking check on a real index (the sample book), broken one way at a time -----------------


@pytest.fixture
def book(tmp_path, sample_book):
    """A copy of the sample book's index and its context."""
    import shutil

    from pipeline.index.context import IndexContext
    from pipeline.settings import load_settings

    shutil.copytree(sample_book / "demo", tmp_path / "demo")
    return IndexContext.build("demo", load_settings(storage_root=str(tmp_path)))


def _check(asset: str, report, ctx, name: str):
    from assets.indexing.blocking import blocking_checks

    return next(c for c in blocking_checks(asset, report, ctx) if c.name == name)


def test_each_check_passes_on_a_sound_index(book) -> None:
    from pipeline.index.report import StageReport

    assert _check("entities", StageReport(rows=5), book, "entities_from_corpus").passed
    assert _check(
        "text_unit_embeddings",
        StageReport(rows=1, metadata={"dimension": 384}),
        book,
        "vector_dimension_matches_table",
    ).passed
    citations = _check("community_reports", StageReport(rows=1), book, "citations_resolve")
    assert citations.passed and citations.metadata["cited"] > 0


def test_no_entities_from_a_non_empty_corpus_blocks(book) -> None:
    from pipeline.index.report import StageReport

    check = _check("entities", StageReport(rows=0), book, "entities_from_corpus")
    assert not check.passed and "no entity was extracted from" in check.metadata["reason"]


def test_a_vector_dimension_unlike_the_tables_blocks(book) -> None:
    from pipeline.index.report import StageReport

    for asset, tables in (("text_unit_embeddings", "text_units"), ("report_embeddings", "community_reports")):
        check = _check(
            asset, StageReport(rows=1, metadata={"dimension": 768}), book, "vector_dimension_matches_table"
        )
        assert (
            not check.passed
            and "dimension 768" in check.metadata["reason"]
            and tables in check.metadata["reason"]
        )


def test_citations_naming_missing_rows_block(book) -> None:
    import pyarrow.parquet as pq

    from pipeline.index.report import StageReport

    path = book.store.parquet_path("entities")
    entities = pq.read_table(str(path))
    pq.write_table(entities.slice(1), str(path))  # the first entity is gone; reports still cite it
    check = _check("community_reports", StageReport(rows=1), book, "citations_resolve")
    assert not check.passed and check.metadata["unresolved"] >= 1
    assert "citations name rows that do not exist" in check.metadata["reason"]


def test_reports_failing_past_the_share_block(book) -> None:
    from pipeline.index.report import Loss, StageReport

    loss = Loss(
        "community_reports", "community reports", total=10, failed=3, reasons=["timeout"], max_share=0.5
    )
    check = _check("community_reports", StageReport(rows=7, loss=loss), book, "report_failure_share")
    assert (
        not check.passed and "community_reports: 3 of 10 community reports failed" in check.metadata["reason"]
    )
    ok = Loss(
        "community_reports", "community reports", total=10, failed=2, reasons=["timeout"], max_share=0.5
    )
    assert _check("community_reports", StageReport(rows=8, loss=ok), book, "report_failure_share").passed
