"""The graph page's embedded data cannot end or reopen its script element, whatever the entity names:
an entity named `<!--<script` (from a corpus or a model) once switched the HTML parser into the
script's escaped state, so the page's own `</script>` no longer closed it and the graph never drew."""

from __future__ import annotations

import json
import re

from pipeline.ops.graph_view import graph_html

NAMES = ["<!--<script", "</script><b>x</b>", "Tom & Jerry", "a > b", "\u2028line\u2029"]


def embedded(page: str) -> str:
    found = re.search(r"^const data = (.*);$", page, flags=re.MULTILINE)
    assert found, "the page has no data line"
    return found.group(1)


def test_names_with_markup_are_escaped_and_parse_back() -> None:
    data = {
        "nodes": [
            {"id": str(i), "label": name, "aliases": [name.upper()], "community": 1, "value": 1.0}
            for i, name in enumerate(NAMES)
        ],
        "edges": [{"from": "0", "to": "1", "title": "<!-- & -->"}],
    }
    page = graph_html(data, "ns: entity graph")
    text = embedded(page)
    for raw in ("<", ">", "&", "\u2028", "\u2029"):
        assert raw not in text, raw
    assert "\\u003c!--\\u003cscript" in text
    assert json.loads(text) == data
    # from the data on, the first "</script" is the page's last, and no comment opens
    start = page.index("const data = ")
    assert page.lower().index("</script", start) == page.rindex("</script></body></html>")
    assert "<!--" not in page[start:]
