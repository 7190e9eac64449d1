"""Parsed documents cached by the file's bytes: an unchanged PDF is not parsed again on re-index.

The key is the sha256 of the bytes, the parser code (every module of this package, so an edited rule
parses again) and the OCR policy (the same scan reads differently with OCR on and off). One SQLite file,
`parse.sqlite`, in the local cache folder beside the LLM and embedding caches (WAL, as they are).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from functools import cache
from pathlib import Path

from pipeline.caches.sqlite_wal import BUSY_TIMEOUT_S, prepare_wal_file
from pipeline.parse.layout import Layout, Parsed

FILE = "parse.sqlite"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS parsed (key TEXT PRIMARY KEY, format TEXT, title TEXT, text TEXT, "
    "layout TEXT, warnings TEXT)"
)


@cache
def code_version() -> str:
    digest = hashlib.sha256()
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def parse_key(data: bytes, fmt: str, policy_key: str) -> str:
    return hashlib.sha256(data).hexdigest() + f":{fmt}:{policy_key}:{code_version()}"


class ParseCache:
    def __init__(self, folder: str | Path) -> None:
        self.path = Path(folder) / FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        prepare_wal_file(self.path, _SCHEMA)
        self.hits = 0
        self.misses = 0

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)

    def get(self, key: str) -> Parsed | None:
        with self._connect() as conn:
            row = conn.execute(
                "SELECT format, title, text, layout, warnings FROM parsed WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        fmt, title, text, layout, warnings = row
        return Parsed(
            text, Layout.from_json(layout) or Layout(), fmt, title, [tuple(w) for w in json.loads(warnings)]
        )

    def put(self, key: str, parsed: Parsed) -> None:
        with self._connect() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO parsed VALUES (?, ?, ?, ?, ?, ?)",
                (
                    key,
                    parsed.format,
                    parsed.title,
                    parsed.text,
                    parsed.layout.to_json(),
                    json.dumps(parsed.warnings),
                ),
            )
