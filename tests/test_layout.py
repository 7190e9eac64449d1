"""The architecture rule: pipeline/ is plain Python and never imports dagster."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_no_pipeline_module_imports_dagster_in_its_source():
    offenders = []
    for path in (REPO / "pipeline").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [
                f"{path.relative_to(REPO)}: {n}" for n in names if n.split(".")[0] in ("dagster", "assets")
            ]
    assert offenders == []


def test_importing_every_pipeline_module_does_not_load_dagster():
    code = (
        "import importlib, pkgutil, sys, pipeline\n"
        "for m in pkgutil.walk_packages(pipeline.__path__, 'pipeline.'):\n"
        "    if m.name != 'pipeline.__main__': importlib.import_module(m.name)\n"
        "print(sorted(k for k in sys.modules if k.split('.')[0] == 'dagster'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"
