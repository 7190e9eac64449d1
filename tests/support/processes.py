"""Running worker processes in a test so that a failing one can never hang the suite."""

from __future__ import annotations

from typing import Any


def run_to_completion(processes: list[Any], timeout: float = 180) -> None:
    """Start the (daemon) processes, wait for each and assert it exited cleanly; whatever is still alive
    after a failure is killed, so a worker blocked on a dead peer is not waited for at exit."""
    for p in processes:
        p.start()
    try:
        for p in processes:
            p.join(timeout=timeout)
            assert p.exitcode == 0, f"{p.name} exited with {p.exitcode}"
    finally:
        for p in processes:
            if p.is_alive():
                p.kill()
                p.join(timeout=30)
