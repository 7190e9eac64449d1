// The graph view's tools (graph.js draws): a search of the namespace's entities by name (a result is
// drawn, or merged into the graph drawn), a legend of the entity types drawn with their colours whose
// boxes filter them, and a details panel for the selected entity: its type, degree, description and the
// passages it was extracted from, each opening the document view there. Everything goes in as text.
import { get } from "./api.js";
import { clear, el, pages, text } from "./dom.js";

const $ = (id) => document.getElementById(id);
const typeOf = (n) => n.type || "unknown";
const RESULTS = 12;

export class Explorer {
  // hooks: {expand(namespace, id), draw(namespace, id)}
  constructor(ui, hooks) {
    this.ui = ui;
    this.hooks = hooks;
    this.namespace = null;
    this.types = new Map(); // type -> {type, count, color}, the namespace's, from the search endpoint
    this.hidden = new Set(); // types unchecked in the legend
    this.nodes = null;
    this.network = null;
    this.asked = 0;
    this.box = {
      form: $("entity-search-form"), query: $("entity-search"), results: $("entity-results"),
      legend: $("graph-legend"), types: $("graph-types"), details: $("entity-details"),
    };
    this.box.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.search(this.box.query.value);
    });
  }

  path(rest = "") {
    return `/v1/namespaces/${encodeURIComponent(this.namespace)}/entities${rest}`;
  }

  async open(namespace) {
    if (namespace === this.namespace) return;
    this.namespace = namespace;
    this.hidden.clear();
    this.types = new Map();
    clear(this.box.results).hidden = true;
    this.box.details.hidden = true;
    try {
      const found = await get(this.path("?limit=1"));
      for (const t of found.types) this.types.set(t.type, t);
    } catch { /* without the types, nodes keep the colours the server gave them */ }
  }

  colour(type, fallback) {
    const found = this.types.get(type || "unknown");
    return found ? found.color : fallback;
  }

  hides(type) {
    return this.hidden.has(type || "unknown");
  }

  attach(nodes, network) {
    this.nodes = nodes;
    this.network = network;
    this.legend();
  }

  // The types drawn, the most frequent first, each with its colour and a box that shows or hides it.
  legend() {
    const counts = new Map();
    for (const n of this.nodes.get()) counts.set(typeOf(n), (counts.get(typeOf(n)) || 0) + 1);
    const list = clear(this.box.types);
    for (const [type, n] of [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))) {
      const swatch = el("span", { class: "swatch", "aria-hidden": "true" });
      swatch.style.background = this.colour(type, "#cccccc");
      const box = el("input", { type: "checkbox", checked: !this.hidden.has(type), onchange: (event) => this.filter(type, event.target.checked) });
      list.append(el("label", { class: "legend-type", "data-type": type }, box, swatch, `${type} (${n})`));
    }
    this.box.legend.hidden = !counts.size;
  }

  filter(type, shown) {
    if (shown) this.hidden.delete(type);
    else this.hidden.add(type);
    this.nodes.update(this.nodes.get({ filter: (n) => typeOf(n) === type }).map((n) => ({ id: n.id, hidden: !shown })));
    this.box.legend.dataset.hidden = [...this.hidden].join(",");
  }

  async search(query) {
    const asked = ++this.asked;
    const list = clear(this.box.results);
    delete list.dataset.ready;
    list.hidden = false;
    let found;
    try {
      found = await get(this.path(`?q=${encodeURIComponent(query.trim().slice(0, 200))}&limit=${RESULTS}`));
    } catch (error) {
      list.append(el("li", { class: "empty" }, `The search failed: ${error.message}`));
      return;
    }
    if (asked !== this.asked) return;
    if (!found.entities.length) list.append(el("li", { class: "empty" }, `No entity is named like “${query}”.`));
    for (const e of found.entities) {
      list.append(el("li", {},
        el("button", { type: "button", class: "link", "data-entity": e.id, onclick: () => this.choose(e.id) }, e.title),
        el("span", { class: "muted" }, ` ${e.type || "unknown"} · degree ${e.degree}`)));
    }
    if (found.total > found.entities.length) list.append(el("li", { class: "empty" }, `and ${found.total - found.entities.length} more`));
    list.dataset.ready = "true";
  }

  // A result chosen: selected where it is drawn already, else its neighbourhood merged in.
  choose(id) {
    if (this.nodes && this.network && this.nodes.get(id)) {
      this.network.selectNodes([id]);
      this.network.focus(id, { scale: Math.max(this.network.getScale(), 1) });
      this.details(id);
    } else this.hooks.expand(this.namespace, id);
  }

  async details(id) {
    const box = this.box.details;
    box.hidden = false;
    box.dataset.entity = id;
    delete box.dataset.ready;
    box.replaceChildren(el("p", { class: "muted" }, "Loading…"));
    let e;
    try {
      e = await get(this.path(`/${encodeURIComponent(id)}`));
    } catch (error) {
      text(box, `The entity could not be read: ${error.message}`);
      return;
    }
    if (box.dataset.entity !== id) return; // another was chosen meanwhile
    const swatch = el("span", { class: "swatch", "aria-hidden": "true" });
    swatch.style.background = this.colour(e.type, "#cccccc");
    const also = e.aliases.length ? ` · also ${e.aliases.join(", ")}` : "";
    box.replaceChildren(
      el("div", { class: "details-head" }, el("h3", {}, e.title),
        el("button", { type: "button", class: "secondary", onclick: () => { box.hidden = true; } }, "Close")),
      el("p", { class: "entity-type" }, swatch, `${e.type || "unknown"} · degree ${e.degree}${also}`),
      el("p", { class: "entity-description" }, e.description || "No description was written for it."),
      el("div", { class: "row" },
        el("button", { type: "button", class: "secondary expand", onclick: () => this.hooks.expand(this.namespace, e.id) }, "Expand: add its neighbours"),
        el("button", { type: "button", class: "secondary redraw", onclick: () => this.hooks.draw(this.namespace, e.id) }, "Start again from it")),
      el("h4", {}, e.passages_total ? `The passages it comes from (${e.passages_total})` : "No passage is recorded for it"),
      el("ol", { class: "report-passages entity-passages" }, e.passages.map((p) => el("li", {},
        el("button", {
          type: "button", class: "link",
          onclick: () => this.ui.openDocument(this.namespace, p.document_id, p.start_char, p.end_char),
        }, [p.document_title, pages(p.page_start, p.page_end), p.section].filter(Boolean).join(" · ")),
        el("span", { class: "snippet" }, p.text)))));
    box.dataset.ready = "true";
  }
}
