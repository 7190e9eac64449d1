"""A small JSON record in a local file, written whole or not at all and read as None when absent or cut.

The service's upload records (`pipeline.service.uploads`) and a `pipeline index --record` run's result
(`assets.run_record`) are read by another process while they may be written: each is written aside and
renamed, so a reader sees the old record or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    aside = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    aside.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
    os.replace(aside, path)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
