"""A default is written once: a setting's default literal is not written again in code, a query option's
default is not written in its request model's description, and the query options' code defaults are
not copied from module to module.

Code takes a configured default from the settings model (`pipeline.settings.default_of`), or from the
one constant that holds it; a request model's description reads the same source. Literals too common
to mean anything (0, 1, "", booleans) are left out: they are the neutral values, not choices.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from pipeline.settings import Settings

REPO = Path(__file__).resolve().parent.parent
PIPELINE = REPO / "pipeline"
TRIVIAL = {0, 1, "", -1}
# A setting's name is its section's prefix + the name its code uses (drift_depth -> depth).
SECTION_PREFIXES = (
    "local_",
    "global_",
    "drift_",
    "lazy_",
    "basic_",
    "chunk_graph_",
    "extraction_",
    "report_",
    "resolution_",
    "description_",
    "summarize_",
    "leiden_",
    "community_",
    "embedding_",
    "llm_",
    "offline_",
    "service_",
)
QUERY_TIME = ("query", "chunk_graph", "vector_tool", "service")
DESCRIBED_DEFAULT = re.compile(r"\bdefault:? (\d[\d_.,]*)")


def _literal(node: ast.AST | None) -> object | None:
    if isinstance(node, ast.Constant) and not isinstance(node.value, bool) and node.value is not None:
        value = node.value
    elif (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int | float)
    ):
        value = -node.operand.value
    else:
        return None
    return None if value in TRIVIAL else value


def code_defaults(source: str, where: str) -> dict[tuple[str, object], list[str]]:
    """(name, literal) -> where it is written: class-level fields (dataclasses, pydantic models, a
    `Field(default=...)`) and keyword defaults of functions."""
    found: dict[tuple[str, object], list[str]] = defaultdict(list)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            for st in node.body:
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                    value = _literal(st.value)
                    if value is None and isinstance(st.value, ast.Call):
                        value = next(
                            (_literal(k.value) for k in st.value.keywords if k.arg == "default"), None
                        )
                    if value is not None:
                        found[(st.target.id, value)].append(f"{where}:{st.lineno}")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
            for arg, default in pairs:
                if (value := _literal(default)) is not None:
                    found[(arg.arg, value)].append(f"{where}:{node.lineno}")
    return found


def described_defaults(source: str, where: str) -> list[str]:
    """Descriptions written with a default number in them ("...; default 8")."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and node.arg == "description":
            texts = [c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant)]
            for text in texts:
                if isinstance(text, str) and DESCRIBED_DEFAULT.search(text):
                    out.append(f"{where}:{node.value.lineno}: {text!r}")
    return out


def setting_repeats(settings: dict[str, object], code: dict[tuple[str, object], list[str]]) -> list[str]:
    """Code defaults that repeat a setting's default literal under the setting's name (or the name its
    code uses, the section prefix left out)."""
    out = []
    for name, value in settings.items():
        if (
            value is None
            or isinstance(value, bool)
            or value in TRIVIAL
            or not isinstance(value, int | float | str)
        ):
            continue
        short = next((name[len(p) :] for p in SECTION_PREFIXES if name.startswith(p)), name)
        for key in {(name, value), (short, value)}:
            out += [f"{name}={value!r} again at {w}" for w in code.get(key, [])]
    return out


def _pipeline_code() -> dict[tuple[str, object], list[str]]:
    merged: dict[tuple[str, object], list[str]] = defaultdict(list)
    for path in sorted(PIPELINE.rglob("*.py")):
        if path.parts[-2] == "settings" or path.parent.name == "settings":
            continue  # the settings model is where the defaults are written
        rel = str(path.relative_to(REPO))
        for key, where in code_defaults(path.read_text(encoding="utf-8"), rel).items():
            merged[key] += where
    return merged


def _settings_defaults() -> dict[str, object]:
    return {n: f.default for n, f in Settings.model_fields.items() if f.default_factory is None}


def test_no_setting_default_is_written_again_in_code():
    assert setting_repeats(_settings_defaults(), _pipeline_code()) == []


def test_no_request_model_writes_a_default_into_its_description():
    requests = sorted((PIPELINE / "query").rglob("*.py"))
    found = [d for p in requests for d in described_defaults(p.read_text(encoding="utf-8"), p.name)]
    assert found == []


def test_query_options_defaults_are_not_copied_between_modules():
    """An option the doors take (top_k, random_walk_steps, restart_prob, ...) has its default in one
    query-time module (indexing's own knobs of the same name, such as a report's token `budget`, are
    other things)."""
    from pipeline.query.registry import MODES

    options = {name for mode in MODES.values() for name in mode.options.model_fields}
    query_time = tuple(f"pipeline/{layer}/" for layer in QUERY_TIME)
    copied = {
        key: places
        for key, where in _pipeline_code().items()
        if key[0] in options
        and len(places := {w.split(":")[0] for w in where if w.startswith(query_time)}) > 1
    }
    assert copied == {}


# The checks above are only worth something if they can fail.


def test_the_setting_check_sees_a_repeated_default():
    code = code_defaults("class C:\n    depth: int = 2\n\ndef f(budget=100):\n    pass\n", "x.py")
    found = setting_repeats({"drift_depth": 2, "lazy_budget": 100, "lazy_threshold": 2.5}, code)
    assert found == ["drift_depth=2 again at x.py:2", "lazy_budget=100 again at x.py:4"]


def test_the_description_check_sees_a_written_default():
    source = 'x = Field(default=None, description="Communities to keep; default 8")\n'
    assert described_defaults(source, "r.py") == ["r.py:1: 'Communities to keep; default 8'"]
    assert described_defaults('x = Field(description=f"keep; default {N}")\n', "r.py") == []
