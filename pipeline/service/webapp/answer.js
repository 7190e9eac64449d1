// The answer as it streams (rendered Markdown, citation markers inline), its source panel, the context it
// read and its entities; vector and chunks hits as cards; the route and DRIFT's tree as structure. Text
// goes in through dom.js (text nodes) or markdown.js (markdown-it, HTML disabled).
import { get, post } from "./api.js";
import { clear, el, pages, text } from "./dom.js";
import { showHits } from "./hits.js";
import { CITED, readable, renderMarkdown } from "./markdown.js";
import { quotedSpan, twoLevel } from "./highlight.js";
import { citedPage } from "./pageview.js";
import { communityOf, showReport } from "./report.js";
import { routeDetails, routeView } from "./route.js";
import { trimmedNote } from "./trimmed.js";

export class Answer {
  constructor(ui, namespace, openDocument) {
    this.ui = ui;
    this.namespace = namespace;
    this.openDocument = openDocument;
    this.text = "";
    this.deltas = 0;
    this.lengths = [];
    this.citations = new Map(); // marker -> citation
    this.quotes = new Map(); // marker -> the answer's sentence that cites it
    this.cards = new Map(); // marker -> its source card
    this.byKey = new Map(); // "section:id" (as an answer's block names a row) -> marker
    clear(ui.answer);
    clear(ui.sources);
    clear(ui.entities);
    delete ui.entities.dataset.ready;
    clear(ui.context);
    clear(ui.route);
    text(ui.status, "");
    if (ui.hits) { clear(ui.hits); ui.hits.hidden = true; delete ui.hits.dataset.ready; }
    this.state("streaming");
    ui.answer.dataset.deltas = "0";
    ui.answer.dataset.lengths = "";
  }

  state(value) {
    this.ui.answer.dataset.state = value;
  }

  route(data) {
    this.ui.route.replaceChildren(routeView(data));
  }

  delta(data) {
    this.text += data.text || "";
    this.deltas += 1;
    this.render();
    // How long the shown answer was after each delta: the browser test reads this to see it grow.
    this.lengths.push(this.shownLength());
    this.ui.answer.dataset.lengths = this.lengths.join(",");
    this.ui.answer.dataset.deltas = String(this.deltas);
  }

  // The shown answer's characters, less the line breaks the Markdown renderer puts around its blocks.
  shownLength() {
    return this.ui.answer.textContent.trim().length;
  }

  // A retried model call wrote otherwise than what was shown: its last `chars` characters are withdrawn.
  retract(data) {
    this.text = this.text.slice(0, Math.max(0, this.text.length - (data.chars || 0)));
    this.render();
    this.lengths.push(this.shownLength());
    this.ui.answer.dataset.lengths = this.lengths.join(",");
  }

  citation(data) {
    if (this.citations.has(data.marker)) return;
    this.citations.set(data.marker, data);
    this.byKey.set(`${data.section}:${data.id}`, data.marker);
    this.render();
    this.addCard(data);
    if (data.section === "entities") this.chip(data.entity_id || data.title, data.title);
  }

  context(data) {
    const rows = data.sources || [];
    const body = clear(this.ui.context);
    for (const row of rows) {
      const kind = row.section || row.kind || (row.document_id ? "passage" : "");
      const what = row.title || row.text || row.description || row.summary || "";
      const score = row.score ?? row.rank ?? row.weight;
      body.append(el("tr", {},
        el("td", {}, kind),
        el("td", {}, row.id ?? row.text_unit_id ?? row.community ?? ""),
        el("td", {}, String(what).slice(0, 300)),
        el("td", { class: "num" }, typeof score === "number" ? score.toFixed(3) : score ?? "")));
      if (kind === "entities" && (row.entity_id || row.title)) this.chip(row.entity_id || row.title, row.title);
    }
  }

  chip(id, label) {
    const key = String(id);
    if ([...this.ui.entities.children].some((c) => c.dataset.entity === key)) return;
    this.ui.entities.append(el("button", {
      type: "button", class: "chip", "data-entity": key, "aria-label": `Show ${label || key} in the graph`,
      onclick: () => this.ui.showEntity(key),
    }, label || key));
  }

