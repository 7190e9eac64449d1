"""One way to choose offline vs LLM: the engine class.

The engine runs any task (`pipeline.engine.task.Task`, defined beside its stage) and picks its form:
both engines are `Engine`s that choose only the form and how a batch runs, every task in the code has both
forms, and code outside `pipeline/engine/` never asks which engine it holds (`kind` is for metadata
and logs).
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import pipeline
from pipeline.engine.base import Engine
from pipeline.engine.llm import LLMEngine, OutputLimits
from pipeline.engine.offline import OfflineEngine
from pipeline.engine.task import Task, TaskContext
from pipeline.llm.batch import Batches

REPO = Path(__file__).resolve().parent.parent
ENGINES = [OfflineEngine, LLMEngine]


def _tasks() -> dict[str, Task]:
    """Every `Task` defined at module level anywhere in `pipeline`."""
    found: dict[str, Task] = {}
    for m in pkgutil.walk_packages(pipeline.__path__, "pipeline."):
        if m.name.endswith("__main__"):
            continue
        module = importlib.import_module(m.name)
        for value in vars(module).values():
            if isinstance(value, Task):
                found.setdefault(value.name, value)
    return found


def test_the_engine_runs_tasks_without_naming_any():
    public = {n for n in dir(Engine) if callable(getattr(Engine, n)) and not n.startswith("_")}
    assert public == {"run", "identity", "run_batch", "run_sync"}
    assert set(inspect.get_annotations(Engine)) >= {"kind", "usage"}


def test_every_task_of_the_pipeline_has_both_forms_taking_request_and_context():
    tasks = _tasks()
    assert set(tasks) >= {
        "summarize",
        "extract_unit",
        "extract_units",
        "summarize_descriptions",
        "community_report",
        "map_answer",
        "reduce_answer",
        "rate_reports",
        "query_intent",
        "select_communities",
        "local_answer",
        "drift_primer",
        "drift_follow_up",
        "drift_reduce",
        "basic_answer",
    }
    for name, task in tasks.items():
        for form in (task.offline, task.model):
            assert inspect.iscoroutinefunction(form), f"{name}: {form.__name__} is not async"
            assert len(inspect.signature(form).parameters) == 2, f"{name}: {form.__name__}(request, ctx)"
        assert task.limit is None or hasattr(OutputLimits(), task.limit), f"{name}: limit {task.limit}"


@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.__name__)
def test_each_engine_is_an_engine_choosing_only_the_form_and_the_loop(engine: type):
    assert issubclass(engine, Engine)
    own = {n for n in vars(engine) if callable(vars(engine)[n]) and n != "__init__"}
    assert own == {"_run_form", "identity", "run_sync"}, own  # run is Engine's, run_batch is Batches'
    assert engine.run_batch is Batches.run_batch  # a batch runs the same way on every engine and client
    assert engine.kind in ("offline", "llm")


def test_a_new_task_runs_on_the_engine_without_touching_it():
    """What adding a task costs: a `Task` with two forms, nothing in `pipeline/engine/`."""

    async def offline(request: str, ctx: TaskContext) -> str:
        return request.upper()

    async def model(request: str, ctx: TaskContext) -> str:
        raise AssertionError("the offline engine never runs the model form")

    shout = Task("shout", offline=offline, model=model)
    engine = OfflineEngine()
    assert engine.run_sync(engine.run(shout, "marley")) == "MARLEY"
    assert asyncio.run(engine.run(shout, "was dead")) == "WAS DEAD"


def _kind_branches(tree: ast.AST) -> list[int]:
    """Lines that compare an engine's `.kind`, match on one, or read it with getattr(engine, "kind", ...).
    An engine is any expression naming one (`engine`, `self.engine`, `run.engine`); a table's or a
    store's `kind` is another concept."""

    def names_an_engine(node: ast.AST) -> bool:
        return "engine" in ast.unparse(node).lower()

    def is_kind(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "kind" and names_an_engine(node.value)

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
            and names_an_engine(node.args[0])
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
        'if table.kind == "parquet": pass\n'  # a table's kind is not the engine's
    )
    assert _kind_branches(ast.parse(source)) == [1, 2, 3, 5]
