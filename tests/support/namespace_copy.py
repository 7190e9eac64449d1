"""Copies of a namespace folder as the disk holds it (hard links kept)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def copy_namespace(src: Path, dst: Path) -> None:
    """Copy a namespace folder keeping its hard links: a committed index version's frozen files are hard
    links to the tables, so damage to one is damage to both, as on the real disk."""
    seen: dict[tuple[int, int], Path] = {}
    for path in sorted(src.rglob("*")):
        target = dst / path.relative_to(src)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        st = path.stat()
        first = seen.get((st.st_dev, st.st_ino))
        if first is not None:
            os.link(first, target)
        else:
            shutil.copy2(path, target)
            seen[(st.st_dev, st.st_ino)] = target
