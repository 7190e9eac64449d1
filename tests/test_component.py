"""The GraphRAGIndex component in a fresh `dg` project (a temp folder, no network): `dg` finds the
component through our entry point, `dg scaffold defs` writes a defs.yaml pointing at the sample book,
`dg check defs` passes, and `dg launch` materializes one namespace partition through a real Dagster
instance, giving the same tables as `pipeline index` (the `sample_book` fixture)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from tests.conftest import REPO_ROOT, make_dagster_home

COMPONENT = "assets.component.GraphRAGIndex"
TABLES = [
    "documents",
    "text_units",
    "entities",
    "relationships",
    "covariates",
    "communities",
    "community_reports",
]

PYPROJECT = """[project]
name = "my-project"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = ["graphrag-dagster"]

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "my_project"
"""

DEFINITIONS = """from pathlib import Path

from dagster import definitions, load_from_defs_folder


@definitions
def defs():
    return load_from_defs_folder(path_within_project=Path(__file__).parent)
"""


def _project(root: Path) -> dict[str, str]:
    """A `dg` project as `create-dagster project` lays it out, whose Python is this checkout's venv (the
    package is installed there from the checkout, editable): nothing is fetched."""
    package = root / "src" / "my_project"
    (package / "defs").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "defs" / "__init__.py").write_text("", encoding="utf-8")
    (package / "definitions.py").write_text(DEFINITIONS, encoding="utf-8")
    # dg's documented override of the project's Python (else it wants <project>/.venv, made by uv)
    (root / ".env").write_text(f"DG_PROJECT_PYTHON_EXECUTABLE={sys.executable}\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIPELINE_")}
    home = make_dagster_home(root / "dagster_home")
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(root / "src"),
        DAGSTER_HOME=str(home),
        COLUMNS="200",
        DAGSTER_DISABLE_TELEMETRY="1",
    )
    return env


def _dg(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    dg = str(Path(sys.executable).parent / "dg")
    return subprocess.run([dg, *args], cwd=root, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("dg_project")
    env = _project(root)
    storage = root / "index"
    listed = _dg(root, env, "list", "components")
    params = {"input": str(REPO_ROOT / "samples"), "namespaces": ["demo"], "storage": str(storage)}
    scaffold = _dg(root, env, "scaffold", "defs", COMPONENT, "my_corpus", "--json-params", json.dumps(params))
    check = _dg(root, env, "check", "defs")
    # the namespace partition, as `pipeline index` or the input-root sensor adds it
    add = "from dagster import DagsterInstance as I; I.get().add_dynamic_partitions('namespace', ['demo'])"
    subprocess.run([sys.executable, "-c", add], env=env, check=True, timeout=120)
    launch = _dg(root, env, "launch", "--job", "index_namespace", "--partition", "demo")
    return {
        "root": root,
        "storage": storage,
        "listed": listed,
        "scaffold": scaffold,
        "check": check,
        "launch": launch,
    }


def test_dg_finds_and_scaffolds_the_component(project: dict) -> None:
    assert project["listed"].returncode == 0 and COMPONENT in project["listed"].stdout, project[
        "listed"
    ].stderr
    assert project["scaffold"].returncode == 0, project["scaffold"].stderr
    defs_yaml = project["root"] / "src" / "my_project" / "defs" / "my_corpus" / "defs.yaml"
    spec = yaml.safe_load(defs_yaml.read_text(encoding="utf-8"))
    assert spec["type"] == COMPONENT
    assert spec["attributes"]["input"] == str(REPO_ROOT / "samples")
    assert spec["attributes"]["namespaces"] == ["demo"]


def test_dg_check_defs_passes(project: dict) -> None:
    check = project["check"]
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
    assert "All definitions loaded successfully" in check.stdout + check.stderr


def test_one_partition_gives_the_tables_pipeline_index_gives(project: dict, sample_book: Path) -> None:
    launch = project["launch"]
    assert launch.returncode == 0, launch.stderr[-3000:]
    for table in TABLES:
        ours = pq.read_table(project["storage"] / "demo" / f"{table}.parquet")
        theirs = pq.read_table(sample_book / "demo" / f"{table}.parquet")
        assert ours.schema == theirs.schema, table
        key = [("id", "ascending")]
        assert ours.sort_by(key).equals(theirs.sort_by(key)), table
