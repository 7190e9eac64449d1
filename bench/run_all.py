"""Run every bench/bench_*.py in turn (each prints JSON) and print one JSON object keyed by script; each
bench's run is appended to bench/results/<bench>.json (bench/results_log.py), failures included."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from results_log import append_run  # noqa: E402


def main() -> int:
    results = {}
    only = set(sys.argv[1:])
    for script in sorted(HERE.glob("bench_*.py")):
        if only and script.stem not in only:
            continue
        print(f"running {script.name} ...", file=sys.stderr, flush=True)
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
        try:
            results[script.stem] = json.loads(proc.stdout)
        except json.JSONDecodeError:
            results[script.stem] = {"error": f"exit {proc.returncode}", "stderr_tail": proc.stderr[-2000:]}
        append_run(script.stem, results[script.stem], command=f"bench/run_all.py ({script.name})")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
