"""The documentation: the configuration page is what the settings model renders now (so a setting added
without `make config-docs` fails here), and README.md stays a short front page."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import Field, create_model

from pipeline.settings import Settings
from pipeline.settings.reference import render, rows

REPO = Path(__file__).resolve().parent.parent
README_MAX_BYTES = 20 * 1024


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # The page shows the model's defaults, never this machine's: no variable may leak into a default.
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_the_committed_configuration_page_is_what_the_settings_model_renders(clean_env: None) -> None:
    committed = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert committed == render(), "docs/configuration.md is stale: run `make config-docs`"


def test_the_committed_conformance_matrix_is_what_the_tests_marks_render() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(REPO / "docs" / "gen_matrix.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_every_setting_has_a_documented_row_with_its_variable_and_a_description(clean_env: None) -> None:
    table = rows(Settings)
    assert sorted(env for _, env, *_ in table) == sorted(
        f"PIPELINE_{n.upper()}" for n in Settings.model_fields
    )
    assert [env for _, env, _, _, desc in table if not desc] == []


def test_a_new_setting_changes_the_rendered_page(clean_env: None) -> None:
    # What makes the first test fail when a setting is added and the page is not regenerated.
    grown = create_model(
        "Grown", __base__=Settings, new_knob=(int, Field(default=7, description="A knob just added"))
    )
    new_rows = [r for r in rows(grown) if r[1] == "PIPELINE_NEW_KNOB"]
    assert new_rows == [("Grown", "PIPELINE_NEW_KNOB", "int", "`7`", "A knob just added")]


def test_readme_is_a_front_page_under_20_kb() -> None:
    size = (REPO / "README.md").stat().st_size
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; move detail into docs/"


def _build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )


def test_the_site_builds_strict_and_offline(tmp_path: Path) -> None:
    proc = _build(REPO, tmp_path / "site")
    assert proc.returncode == 0, proc.stderr[-3000:]
    pages = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "site").rglob("*.html"))
    assert "fonts.googleapis.com" not in pages  # theme.font: false, nothing fetched when read offline


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    with (tmp_path / "docs" / "concepts.md").open("a", encoding="utf-8") as f:
        f.write("\n\nSee [a page that is not there](nowhere.md).\n")
    proc = _build(tmp_path, tmp_path / "site")
    assert proc.returncode != 0 and "nowhere.md" in proc.stderr
