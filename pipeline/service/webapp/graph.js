// An entity's neighbourhood drawn with vis-network (served from the pinned pyvis package at /vendor/),
// with the nodes sized by degree and placed without overlaps by the server (pipeline/ops/graph_layout.py),
// and explorable (explorer.js): a node expanded (double-click, or Expand in its details) merges its own
// neighbourhood in, around where it stands; nodes are coloured by type; the view keeps every label inside.
import { get } from "./api.js";
import { text } from "./dom.js";
import { Explorer } from "./explorer.js";

let network = null;
let drawn = null; // {namespace, nodes, edges}: the vis DataSets drawn, merged into as nodes are expanded
let explorer = null;
const MIN_SCALE = 0.7;
const MAX_HEIGHT = 1100; // px the canvas may grow to so that a large graph keeps its labels readable

function neighbourhood(namespace, entity) {
  return get(`/v1/namespaces/${encodeURIComponent(namespace)}/entities/${encodeURIComponent(entity)}/neighbourhood`);
}

// vis-network reads `title` as a tooltip and would render a string as HTML: give it a text node instead.
function node(n, explore) {
  return { ...n, title: tooltip(`${n.title}\n${n.description || ""}`), borderWidth: n.centre ? 3 : 1, color: explore.colour(n.type, n.color), hidden: explore.hides(n.type) };
}

export async function showEntity(ui, namespace, entity) {
  ui.graphSection.hidden = false;
  text(ui.graphCaption, `Loading the neighbourhood of ${entity}…`);
  let data;
  try {
    data = await neighbourhood(namespace, entity);
  } catch (error) {
    text(ui.graphCaption, `The graph could not be read: ${error.message}`);
    return;
  }
  explorer = explorer || new Explorer(ui, { expand: (ns, id) => expandEntity(ui, ns, id), draw: (ns, id) => showEntity(ui, ns, id) });
  await explorer.open(namespace); // the namespace's types and their colours, once
  const centre = data.nodes.find((n) => n.id === data.centre);
  ui.graph.dataset.nodes = String(data.nodes.length);
  if (typeof vis === "undefined") return;
  const edges = data.edges.map((e) => ({ ...e, id: `${e.from}>${e.to}`, title: e.title ? tooltip(e.title) : undefined }));
  drawn = { namespace, nodes: new vis.DataSet(data.nodes.map((n) => node(n, explorer))), edges: new vis.DataSet(edges) };
  if (network) network.destroy();
  ui.graph.style.height = "";
  network = new vis.Network(ui.graph, { nodes: drawn.nodes, edges: drawn.edges }, { ...data.options, nodes: { ...(data.options.nodes || {}), widthConstraint: { maximum: 180 } } });
  ui.graph.network = network; // for the browser test: where each node and its label were drawn
  network.on("selectNode", (event) => explorer.details(event.nodes[0]));
  network.on("doubleClick", (event) => { if (event.nodes.length) expandEntity(ui, namespace, event.nodes[0]); });
  network.once("afterDrawing", () => {
    fit(ui);
    ui.graph.dataset.drawn = "true";
  });
  network.selectNodes([data.centre]);
  explorer.attach(drawn.nodes, network);
  explorer.details(data.centre);
  caption(ui, centre ? centre.label : entity);
  ui.graphSection.scrollIntoView({ block: "nearest" });
}

// Entity `entity`'s neighbourhood merged into the graph drawn (laid out around where the entity is).
export async function expandEntity(ui, namespace, entity) {
  if (!drawn || drawn.namespace !== namespace || !network) return showEntity(ui, namespace, entity);
  ui.graph.dataset.expanding = "true";
  let data;
  try {
    data = await neighbourhood(namespace, entity);
  } catch (error) {
    text(ui.graphCaption, `The neighbourhood of ${entity} could not be read: ${error.message}`);
    delete ui.graph.dataset.expanding;
    return;
  }
  const centre = data.nodes.find((n) => n.id === data.centre) || {};
  // Around the entity where it is drawn; one not drawn yet (a search result) beside the graph, not on it.
  const placed = Object.values(network.getPositions());
  const right = Math.max(...placed.map((p) => p.x)) - Math.min(...data.nodes.map((n) => n.x || 0)) + 240;
  const at = drawn.nodes.get(data.centre) ? network.getPositions([data.centre])[data.centre] : null;
  const dx = at ? at.x - (centre.x || 0) : right, dy = at ? at.y - (centre.y || 0) : 0;
  drawn.nodes.add(data.nodes.filter((n) => !drawn.nodes.get(n.id)).map((n) => node({ ...n, centre: false, x: (n.x || 0) + dx, y: (n.y || 0) + dy }, explorer)));
  drawn.edges.update(data.edges.map((e) => ({ ...e, id: `${e.from}>${e.to}`, title: e.title ? tooltip(e.title) : undefined })));
  ui.graph.dataset.nodes = String(drawn.nodes.length);
  explorer.attach(drawn.nodes, network);
  fit(ui);
  network.selectNodes([data.centre]);
  explorer.details(data.centre);
  caption(ui, centre.label || entity);
  delete ui.graph.dataset.expanding;
}

function caption(ui, label) {
  const n = drawn.nodes.length, m = drawn.edges.length;
  text(ui.graphCaption, `Around ${label}: ${n} entities, ${m} relationships. Double-click an entity (or use Expand) to add its neighbours.`);
}

// Everything in view with room for the outermost labels: fit() frames the nodes' boxes, labels included,
// and a tenth more keeps their halo off the edge. A graph too large to read at that scale gets a taller
// canvas (up to MAX_HEIGHT) rather than being cut at the edges.
function fit(ui) {
  network.fit({ animation: false });
  const scale = network.getScale();
  const height = ui.graph.clientHeight;
  if (scale < MIN_SCALE && height < MAX_HEIGHT) {
    ui.graph.style.height = `${Math.min(MAX_HEIGHT, Math.ceil(height * MIN_SCALE / scale))}px`;
    network.setSize("100%", ui.graph.style.height);
    network.redraw();
    network.fit({ animation: false });
  }
  network.moveTo({ scale: network.getScale() * 0.9 });
}

function tooltip(value) {
  const node = document.createElement("div");
  node.style.whiteSpace = "pre-wrap";
  node.style.maxWidth = "320px";
  node.textContent = value;
  return node;
}
