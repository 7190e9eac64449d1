"""The architecture as tests: the layers of `pipeline/`, no import cycles, thin Dagster assets.

Every import counts, including those inside functions (they hide cycles, they do not break them), and
importing `a.b.c` counts as importing the packages `a.b` and `a` too (their `__init__` runs first).

The layers of `pipeline/` (a module may import its own layer and those listed):
- `core`: leaf helpers (ids, names, namespace, tokens, locations, the schema); nothing else.
- `settings`: core.
- `io` (storage root, namespace store, PostgreSQL): core, settings.
- `caches` (a base plus one backend per file), `llm` (client, transport, retries): core, io, caches.
- `ops`: operations on tables with small option objects; never the store, settings or runtime; an
  LLM task is a `Task` beside its stage, run through the engine's contract (`engine.base`,
  `engine.task`), never an implementation.
- `engine`, `embeddings`: core, llm, caches, prompts (and the embedder protocol, which offline forms
  score with). The engine runs tasks without naming them, so it imports nothing of `ops` or `query`.
- `runtime`: the composition root; the only importer of concrete engines, embedders and caches.
- `api`: the Python entry points (a namespace name in, an answer out); builds the runtime.
- `index`: one runner per Dagster asset; never query-time code.
- `chunk_graph`: the similarity graph, built by `index` and walked at query time.
- `query`, `vector_tool`, `service`: query time; never `index`. `query` never imports `runtime`: a
  search takes its store, engine and embedder as arguments.
- `query` never imports `ops`: what indexing and querying share (boilerplate masks, token windows,
  sentences, section paths) lives in `core`.
- Each query mode is a package of `query` (`query/<mode>/`, every subpackage but the shared rooms) and
  never imports another mode's: what several modes share lives in a room that imports no mode (`common`:
  the mode contract; `answer`: contexts and citations; `caches`; `retrieval`: the graph retrieval), and
  a mode that hands a question on finds the others in its scope (`QueryScope.modes`). The registry
  (`query/registry.py`) and the other modules at the root of `query` are no mode.
- No module under `pipeline/` is over 400 lines.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import networkx as nx

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("pipeline", "assets")

# Modules that only the composition root may import (tests and benches may build them directly).
CONCRETE = {
    "pipeline.engine.offline",
    "pipeline.engine.llm",
    "pipeline.embeddings.minilm",
    "pipeline.embeddings.openai",
    "pipeline.caches.sqlite_llm",
    "pipeline.caches.sqlite_embedding",
    "pipeline.caches.pg_llm",
    "pipeline.caches.pg_embedding",
}
COMPOSITION_ROOT = "pipeline.runtime"

# layer -> the layers (besides itself) it may import from pipeline
ALLOWED = {
    "core": set(),
    "settings": {"core"},
    "io": {"core", "settings"},
    "caches": {"core", "io"},
    "llm": {"core", "io", "caches"},
    "prompts": set(),
    "parse": {"core", "caches"},  # file bytes to text + layout map; its parse cache
    # settings: each op's options from its own section; parse: the ingest's parsers of PDF, Office, ...
    "ops": {"core", "llm", "prompts", "settings", "parse"},
    "engine": {"core", "llm", "caches", "prompts", "settings"},
    "embeddings": {"core", "llm", "caches"},
}
QUERY_TIME = {"query", "vector_tool", "service"}
# The engine's contract: the protocol, what a task is, and the example task's models.
ENGINE_CONTRACT = {
    "pipeline.engine",
    "pipeline.engine.base",
    "pipeline.engine.task",
    "pipeline.engine.summarize",
}
EMBEDDER_CONTRACT = {"pipeline.embeddings", "pipeline.embeddings.base"}
MAX_MODULE_LINES = 400


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for top in PACKAGES for p in (REPO / top).rglob("*.py")}


def _import_graph() -> dict[str, set[str]]:
    """module -> project modules it imports (anywhere in its source), with their parent packages."""
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {r for a in node.names if (r := resolve(a.name))}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*parts, base] if base else parts)
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    if (r := resolve(full if full in modules else base)) is not None:
                        targets.add(r)
        with_parents = set(targets)
        for t in targets:
            parts = t.split(".")
            with_parents |= {
                ".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in modules
            }
        # a module's own ancestors run before it: importing them is not an edge
        graph[name] = {t for t in with_parents if t != name and not name.startswith(t + ".")}
    return graph


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "pipeline" and len(parts) > 1 else None


def test_no_import_cycles():
    g = nx.DiGraph([(a, b) for a, targets in _import_graph().items() for b in targets])
    cycles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert cycles == []


def test_the_cycle_check_sees_imports_inside_functions():
    """The check above is only worth something if a function-level import counts as an edge:
    `pipeline.index.context` imports the composition root inside `IndexContext.build` only."""
    tree = ast.parse((REPO / "pipeline" / "index" / "context.py").read_text(encoding="utf-8"))
    top_level = {n.module for n in tree.body if isinstance(n, ast.ImportFrom)}
    assert "pipeline.runtime" not in top_level
    assert "pipeline.runtime" in _import_graph()["pipeline.index.context"]


# The query side's shared rooms: every other package directly under pipeline/query is a mode.
SHARED_ROOMS = {"common", "answer", "caches", "retrieval"}
MAX_COMMON_MODULES = 8


def _query_modes() -> set[str]:
    """The mode packages: every package directly under pipeline/query but the shared rooms."""
    root = REPO / "pipeline" / "query"
    return {p.parent.name for p in root.glob("*/__init__.py")} - SHARED_ROOMS


def _mode_of(module: str, modes: set[str]) -> str | None:
    parts = module.split(".")
    return parts[2] if parts[:2] == ["pipeline", "query"] and len(parts) > 2 and parts[2] in modes else None


def query_imports_of_ops(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        if m == "pipeline.query" or m.startswith("pipeline.query.")
        for t in targets
        if t == "pipeline.ops" or t.startswith("pipeline.ops.")
    )


def mode_imports_of_sibling_modes(graph: dict[str, set[str]], modes: set[str]) -> list[str]:
    return sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        if (own := _mode_of(m, modes))
        for t in targets
        if (other := _mode_of(t, modes)) and other != own
    )


def common_imports_of_modes(graph: dict[str, set[str]], modes: set[str]) -> list[str]:
    """Imports of a mode by a shared room (`common`, `answer`, `caches`, `retrieval`)."""
    rooms = tuple(f"pipeline.query.{room}" for room in SHARED_ROOMS)
    return sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        if m in rooms or m.startswith(tuple(f"{r}." for r in rooms))
        for t in targets
        if _mode_of(t, modes)
    )


def test_query_code_never_imports_ops():
    """What indexing and querying share lives in `core`; `ops` is indexing's."""
    assert query_imports_of_ops(_import_graph()) == []


