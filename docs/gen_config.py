"""Write docs/configuration.md from the settings model: `python docs/gen_config.py` (or `make docs`).

The page is committed; tests/test_docs.py fails when it differs from what the model renders now, so a new
setting is documented by running this script."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.settings.reference import render  # noqa: E402

PAGE = ROOT / "docs" / "configuration.md"

if __name__ == "__main__":
    PAGE.write_text(render(), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
