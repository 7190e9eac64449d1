"""The graph as one self-contained HTML page a person opens in a browser, offline.

Rules:
1. Nodes are entities, coloured by their top-level (level 0) community; an entity outside every
   community is grey.
2. A node's size is bounded and grows with its degree (`graph_layout.node_sizes`); its place comes from
   a seeded spring layout with no two discs overlapping (`graph_layout.layout`), so the page draws a
   settled picture instead of running physics (above `MAX_LAID_OUT` nodes the page's physics places
   them, overlap avoidance on). Labels are drawn at one legible size with a halo.
3. Edges are relationships, thicker with weight. Communities are ranked by their report rank when
   reports exist (what the index found central), else by size: the first gets the palette's first colour.
4. A search box finds an entity by title or alias (case-insensitive, substring) and focuses it.
5. Nothing is loaded from the network: vis-network's script and stylesheet are inlined from the pyvis
   wheel's package data (the package is found, never imported: its module imports IPython).
"""

from __future__ import annotations

import html
import importlib.util
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from pipeline.ops.graph_layout import LABEL_PX, layout, node_sizes

VIS_VERSION = "vis-9.1.2"
PALETTE = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#2ca02c",
]  # fmt: skip
GREY = "#cccccc"


def vis_network_files() -> tuple[str, str]:
    """vis-network's minified script and its stylesheet, from the installed pyvis package."""
    spec = importlib.util.find_spec("pyvis")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("pyvis is not installed: it ships the vis-network script the page inlines")
    lib = Path(next(iter(spec.submodule_search_locations))) / "lib" / VIS_VERSION
    return (lib / "vis-network.min.js").read_text("utf-8"), (lib / "vis-network.css").read_text("utf-8")


def _script_safe(text: str) -> str:
    """Only "</script" ends a script element early; other "</" may be code (the regex `/</`)."""
    return re.sub(r"</(script)", r"<\\/\1", text, flags=re.IGNORECASE)


# Inside a JSON string these characters can only be escaped, and escaped they mean the same: no entity
# name can then close the script ("</script"), open an HTML comment ("<!--") that swallows the page's
# own "</script>", or be read as an entity. U+2028/2029 end a line in older JavaScript string literals.
_JSON_IN_SCRIPT = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def _json_in_script(data: Mapping[str, Any]) -> str:
    """The data as JSON that is safe inside a <script> element (json.loads reads it back unchanged)."""
    return json.dumps(data).translate(_JSON_IN_SCRIPT)


def graph_data(
    entities: pa.Table,
    relationships: pa.Table,
    communities: pa.Table,
    ranks: Mapping[int, float] | None = None,
) -> dict[str, Any]:
    """The nodes and edges of the page (rules 1-3), as vis-network's DataSet rows."""
    top = [c for c in communities.to_pylist() if c["level"] == 0]
    order = sorted(top, key=lambda c: (-(ranks or {}).get(c["community"], 0.0), -c["size"], c["community"]))
    colour = {c["community"]: PALETTE[i % len(PALETTE)] for i, c in enumerate(order)}
    of_entity = {e: c["community"] for c in top for e in c["entity_ids"] or []}
    rows = entities.select(["id", "title", "type", "degree", "aliases"]).to_pylist()
    edges = [
        {"from": r["source_id"], "to": r["target_id"], "value": float(r["weight"] or 1.0)}
        for r in relationships.select(["source_id", "target_id", "weight"]).to_pylist()
    ]
    nodes = []
    for e in rows:
        community = of_entity.get(e["id"])
        nodes.append(
            {
                "id": e["id"],
                "label": e["title"],
                "aliases": e["aliases"] or [],
                "title": f"{e['title']} ({e['type']}), community {community if community is not None else '-'}",
                "color": colour.get(community, GREY),
                "community": community,
                "degree": int(e["degree"] or 0),
            }
        )
    return {"nodes": placed(nodes, edges), "edges": edges}


def placed(nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`nodes` (each with a `degree`) with their `size` and, when laid out here, `x` and `y` (rule 2)."""
    sizes = node_sizes({n["id"]: n["degree"] for n in nodes})
    labels = {n["id"]: str(n.get("label") or "") for n in nodes}
    where = layout([n["id"] for n in nodes], ((e["from"], e["to"]) for e in edges), sizes, labels=labels)
    out = []
    for n in nodes:
        node = {**n, "size": sizes[n["id"]]}
        if where is not None:
            node["x"], node["y"] = where[n["id"]]
        out.append(node)
    return out


# What the graph page and the web app's graph view draw with (vis-network options): fixed sizes (no
# value scaling), one label size with a white halo, and, for a graph the layout did not place, physics
# that keeps discs apart (`avoidOverlap`) and stops once settled.
VIS_OPTIONS: dict[str, Any] = {
    "nodes": {
        "shape": "dot",
        "borderWidth": 1,
        "font": {"size": LABEL_PX, "face": "sans-serif", "strokeWidth": 4, "strokeColor": "#ffffff"},
    },
    "edges": {"color": {"opacity": 0.35}, "scaling": {"min": 1, "max": 6}, "smooth": False},
    "interaction": {"hover": True, "keyboard": True, "navigationButtons": False},
    "physics": {
        "solver": "barnesHut",
        "barnesHut": {"gravitationalConstant": -8000, "springLength": 140, "avoidOverlap": 1},
        "stabilization": {"iterations": 300},
    },
}


def vis_options(data: Mapping[str, Any]) -> dict[str, Any]:
    """VIS_OPTIONS for `data`: physics off when every node has its place already."""
    laid_out = bool(data["nodes"]) and all("x" in n for n in data["nodes"])
    return {**VIS_OPTIONS, "physics": False} if laid_out else VIS_OPTIONS


def graph_html(data: Mapping[str, Any], title: str) -> str:
    """The whole page (module docstring) for `graph_data`'s nodes and edges."""
    script, style = vis_network_files()
    return _PAGE.format(
        title=html.escape(title),
        style=style,
        script=_script_safe(script),
        data=_json_in_script(data),
        options=_json_in_script(vis_options(data)),
        nodes=len(data["nodes"]),
        edges=len(data["edges"]),
    )


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>{style}</style>
<style>body{{font-family:sans-serif;margin:0}} #bar{{padding:8px;border-bottom:1px solid #ddd}}
#graph{{width:100%;height:calc(100vh - 50px)}} #found{{margin-left:12px;font-weight:bold}}</style>
</head><body>
<div id="bar"><strong>{title}</strong> &middot; {nodes} entities, {edges} relationships &middot;
<input id="search" placeholder="find an entity" size="30"> <span id="found"></span></div>
<div id="graph"></div>
<script>{script}</script>
<script>
const data = {data};
const nodes = new vis.DataSet(data.nodes);
const network = new vis.Network(document.getElementById("graph"),
  {{nodes: nodes, edges: new vis.DataSet(data.edges)}},
  {options});
document.getElementById("search").addEventListener("input", (event) => {{
  const q = event.target.value.trim().toLowerCase();
  const hit = q ? data.nodes.find((n) => [n.label, ...n.aliases].some((s) => s.toLowerCase().includes(q))) : null;
  document.getElementById("found").textContent = hit ? hit.label + " (community " + hit.community + ")" : (q ? "not found" : "");
  if (hit) {{ network.selectNodes([hit.id]); network.focus(hit.id, {{scale: 1.5}}); }}
}});
</script></body></html>
"""