def test_the_ops_check_sees_a_query_module_importing_ops():
    graph = {
        "pipeline.query.answer.pages": {"pipeline.ops.structure", "pipeline.ops", "pipeline.core.sections"},
        "pipeline.query": set(),
        "pipeline.ops.chunking": {"pipeline.core.token_windows"},
    }
    assert query_imports_of_ops(graph) == [
        "pipeline.query.answer.pages -> pipeline.ops",
        "pipeline.query.answer.pages -> pipeline.ops.structure",
    ]


def test_no_query_mode_imports_another():
    modes = _query_modes()
    assert {"basic", "local", "drift", "global_", "lazy", "auto"} <= modes  # every mode is seen
    assert mode_imports_of_sibling_modes(_import_graph(), modes) == []


def test_the_mode_check_sees_a_mode_importing_a_sibling_but_not_common_or_the_registry():
    modes = {"basic", "local", "drift"}
    graph = {
        # a function-level import counts the same (the graph holds every import of a module)
        "pipeline.query.drift.steps": {
            "pipeline.query.local.search",
            "pipeline.query.local",
            "pipeline.query.drift",
        },
        "pipeline.query.drift.tasks": {"pipeline.query.answer.answer_context", "pipeline.query.drift.steps"},
        "pipeline.query.registry": {"pipeline.query.basic.mode", "pipeline.query.local.mode"},
        "pipeline.query.estimate": {"pipeline.query.basic.search"},
    }
    assert mode_imports_of_sibling_modes(graph, modes) == [
        "pipeline.query.drift.steps -> pipeline.query.local",
        "pipeline.query.drift.steps -> pipeline.query.local.search",
    ]


