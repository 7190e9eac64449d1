"""The suite is organised like the code: what tests share lives in tests/support/ (helpers) or
tests/conftest.py (fixtures), never in a test module, so no test module imports another one. A module that
did would run the other's module-level code, take its fixtures by import (shadowing, F811), and break when
the other is renamed."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_test_modules(source: str, package: str = "tests") -> list[str]:
    """Every test module (`tests.test_x`) the code in `source` imports, as `tests.test_x`, in order:
    `import tests.test_x`, `from tests.test_x import y`, `from tests import test_x` and their relative
    forms (`from .test_x import y`, `from . import test_x`), at any depth (inside functions too)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if is_test_module(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative to the tests package
                base = f"{package}.{base}" if base else package
            if is_test_module(base):
                found.append(base)
            elif base == package:
                found += [f"{package}.{a.name}" for a in node.names if a.name.startswith("test_")]
    return found


def is_test_module(dotted: str) -> bool:
    parts = dotted.split(".")
    return len(parts) >= 2 and parts[0] == "tests" and parts[1].startswith("test_")


def test_no_test_module_imports_another_test_module() -> None:
    offenders = {
        str(path.relative_to(TESTS.parent)): modules
        for path in sorted(TESTS.rglob("*.py"))
        if (modules := imported_test_modules(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, (
        "test modules import other test modules; move what they share to tests/support/ (helpers) or "
        f"tests/conftest.py (fixtures): {offenders}"
    )


def test_the_check_catches_each_form_of_importing_a_test_module() -> None:
    # The package is a placeholder so that this file, which the check itself reads, holds no such import.
    snippet = """
import {pkg}.test_alpha
import {pkg}.test_beta as beta
from {pkg}.test_gamma import helper
from {pkg} import test_delta, support
from .test_epsilon import other
from . import test_zeta
from {pkg}.support.service_data import serving
from {pkg} import conftest
import pytest


def fixture():
    from {pkg}.test_eta import late
""".format(pkg="tests")
    assert sorted(imported_test_modules(snippet)) == [
        "tests.test_alpha",
        "tests.test_beta",
        "tests.test_delta",
        "tests.test_epsilon",
        "tests.test_eta",
        "tests.test_gamma",
        "tests.test_zeta",
    ]


def test_support_and_conftest_imports_pass_the_check() -> None:
    assert imported_test_modules("from tests.support.tiny_index import build_tiny_index\n") == []
    assert imported_test_modules("from tests.conftest import REPO_ROOT\nimport tests.support.cli\n") == []
    assert imported_test_modules("from tests import support, conftest\n") == []
