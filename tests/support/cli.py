"""The pipeline's CLI (`python -m assets`) run as a child process, as a person runs it."""

from __future__ import annotations

import subprocess
import sys

from tests.support.processes import REPO_ROOT


def run_cli(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`python -m assets *args` with `env`, its output captured (`timeout` guards against a hang only)."""
    return subprocess.run(
        [sys.executable, "-m", "assets", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=timeout,
    )
