"""The data the web app's tests serve: the service tests' two tenants (acme, globex), acme's document given a
layout map (two pages, two sections), a namespace of acme's whose document holds markup, and acme's
`pipeline eval` report, written by the command itself."""

from __future__ import annotations

import json
import os
from pathlib import Path
from unittest import mock

import pyarrow as pa

from assets.cli import main
from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from pipeline.parse.layout import Layout, Page, Section
from tests.support import tiny_index
from tests.support.service_data import (
    KEY_A,
    KEY_B,
    ServiceData,
    build_service_data,
    build_service_namespace,
)
from tests.support.service_data import TENANTS as SERVICE_TENANTS

MARKUP = "acme-markup"
TENANTS = {"acme": (*SERVICE_TENANTS["acme"], MARKUP), "globex": SERVICE_TENANTS["globex"]}
QUESTION = "How is Scrooge related to Bob Cratchit?"  # the demo's local question (`make demo`)
# What a hostile document may hold: each would run script if it reached the page as markup.
SCRIPT = "<script>window.__pwned = 'script'</script>"
IMG = "<img src=x onerror=\"window.__pwned = 'img'\">"
MARKUP_PARAGRAPHS = [
    "Ebenezer Scrooge kept the counting-house with his late partner Jacob Marley. Marley had been dead seven years.",
    f"Bob Cratchit worked as Scrooge's clerk {SCRIPT} for fifteen shillings a week {IMG} in the cold.",
    "London was foggy and cold that Christmas Eve, and the gas lamps were lit by three o'clock.",
    "Old Fezziwig threw a ball for his apprentices, and young Scrooge danced until midnight in the warehouse.",
]

__all__ = ["KEY_A", "KEY_B", "MARKUP", "QUESTION", "build_web_data"]


def _with_layout(store: NamespaceStore) -> None:
    """acme's one document as a parsed file would be: page 2 starts at the third paragraph; a section
    per page."""
    docs = store.read_table(schema.DOCUMENTS).to_pylist()
    text = docs[0]["text"]
    second = text.index(tiny_index.PARAGRAPHS[2])
    layout = Layout(
        pages=[Page(1, 0, second), Page(2, second, len(text))],
        sections=[
            Section("Stave One", 1, ("Stave One",), 0, second),
            Section("Stave Two", 1, ("Stave Two",), second, len(text)),
        ],
    )
    docs[0]["layout"] = layout.to_json()
    store.write_table(schema.DOCUMENTS, pa.Table.from_pylist(docs, schema=schema.DOCUMENTS_SCHEMA))


def _eval_report(data: ServiceData, root: Path) -> None:
    """`pipeline eval` on acme, one question, basic search: the report the page shows."""
    questions = root / "questions.jsonl"
    row = {
        "id": "clerk",
        "question": QUESTION,
        "answer": "Bob Cratchit is Scrooge's clerk",
        "type": "relation",
    }
    questions.write_text(json.dumps(row) + "\n")
    env = {"PIPELINE_STORAGE_ROOT": str(data.storage_root)}
    argv = ["eval", "--namespace", "acme", "--questions", str(questions), "--modes", "basic"]
    with mock.patch.dict(os.environ, env):
        assert main([*argv, "--out", str(root / "eval_out")]) == 0


def build_web_data(root: Path) -> ServiceData:
    data = build_service_data(root)
    _with_layout(NamespaceStore(data.storage_root, "acme"))
    with mock.patch.object(tiny_index, "PARAGRAPHS", MARKUP_PARAGRAPHS):
        build_service_namespace(NamespaceStore(data.storage_root, MARKUP), data.embedder)
    digest = {"acme": KEY_A, "globex": KEY_B}
    from pipeline.service.auth import hash_key

    data.keys_file.write_text(
        "tenants:\n"
        + "".join(
            f"  {t}:\n    key_sha256: {hash_key(digest[t])}\n    namespaces: [{', '.join(ns)}]\n"
            for t, ns in TENANTS.items()
        )
    )
    _eval_report(data, root)
    return data
