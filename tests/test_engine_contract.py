"""One way to choose offline vs LLM: the engine class.

Every task with an offline and an LLM form is a method of the `Engine` protocol, implemented by both
engines with the same parameters; code outside `pipeline/engine/` never asks which engine it holds
(`kind` is for metadata and logs).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from pipeline.engine.base import Engine
from pipeline.engine.llm import LLMEngine
from pipeline.engine.offline import OfflineEngine

REPO = Path(__file__).resolve().parent.parent
ENGINES = [OfflineEngine, LLMEngine]
# Members every object has, or that only the type checker sees.
_NOT_TASKS = {"__init__", "__class_getitem__", "__subclasshook__", "__init_subclass__"}


def _protocol_members() -> dict[str, object]:
    members: dict[str, object] = {}
    for base in reversed(Engine.__mro__):
        if base is object or base.__module__ != Engine.__module__:
            continue
        for name, value in vars(base).items():
            if not name.startswith("_") and name not in _NOT_TASKS:
                members[name] = value
    return members


def _parameters(fn: object) -> list[tuple[str, inspect._ParameterKind]]:
    return [(p.name, p.kind) for p in inspect.signature(fn).parameters.values()]  # type: ignore[arg-type]


def test_the_protocol_lists_every_task():
    methods = {n for n, v in _protocol_members().items() if callable(v)}
    assert methods >= {
        "summarize",
        "community_report",
        "extraction_identity",
        "extract_unit",
        "summarize_descriptions",
        "map_answer",
        "reduce_answer",
        "query_intent",
        "select_communities",
        "local_answer",
        "run_batch",
        "run_sync",
    }
    attributes = set(inspect.get_annotations(Engine)) | {
        n for n, v in _protocol_members().items() if isinstance(v, property)
    }
    assert attributes >= {"kind", "usage", "report_identity"}


@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.__name__)
def test_each_engine_implements_every_method_with_the_protocols_parameters(engine: type):
    for name, spec in _protocol_members().items():
        assert hasattr(engine, name), f"{engine.__name__} lacks {name}"
        impl = getattr(engine, name)
        if isinstance(spec, property):
            assert isinstance(impl, property), f"{engine.__name__}.{name} is not a property"
            continue
        if not callable(spec):
            continue
        assert _parameters(impl) == _parameters(spec), f"{engine.__name__}.{name}"
        assert inspect.iscoroutinefunction(impl) == inspect.iscoroutinefunction(spec), name


def test_both_engines_take_the_same_parameters():
    for name, spec in _protocol_members().items():
        if callable(spec) and not isinstance(spec, property):
            assert _parameters(getattr(OfflineEngine, name)) == _parameters(getattr(LLMEngine, name)), name


def test_both_engines_are_engines():
    assert isinstance(OfflineEngine(), Engine)
    assert all(getattr(e, "kind", None) in ("offline", "llm") for e in ENGINES)


def _kind_branches(tree: ast.AST) -> list[int]:
    """Lines that compare a `.kind` attribute, match on one, or read it with getattr(..., "kind", ...)."""

    def is_kind(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "kind"

    def branches(node: ast.AST) -> bool:
        if isinstance(node, ast.Compare):
            return any(is_kind(n) for n in [node.left, *node.comparators])
        if isinstance(node, ast.Match):
            return is_kind(node.subject)
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value == "kind"
        )

    return sorted(node.lineno for node in ast.walk(tree) if branches(node))


def test_no_code_outside_the_engine_branches_on_the_engines_kind():
    offenders = []
    for top in ("pipeline", "assets"):
        for path in sorted((REPO / top).rglob("*.py")):
            if path.is_relative_to(REPO / "pipeline" / "engine"):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            offenders += [f"{path.relative_to(REPO)}:{line}" for line in _kind_branches(tree)]
    assert offenders == []


def test_the_kind_check_sees_each_way_of_branching():
    source = (
        'if engine.kind == "offline": pass\n'
        'x = getattr(engine, "kind", "offline")\n'
        "match engine.kind:\n    case _: pass\n"
        'y = "llm" != self.engine.kind\n'
        "label = engine.kind\n"  # reading it for metadata is fine
    )
    assert _kind_branches(ast.parse(source)) == [1, 2, 3, 5]