def test_the_shared_query_rooms_import_no_mode():
    assert common_imports_of_modes(_import_graph(), _query_modes()) == []


def test_query_common_holds_only_the_mode_contract():
    """What is not the mode contract has a named room (answer, caches, retrieval), so `common` stays small."""
    modules = [p for p in (REPO / "pipeline" / "query" / "common").glob("*.py") if p.name != "__init__.py"]
    assert len(modules) <= MAX_COMMON_MODULES, sorted(p.name for p in modules)


def test_the_common_check_sees_common_importing_a_mode():
    graph = {
        "pipeline.query.common.batcher": {"pipeline.query.global_.context", "pipeline.query.common.scope"},
        "pipeline.query.common": set(),
        "pipeline.query.global_.map": {"pipeline.query.common.batcher"},
        "pipeline.query.retrieval.intent": {"pipeline.query.local.tasks"},
    }
    assert common_imports_of_modes(graph, {"global_", "local"}) == [
        "pipeline.query.common.batcher -> pipeline.query.global_.context",
        "pipeline.query.retrieval.intent -> pipeline.query.local.tasks",
    ]


def test_layers_import_only_what_they_may():
    offenders = []
    for module, targets in _import_graph().items():
        layer = _layer(module)
        if layer not in ALLOWED:
            continue
        for t in targets:
            other = _layer(t)
            crosses = t.split(".")[0] == "pipeline" and other is not None and other != layer
            allowed = (
                other in ALLOWED[layer]
                or (layer == "ops" and t in ENGINE_CONTRACT)
                or (layer == "engine" and t in EMBEDDER_CONTRACT)
            )
            if crosses and not allowed:
                offenders.append(f"{module} -> {t}")
    assert offenders == []


def test_the_engine_imports_no_stage():
    """Tasks live with their stages; the engine runs them without importing any."""
    offenders = [
        f"{module} -> {t}"
        for module, targets in _import_graph().items()
        if _layer(module) == "engine"
        for t in targets
        if _layer(t) in {"ops", "query", "index", "service", "vector_tool", "chunk_graph"}
    ]
    assert offenders == []


def test_query_code_never_climbs_back_to_the_composition_root():
    offenders = [
        f"{module} -> {t}"
        for module, targets in _import_graph().items()
        if _layer(module) == "query"
        for t in targets
        if t in {COMPOSITION_ROOT, "pipeline.api"}
    ]
    assert offenders == []


def test_no_pipeline_module_is_over_the_line_limit():
    sizes = {
        str(p.relative_to(REPO)): len(p.read_text(encoding="utf-8").splitlines())
        for p in (REPO / "pipeline").rglob("*.py")
    }
    assert {p: n for p, n in sizes.items() if n > MAX_MODULE_LINES} == {}


def test_only_the_composition_root_imports_concrete_implementations():
    offenders = [
        f"{module} -> {t}"
        for module, targets in _import_graph().items()
        for t in targets & CONCRETE
        if module != COMPOSITION_ROOT and module.rpartition(".")[0] != t.rpartition(".")[0]
    ]
    assert offenders == []


def test_indexing_never_imports_query_time_code_and_query_never_imports_indexing():
    offenders = []
    for module, targets in _import_graph().items():
        for t in targets:
            if _layer(module) == "index" and _layer(t) in QUERY_TIME:
                offenders.append(f"{module} -> {t}")
            if _layer(module) in QUERY_TIME and _layer(t) == "index":
                offenders.append(f"{module} -> {t}")
    assert offenders == []


