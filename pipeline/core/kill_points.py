"""A test hook: `PIPELINE_TEST_KILL_AT=<stage>:<n>` makes this process SIGKILL itself the n-th time it
reaches `kill_point(<stage>)`, so a kill test or the chaos bench can stop `pipeline index` at an exact
event (an extraction pack answered, an embedding batch stored, a Parquet file written but not yet
renamed, a Lance commit made but its index not yet rebuilt) instead of guessing with a clock.

With the variable unset (every real run) `kill_point` is one dictionary lookup and does nothing. The
stages are the names passed at the call sites: a task's name (`Engine.run`: `extract_graph`,
`community_report`, ...), `embeddings`, `parquet_write`, `lance_commit`.
"""

from __future__ import annotations

import os
import signal
import threading

ENV = "PIPELINE_TEST_KILL_AT"

_counts: dict[str, int] = {}
_lock = threading.Lock()


def kill_point(stage: str) -> None:
    """SIGKILL this process if `PIPELINE_TEST_KILL_AT` is `<stage>:<n>` and this is the n-th call."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    name, _, nth = spec.rpartition(":")
    if name != stage:
        return
    with _lock:
        _counts[stage] = seen = _counts.get(stage, 0) + 1
    if seen == int(nth):
        os.kill(os.getpid(), signal.SIGKILL)
