"""Write docs/component.md from the GraphRAGIndex component's model: `python docs/gen_component.py` (or
`make config-docs`). The page is committed; tests/test_component_docs.py fails when it is stale."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assets.component_reference import render  # noqa: E402

PAGE = ROOT / "docs" / "component.md"

if __name__ == "__main__":
    PAGE.write_text(render(), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
