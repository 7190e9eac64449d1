"""Replies cut off at max_tokens, and extraction replies validated record by record.

Every test goes through the real `openai` client to the scripted server in tests/support/fault_proxy.py:
its `length` fault answers like a model stopped at max_tokens (`finish_reason: "length"`, the message
cut in half), so what is checked is what the pipeline does with such a reply, never a fake of it:

- a reply cut on the first attempt is asked again with twice the limit; the whole answer is used and
  cached, the cut one never;
- cut on the retry too, the text unit gets a `failed_extractions` row saying so, and nothing is cached;
- each task sends its own `max_tokens` (global map and reduce: the reserve their batches leave);
- one invalid record among valid ones is dropped and counted, the others kept (no repair asked);
- end to end on the sample book: a server that cuts every reply about every third text unit leaves
  each unit with its records or a failure row, and no cut reply in the LLM cache.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pipeline.caches.sqlite_llm import LLMCache
from pipeline.core import schema
from pipeline.core.boilerplate import mask_text_units
from pipeline.index import base_text_units, extracted_graph, input_documents
from pipeline.index.context import IndexContext
from pipeline.io.store import NamespaceStore
from pipeline.llm import LLMClient, LLMTruncatedError
from pipeline.llm.structured import parse_reply
from pipeline.ops.descriptions import DESCRIBE, DescriptionOptions, DescriptionRequest
from pipeline.ops.extraction import failures_table, table_counts, to_table
from pipeline.ops.extraction.models import GENERIC_TYPE, ExtractionOptions, ExtractionOut
from pipeline.ops.extraction.run import extract_graph
from pipeline.query.global_.search import GlobalSearchConfig
from pipeline.query.global_.tasks import MAP, REDUCE, MapRequest, ReduceRequest
from pipeline.runtime import make_engine
from pipeline.settings import Settings
from tests.conftest import REPO_ROOT
from tests.support.fault_proxy import FaultProxy
from tests.support.graph_model import NAME, ScriptedGraphModel, extraction_text
from tests.support.scripted_llm import LIMIT, scripted_settings

TEXT = "Marie Curie was born in Warsaw. She worked in Paris with Pierre Curie."
ANSWER = {
    "entities": [
        {"name": "Marie Curie", "type": "person", "description": "A physicist born in Warsaw."},
        {"name": "Pierre Curie", "type": "person", "description": "Worked with Marie Curie in Paris."},
        {"name": "Warsaw", "type": "geo", "description": "Where Marie Curie was born."},
        {"name": "Paris", "type": "geo", "description": "Where the Curies worked."},
    ],
    "relationships": [
        {"source": "Marie Curie", "target": "Warsaw", "description": "Born there.", "strength": 8},
        {"source": "Marie Curie", "target": "Pierre Curie", "description": "Worked together.", "strength": 9},
    ],
    "claims": [],
}


class Recorder:
    """A scripted model that answers every chat request with `content` (or `content(request)`) and
    records each request."""

    def __init__(self, content: str | Callable[[dict[str, Any]], str]) -> None:
        self.content = content
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> str:
        with self._lock:
            self.requests.append(request)
        return self.content(request) if callable(self.content) else self.content

    @property
    def max_tokens(self) -> list[int]:
        with self._lock:
            return [r["max_tokens"] for r in self.requests]


def _one_unit() -> pa.Table:
    return pa.table({"id": ["unit-0"], "document_id": ["doc-0"], "text": [TEXT], "start_char": [0]})


def _extract(settings: Settings):
    engine = make_engine(settings)
    run = extract_graph(_one_unit(), ExtractionOptions.from_settings(settings), engine)
    return run, engine.usage


def _cached(settings: Settings) -> list[tuple[str, str]]:
    """(task, response) of every entry in the LLM cache file."""
    path = Path(settings.storage_root) / "_cache" / "llm.sqlite"
    if not path.exists():
        return []
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT task, response FROM responses ORDER BY task").fetchall()


# ---- a cut reply: retried once with a larger limit ---------------------------------------------------
def test_a_cut_reply_is_asked_again_with_twice_the_limit_and_only_the_whole_answer_is_cached(
    tmp_path: Path,
) -> None:
    model = Recorder(json.dumps(ANSWER))
    with FaultProxy(None, responder=model) as proxy:
        proxy.script("length")  # the first reply is cut off, the retry is whole
        settings = scripted_settings(tmp_path, proxy.base_url)
        run, usage = _extract(settings)
        assert model.max_tokens == [LIMIT, 2 * LIMIT]
        unit = run.units[0]
        assert unit.status == "ok" and not run.failures
        assert [e.name for e in unit.entities] == [e["name"] for e in ANSWER["entities"]]
        assert len(unit.relationships) == 2
        assert usage.truncations == 1 and usage.calls == 2

        [(task, response)] = _cached(settings)  # one entry: the whole answer, under the first key
        assert task == "extract_graph"
        assert parse_reply(response, ExtractionOut).entities == ExtractionOut.model_validate(ANSWER).entities

        # a later run asks with the configured limit again and gets the whole answer from the cache
        again, usage = _extract(settings)
        assert usage.cache_hits == 1 and usage.calls == 0 and proxy.received == 2
        assert again.units[0].entities == unit.entities


def test_a_reply_cut_twice_is_a_failed_extraction_with_the_reason_and_is_never_cached(
    tmp_path: Path,
) -> None:
    model = Recorder(json.dumps(ANSWER))
    with FaultProxy(None, responder=model) as proxy:
        proxy.script("length", "length")
        settings = scripted_settings(tmp_path, proxy.base_url)
        run, usage = _extract(settings)
        assert model.max_tokens == [LIMIT, 2 * LIMIT]
        unit = run.units[0]
        assert unit.status == "failed" and not unit.entities and not unit.relationships
        [row] = failures_table(run.failures).to_pylist()
        assert (row["text_unit_id"], row["round"], row["error_type"]) == ("unit-0", 0, "LLMTruncatedError")
        assert "cut off" in row["reason"] and f"max_tokens={LIMIT}, then at {2 * LIMIT}" in row["reason"]
        assert usage.truncations == 2 and usage.failures == 1
        assert _cached(settings) == []

        # nothing was cached, so a re-run asks again (and now gets a whole answer)
        rerun, _ = _extract(settings)
        assert proxy.received == 3 and rerun.units[0].status == "ok" and rerun.units[0].entities


def test_the_retry_limit_is_capped_and_a_text_reply_cut_twice_raises(tmp_path: Path) -> None:
    with FaultProxy(None, canned_content="A long answer that goes on and on") as proxy:
        client = LLMClient(
            model="scripted",
            api_key="k",
            base_url=proxy.base_url,
            max_tokens=300,
            max_output_tokens=500,
            max_retries=0,
            cache=LLMCache(tmp_path / "llm.sqlite"),
        )
        messages = [{"role": "user", "content": "Tell me everything."}]
        ask = client.complete_text(messages, task="answer", prompt_version="v1")
        proxy.script("length", "length")
        with pytest.raises(LLMTruncatedError) as caught:
            client.run_sync(ask)
        assert caught.value.max_tokens == 500 and caught.value.raw == "A long answer th"
        assert client.cache.count() == 0
        proxy.script("length")
        text = client.run_sync(client.complete_text(messages, task="answer", prompt_version="v1"))
        assert text == "A long answer that goes on and on" and client.cache.count() == 1
        assert proxy.received == 4 and client.usage.truncations == 3


def test_a_cut_reply_is_never_mistaken_for_an_answer_even_when_the_server_does_not_say_so() -> None:
    whole = json.dumps(ANSWER)
    cut = whole[: whole.index("Pierre Curie") + 60]  # one complete entity inside an unfinished reply
    assert json.loads(cut[cut.index('{"name"') : cut.index("}") + 1])  # the fragment is valid JSON
    with pytest.raises(ValueError, match="no JSON object"):
        parse_reply(cut, ExtractionOut)
    with pytest.raises(ValueError, match="entities"):  # the lists are required, not defaulted
        parse_reply(json.dumps(ANSWER["entities"][0]), ExtractionOut)


# ---- each task its own output limit --------------------------------------------------------------------
def test_each_task_sends_its_own_output_limit_and_map_and_reduce_their_reserve(tmp_path: Path) -> None:
    def answer(request: dict[str, Any]) -> str:
        if "response_format" not in request:  # the reduce answers in prose
            return "The answer."
        wanted = request["response_format"]["schema"]["title"]  # the task's output model
        return json.dumps(
            {"Summary": {"summary": "Merged."}, "MapAnswer": {"points": []}}.get(wanted)
            or {"answer": "The answer."}
        )

    model = Recorder(answer)
    with FaultProxy(None, responder=model) as proxy:
        settings = scripted_settings(
            tmp_path,
            proxy.base_url,
            llm_description_max_tokens=111,
            llm_map_max_tokens=222,
            llm_reduce_max_tokens=333,
        )
        engine = make_engine(settings)
        description = DescriptionRequest(
            names=("Ada",),
            descriptions=("Ada writes.", "Ada counts."),
            options=DescriptionOptions(
                max_tokens=200,
                max_input_tokens=4000,
                max_words=3,  # shorter than the two descriptions together (4 words): the model is asked
                encoding=settings.encoding,
            ),
        )
        config = GlobalSearchConfig.from_settings(settings)
        engine.run_sync(engine.run(DESCRIBE, description))
        engine.run_sync(
            engine.run(MAP, MapRequest(question="q?", context="c", max_tokens=config.map_reserve))
        )
        engine.run_sync(engine.run(MAP, MapRequest(question="q2?", context="c")))  # no reserve given
        reduce = ReduceRequest(question="q?", points=[], context="", max_tokens=config.reduce_reserve)
        engine.run_sync(engine.run(REDUCE, reduce))
    assert (config.map_reserve, config.reduce_reserve) == (222, 333)  # the batches leave that much room
    assert model.max_tokens == [111, 222, 222, 333]


# ---- validation record by record ---------------------------------------------------------------------
def test_one_invalid_record_among_valid_ones_is_dropped_and_counted_the_rest_kept(tmp_path: Path) -> None:
    reply = {
        "entities": [
            {"name": "Marie Curie", "type": "PERSON", "description": "A physicist."},
            {"name": "", "type": "person", "description": "No name: dropped."},
            {"name": "Warsaw", "type": "Locations", "description": "A city."},  # mapped to geo
            {"name": "Polonium", "type": "element", "description": "Not a requested type."},
        ],
        "relationships": [
            {"source": "Marie Curie", "target": "Warsaw", "description": "Born there.", "strength": 15},
            {"source": "Marie Curie", "target": "Paris", "description": "Worked.", "strength": "very"},
        ],
        "claims": [
            {
                "subject": "Marie Curie",
                "object": None,
                "claim_type": "birth",
                "status": "true",
                "start_date": None,
                "end_date": None,
                "description": "Born in Warsaw.",
                "source_text": "Marie Curie was born in Warsaw.",
            },
            {
                "subject": "Pierre Curie",
                "object": "Marie Curie",
                "claim_type": "work",
                "status": "Alleged",
                "start_date": None,
                "end_date": None,
                "description": "Worked with her.",
                "source_text": "She worked in Paris with Pierre Curie.",
            },
            {
                "subject": "Marie Curie",
                "claim_type": "x",
                "status": "maybe",
                "description": "?",
                "source_text": "",
            },
        ],
    }
    model = Recorder(json.dumps(reply))
    with FaultProxy(None, responder=model) as proxy:
        settings = scripted_settings(tmp_path, proxy.base_url)
        run, _ = _extract(settings)
    assert len(model.requests) == 1  # valid records were there: no repair asked
    unit = run.units[0]
    assert unit.status == "ok" and not run.failures
    assert [(e.name, e.type, e.inferred) for e in unit.entities] == [
        ("Marie Curie", "person", False),
        ("Warsaw", "geo", False),
        ("Polonium", GENERIC_TYPE, False),
    ]
    assert [(r.target, r.strength) for r in unit.relationships] == [("Warsaw", 10.0)]  # 15 clamped
    assert [(c.subject, c.status) for c in unit.claims] == [
        ("Marie Curie", "TRUE"),
        ("Pierre Curie", "SUSPECTED"),
    ]
    assert (unit.dropped_records, unit.retyped_entities) == (3, 1)
    table = to_table(run.units)
    counts = table_counts(table)  # what the stage reports
    assert (counts["dropped_records"], counts["retyped_entities"]) == (3, 1)
    row = table.to_pylist()[0]
    assert (row["dropped_records"], row["retyped_entities"]) == (3, 1)


def test_a_reply_whose_every_record_is_invalid_is_repaired_not_taken_as_empty(tmp_path: Path) -> None:
    bad = {
        "entities": [{"name": "", "type": "person", "description": "?"}],
        "relationships": [],
        "claims": [],
    }
    answers = iter([json.dumps(bad), json.dumps(ANSWER)])
    with FaultProxy(None, responder=lambda _request: next(answers)) as proxy:
        run, _ = _extract(scripted_settings(tmp_path, proxy.base_url))
        assert proxy.received == 2  # the first reply, then the repair
    assert run.units[0].status == "ok" and len(run.units[0].entities) == 4


# ---- the "done when": every third unit cut off, twice ----------------------------------------
@pytest.fixture(scope="module")
def book_with_cut_replies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("truncated_book")
    folder = tmp / "input"
    folder.mkdir()
    (folder / "a_christmas_carol.txt").write_text(
        (REPO_ROOT / "samples" / "demo" / "a_christmas_carol.txt").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    model = ScriptedGraphModel()
    cut_texts: set[str] = set()
    with FaultProxy(None, responder=model) as proxy:
        # both attempts of every third unit's first round are cut off, whatever order they arrive in
        proxy.fault_when(lambda r: extraction_text(r.body) in cut_texts, "length")
        settings = scripted_settings(tmp, proxy.base_url, extraction_max_gleanings=1, llm_concurrency=4)
        ctx = IndexContext(
            store=NamespaceStore.from_settings(settings, "book"),
            settings=settings,
            engine=make_engine(settings),
            embedder=None,  # type: ignore[arg-type] - these stages embed nothing
        )
        input_documents.run(ctx, folder)
        base_text_units.run(ctx)
        # extraction is sent each text with its front matter blanked: the texts the model reads
        sent = mask_text_units(
            ctx.store.read_table(schema.BASE_TEXT_UNITS), ctx.store.read_table(schema.INPUT_DOCUMENTS)
        )
        units = sent.select(["id", "text"]).to_pylist()
        cut_texts.update(u["text"] for u in units[2::3])
        report = extracted_graph.run(ctx)
        first_usage = ctx.engine.usage.counters()
        received = proxy.received
        # a re-run: everything whole comes from the cache; only the cut units reach the server again
        rerun_ctx = IndexContext(ctx.store, settings, make_engine(settings), None)  # type: ignore[arg-type]
        extracted_graph.run(rerun_ctx)
        rerun_received = proxy.received - received
    return {
        "units": units,
        "cut": {u["id"] for u in units[2::3]},
        "store": ctx.store,
        "report": report,
        "usage": first_usage,
        "rerun_usage": rerun_ctx.engine.usage.counters(),
        "rerun_received": rerun_received,
        "cache": _cached(settings),
    }


def test_every_text_unit_has_its_records_or_a_failure_row(book_with_cut_replies: dict[str, Any]) -> None:
    data = book_with_cut_replies
    units, cut = data["units"], data["cut"]
    assert len(units) >= 30 and len(cut) == len(units) // 3
    graph = {r["text_unit_id"]: r for r in data["store"].read_table(schema.EXTRACTED_GRAPH).to_pylist()}
    failed = data["store"].read_table(schema.FAILED_EXTRACTIONS).to_pylist()
    assert set(graph) == {u["id"] for u in units}
    assert {f["text_unit_id"] for f in failed} == cut  # a row for each cut unit, none for the others
    for f in failed:
        assert f["round"] == 0 and f["error_type"] == "LLMTruncatedError" and "cut off" in f["reason"]
    for u in units:
        row = graph[u["id"]]
        if u["id"] in cut:
            assert row["status"] == "failed" and not row["entities"] and not row["relationships"]
        else:  # exactly the records the model answered
            assert row["status"] == "ok"
            assert {e["name"] for e in row["entities"]} == set(NAME.findall(u["text"]))
    metadata = data["report"].metadata
    assert metadata["failed_extractions"] == len(cut) and metadata["failed_text_units"] == len(cut)
    assert data["usage"]["truncations"] == 2 * len(cut)  # the first attempt and the retry, per cut unit


def test_no_cut_reply_is_in_the_cache_and_a_rerun_asks_only_for_the_cut_units(
    book_with_cut_replies: dict[str, Any],
) -> None:
    data = book_with_cut_replies
    n_whole = len(data["units"]) - len(data["cut"])
    cache = data["cache"]
    for _task, response in cache:
        ExtractionOut.model_validate_json(response)  # every entry is a whole, valid answer
    tasks = [task for task, _ in cache]
    # a first round that found no entity is not gleaned (nothing to add to)
    empty = sum(
        1 for task, response in cache if task == "extract_graph" and not json.loads(response)["entities"]
    )
    # each whole unit: its first round and, when it found something, its gleaning round; nothing of the cut
    assert tasks.count("extract_graph") == n_whole and tasks.count("extract_graph_glean") == n_whole - empty
    assert len(tasks) == 2 * n_whole - empty
    rerun = data["rerun_usage"]
    assert rerun["cache_hits"] == 2 * n_whole - empty
    assert data["rerun_received"] == 2 * len(data["cut"])  # each cut unit asked again, cut again
