"""Documents in through the service, timed (issue 70), offline on the dev PDF manuals.

A real `graphrag-serve` with a write key; a managed namespace is indexed from two manuals (libtasn1 and
gnuplot, uploaded together: a full index), then a third (shared-mime-info) is uploaded into it, then
deleted. Prints JSON: each run's wall time from the request to the run's end as its documents list
shows it (`indexed` / `deleted` and removed), the run's own seconds and its stage timings, and the
delete's cost as a share of the full index. Each run includes its process's start (Python, Dagster,
spaCy: about 5 s here).

    .venv/bin/python bench/bench_uploads.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from results_log import append_run  # noqa: E402
from serve_process import ROOT, start_graphrag_serve  # noqa: E402

MANUALS = ROOT.parent / "shared" / "data" / "pdf_manuals"
KEY = "grk_bench-uploads-writer"


def _wait_run(http: httpx.Client, ns: str, run_id: str) -> dict:
    with http.stream("GET", f"/v1/namespaces/{ns}/runs/{run_id}/events", timeout=3600) as response:
        for _ in response.iter_lines():
            pass
    return http.get(f"/v1/namespaces/{ns}/runs/{run_id}").json()


def _timed(http: httpx.Client, ns: str, request: callable) -> dict:  # type: ignore[valid-type]
    started = time.monotonic()
    accepted = request()
    accepted.raise_for_status()
    run = _wait_run(http, ns, accepted.json()["run"]["id"])
    wall = time.monotonic() - started
    stages = {s["stage"]: s.get("seconds") for s in run.get("stages", [])}
    return {
        "status": run["status"],
        "wall_s": round(wall, 2),
        "run_s": run.get("seconds"),
        "delta": run.get("delta"),
        "stages_s": stages,
    }


def main() -> int:
    from pipeline.service.auth import hash_key

    with tempfile.TemporaryDirectory(prefix="bench_uploads_") as tmp:
        work = Path(tmp)
        (work / "keys.yaml").write_text(
            f"tenants:\n  bench: {{key_sha256: {hash_key(KEY)}, namespaces: [], write: true}}\n"
        )
        (work / "dagster").mkdir()
        (work / "dagster" / "dagster.yaml").write_text((ROOT / "dagster.yaml").read_text())
        env = {
            **os.environ,
            "PIPELINE_API_KEYS_FILE": str(work / "keys.yaml"),
            "PIPELINE_STORAGE_ROOT": str(work / "storage"),
            "PIPELINE_INPUT_ROOT": str(work / "input"),
            "DAGSTER_HOME": str(work / "dagster"),
        }
        server, base = start_graphrag_serve(work, env)
        try:
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEY}"}, timeout=600) as http:
                http.post("/v1/namespaces", json={"namespace": "manuals"}).raise_for_status()
                docs = "/v1/namespaces/manuals/documents"

                def upload(*names: str) -> httpx.Response:
                    return http.post(docs, files=[("file", (n, (MANUALS / n).read_bytes())) for n in names])

                full = _timed(http, "manuals", lambda: upload("libtasn1.pdf", "gnuplot.pdf"))
                added = _timed(http, "manuals", lambda: upload("shared-mime-info-spec.pdf"))
                listed = {d["name"]: d for d in http.get(docs).json()["documents"]}
                one = listed["shared-mime-info-spec.pdf"]
                deleted = _timed(http, "manuals", lambda: http.delete(f"{docs}/{one['id']}"))
                listed = {d["name"]: d for d in http.get(docs).json()["documents"]}
        finally:
            server.terminate()
            server.wait(timeout=60)
    result = {
        "corpus": "pdf_manuals: libtasn1 + gnuplot, then shared-mime-info-spec added and deleted",
        "full_index_two_manuals": full,
        "upload_one_pdf_to_indexed": added,
        "delete_one_pdf": deleted,
        "delete_vs_full_index": round(deleted["wall_s"] / full["wall_s"], 3),
        "statuses_after": {n: (d["status"], d.get("removed")) for n, d in listed.items()},
    }
    print(json.dumps(result, indent=2))
    append_run("bench_uploads", result, command="bench/bench_uploads.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
