"""Each bench's runs, kept in bench/results/<bench>.json: a list of runs, oldest first, each with its date,
commit, machine and figures. The docs' benchmarks page shows the latest; the history lives here, not in
prose. `append_run` is what a bench (or bench/run_all.py) calls after printing its JSON."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def commit() -> str | None:
    """The checkout's short commit, with `+dirty` when files differ from it; None outside git."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty else "")


def machine() -> str:
    """The CPU model, its cores and memory: the figures mean little without them."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        memory = f", {pages * size / 2**30:.0f} GB"
    except (ValueError, OSError, AttributeError):
        pass
    return f"{model}, {os.cpu_count()} cores{memory}"


def load(bench: str, results: Path = RESULTS) -> list[dict[str, Any]]:
    path = results / f"{bench}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []


def append_run(
    bench: str, figures: Any, *, note: str | None = None, results: Path = RESULTS, **fields: Any
) -> dict[str, Any]:
    """Append one run of `bench` (figures: what the bench printed) and return it. The file is replaced
    whole through a temporary file, so an interrupted write never leaves half a history."""
    run: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "commit": commit(),
        "machine": machine(),
        **fields,
        "figures": figures,
    }
    if note:
        run["note"] = note
    runs = [*load(bench, results), run]
    results.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{bench}.", suffix=".json", dir=results)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(runs, f, indent=2, default=str)
        f.write("\n")
    os.replace(tmp, results / f"{bench}.json")
    return run
