"""What the test machine's CPU can do, read here rather than through the code under test, so that a test
can check the code's own detection against it and skip by a named reason instead of returning early."""

from __future__ import annotations

import re
from pathlib import Path

# The x86 flags of hardware bf16 matrix products (AVX-512 BF16: AMD Zen 4+, Intel Cooper Lake; AMX:
# Intel Sapphire Rapids+): the instructions the embedder's bf16 path needs to beat fp32.
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The flags every processor in /proc/cpuinfo lists (empty where the file is missing: not Linux)."""
    try:
        text = cpuinfo.read_text(encoding="ascii", errors="replace")
    except OSError:
        return frozenset()
    per_cpu = [set(m.split()) for m in re.findall(r"^flags\s*:(.*)$", text, flags=re.MULTILINE)]
    return frozenset(set.intersection(*per_cpu)) if per_cpu else frozenset()


def cpu_has_bf16() -> bool:
    """Whether this CPU multiplies bf16 in hardware (one of BF16_FLAGS on every processor)."""
    return bool(cpu_flags() & BF16_FLAGS)
