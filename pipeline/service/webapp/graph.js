// An entity's neighbourhood drawn with vis-network (served from the pinned pyvis package at /vendor/),
// with the nodes sized by degree and placed without overlaps by the server (pipeline/ops/graph_layout.py).
import { get } from "./api.js";
import { text } from "./dom.js";

let network = null;
const MIN_SCALE = 0.7;

export async function showEntity(ui, namespace, entity) {
  ui.graphSection.hidden = false;
  text(ui.graphCaption, `Loading the neighbourhood of ${entity}…`);
  let data;
  try {
    data = await get(`/v1/namespaces/${encodeURIComponent(namespace)}/entities/${encodeURIComponent(entity)}/neighbourhood`);
  } catch (error) {
    text(ui.graphCaption, `The graph could not be read: ${error.message}`);
    return;
  }
  const centre = data.nodes.find((n) => n.id === data.centre);
  text(ui.graphCaption, `${centre ? centre.label : entity} and ${data.nodes.length - 1} neighbours, ${data.edges.length} relationships`);
  ui.graph.dataset.nodes = String(data.nodes.length);
  if (typeof vis === "undefined") return;
  // vis-network reads `title` as a tooltip and would render a string as HTML: give it a text node instead.
  const nodes = data.nodes.map((n) => ({ ...n, title: tooltip(`${n.title}\n${n.description || ""}`), borderWidth: n.centre ? 3 : 1 }));
  const edges = data.edges.map((e) => ({ ...e, title: e.title ? tooltip(e.title) : undefined }));
  if (network) network.destroy();
  network = new vis.Network(ui.graph, { nodes: new vis.DataSet(nodes), edges: new vis.DataSet(edges) }, data.options);
  network.once("afterDrawing", () => {
    // Fitting a large neighbourhood would shrink its labels past reading: zoom no further out than this,
    // around the entity (the rest is a drag or a scroll away).
    if (network.getScale() < MIN_SCALE) network.moveTo({ position: network.getPosition(data.centre), scale: MIN_SCALE });
    ui.graph.dataset.drawn = "true";
  });
  network.selectNodes([data.centre]);
  ui.graphSection.scrollIntoView({ block: "nearest" });
}

function tooltip(value) {
  const node = document.createElement("div");
  node.style.whiteSpace = "pre-wrap";
  node.style.maxWidth = "320px";
  node.textContent = value;
  return node;
}
