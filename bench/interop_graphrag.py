"""Two-way compatibility with Microsoft GraphRAG 3.3.0, run for real: its `graphrag` CLI in a virtual
environment of its own (created when missing, never a project dependency), a scripted OpenAI-compatible
server on 127.0.0.1 (bench/interop/scripted_openai.py: MiniLM embeddings, scripted chat), nothing online.

1. `graphrag index` on bench/interop/input (two short texts, 200-token chunks, claims on).
2. `pipeline import graphrag --from <its output> --namespace from_graphrag`, then our global, local,
   DRIFT, basic and lazy queries on it; every cited passage must resolve to its document's offsets.
3. Our offline index of samples/demo with PIPELINE_GRAPHRAG_EXPORT=true, then GraphRAG's local,
   global, DRIFT and basic searches on it, its settings left at their defaults except the models'
   address, the vector size of the model (384) and where the index is (output folder, `db_uri`):
   the vector-store table names are GraphRAG's own.

    .venv/bin/python bench/interop_graphrag.py [--write-fixture tests/fixtures/ms_graphrag_3_3]

Prints one JSON object; exits 1 when a step failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.interop import graphrag_venv as gv  # noqa: E402
from bench.interop.scripted_openai import ScriptedOpenAI  # noqa: E402

INPUT = REPO / "bench" / "interop" / "input"
QUESTION = {
    "theirs": "What happened at Gull Point during the storm?",
    "demo": "Who was Fezziwig and what did Jacob Marley do?",
}
MODES = ("global", "local", "drift", "basic")  # GraphRAG's four searches
OUR_MODES = (*MODES, "lazy")  # ours on its index: the four and lazy search


def our_cli(args: list[str], env: dict[str, str], timeout: int = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assets", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def check_citations(storage: Path, namespace: str, mode: str, result: dict[str, Any]) -> dict[str, Any]:
    """Every passage the answer cites (global: the cited communities' passages) has offsets whose
    document slice is the passage's text."""
    from pipeline.core import schema
    from pipeline.io.store import NamespaceStore

    store = NamespaceStore(storage, namespace)
    docs = {d["id"]: d["text"] for d in store.read_table(schema.DOCUMENTS).to_pylist()}
    units = {u["id"]: u for u in store.read_table(schema.TEXT_UNITS).to_pylist()}
    by_span = {(u["document_id"], u["start_char"], u["end_char"]): u for u in units.values()}
    if mode == "global":
        communities = {c["community"]: c for c in store.read_table(schema.COMMUNITIES).to_pylist()}
        spans = [
            (units[i]["document_id"], units[i]["start_char"], units[i]["end_char"])
            for c in result["cited_communities"]
            for i in communities[c]["text_unit_ids"]
        ]
    elif mode == "local":
        spans = [
            (e["document_id"], e["start_char"], e["end_char"])
            for e in result["evidence"]
            if e["kind"] == "chunk"
        ]
    else:
        spans = [
            (c["document_id"], c["start_char"], c["end_char"])
            for c in result["citations"]
            if c["section"] == "sources"
        ]
    resolved = sum(1 for s in spans if s in by_span and docs[s[0]][s[1] : s[2]] == by_span[s]["text"])
    return {"status": result["status"], "cited_passages": len(spans), "resolved": resolved}


def index_theirs(exe: Path, work: Path, base_url: str, env: dict[str, str]) -> Path:
    root = work / "graphrag_project"
    gv.init_root(exe, root, base_url, env=env, chunk_size=200, chunk_overlap=20)
    shutil.copytree(INPUT, root / "input", dirs_exist_ok=True)
    started = time.monotonic()
    done = gv.run(exe, ["index", "--root", str(root)], env)
    if done.returncode:
        raise RuntimeError(f"graphrag index failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    print(f"graphrag index: {time.monotonic() - started:.0f}s", file=sys.stderr, flush=True)
    return root / "output"


def write_fixture(output: Path, target: Path) -> None:
    """graphrag's output folder and its input under `target` (its README is left alone)."""
    for name, source in (("output", output), ("input", INPUT)):
        if (target / name).exists():
            shutil.rmtree(target / name)
        shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("*.log"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--venv", type=Path, default=Path(os.environ.get("GRAPHRAG_VENV", "/work/msgr")))
    parser.add_argument("--work", type=Path, default=None, help="working folder (default: a temporary one)")
    parser.add_argument("--write-fixture", type=Path, default=None, help="copy graphrag's output folder here")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="interop-"))
    work.mkdir(parents=True, exist_ok=True)
    exe = gv.ensure_venv(args.venv)
    env = gv.graphrag_env(work)
    storage, home = work / "storage", work / "dagster_home"
    home.mkdir(exist_ok=True)
    shutil.copyfile(REPO / "dagster.yaml", home / "dagster.yaml")
    ours = {**env, "PIPELINE_STORAGE_ROOT": str(storage), "DAGSTER_HOME": str(home), "PYTHONPATH": str(REPO)}
    report: dict[str, Any] = {"graphrag": gv.GRAPHRAG_VERSION, "work": str(work)}
    ok = True
    with ScriptedOpenAI() as server:
        output = index_theirs(exe, work, server.base_url, env)
        report["graphrag_index_requests"] = server.tasks()
        if args.write_fixture:
            write_fixture(output, args.write_fixture)
        done = our_cli(["import", "graphrag", "--from", str(output), "--namespace", "from_graphrag"], ours)
        report["import"] = {"rc": done.returncode, "tail": done.stdout.strip().splitlines()[-1:]}
        ok &= done.returncode == 0
        report["our_queries_on_theirs"] = {}
        for mode in OUR_MODES:
            done = our_cli(
                ["query", mode, "--namespace", "from_graphrag", "--json", QUESTION["theirs"]], ours
            )
            if done.returncode:
                report["our_queries_on_theirs"][mode] = {"rc": done.returncode, "error": done.stderr[-500:]}
                ok = False
                continue
            checked = check_citations(storage, "from_graphrag", mode, json.loads(done.stdout))
            ok &= checked["cited_passages"] > 0 and checked["resolved"] == checked["cited_passages"]
            report["our_queries_on_theirs"][mode] = checked

        started = time.monotonic()
        done = our_cli(
            ["index", "--namespace", "demo", "--input", str(REPO / "samples" / "demo")],
            {**ours, "PIPELINE_GRAPHRAG_EXPORT": "true"},
        )
        report["our_demo_index"] = {"rc": done.returncode, "seconds": round(time.monotonic() - started)}
        ok &= done.returncode == 0
        root = work / "graphrag_on_ours"
        gv.init_root(exe, root, server.base_url, env=env, output_dir=storage / "demo")
        report["their_queries_on_ours"] = {}
        for mode in MODES:
            before = server.tasks()
            done = gv.run(exe, ["query", "--root", str(root), "--method", mode, QUESTION["demo"]], env)
            after = server.tasks()
            answer = done.stdout.strip()
            report["their_queries_on_ours"][mode] = {
                "rc": done.returncode,
                "answer": answer[-160:],
                "requests": {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)},
                # the tables its last answer prompt held (rows): entities found through our vectors
                "answer_context": server.contexts.get("answer", {}),
                **({"error": done.stderr[-1500:]} if done.returncode else {}),
            }
            ok &= done.returncode == 0 and bool(answer)
            ok &= not server.contexts.get("answer", {}).get("nan_cells")
            server.contexts.clear()
    report["ok"] = bool(ok)
    print(json.dumps(report, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