  done(data) {
    for (const c of data.citations || []) this.citation(c);
    const inner = data.result ? (data.result.route && data.result.result ? data.result.result : data.result) : {};
    if (typeof inner.answer === "string") this.text = inner.answer; // the answer is done's: the stream stood for it
    this.quoted = inner.quotes || []; // the quoted sentences the server placed in their passages
    this.state("done");
    this.render(); // whole now: nothing held back
    routeDetails(this.ui.route, data.result);
    const usage = data.usage && data.usage.calls ? `, ${data.usage.calls} model calls` : "";
    const time = typeof data.duration_s === "number" ? ` in ${data.duration_s.toFixed(2)} s` : "";
    const hits = Array.isArray(inner.hits) ? inner.hits.length : null;
    const found = hits === null ? "" : `: ${hits} passage${hits === 1 ? "" : "s"} found`;
    text(this.ui.status, `${data.status}${found}${time}${usage}`);
    const note = data.truncated ? trimmedNote(data.result) : "";
    if (note) this.ui.status.append(el("span", { class: "note" }, note));
    if (hits !== null && this.ui.hits) {
      const query = inner.query ?? inner.question ?? "";
      text(this.ui.answer, hits ? `The passages closest to “${query}”, best first:` : `Nothing matched “${query}”.`);
      showHits(this.ui.hits, this.namespace, query, inner, this.openDocument);
      return;
    }
    this.namedEntities().then(() => this.loadAll());
  }

  // Every card's passage, one request at a time (each holds one of the key's slots while it runs).
  async loadAll() {
    for (const [marker, entry] of this.cards) {
      if (!entry.loaded) await this.loadPassage(marker, entry);
    }
  }

  // The entities the answer names (its context may list none, as basic search's does), as chips.
  async namedEntities() {
    if (!this.text.trim()) return;
    try {
      const found = await post(`/v1/namespaces/${encodeURIComponent(this.namespace)}/entities/mentioned`, { text: this.text.slice(0, 20000) });
      for (const e of found.entities) this.chip(e.id, e.title);
    } catch { /* chips are a convenience: the answer stands without them */ }
    this.ui.entities.dataset.ready = "true";
  }

  fail(message, state = "error") {
    text(this.ui.status, message);
    this.state(state);
  }

  // The answer as rendered Markdown, each citation block as the marker buttons of the rows it names.
  // While streaming, a block whose citation has not arrived yet shows the number it will have (rows are
  // numbered in the order the text first names them, as the server numbers them), not yet pressable;
  // once done, a block naming no citation of the answer shows nothing.
  render() {
    const streaming = this.ui.answer.dataset.state === "streaming";
    const shown = streaming ? readable(this.text) : this.text;
    const order = new Map(); // key -> its number in the order first named
    this.ui.answer.replaceChildren(renderMarkdown(shown, (block) => {
      const sentence = lastSentence(shown.slice(0, block.at));
      const out = [];
      for (const key of block.keys) {
        if (!order.has(key)) order.set(key, key.startsWith("#") ? Number(key.slice(1)) : order.size + 1);
        const m = key.startsWith("#") ? (this.citations.has(Number(key.slice(1))) ? Number(key.slice(1)) : undefined) : this.byKey.get(key);
        if (m !== undefined) {
          if (sentence && !this.quotes.has(m)) this.quotes.set(m, sentence);
          if (out.some((b) => b.dataset.marker === String(m))) continue;
          out.push(el("button", {
            type: "button", class: "cite", "data-marker": m, "aria-pressed": "false",
            "aria-label": `Source ${m}`, onclick: () => this.select(m),
          }, `[${m}]`));
        } else if (streaming) {
          out.push(el("button", { type: "button", class: "cite pending", disabled: true, "aria-label": "Source, arriving" }, `[${order.get(key)}]`));
        }
      }
      return out;
    }));
  }

