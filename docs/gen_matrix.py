"""Write docs/matrix.md: the conformance matrix, from the `matrix` marks of the test suite.

    .venv/bin/python docs/gen_matrix.py          # rewrite docs/matrix.md
    .venv/bin/python docs/gen_matrix.py --check  # exit 1 when it is stale (tests/test_docs.py runs this)

A test says which cells it holds with `@pytest.mark.matrix(embedder=..., chat=..., doors=(...), modes=(...))`
(several marks on one test merge; `embedder` and `chat` default to the offline default pair). The table
is made from what the tests claim, never written by hand: a cell no test marks is shown empty.
"""

from __future__ import annotations

import importlib
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "docs" / "matrix.md"
DEFAULT_PAIR = ("MiniLM (local, 384-d)", "offline")
DOORS = (
    "Python API",
    "CLI",
    "CLI --stream",
    "HTTP JSON",
    "HTTP SSE",
    "OpenAI door",
    "OpenAI door streamed",
    "MCP stdio",
    "Dagster query assets",
    "pipeline eval",
)


def cells() -> dict[tuple[str, str], dict[tuple[str, str], list[str]]]:
    """(mode, door) -> (embedder, chat) -> the tests holding that cell."""
    found: dict[tuple[str, str], dict[tuple[str, str], list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted((REPO / "tests").glob("test_*.py")):
        if "mark.matrix" not in path.read_text(encoding="utf-8") and "E768" not in path.read_text(
            encoding="utf-8"
        ):
            continue
        module = importlib.import_module(f"tests.{path.stem}")
        for name, fn in sorted(vars(module).items()):
            marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "matrix"]
            if not name.startswith("test_") or not marks:
                continue
            merged: dict[str, object] = {}
            for mark in marks:
                merged.update(mark.kwargs)
            pair = (str(merged.get("embedder", DEFAULT_PAIR[0])), str(merged.get("chat", DEFAULT_PAIR[1])))
            for door in merged.get("doors", ()):  # type: ignore[union-attr]
                if door not in DOORS:
                    raise ValueError(f"{path.name}::{name}: unknown door {door!r}; doors are {DOORS}")
                for mode in merged.get("modes", ()):  # type: ignore[union-attr]
                    found[(str(mode), str(door))][pair].append(f"{path.name}::{name}")
    return found


def render() -> str:
    from pipeline.query import registry

    found = cells()
    pairs = sorted({p for by_pair in found.values() for p in by_pair})
    short = {p: f"P{i + 1}" for i, p in enumerate(pairs)}
    lines = [
        "# Conformance matrix",
        "",
        "Every query mode through every door, with the embedder and chat-model pairs the tests run. Generated "
        "by `docs/gen_matrix.py` from the `matrix` marks of the tests (`make test` fails while this page is "
        "stale); a cell lists the pairs that hold it.",
        "",
        "| pair | embedder | chat model |",
        "| --- | --- | --- |",
        *(f"| {short[p]} | {p[0]} | {p[1]} |" for p in pairs),
        "",
        "| mode | " + " | ".join(DOORS) + " |",
        "| --- |" + " --- |" * len(DOORS),
    ]
    for mode in registry.MODES:
        row = [", ".join(short[p] for p in sorted(found.get((mode, door), {}))) or "" for door in DOORS]
        lines.append(f"| {mode} | " + " | ".join(row) + " |")
    lines += ["", "## The tests behind each cell", ""]
    for (mode, door), by_pair in sorted(found.items()):
        for pair, tests in sorted(by_pair.items()):
            for test in sorted(set(tests)):
                lines.append(f"- {mode} × {door} × {short[pair]}: `tests/{test}`")
    return "\n".join(lines) + "\n"


def main() -> int:
    text = render()
    if "--check" in sys.argv:
        if not OUT.is_file() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is stale: run .venv/bin/python docs/gen_matrix.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
