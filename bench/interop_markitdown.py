"""The dev manuals through Microsoft GraphRAG's ingester, MarkItDown, against pipeline.parse; prints JSON.

MarkItDown is never a dependency of this project: like bench/interop_graphrag.py, the bench creates a
virtual environment of its own (`/work/markitdown-venv`, or `--venv`) with `pip install
markitdown[pdf]==0.1.9` when it is missing, and runs it as a subprocess. Per manual and tool: seconds (one
core each), words, how many of the 40 dev questions' verbatim evidence quotes (pypdf's text of the gold
pages, whitespace-normalised) are found in the text, how many page numbers the output knows, and how
often the running header "gnuplot 5.4" is left in the text a chunker would see (ours: outside the
masked ranges).

    .venv/bin/python bench/interop_markitdown.py [--venv /work/markitdown-venv]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
MANUALS = ROOT.parent / "shared" / "data" / "pdf_manuals"
MARKITDOWN = "markitdown[pdf]==0.1.9"
_CHILD = """
import json, os, sys, time
os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
from markitdown import MarkItDown
md = MarkItDown(enable_plugins=False)
start = time.perf_counter()
text = md.convert(sys.argv[1]).text_content
print(json.dumps({"seconds": time.perf_counter() - start, "text": text}))
"""


def ensure_venv(venv: Path) -> Path:
    python = venv / "bin" / "python"
    if not (venv / "bin" / "markitdown").exists():
        print(f"creating {venv} with {MARKITDOWN}", file=sys.stderr, flush=True)
        subprocess.run(["python3.11", "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", MARKITDOWN], check=True)
    return python


def _flat(text: str) -> str:
    return " ".join(text.split())


def _ours(path: Path) -> tuple[float, str, int]:
    """(seconds on one core, the text a chunker sees with masked ranges blanked, pages known)."""
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    from pipeline.core.boilerplate import Region, mask
    from pipeline.parse import OcrPolicy, parse_bytes

    start = time.perf_counter()
    parsed = parse_bytes(path.read_bytes(), "pdf", OcrPolicy(False))
    seconds = time.perf_counter() - start
    regions = [Region(r.start, r.end, r.kind) for r in parsed.layout.masked]
    return seconds, mask(parsed.text, regions), len(parsed.layout.pages)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--venv", type=Path, default=Path("/work/markitdown-venv"))
    args = parser.parse_args()
    python = ensure_venv(args.venv)
    questions = [
        json.loads(ln) for ln in (MANUALS / "questions.jsonl").read_text().splitlines() if ln.strip()
    ]
    out: dict[str, dict] = {}
    for path in sorted(MANUALS.glob("*.pdf")):
        quotes = [
            _flat(ev)
            for q in questions
            if any(g["document"] == path.name for g in q["gold_pages"])
            for ev in q["evidence"]
        ]
        child = subprocess.run(
            [str(python), "-c", _CHILD, str(path)], capture_output=True, text=True, check=False
        )
        if child.returncode:
            out[path.name] = {"error": child.stderr[-1500:]}
            continue
        theirs = json.loads(child.stdout.strip().splitlines()[-1])
        seconds, ours_text, pages = _ours(path)
        row = {}
        for tool, text, secs, known in (
            ("markitdown", theirs["text"], theirs["seconds"], 0),
            ("pipeline.parse", ours_text, seconds, pages),
        ):
            flat = _flat(text)
            row[tool] = {
                "seconds": round(secs, 2),
                "words": len(flat.split()),
                "evidence_found": f"{sum(q in flat for q in quotes)}/{len(quotes)}",
                "pages_known": known,
                "running_header_left": flat.count("gnuplot 5.4"),
                "broken_hyphen_left": sum(1 for w in ("com- puted", "func- tion") if w in flat),
            }
        out[path.name] = row
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