def test_no_pipeline_module_imports_dagster_or_assets_in_its_source():
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


def test_no_pipeline_module_imports_by_a_name_in_a_string():
    """`importlib.import_module("assets.launch")` would get past the import checks above."""
    offenders = []
    for path in (REPO / "pipeline").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in ("import_module", "__import__"):
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []


def test_importing_every_pipeline_module_does_not_load_dagster():
    code = (
        "import importlib, pkgutil, sys, pipeline\n"
        "for m in pkgutil.walk_packages(pipeline.__path__, 'pipeline.'):\n"
        "    if not m.name.endswith('__main__'): importlib.import_module(m.name)\n"
        "print(sorted(k for k in sys.modules if k.split('.')[0] == 'dagster'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"


def _asset_functions() -> list[tuple[str, ast.FunctionDef]]:
    found = []
    for path in sorted((REPO / "assets" / "indexing").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef):
                decorators = [
                    d.func.id
                    if isinstance(d, ast.Call) and isinstance(d.func, ast.Name)
                    else getattr(d, "id", "")
                    for d in node.decorator_list
                ]
                if {"asset", "multi_asset"} & set(decorators):
                    found.append((f"{path.name}:{node.name}", node))
    return found


def test_every_indexing_asset_is_a_few_lines_around_one_runner():
    functions = _asset_functions()
    assert len(functions) >= 12  # every indexing and shard asset is seen
    offenders = []
    for name, fn in functions:
        body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        runner_calls = [
            n
            for n in ast.walk(fn)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "run"
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id.endswith("_runner")
        ]
        if len(body) > 4 or len(runner_calls) != 1:
            offenders.append(f"{name}: {len(body)} statements, {len(runner_calls)} runner calls")
    assert offenders == []


def test_operations_take_option_objects_not_the_settings():
    """An op says what it uses (`ResolutionOptions`, `ExtractionOptions`...); only a `from_settings`
    constructor may read the settings, so an op can be called without building a whole Settings."""
    offenders = []
    for path in (REPO / "pipeline" / "ops").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name != "from_settings":
                params = [a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]
                if "settings" in params:
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    assert offenders == []


# Writes a whole namespace at once in place of the index job (`pipeline import graphrag`): the one module
# allowed to write tables the index job's runners own.
WHOLE_INDEX_WRITERS = {"pipeline.index.graphrag_import"}
# Replaces single rows of one stage's table between runs, never the stage's work: a community report
# written when a query first needs it (`PIPELINE_REPORTS=on_demand`) in place of its stand-in.
ROW_COMPLETERS = {"pipeline.index.community_reports_on_demand": "community_reports"}


def _sources() -> dict[str, str]:
    return {n: p.read_text(encoding="utf-8") for n, p in _modules().items() if n.startswith("pipeline.")}


def _table_writes(sources: dict[str, str]) -> dict[str, set[str]]:
    """Registered table name -> the modules among `sources` that write it (`write_table(schema.X, ..)`,
    also through `shard_table(schema.X, ..)` or a name imported from the schema module)."""
    from pipeline.core import schema

    writers: dict[str, set[str]] = {}
    for name, source in sources.items():
        if name in WHOLE_INDEX_WRITERS:
            continue
        for node in ast.walk(ast.parse(source)):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "write_table"):
                continue
            target = node.args[0] if node.args else None
            if isinstance(target, ast.Call) and target.args:  # shard_table(schema.X, shard, shards)
                target = target.args[0]
            constant = getattr(target, "attr", None) or getattr(target, "id", None)
            table = getattr(schema, constant, None) if isinstance(constant, str) else None
            if isinstance(table, str) and ROW_COMPLETERS.get(name) != table:
                writers.setdefault(table, set()).add(name)
    return writers


