"""LLM extraction against the local SmolLM2 server (structure, not quality), failures, re-runs, summaries.

The server is the real llama.cpp one from tests/support; a fault proxy in front of it answers every
request about one marked text unit with prose, so that unit never validates. Description summaries
are tested against the proxy's canned answers (no model needed).

SmolLM2-135M repeats itself on some texts until max_tokens cuts it off (the server then says
`finish_reason: "length"`); such a unit must end as an `LLMTruncatedError` failure, never as records,
and is asked again on a re-run. Which units that happens to is the model's business: the tests accept
either outcome per unit, as long as at least one unit is extracted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from pipeline.core import schema
from pipeline.core.names import normalize_name
from pipeline.ops.extraction import failures_table, from_table, to_table
from pipeline.ops.extraction.models import GENERIC_TYPE, ExtractionOptions, RawEntity, UnitExtraction
from pipeline.ops.extraction.run import extract_graph
from pipeline.ops.resolution import ResolutionOptions, resolve_graph
from pipeline.runtime import make_engine
from pipeline.settings import Settings
from tests.support.fault_proxy import FaultProxy
from tests.support.llm_server import MODEL_ALIAS

MARKER = "Zyxwvut"  # in the text unit whose every reply is replaced by prose
TEXTS = [
    "Marie Curie was born in Warsaw. She worked in Paris with Pierre Curie.",
    "The Red Cross was founded in Geneva by Henry Dunant in 1863.",
    f"{MARKER} Corporation bought the Acme Company in 1999.",
]


class PoisonProxy(FaultProxy):
    """Forwards to the model, except requests mentioning MARKER, which get prose (never valid JSON)."""

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream, canned_content="Sorry, I would rather not answer in JSON.")
        self.poisoned = 0

    def _intercepts(self, body: bytes) -> bool:
        if MARKER.encode() not in body:
            return False
        with self._lock:
            self.poisoned += 1
        return True


def _text_units() -> pa.Table:
    return pa.table(
        {
            "id": [f"unit-{i}" for i in range(len(TEXTS))],
            "document_id": ["doc-0", "doc-0", "doc-1"],
            "text": TEXTS,
            "start_char": [0, len(TEXTS[0]) + 1, 0],
        }
    )


def _settings(tmp_path: Path, base_url: str, **overrides) -> Settings:
    return Settings(
        storage_root=tmp_path / "storage",
        llm_provider="openai",
        llm_base_url=base_url,
        llm_model=MODEL_ALIAS,
        llm_max_tokens=300,
        llm_extraction_max_tokens=300,  # SmolLM2's context is 2,048 tokens, the prompt most of it
        llm_max_retries=1,
        # one request at a time: two CPU cores serve the model; llama.cpp wants json_object (+ schema)
        llm_concurrency=1,
        llm_timeout_s=180,
        llm_first_token_timeout_s=600,  # a busy machine reads the extraction prompt slowly
        llm_json_mode="json_object",
        extraction_pack_tokens=0,  # one unit per request (packing: test_extraction_packed)
        **overrides,
    )


@pytest.fixture(scope="module")
def extraction(llm_server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("llm_extraction")
    with PoisonProxy(llm_server.base_url) as proxy:
        # gleaning rounds and claims are tested below with scripted answers: SmolLM2 on two cores is
        # slow, and asked for claims too it repeats itself past max_tokens on every unit here
        settings = _settings(tmp, proxy.base_url, extraction_max_gleanings=0, extract_claims=False)
        engine = make_engine(settings)
        first = extract_graph(_text_units(), ExtractionOptions.from_settings(settings), engine)
        first_usage, first_poisoned = engine.usage.counters(), proxy.poisoned
        forwarded_before = proxy.forwarded
        rerun_engine = make_engine(settings)
        rerun = extract_graph(_text_units(), ExtractionOptions.from_settings(settings), rerun_engine)
        yield {
            "first": first,
            "first_usage": first_usage,
            "first_poisoned": first_poisoned,
            "rerun": rerun,
            "rerun_usage": rerun_engine.usage.counters(),
            "rerun_poisoned": proxy.poisoned - first_poisoned,
            "rerun_forwarded": proxy.forwarded - forwarded_before,
        }


def _cut_off(run) -> list[str]:
    """Units whose replies the model never finished within max_tokens (see the module docstring)."""
    return sorted(f.text_unit_id for f in run.failures if f.error_type == "LLMTruncatedError")


def test_llm_rows_are_validated_and_carry_unit_and_document_ids(extraction):
    run = extraction["first"]
    print("first run:", extraction["first_usage"], f"{run.duration_s:.1f}s", "cut off:", _cut_off(run))
    assert run.method == "llm"
    cut = _cut_off(run)
    assert "unit-2" not in cut
    for u in run.units:
        if u.text_unit_id in cut:  # cut off twice: a failure, never a partial answer taken as whole
            assert u.status == "failed" and not u.entities and not u.relationships and not u.claims
    good = [u for u in run.units if u.text_unit_id != "unit-2" and u.text_unit_id not in cut]
    assert good, "every unit was cut off: the model never finished an answer"
    assert all(u.status == "ok" for u in good)
    for u in good:
        assert u.document_id == "doc-0" and u.rounds >= 1
        assert u.entities, "the model returned no entity at all"
        names = {normalize_name(e.name) for e in u.entities}
        for e in u.entities:
            assert e.name and e.type and e.round in range(u.rounds)
        for r in u.relationships:  # endpoint rule: every endpoint is an entity of the unit
            assert {normalize_name(r.source), normalize_name(r.target)} <= names
            assert 1 <= r.strength <= 10 and r.round in range(u.rounds)
        for c in u.claims:
            assert c.status in ("TRUE", "FALSE", "SUSPECTED") and c.subject
            if c.start_char is not None:
                assert TEXTS[int(u.text_unit_id[-1])].find(c.source_text.strip()) >= 0
        assert all(e.type == GENERIC_TYPE for e in u.entities if e.inferred)
    table = to_table(run.units)
    assert table.schema.equals(schema.EXTRACTED_GRAPH_SCHEMA)
    assert from_table(table) == run.units


def test_a_unit_that_never_validates_lands_in_failed_extractions(extraction):
    run = extraction["first"]
    failed = next(u for u in run.units if u.text_unit_id == "unit-2")
    assert failed.status == "failed" and not failed.entities
    rows = [r for r in failures_table(run.failures).to_pylist() if r["text_unit_id"] not in _cut_off(run)]
    assert len(rows) == 1
    assert rows[0]["text_unit_id"] == "unit-2" and rows[0]["document_id"] == "doc-1"
    assert rows[0]["round"] == 0 and rows[0]["error_type"] == "LLMValidationError"
    assert "ExtractionOut" in rows[0]["reason"]
    assert extraction["first_poisoned"] == 2  # the first answer and the repair retry


def test_a_rerun_asks_only_for_the_failed_units(extraction):
    # `calls` counts every answered call: the two prose answers about the marked unit, and the two cut
    # replies (first attempt and the larger retry) of each unit the model never finished
    cut = _cut_off(extraction["first"])
    cut_calls = 2 * len(cut)
    # a unit cut once and whole on the larger retry made two calls for one cache entry
    recovered = extraction["first_usage"]["truncations"] - cut_calls
    assert recovered >= 0
    good_calls = extraction["first_usage"]["calls"] - extraction["first_poisoned"] - cut_calls - recovered
    assert good_calls >= 1  # each extracted unit answered at least its first round
    usage = extraction["rerun_usage"]
    assert usage["cache_hits"] == good_calls  # every successful call of the first run, from the cache
    # only the cut-off units reach the model again, with one or two requests each: nothing of theirs was
    # cached, and the server does not always repeat itself exactly, so one may finish this time
    assert len(cut) <= extraction["rerun_forwarded"] <= cut_calls
    assert extraction["rerun_poisoned"] == 2
    assert usage["calls"] == 2 + extraction["rerun_forwarded"]  # only the failed units were asked again
    failed_again = {f.text_unit_id for f in extraction["rerun"].failures}
    assert "unit-2" in failed_again and failed_again <= {"unit-2", *cut}
    kept = [u.entities for u in extraction["first"].units if u.text_unit_id not in cut]
    assert [u.entities for u in extraction["rerun"].units if u.text_unit_id not in cut] == kept


class ScriptedProxy(FaultProxy):
    """Answers chat requests with the given contents in order (then the last one again)."""

    def __init__(self, *contents: str) -> None:
        super().__init__(None)
        self.contents = list(contents)
        self.bodies: list[dict] = []

    def _canned(self, path: str, body: bytes) -> bytes:
        with self._lock:
            self.bodies.append(json.loads(body))
            self.canned_content = self.contents.pop(0) if len(self.contents) > 1 else self.contents[0]
            return super()._canned(path, body)


ROUND_0 = {
    "entities": [{"name": "Marie Curie", "type": "PERSON", "description": "A physicist."}],
    "relationships": [
        {"source": "Marie Curie", "target": "Warsaw", "description": "Born there.", "strength": 8}
    ],
    "claims": [],
}
ROUND_1 = {
    "entities": [
        {"name": "Marie Curie", "type": "person", "description": "Repeated."},
        {"name": "Pierre Curie", "type": "person", "description": "Her husband."},
    ],
    "relationships": [],
    "claims": [
        {
            "subject": "Marie Curie",
            "object": "Warsaw",
            "claim_type": "birth",
            "status": "true",
            "start_date": "1867-11-07",
            "end_date": "1867-11-07",
            "description": "Marie Curie was born in Warsaw.",
            "source_text": "Marie Curie was born in Warsaw.",
        }
    ],
}
EMPTY = {"entities": [], "relationships": [], "claims": []}


def _scripted_run(tmp_path: Path, *contents: str, gleanings: int = 2):
    with ScriptedProxy(*contents) as proxy:
        settings = _settings(tmp_path, proxy.base_url, extraction_max_gleanings=gleanings)
        run = extract_graph(
            _text_units().slice(0, 1), ExtractionOptions.from_settings(settings), make_engine(settings)
        )
    return run, proxy


def test_every_gleaning_round_is_kept_claims_included(tmp_path: Path):
    run, proxy = _scripted_run(
        tmp_path, json.dumps(ROUND_0), json.dumps(ROUND_1), json.dumps(EMPTY), gleanings=3
    )
    unit = run.units[0]
    assert unit.status == "ok" and unit.rounds == 3  # the third round added nothing: no fourth call
    assert len(proxy.bodies) == 3
    assert [(e.name, e.type, e.round, e.inferred) for e in unit.entities] == [
        ("Marie Curie", "person", 0, False),
        ("Pierre Curie", "person", 1, False),  # round 1's repeat of Marie Curie is not kept twice
        ("Warsaw", GENERIC_TYPE, 0, True),  # endpoint rule: the relationship is kept, its endpoint added
    ]
    assert [(r.source, r.target, r.strength) for r in unit.relationships] == [("Marie Curie", "Warsaw", 8.0)]
    claim = unit.claims[0]  # a gleaning round's claim is kept (GraphRAG drops it)
    assert (claim.round, claim.claim_type, claim.status) == (1, "BIRTH", "TRUE")
    assert TEXTS[0][claim.start_char : claim.end_char] == claim.source_text
    # the gleaning request carries the conversation: the first answer, then the 'missed' question
    glean = proxy.bodies[1]["messages"]
    assert glean[-2]["role"] == "assistant" and "Marie Curie" in glean[-2]["content"]
    assert "MANY entities" in glean[-1]["content"]


def test_a_failed_gleaning_round_keeps_the_first_round(tmp_path: Path):
    run, _ = _scripted_run(tmp_path, json.dumps(ROUND_0), "no JSON", "still no JSON", gleanings=1)
    unit = run.units[0]
    assert unit.status == "partial" and unit.rounds == 1
    assert [e.name for e in unit.entities] == ["Marie Curie", "Warsaw"]
    assert [(f.text_unit_id, f.round, f.error_type) for f in run.failures] == [
        ("unit-0", 1, "LLMValidationError")
    ]


# ---- description summaries through the LLM path (canned server answers) ------------------------------
def _unit(uid: str, name: str, description: str) -> UnitExtraction:
    return UnitExtraction(uid, "doc", "llm", "test", entities=[RawEntity(name, "person", description)])


def test_llm_summaries_only_for_two_or_more_descriptions_and_iterative_when_long(tmp_path: Path):
    long = " ".join(["Scrooge counted his money in the cold counting-house."] * 12)
    units = [
        _unit("u1", "Scrooge", long),
        _unit("u2", "Scrooge", long + " Again."),
        _unit("u3", "Scrooge", long + " Once more."),
        _unit("u4", "Marley", "Dead as a door-nail."),
        _unit("u5", "Marley", "Dead as a door-nail."),  # same description twice: no call
    ]
    with FaultProxy(None, canned_content='{"summary": "canned summary"}') as proxy:
        # 50 words asked: the three long descriptions together are longer, so they are summarized
        settings = _settings(tmp_path, proxy.base_url, summarize_max_input_tokens=300, summarize_max_words=50)
        graph = resolve_graph(units, ResolutionOptions.from_settings(settings), make_engine(settings))
    rows = {e["title"]: e for e in graph.entities.to_pylist()}
    assert rows["Scrooge"]["description"] == "canned summary"
    assert rows["Marley"]["description"] == "Dead as a door-nail."
    stats = graph.stats.summaries
    assert stats.kept_as_is == 1 and stats.llm_failures == 0
    assert stats.llm_calls >= 2  # three long descriptions do not fit one 300-token call
    assert proxy.received == stats.llm_calls  # one request per counted call


def test_a_failed_summary_falls_back_to_the_offline_one(tmp_path: Path):
    laughs = "Fred laughs a lot, often and long."
    units = [_unit("u1", "Fred", "Fred is the nephew."), _unit("u2", "Fred", laughs)]
    with FaultProxy(None, canned_content="no JSON here") as proxy:
        # 11 words together: longer than the 10 asked for, so the model is asked (and fails)
        settings = _settings(tmp_path, proxy.base_url, summarize_max_words=10)
        graph = resolve_graph(units, ResolutionOptions.from_settings(settings), make_engine(settings))
    assert graph.stats.summaries.llm_failures == 1
    assert graph.entities.to_pylist()[0]["description"] == f"Fred is the nephew. {laughs}"
