// How an answer was reached, as structure: the mode asked and the one that answered with auto's reason
// (and its router), and DRIFT's search tree, each step's question nested under the step it came from.
import { el } from "./dom.js";
import { markdownBlock, withoutCitations } from "./markdown.js";

export function routeView(data) {
  const top = data.mode === data.route ? `Mode ${data.route}` : `${data.mode} → ${data.route}`;
  const details = data.reason ? el("ul", {}, el("li", { class: "why" }, `why: ${data.reason}`)) : null;
  return el("ul", { class: "route-tree" }, el("li", {}, el("span", { class: "route-mode" }, top), details));
}

// What done's result adds to the route: auto's router, DRIFT's tree.
export function routeDetails(box, result) {
  if (!result) return;
  if (result.router) {
    const item = box.querySelector(".route-tree > li");
    let list = item && item.querySelector("ul");
    if (item && !list) item.append((list = el("ul")));
    if (list) list.append(el("li", { class: "router" }, `router: ${result.router}`));
  }
  const inner = result.route && result.result ? result.result : result;
  if (inner.tree) box.append(driftTree(inner));
}

function driftTree(result) {
  const nodes = new Map((result.nodes || []).map((n) => [n.id, n]));
  const count = (t) => 1 + (t.children || []).reduce((n, c) => n + count(c), 0);
  const step = (t) => {
    const node = nodes.get(t.id) || {};
    const facts = [t.status, typeof t.score === "number" ? `score ${t.score}` : null].filter(Boolean).join(" · ");
    const found = node.answer ? el("details", { class: "step-answer" }, el("summary", {}, "what it found"), markdownBlock(node.answer)) : null;
    const children = (t.children || []).length ? el("ul", {}, t.children.map(step)) : null;
    return el("li", { "data-step": t.id, "data-status": t.status || "" },
      el("span", { class: "step-question" }, withoutCitations(t.question)), " ", el("span", { class: "step-facts" }, facts), found, children);
  };
  return el("details", { class: "drift-tree", open: true },
    el("summary", {}, `DRIFT search: ${count(result.tree)} steps`),
    el("ul", { class: "tree" }, step(result.tree)));
}
