"""Chaos: index runs killed at random events and re-run while queries in every mode read the namespace;
prints JSON.

    .venv/bin/python bench/bench_chaos.py [--runs 5] [--seed 6] [--docs 12]

A small corpus is indexed offline (rule-based extraction, extractive reports, MiniLM) into a namespace.
Each of `--runs` rounds then switches one document between two versions (A says "Vera Lind signed the
treaty", B says "Omar Ruiz signed it"), starts `pipeline index` with `PIPELINE_TEST_KILL_AT` set to a
random event (`pipeline/core/kill_points.py`: an extraction answered, an embedding batch stored, a
report answered, a Parquet file written but not renamed, a Lance commit before its index), so the
process SIGKILLs itself there, and re-runs it to the end. Meanwhile a thread of this process asks
`graphrag-serve` (a real server on 127.0.0.1 over the same storage, with a keys file), mode after mode
(local, global, drift, basic, lazy, auto), who signed the treaty.

Reported:
- runs, kills (runs that did die at their event; an event a re-index never reaches lets it finish),
  queries;
- rows_lost / rows_extra: after each re-run, the rows of every Parquet and LanceDB table missing from /
  added to those of a shadow namespace, in a storage of its own, that went through the same versions
  without a kill (a re-index is compared with a re-index: its tables need not equal a from-scratch
  index's, test_incremental covers that);
- responses_5xx: answers with an HTTP status of 500 or more; query_errors: every other answer that was
  not a 200 (a refused connection, a 4xx), by mode and status in errors_by_mode;
- mixed_version_answers: answers whose result names both versions' signer, i.e. read rows of two index
  versions;
- orphan_processes: processes started by a killed run (found by a token in their environment) still
  alive 60 s after it died.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NAMESPACE = "chaos"
QUESTION = "Who signed the treaty at meeting 3?"
SIGNERS = {"A": "Vera Lind", "B": "Omar Ruiz"}
MODES = ("local", "global", "drift", "basic", "lazy", "auto")
ENV = {
    "PIPELINE_LLM_PROVIDER": "offline",
    "PIPELINE_EXTRACTION_PACK_TOKENS": "0",
    "PIPELINE_REPORT_MIN_ENTITIES": "0",
    "PIPELINE_EMBEDDING_BATCH_SIZE": "4",
    "PIPELINE_EXTRACTION_PROCESSES": "2",  # worker processes, whose fate after a kill is measured
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
# Events a re-index of one changed document reaches, with the counts it reaches them at.
EVENTS = {
    "extract_units": 1,
    "embeddings": 1,
    "community_report": 1,
    "parquet_write": 10,
    "lance_commit": 3,
}
ORPHAN_WAIT_S = 60.0
SERVE = str(Path(sys.executable).with_name("graphrag-serve"))  # the venv's console script


def write_corpus(folder: Path, docs: int, version: str) -> None:
    from tests.test_incremental_llm import _corpus

    folder.mkdir(parents=True, exist_ok=True)
    for name, text in _corpus(docs).items():
        (folder / name).write_text(text, encoding="utf-8")
    signer = SIGNERS[version]
    (folder / "doc03.txt").write_text(
        f"{signer} signed the treaty at meeting 3. {signer} then left for Lisbon with the signed copy.\n",
        encoding="utf-8",
    )


def index(storage: Path, folder: Path, env: dict[str, str], kill_at: str | None, log: Path) -> int:
    full = {**os.environ, **ENV, **env, "PIPELINE_STORAGE_ROOT": str(storage)}
    full.pop("PIPELINE_TEST_KILL_AT", None)
    if kill_at:
        full["PIPELINE_TEST_KILL_AT"] = kill_at
    cmd = [sys.executable, "-m", "assets", "index", "--namespace", NAMESPACE, "--input", str(folder)]
    with open(log, "ab") as out:
        return subprocess.run(cmd, cwd=ROOT, env=full, stdout=out, stderr=subprocess.STDOUT).returncode


def tables(root: Path) -> dict[str, collections.Counter]:
    """Every Parquet and LanceDB table of a namespace folder, as a multiset of its rows."""
    import lancedb
    import pyarrow.parquet as pq

    def rows(t) -> collections.Counter:  # noqa: ANN001 - a pyarrow table
        names = sorted(t.column_names)
        return collections.Counter(tuple(repr(r[c]) for c in names) for r in t.to_pylist())

    out = {p.name: rows(pq.read_table(p)) for p in sorted(root.glob("*.parquet"))}
    db = lancedb.connect(str(root / "lancedb"))
    for name in db.table_names():
        out[f"lancedb/{name}"] = rows(db.open_table(name).to_arrow())
    return out


def orphans(token: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter():
        try:
            if p.pid != os.getpid() and p.environ().get("CHAOS_TOKEN") == token:
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


class Server:
    """`graphrag-serve` on a free port of 127.0.0.1 over `storage`, one key that reads the namespace."""

    KEY = "chaos-bench-key"

    def __init__(self, storage: Path, work: Path) -> None:
        keys = work / "keys.yaml"
        digest = hashlib.sha256(self.KEY.encode()).hexdigest()
        keys.write_text(f"tenants:\n  bench:\n    key_sha256: {digest}\n    namespaces: [{NAMESPACE}]\n")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        env = {
            **os.environ,
            **ENV,
            "PIPELINE_STORAGE_ROOT": str(storage),
            "PIPELINE_API_KEYS_FILE": str(keys),
        }
        self.log = open(work / "serve.log", "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [SERVE, "--port", str(self.port), "--log-level", "warning"],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 300  # model loading on a busy machine; only a broken build waits it out
        while not self._healthy():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"graphrag-serve did not start; see {work / 'serve.log'}")
            time.sleep(0.2)

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def ask(self, mode: str) -> tuple[int, str]:
        body = json.dumps({"namespace": NAMESPACE, "question": QUESTION}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/v1/query/{mode}",
            data=body,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.KEY}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=300) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait()
        self.log.close()


class Queries(threading.Thread):
    """Every mode in turn against the namespace, over HTTP, until stopped; counts answers, 5xx, other
    failures and mixed versions."""

    def __init__(self, server: Server) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.stop = threading.Event()
        self.count = 0
        self.responses_5xx = 0
        self.errors: collections.Counter = collections.Counter()
        self.mixed = 0
        self.by_version: collections.Counter = collections.Counter()

    def run(self) -> None:
        while not self.stop.is_set():
            for mode in MODES:
                try:
                    status, text = self.server.ask(mode)
                except OSError as e:
                    status, text = 0, type(e).__name__
                self.count += 1
                if status >= 500:
                    self.responses_5xx += 1
                if status != 200:
                    self.errors[f"{mode}: {status or text}"] += 1
                    continue
                seen = [v for v, signer in SIGNERS.items() if signer in text]
                self.mixed += len(seen) > 1
                self.by_version["+".join(seen) or "neither"] += 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=6)  # its 5 draws reach all five kinds of event
    parser.add_argument("--docs", type=int, default=12)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="bench_chaos_"))
    started = time.monotonic()
    try:
        home = work / "dagster"
        home.mkdir()
        shutil.copyfile(ROOT / "dagster.yaml", home / "dagster.yaml")
        env = {"DAGSTER_HOME": str(home)}
        log = work / "index.log"
        storage, folder, shadow = work / "storage", work / "input", work / "shadow"
        write_corpus(folder, args.docs, "A")
        for root in (storage, shadow):
            if index(root, folder, env, None, log) != 0:
                raise RuntimeError(f"the first index failed; see {log}")
        server = Server(storage, work)
        queries = Queries(server)
        queries.start()
        kills = orphaned = lost = extra = 0
        lost_by_table: collections.Counter = collections.Counter()
        events = []
        version = "A"
        for _ in range(args.runs):
            version = "B" if version == "A" else "A"
            write_corpus(folder, args.docs, version)
            stage = rng.choice(sorted(EVENTS))
            kill_at = f"{stage}:{rng.randint(1, EVENTS[stage])}"
            token = uuid.uuid4().hex
            code = index(storage, folder, {**env, "CHAOS_TOKEN": token}, kill_at, log)
            killed = code == -signal.SIGKILL
            kills += killed
            left = orphans(token)
            _, alive = psutil.wait_procs(left, timeout=ORPHAN_WAIT_S)
            orphaned += len(alive)
            for p in alive:  # this bench's own leftovers only
                p.kill()
            rerun = index(storage, folder, env, None, log)
            if index(shadow, folder, env, None, log) != 0:
                raise RuntimeError(f"the shadow re-index failed; see {log}")
            got, want = tables(storage / NAMESPACE), tables(shadow / NAMESPACE)
            for name in set(got) | set(want):
                g, w = got.get(name, collections.Counter()), want.get(name, collections.Counter())
                lost_by_table[name] += sum((w - g).values())
                extra += sum((g - w).values())
            lost = sum(lost_by_table.values())
            events.append({"kill_at": kill_at, "killed": killed, "rerun_exit": rerun, "orphans": len(alive)})
        queries.stop.set()
        queries.join()
        server.stop()
        print(
            json.dumps(
                {
                    "runs": args.runs,
                    "kills": kills,
                    "queries": queries.count,
                    "rows_lost": lost,
                    "rows_extra": extra,
                    "rows_lost_by_table": {k: v for k, v in lost_by_table.items() if v},
                    "responses_5xx": queries.responses_5xx,
                    "query_errors": sum(queries.errors.values()) - queries.responses_5xx,
                    "mixed_version_answers": queries.mixed,
                    "orphan_processes": orphaned,
                    "answers_by_version": dict(queries.by_version),
                    "errors_by_mode": dict(queries.errors),
                    "events": events,
                    "seed": args.seed,
                    "docs": args.docs,
                    "wall_s": round(time.monotonic() - started, 1),
                },
                indent=2,
            )
        )
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
