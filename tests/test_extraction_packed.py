"""Packed LLM extraction loses nothing: the same records per unit packed or alone, a unit the reply leaves
out asked again alone. The "model" is ScriptedGraphModel behind FaultProxy on 127.0.0.1 (scripted: it
answers each unit by the same rule, so packed and single answers can be compared exactly)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pyarrow as pa

from pipeline.ops.extraction.models import ExtractionOptions, ExtractionRequest
from pipeline.ops.extraction.packed import MAX_PACK_UNITS, plan_packs
from pipeline.ops.extraction.run import extract_graph
from pipeline.runtime import make_engine
from pipeline.settings import Settings
from tests.support.fault_proxy import FaultProxy
from tests.support.graph_model import ScriptedGraphModel, extraction_text, packed_texts

FIRST = ["Marie Curie", "Henry Dunant", "Ada Lovelace", "Alan Turing", "Grace Hopper", "Niels Bohr"]
LAST = ["Pierre Curie", "Clara Barton", "Charles Babbage", "John Neumann", "Howard Aiken", "Lise Meitner"]


def _units() -> pa.Table:
    texts = [
        f"{a} met {b} in the spring. Later {a} wrote to {b} again." for a, b in zip(FIRST, LAST, strict=True)
    ]
    return pa.table(
        {
            "id": [f"unit-{i}" for i in range(len(texts))],
            "document_id": [f"doc-{i}" for i in range(len(texts))],
            "text": texts,
            "start_char": [0] * len(texts),
        }
    )


def _settings(tmp_path: Path, base_url: str) -> Settings:
    return Settings(
        storage_root=tmp_path / "storage",
        llm_provider="openai",
        llm_base_url=base_url,
        llm_model="scripted-graph",
        llm_json_mode="json_object",
        llm_max_retries=0,
        extraction_max_gleanings=1,
    )


def _records(run) -> dict[str, tuple]:
    return {
        u.text_unit_id: (
            sorted((e.name, e.type, e.description) for e in u.entities),
            sorted((r.source, r.target, r.description, r.strength) for r in u.relationships),
            u.status,
        )
        for u in run.units
    }


class Recording(ScriptedGraphModel):
    """ScriptedGraphModel that keeps every request it answered."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[dict] = []

    def __call__(self, request):
        with self._lock:
            self.requests.append(request)
        return super().__call__(request)


class LeavesOutU2(Recording):
    """Answers a packed request without the unit labelled u2; everything else as ScriptedGraphModel."""

    def __call__(self, request):
        answer = super().__call__(request)
        if packed_texts(request) is not None:
            data = json.loads(answer)
            data.pop("u2", None)
            return json.dumps(data)
        return answer


def _run(tmp_path: Path, model: ScriptedGraphModel, pack_tokens: int):
    with FaultProxy(None, responder=model) as proxy:
        settings = _settings(tmp_path, proxy.base_url)
        options = replace(ExtractionOptions.from_settings(settings), pack_tokens=pack_tokens)
        return extract_graph(_units(), options, make_engine(settings))


def test_every_unit_gets_the_same_records_packed_or_alone(tmp_path: Path):
    packed_model, alone_model = ScriptedGraphModel(), ScriptedGraphModel()
    packed = _run(tmp_path / "packed", packed_model, 1200)
    alone = _run(tmp_path / "alone", alone_model, 0)
    assert _records(packed) == _records(alone)
    assert all(r[0] for r in _records(packed).values())  # every unit found its names
    # one packed request against one per unit
    assert alone_model.snapshot()["extract_graph"] == len(FIRST)
    assert packed_model.snapshot()["extract_graph"] < len(FIRST)


def test_a_unit_the_reply_leaves_out_is_asked_again_alone(tmp_path: Path):
    model = LeavesOutU2()
    run = _run(tmp_path / "gap", model, 1200)
    alone = _run(tmp_path / "alone", ScriptedGraphModel(), 0)
    requests = model.requests
    assert _records(run) == _records(alone)  # nothing lost, nothing empty
    packs = [texts for texts in (packed_texts(r) for r in requests) if texts]
    left_out = {texts["u2"] for texts in packs if "u2" in texts}
    singles = {extraction_text(r) for r in requests if packed_texts(r) is None} - {None}
    assert left_out and left_out <= singles  # each left-out unit went alone ...
    packed_only = {t for texts in packs for label, t in texts.items() if label != "u2"}
    assert not (packed_only - left_out) & singles  # ... and only those


def test_packs_keep_table_order_and_the_budget():
    texts = ["word " * 300, "short text.", "another short text.", "word " * 1199, "tail."]
    requests = [ExtractionRequest(t, f"u{i}", "d", 0, ExtractionOptions()) for i, t in enumerate(texts)]
    packs = plan_packs(requests, "o200k_base", 1200)
    assert [i for p in packs for i in p] == list(range(len(texts)))
    assert all(len(p) <= MAX_PACK_UNITS for p in packs)
    assert [3] in packs  # a unit near the budget is not joined by its neighbours past it
    assert plan_packs(requests, "o200k_base", 0) == [[i] for i in range(len(texts))]
