"""Write the generated pages: docs/configuration.md from the settings model and docs/component.md from the
GraphRAGIndex component's model: `python docs/gen_config.py` (or `make config-docs`).

The pages are committed; tests/test_docs.py and tests/test_component_docs.py fail when one differs from
what its model renders now, so a new setting or field is documented by running this script."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assets.component_reference import render as component_page  # noqa: E402
from pipeline.settings.reference import render as configuration_page  # noqa: E402

PAGES = {
    ROOT / "docs" / "configuration.md": configuration_page,
    ROOT / "docs" / "component.md": component_page,
}

if __name__ == "__main__":
    for page, render in PAGES.items():
        page.write_text(render(), encoding="utf-8")
        print(f"wrote {page.relative_to(ROOT)}")