def _shared_tables(writers: dict[str, set[str]]) -> dict[str, list[str]]:
    return {t: sorted(m) for t, m in writers.items() if len(m) > 1}


def test_each_registered_table_has_exactly_one_writing_runner():
    from pipeline.core.tables import TABLE_SCHEMAS

    writers = _table_writes(_sources())
    assert not _shared_tables(writers), f"tables written by more than one module: {_shared_tables(writers)}"
    index_tables = {t for t, m in writers.items() if any(x.startswith("pipeline.index.") for x in m)}
    # every table the index job writes is registered (so the store checks its columns)
    assert index_tables <= set(TABLE_SCHEMAS), sorted(index_tables - set(TABLE_SCHEMAS))
    for table in ("documents", "text_units", "input_documents", "base_text_units"):
        assert writers.get(table) == {f"pipeline.index.{table}"}, (table, writers.get(table))


def test_the_writer_check_sees_a_second_writer():
    """The check above can fail: a stage that rewrites text_units (as resolution once did to add the
    entity ids) is reported with the table's own writer."""
    sources = _sources()
    sources["pipeline.index.entities_and_relationships"] += (
        "\n\ndef _relink(store, units):\n    store.write_table(schema.TEXT_UNITS, units)\n"
    )
    assert _shared_tables(_table_writes(sources)) == {
        "text_units": ["pipeline.index.entities_and_relationships", "pipeline.index.text_units"]
    }


# Where a question comes in: every module of pipeline/ and assets/ but the query side's own packages;
# the modules at the root of pipeline/query (saved questions, estimates) too, all but the registry.
def _is_door(module: str) -> bool:
    parts = module.split(".")
    if parts[:2] != ["pipeline", "query"]:
        return True
    return (
        len(parts) == 3 and parts[2] != "registry" and not (REPO / "pipeline" / "query" / parts[2]).is_dir()
    )


def searches_built_by_hand(sources: dict[str, str]) -> list[str]:
    """`module: call` for each call in a door that builds a scope (`QueryScope(...)`, `leveled(...)`,
    `registry.scope(...)`) or runs a mode's search itself (`<mode>_search_async(...)`, or
    `<record>.search(scope, question, config)`) instead of `registry.run`/`prepare`."""
    found = []
    for module, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            owner = (
                func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
            )
            if (
                name in {"QueryScope", "leveled"}
                or (owner == "registry" and name == "scope")
                or name.endswith("_search_async")
                or (name == "search" and owner != "re" and len(node.args) == 3)
            ):
                found.append(f"{module}: {ast.unparse(node)[:80]}")
    return sorted(found)


def test_no_door_builds_a_scope_or_runs_a_search_itself():
    """Every door runs a question through the registry (`registry.run`/`prepare`), which validates the
    options with the mode's model, builds the config and the scope, and starts the search."""
    sources = {m: p.read_text(encoding="utf-8") for m, p in _modules().items() if _is_door(m)}
    assert "pipeline.api" in sources and "pipeline.query.saved_questions" in sources
    assert "assets.cli.query" in sources and "pipeline.service.modes" in sources
    assert searches_built_by_hand(sources) == []


def test_the_door_check_sees_a_scope_and_a_search_built_by_hand():
    sources = {
        "pipeline.eval.run": "s = QueryScope(store, engine, leveled(store, embedder))\n"
        "r = registry.mode(m).search(s, q, config)\n",
        "assets.cli.query": "scope = registry.scope(store, None, e)\nx = local_search_async(scope, q, c)\n"
        "ok = registry.run('local', q, {}, store=store)\nm = re.search(a, b, c)\n",
    }
    assert searches_built_by_hand(sources) == [
        "assets.cli.query: local_search_async(scope, q, c)",
        "assets.cli.query: registry.scope(store, None, e)",
        "pipeline.eval.run: QueryScope(store, engine, leveled(store, embedder))",
        "pipeline.eval.run: leveled(store, embedder)",
        "pipeline.eval.run: registry.mode(m).search(s, q, config)",
    ]
