"""Indexing from plain Python: `pipeline.index.run.index_folder` runs the same runners as the Dagster
job, with no Dagster in the process, and writes the same tables.

Real MiniLM embeddings, real Parquet and LanceDB; the Dagster run is the real job on a real instance.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from tests.conftest import REPO_ROOT

DOCS = {
    "lighthouse.txt": (
        "Grace Darling lived at the Longstone Lighthouse with her father William Darling. In September "
        "1838 the steamer Forfarshire struck the Big Harcar rock. Grace Darling and William Darling rowed "
        "a coble to the rock and rescued nine survivors. The Royal Humane Society gave Grace Darling a "
        "silver medal."
    ),
    "harbour.md": (
        "# Bamburgh\n\nBamburgh Castle stands above the village of Bamburgh. Grace Darling is buried in "
        "the churchyard of St Aidan's Church in Bamburgh. The RNLI Grace Darling Museum in Bamburgh tells "
        "the story of the Forfarshire rescue."
    ),
}

# Every Parquet table the chain writes; all must be equal between the two ways of running it.
TABLES = (
    schema.DOCUMENTS,
    schema.TEXT_UNITS,
    schema.EXTRACTED_GRAPH,
    schema.ENTITIES,
    schema.RELATIONSHIPS,
    schema.COVARIATES,
    schema.COMMUNITIES,
    schema.COMMUNITY_REPORTS,
)

PLAIN_RUN = """
import json, sys
from pipeline.index.run import index_folder
from pipeline.settings import load_settings
reports = index_folder("plain", sys.argv[1], settings=load_settings(storage_root=sys.argv[2]), log=lambda m: None)
print(json.dumps({"stages": list(reports), "dagster_loaded": any(m.split(".")[0] == "dagster" for m in sys.modules)}))
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("corpus")
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def plain(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    import json

    storage = tmp_path_factory.mktemp("plain_storage")
    out = subprocess.run(
        [sys.executable, "-c", PLAIN_RUN, str(corpus), str(storage)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return storage, json.loads(out.stdout.strip().splitlines()[-1])


def test_index_folder_runs_every_stage_without_loading_dagster(plain):
    _, result = plain
    assert result["dagster_loaded"] is False
    assert result["stages"] == [
        "input_documents",
        "base_text_units",
        "documents",
        "text_unit_embeddings",
        "extracted_graph",
        "entities",
        "relationships",
        "claims",
        "text_units",
        "communities",
        "community_reports",
        "report_embeddings",
        "chunk_graph",
    ]


def test_index_folder_writes_the_tables_the_dagster_job_writes(
    plain, corpus: Path, tmp_path: Path, dagster_instance, monkeypatch: pytest.MonkeyPatch
):
    from assets.launch import run_index

    storage = tmp_path / "dagster_storage"
    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(storage))
    result = run_index("viadagster", input_dir=str(corpus), instance=dagster_instance)
    assert result.success, result.failures

    by_plain = NamespaceStore(plain[0], "plain")
    by_dagster = NamespaceStore(storage, "viadagster")
    for table in TABLES:
        a, b = by_plain.read_table(table), by_dagster.read_table(table)
        assert a.num_rows > 0 or table == schema.COVARIATES, table
        assert a.drop_columns([c for c in a.column_names if c == "created"]).equals(
            b.drop_columns([c for c in b.column_names if c == "created"])
        ), table
    for lance in (schema.LANCE_TEXT_UNITS, schema.LANCE_ENTITIES, schema.LANCE_COMMUNITY_REPORTS):
        assert (
            by_plain.open_lance_table(lance).count_rows()
            == by_dagster.open_lance_table(lance).count_rows()
            > 0
        )
    assert by_plain.has_file(schema.CHUNK_GRAPH_SNAPSHOT) and by_dagster.has_file(schema.CHUNK_GRAPH_SNAPSHOT)
