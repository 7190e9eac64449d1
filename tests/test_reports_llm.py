"""Community reports through the LLM path: the real local model (llama.cpp + SmolLM2) writes a report
that validates; a reply that never validates is retried once, then recorded in failed_reports (GraphRAG
skips such communities silently) and asked again on the next run, together with its parent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.core import schema
from pipeline.index.community_reports import index_community_reports
from pipeline.io.store import NamespaceStore
from pipeline.ops.reports.build import build_reports
from pipeline.ops.reports.models import CommunityReportResponse
from pipeline.runtime import make_engine
from pipeline.settings import Settings
from tests.support.fault_proxy import FaultProxy
from tests.support.graph_tables import Graph, two_group_graph
from tests.support.llm_server import MODEL_ALIAS, LlamaServer

PROSE = "I would rather describe this community in prose."


class PoisonReportProxy(FaultProxy):
    """Answers report requests itself: prose for the first `poison` requests that mention `marker`,
    a valid report for every other one."""

    def __init__(self, marker: str, poison: int) -> None:
        super().__init__(None)
        self.marker = marker.encode()
        self.poison_left = poison
        self.poisoned = 0

    def _canned(self, path: str, body: bytes) -> bytes:
        with self._lock:
            if self.marker in body and self.poison_left > 0:
                self.poison_left -= 1
                self.poisoned += 1
                self.canned_content = PROSE
            else:
                self.canned_content = CommunityReportResponse(
                    title=f"Report {self.received}",
                    summary="A canned summary.",
                    findings=[{"summary": "A finding", "explanation": "Its explanation."}],
                    rating=4.0,
                    rating_explanation="Canned.",
                ).model_dump_json()
            return super()._canned(path, body)


class TightGrammarProxy(FaultProxy):
    """Forwards to the model with tighter limits in the request's JSON schema (llama.cpp turns it into a
    grammar): at most 2 findings and short strings. SmolLM2-135M otherwise writes findings until
    max_tokens cuts the JSON off. The reply is still validated against the full report model."""

    LIMITS = {"title": 80, "summary": 300, "rating_explanation": 150}
    FINDING_LIMITS = {"summary": 80, "explanation": 200}

    def _outgoing(self, body: bytes) -> bytes:
        request = json.loads(body or b"{}")
        schema_ = (request.get("response_format") or {}).get("schema")
        if schema_:
            for name, limit in self.LIMITS.items():
                schema_["properties"][name]["maxLength"] = limit
            schema_["properties"]["findings"]["maxItems"] = 2
            for name, limit in self.FINDING_LIMITS.items():
                schema_["$defs"]["Finding"]["properties"][name]["maxLength"] = limit
            body = json.dumps(request).encode()
        return body


def _settings(tmp_path: Path, base_url: str, **overrides) -> Settings:
    return Settings(
        storage_root=tmp_path / "storage",
        llm_provider="openai",
        llm_base_url=base_url,
        llm_model=MODEL_ALIAS,
        # one request at a time: two CPU cores serve the model; llama.cpp wants json_object (+ schema)
        llm_concurrency=1,
        llm_json_mode="json_object",
        llm_max_retries=0,
        llm_first_token_timeout_s=600,  # on a busy machine it read a report prompt in 80 s
        **overrides,
    )


def _build(g: Graph, settings: Settings, previous=None):
    t = g.tables()
    return build_reports(
        t["communities"], t["entities"], t["relationships"], t["covariates"], make_engine(settings),
        budget=settings.report_max_input_tokens, max_words=settings.report_max_words, previous=previous,
    )  # fmt: skip


def test_the_local_model_writes_a_report_that_validates(llm_server: LlamaServer, tmp_path: Path):
    g = Graph()
    g.entity("Marie Curie", "Marie Curie was a physicist who discovered radium.", degree=2)
    g.entity("Pierre Curie", "Pierre Curie was a physicist and Marie Curie's husband.", degree=1)
    g.entity("Paris", "Paris is the city where the Curies worked.", degree=1, type="geo")
    g.edge("Marie Curie", "Pierre Curie", "Marie Curie and Pierre Curie worked together.", weight=8)
    g.edge("Marie Curie", "Paris", "Marie Curie worked in Paris.", weight=5)
    g.claim("Marie Curie", "Marie Curie won the Nobel Prize in 1903.")
    g.community(0, 0, ["Marie Curie", "Pierre Curie", "Paris"])
    with TightGrammarProxy(llm_server.base_url) as proxy:
        settings = _settings(
            tmp_path, proxy.base_url, llm_report_max_tokens=450, llm_timeout_s=300, report_max_words=120
        )
        run = _build(g, settings)
    assert run.failures == [], run.failures[0].reason if run.failures else ""
    [row] = run.reports.to_pylist()
    print("local model report:", row["full_content_json"])
    assert proxy.forwarded in (1, 2)  # one call, or one call and its repair
    report = CommunityReportResponse.model_validate_json(row["full_content_json"])
    assert row["title"] == report.title and row["rank"] == report.rating
    assert row["full_content"].startswith(f"# {report.title}") and len(row["findings"]) == len(
        report.findings
    )
    assert row["method"] == "llm" and MODEL_ALIAS in row["model"] and "community_report-v2" in row["model"]


@pytest.fixture
def failing_then_fixed(tmp_path: Path) -> dict:
    g = two_group_graph()  # community 2 (Elm, Fir) is the first report request that mentions "Elm"
    with PoisonReportProxy("Elm", poison=2) as proxy:
        # A budget so small that community 0 stands on both children's reports once both exist
        settings = _settings(tmp_path, proxy.base_url, report_max_input_tokens=200)
        store = NamespaceStore(settings.storage_root, "groves")
        for name, table in g.tables().items():
            store.write_table(name, table)
        first = index_community_reports(store, settings, make_engine(settings))
        requests_first = proxy.received
        failed_table = store.read_table(schema.FAILED_REPORTS)
        second = index_community_reports(store, settings, make_engine(settings))
        return {
            "first": first,
            "second": second,
            "failed_table": failed_table,
            "requests_first": requests_first,
            "requests_second": proxy.received - requests_first,
            "poisoned": proxy.poisoned,
        }


def test_an_invalid_report_is_retried_once_then_recorded(failing_then_fixed):
    first = failing_then_fixed["first"]
    assert failing_then_fixed["poisoned"] == 2  # the first answer and the one repair retry
    assert failing_then_fixed["requests_first"] == 4  # communities 1, 2 (twice) and 0
    [failure] = first.failures
    assert (failure.community, failure.level, failure.error_type) == (2, 1, "LLMValidationError")
    assert failure.raw_output == PROSE and "CommunityReportResponse" in failure.reason
    rows = failing_then_fixed["failed_table"].to_pylist()
    assert failing_then_fixed["failed_table"].schema.equals(schema.FAILED_REPORTS_SCHEMA)
    assert [(r["community"], r["error_type"]) for r in rows] == [(2, "LLMValidationError")]
    assert sorted(first.reports.column("community").to_pylist()) == [0, 1]
    parent = next(r for r in first.reports.to_pylist() if r["community"] == 0)
    assert parent["sub_reports"] == [1]  # the failed child's raw rows stand in for its report


def test_the_next_run_asks_for_the_failed_report_and_its_parent_only(failing_then_fixed):
    second = failing_then_fixed["second"]
    assert second.failures == []
    assert failing_then_fixed["requests_second"] == 2
    assert (second.generated, second.reused) == (2, 1)
    assert sorted(second.reports.column("community").to_pylist()) == [0, 1, 2]
    first_titles = {r["community"]: r["title"] for r in failing_then_fixed["first"].reports.to_pylist()}
    second_titles = {r["community"]: r["title"] for r in second.reports.to_pylist()}
    assert second_titles[1] == first_titles[1]  # reused
    assert second_titles[0] != first_titles[0]  # its child now has a report: a new fingerprint
    parent = next(r for r in second.reports.to_pylist() if r["community"] == 0)
    assert parent["sub_reports"] == [1, 2] and parent["context_tokens"] <= 200
