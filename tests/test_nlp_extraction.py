"""The typed NLP extractor (spaCy's NER on top of the rules), the question parse that shares it, and the
indexing methods' stage forms."""

from __future__ import annotations

import subprocess
import sys

from pipeline.core.ner import entity_spans
from pipeline.ops.canonical import canonical_keys
from pipeline.ops.extraction import GENERIC_TYPE
from pipeline.ops.extraction.offline import NLP_VERSION, extract_unit
from pipeline.query.retrieval.intent import offline_intent
from pipeline.runtime import make_stage_engines, stage_forms
from pipeline.settings import load_settings

TEXT = (
    "Bob Cratchit walked to Camden Town with Tiny Tim on his shoulder. "
    "The Nobel Committee met in Stockholm. "
    "Hope was in the air, said the Ghost, and the clerk worked for the Bank of England."
)


def _extract(ner: bool):
    spans = entity_spans([TEXT])[0] if ner else None
    return extract_unit(TEXT, text_unit_id="u", document_id="d", ner=spans)


def test_the_model_loads_from_its_package_with_the_network_blocked():
    """A fresh interpreter whose every socket connect fails still loads the model and tags a person."""
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('network blocked by the test')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from pipeline.core.ner import entity_spans\n"
        "print([(s.text, s.label) for s in entity_spans(['Ebenezer Scrooge lived in London.'])[0]])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "('Ebenezer Scrooge', 'PERSON')" in out.stdout
    assert "('London', 'GPE')" in out.stdout


def test_ner_types_the_names_the_rules_leave_unknown_and_keeps_the_rules_names():
    rules = {e.name: e.type for e in _extract(ner=False).entities}
    typed = _extract(ner=True)
    types = {e.name: e.type for e in typed.entities}
    assert typed.version == NLP_VERSION
    assert types["Bob Cratchit"] == "person"
    assert types["Stockholm"] == "geo"
    assert types["Nobel Committee"] == "organization"  # the head-word rule still names it
    assert types["Bank of England"] == "organization"
    assert set(rules) <= set(types)  # spaCy adds types and names, never removes a rule's name
    assert sum(t == GENERIC_TYPE for t in types.values()) < sum(t == GENERIC_TYPE for t in rules.values())


def test_kinship_and_rank_prefixes_join_the_bare_name_but_married_titles_do_not():
    merges = {
        m.key: m.into
        for m in canonical_keys(
            [
                ("fred", "person"),
                ("cousin fred", "person"),
                ("polly", "person"),
                ("aunt polly", "person"),
                ("smith", "person"),
                ("captain smith", "organization"),  # a model's wrong type does not keep the rank apart
                ("fezziwig", "person"),
                ("mrs fezziwig", "person"),
            ]
        )
    }
    assert merges["cousin fred"] == "fred"
    assert merges["aunt polly"] == "polly"
    assert merges["captain smith"] == "smith"
    assert "mrs fezziwig" not in merges


def test_the_offline_question_parse_names_what_ner_finds_not_every_capitalised_word():
    intent = offline_intent("Who is the spouse of the Green performer who toured with Pearl Jam?")
    assert "Pearl Jam" in intent.entities
    assert "Green" not in intent.entities  # a lone capitalised word no model tags is a keyword
    assert "green" in intent.keywords


def test_each_method_names_the_stages_that_ask_the_model():
    assert set(stage_forms(load_settings(index_method="nlp")).values()) == {"nlp"}
    fast = stage_forms(load_settings(index_method="fast"))
    assert fast == {"extraction": "nlp", "claims": "nlp", "descriptions": "nlp", "reports": "model"}
    assert set(stage_forms(load_settings(index_method="standard")).values()) == {"model"}
    mixed = stage_forms(load_settings(index_method="standard", index_stage_methods={"claims": "nlp"}))
    assert mixed["extraction"] == "model" and mixed["claims"] == "nlp"
    # unset: the provider decides, as before the setting existed
    assert set(stage_forms(load_settings(llm_provider="openai")).values()) == {"model"}
    assert set(stage_forms(load_settings()).values()) == {"nlp"}


def test_stage_engines_share_one_model_engine_and_one_offline_engine(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    engines = make_stage_engines(
        load_settings(index_method="fast", llm_base_url="http://127.0.0.1:9/v1", cache_dir="/tmp")
    )
    assert engines["reports"].kind == "llm"
    assert engines["extraction"] is engines["claims"] is engines["descriptions"]
    assert engines["extraction"].kind == "offline"
    assert engines["reports"].usage is engines["extraction"].usage  # one run, one usage counter


def test_every_table_and_stage_report_names_the_method(tmp_path):
    import pyarrow.parquet as pq

    from pipeline.index import base_text_units, documents, input_documents
    from pipeline.index.context import IndexContext

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("Ebenezer Scrooge kept a counting-house in London.", encoding="utf-8")
    settings = load_settings(
        storage_root=tmp_path / "storage", index_method="fast", llm_base_url="http://127.0.0.1:9/v1"
    )
    ctx = IndexContext.build("methods", settings)
    input_documents.run(ctx, folder)
    base_text_units.run(ctx)
    documents.run(ctx)
    for table in ("input_documents", "base_text_units", "documents"):
        meta = pq.read_schema(tmp_path / "storage" / "methods" / f"{table}.parquet").metadata
        assert meta[b"index_method"] == b"fast"
        assert b"reports=model" in meta[b"index_stage_methods"]
    assert ctx.method_metadata()["index_method"] == "fast"