  addCard(c) {
    const head = el("h3", {}, `[${c.marker}] `, c.document_title || c.title || (communityOf(c) !== null ? `Community ${communityOf(c)}` : `${c.section || "source"} ${c.id ?? ""}`));
    const where = el("p", { class: "where" }, describe(c));
    const body = el("div", { class: "passage" }, c.text || c.summary || c.description || cardText(c));
    const card = el("li", { class: "source", id: `source-${c.marker}`, tabindex: "-1", "data-marker": c.marker, "data-section": c.section || "" }, head, where, body);
    this.cards.set(c.marker, { card, head, where, body, loaded: false });
    this.ui.sources.append(card);
  }

  async select(marker) {
    for (const b of this.ui.answer.querySelectorAll(".cite")) b.setAttribute("aria-pressed", String(Number(b.dataset.marker) === marker));
    for (const [m, { card }] of this.cards) card.classList.toggle("selected", m === marker);
    const entry = this.cards.get(marker);
    if (!entry) return;
    entry.card.scrollIntoView({ block: "nearest" });
    entry.card.focus({ preventScroll: true });
    if (!entry.loaded) await this.loadPassage(marker, entry);
  }

  async loadPassage(marker, entry) {
    const c = this.citations.get(marker);
    if (c && communityOf(c) !== null && !c.document_id) {
      entry.loaded = true;
      entry.loaded = await showReport(this.namespace, marker, communityOf(c), entry, this.openDocument);
      if (entry.loaded) entry.card.dataset.loaded = "true";
      return;
    }
    if (!c || !c.document_id || c.start_char === undefined || c.start_char === null) return;
    entry.loaded = true;
    const path = `/v1/namespaces/${encodeURIComponent(this.namespace)}/documents/${encodeURIComponent(c.document_id)}` +
      `?start=${c.start_char}&end=${c.end_char}`;
    let view;
    try {
      view = await get(path);
    } catch (error) {
      text(entry.body, `The passage could not be read: ${error.message}`);
      entry.loaded = false;
      return;
    }
    text(entry.where, describe({ ...c, page_start: view.page_start, page_end: view.page_end, document_section: view.section }));
    const sentence = quotedSpan(c, view, this.quoted, this.quotes.get(marker));
    entry.body.replaceChildren(twoLevel(view.text, view.window.start, view.span, sentence));
    const mark = entry.body.querySelector("mark") || entry.body.querySelector(".span");
    if (mark) entry.body.scrollTop = Math.max(0, mark.offsetTop - 40); // the mark in view, not the page moved
    await citedPage(this.namespace, view, sentence, entry); // a PDF's: the page itself, lit
    entry.card.dataset.loaded = "true";
    entry.card.append(el("button", {
      type: "button", class: "secondary open-document",
      onclick: () => this.openDocument(this.namespace, c.document_id, view.span ? view.span.start : c.start_char, view.span ? view.span.end : c.end_char, sentence),
    }, "Open the whole document here"));
  }
}

function describe(c) {
  const parts = [c.document_title, pages(c.page_start, c.page_end), c.document_section];
  if (c.start_char !== undefined && c.start_char !== null) parts.push(`characters ${c.start_char}–${c.end_char}`);
  if (!c.document_id) parts.push(c.section === "reports" ? "community report" : c.section, c.community !== undefined ? `community ${c.community}` : null);
  return parts.filter(Boolean).join(" · ");
}

// What a citation of a graph row says when its row carries no text: a relationship's two ends.
function cardText(c) {
  if (c.source && c.target) return `${c.source} — ${c.target}`;
  return communityOf(c) !== null ? "Opening the report…" : "";
}

// The sentence just before a citation: the answer's line up to it, without a list bullet.
function lastSentence(before) {
  const line = before.slice(before.lastIndexOf("\n") + 1).replace(CITED, "").replace(/\*\*|__|`/g, "");
  const trimmed = line.replace(/^\s*(?:[-*•]|\d+\.)\s+/, "").trim();
  return trimmed.length >= 12 ? trimmed : "";
}
