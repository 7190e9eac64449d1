// The questions and answers of a namespace as a conversation that survives a reload: kept in the
// browser's localStorage under the namespace and a short SHA-256 hash of the key (never the key itself),
// at most MAX_TURNS of them, each re-rendered from its stored stream (route, context, done) so that its
// citations still open. A follow-up is asked in context: the earlier turns and it are condensed into a
// standalone question by `POST /v1/condense` (the chat door's call); offline it is asked alone, and the
// turn says so. A turn can be copied as Markdown with its sources, and regenerated (the same body, the
// same mode, its entry replaced).
import { post } from "./api.js";
import { Answer } from "./answer.js";
import { clear, el, pages, text } from "./dom.js";
import { CITED, blockKeys } from "./markdown.js";
import { communityOf } from "./report.js";

const MAX_TURNS = 30; // a namespace's conversation; the oldest go first (and when the storage is full)
const HISTORY = 6; // earlier turns a follow-up is condensed with
const HISTORY_ANSWER = 3000; // characters of each earlier answer sent with them
const PREFIX = "graphrag.conversation.";

// The key as it may appear in a storage key: the first 16 hex digits of its SHA-256. Outside a secure
// context (plain HTTP to another host) SubtleCrypto is absent and a 53-bit string hash stands in.
async function keyHash(value) {
  const bytes = new TextEncoder().encode(value || "");
  if (globalThis.crypto && crypto.subtle) {
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
    return [...digest.slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
  }
  let h1 = 0xdeadbeef, h2 = 0x41c6ce57;
  for (const b of bytes) {
    h1 = Math.imul(h1 ^ b, 2654435761);
    h2 = Math.imul(h2 ^ b, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16).padStart(14, "0");
}

const inner = (result) => (result && result.route && result.result ? result.result : result || {});
const answerOf = (turn) => (turn.done ? String(inner(turn.done.result).answer || "") : "");

// Feed a stored turn to an Answer as the stream fed it.
function replay(answer, turn) {
  if (turn.route) answer.route(turn.route);
  if (turn.context) answer.context(turn.context);
  answer.done(turn.done);
}

// A turn in the list: its citations open it in the answer panel (`open`) instead of loading passages
// into cards of its own, and it asks for no entity chips.
class StoredAnswer extends Answer {
  constructor(ui, namespace, openDocument, open) {
    super(ui, namespace, openDocument);
    this.open = open;
  }

  namedEntities() { return Promise.resolve(); }

  loadAll() {}

  select(marker) { return this.open(marker); }
}

// One question as it streams: what the conversation keeps of it once it is done.
class Recording {
  constructor(conversation, turn) {
    this.conversation = conversation;
    this.turn = turn;
    this.body = turn.body;
  }

  hear(kind, data) {
    if (kind === "route") this.turn.route = data;
    else if (kind === "context") this.turn.context = data; // DRIFT sends one a step: the last is shown
    else if (kind === "done") this.conversation.finish({ ...this.turn, done: data, time: new Date().toISOString() });
  }
}

export class Conversation {
  // ui: the list's elements; main: the answer panel's ui (Answer's); hooks: {openDocument, ask, busy}
  constructor(ui, main, hooks) {
    this.ui = ui;
    this.main = main;
    this.hooks = hooks;
    this.namespace = null;
    this.turns = [];
    this.current = null;
    ui.clear.addEventListener("click", () => this.clear());
  }

  async open(apiKey, namespace) {
    this.prefix = `${PREFIX}${await keyHash(apiKey)}.`;
    this.namespace = namespace;
    this.turns = this.read(namespace);
    this.render();
  }

  read(namespace) {
    try {
      const stored = JSON.parse(localStorage.getItem(this.prefix + namespace) || "[]");
      return Array.isArray(stored) ? stored : [];
    } catch { return []; }
  }

  // The turns written, the oldest dropped while the storage refuses them as too many.
  write(namespace, turns) {
    let kept = turns.slice(-MAX_TURNS);
    for (;;) {
      try {
        if (kept.length) localStorage.setItem(this.prefix + namespace, JSON.stringify(kept));
        else localStorage.removeItem(this.prefix + namespace);
        return kept;
      } catch (error) {
        if (!kept.length) throw error;
        kept = kept.slice(1);
      }
    }
  }

  clear() {
    this.turns = this.write(this.namespace, []);
    this.current = null;
    this.render();
  }

  // The question about to be asked: a follow-up condensed with the turns before it (or asked alone, with
  // the reason); `again` (a stored turn) is asked once more exactly as it was.
  async begin({ namespace, mode, body, again, progress, signal }) {
    if (again) return new Recording(this, { ...again, regenerated: (again.regenerated || 0) + 1 });
    const field = "question" in body ? "question" : "query";
    const typed = String(body[field] || "");
    const turn = {
      id: `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`,
      namespace, mode, question: typed, asked: typed, body, note: null, regenerated: 0,
    };
    const earlier = namespace === this.namespace ? this.turns.slice(-HISTORY) : [];
    if (earlier.length) {
      progress.hear("condense");
      try {
        const history = earlier.map((t) => ({ question: t.asked.slice(0, 4000), answer: answerOf(t).slice(0, HISTORY_ANSWER) }));
        const found = await post("/v1/condense", { namespace, history, question: typed }, signal);
        if (found.condensed) {
          turn.asked = found.question;
          turn.body = { ...body, [field]: found.question };
        } else turn.note = `${found.reason.charAt(0).toUpperCase()}${found.reason.slice(1)}.`;
      } catch (error) {
        if (error.name === "AbortError") throw error;
        turn.note = `The follow-up could not be read with the conversation (${error.message}), so it was asked alone.`;
      }
    }
    return new Recording(this, turn);
  }

  finish(turn) {
    const turns = turn.namespace === this.namespace ? this.turns : this.read(turn.namespace);
    const at = turns.findIndex((t) => t.id === turn.id);
    if (at >= 0) turns[at] = turn; // regenerated: in its place
    else turns.push(turn);
    const kept = this.write(turn.namespace, turns);
    if (turn.namespace !== this.namespace) return;
    this.turns = kept;
    this.current = turn.id;
    this.render();
  }

  render() {
    const list = clear(this.ui.list);
    for (const turn of this.turns) list.append(this.entry(turn));
    const n = this.turns.length;
    text(this.ui.count, n ? `${n} question${n === 1 ? "" : "s"}, kept in this browser` : "");
    this.ui.section.hidden = !n;
    this.ui.clear.disabled = !n;
  }

  entry(turn) {
    const when = turn.time ? new Date(turn.time) : null;
    const box = {
      answer: el("div", { class: "answer turn-answer" }), route: el("div", { class: "route turn-route" }),
      status: el("p", { class: "status-line turn-status" }), hits: el("ol", { class: "hits turn-hits", hidden: true }),
      sources: el("ol"), entities: el("div"), context: el("tbody"), showEntity: this.main.showEntity,
    };
    const item = el("li", { class: "turn", "data-id": turn.id, "data-mode": turn.mode, "data-current": String(turn.id === this.current) },
      el("div", { class: "turn-head" },
        el("h3", { class: "turn-question" }, turn.question),
        el("p", { class: "turn-meta" }, `${turn.mode} search`, when ? " · " : "",
          when ? el("time", { datetime: turn.time }, when.toLocaleString()) : "",
          turn.regenerated ? ` · regenerated ${turn.regenerated}×` : "")),
      turn.asked !== turn.question ? el("p", { class: "turn-asked" }, "Asked as: ", el("q", {}, turn.asked)) : "",
      turn.note ? el("p", { class: "turn-note", role: "note" }, turn.note) : "",
      box.route, box.answer, box.hits, box.status);
    const copy = el("button", { type: "button", class: "secondary copy", onclick: () => this.copy(turn, copy, item) }, "Copy as Markdown");
    item.append(el("div", { class: "row turn-tools" }, copy,
      el("button", { type: "button", class: "secondary regenerate", onclick: () => this.regenerate(turn) }, "Regenerate"),
      el("button", { type: "button", class: "secondary show", onclick: () => this.show(turn) }, "Show with its sources")));
    try {
      replay(new StoredAnswer(box, turn.namespace, this.hooks.openDocument, (m) => this.show(turn, m)), turn);
    } catch (error) {
      text(box.status, `This answer could not be shown again: ${error.message}`);
    }
    return item;
  }

  // The turn in the answer panel, as when it was answered, with source `marker` opened.
  show(turn, marker) {
    if (this.hooks.busy()) return;
    const answer = new Answer(this.main, turn.namespace, this.hooks.openDocument);
    replay(answer, turn);
    this.current = turn.id;
    for (const li of this.ui.list.children) li.dataset.current = String(li.dataset.id === turn.id);
    if (marker !== undefined) answer.select(marker);
    else this.main.answer.scrollIntoView({ block: "nearest" });
  }

  regenerate(turn) {
    if (!this.hooks.busy()) this.hooks.ask(turn);
  }

  async copy(turn, button, item) {
    const markdown = markdownOf(turn);
    try {
      await navigator.clipboard.writeText(markdown);
      text(button, "Copied");
    } catch {
      // No clipboard (permission refused, no secure context): the Markdown to select by hand.
      text(button, "Copy as Markdown");
      item.querySelector(".turn-copy")?.remove();
      item.append(el("textarea", { class: "turn-copy", readonly: true, rows: 6, "aria-label": "The answer as Markdown" }, markdown));
    }
    setTimeout(() => text(button, "Copy as Markdown"), 2000);
  }
}

// The turn as Markdown: the question, the answer with its citation blocks as the [n] markers the page
// shows, and the sources as numbered references (document, pages, section).
export function markdownOf(turn) {
  const done = turn.done || {};
  const found = inner(done.result);
  const citations = [...(done.citations || [])].sort((a, b) => a.marker - b.marker);
  const byKey = new Map(citations.map((c) => [`${c.section}:${c.id ?? c.community}`, c.marker]));
  const markers = new Set(citations.map((c) => c.marker));
  let answer = answerOf(turn).replace(CITED, (...match) => {
    const cited = [];
    for (const key of blockKeys(match)) {
      const m = key.startsWith("#") ? (markers.has(Number(key.slice(1))) ? Number(key.slice(1)) : undefined) : byKey.get(key);
      if (m !== undefined && !cited.includes(m)) cited.push(m);
    }
    return cited.map((m) => `[${m}]`).join("");
  }).replace(/[ \t]+([.,;:])/g, "$1").trim();
  let sources = citations.map((c) => `${c.marker}. ${sourceLine(c)}`);
  if (Array.isArray(found.hits)) {
    answer = `The passages closest to “${found.query ?? found.question ?? turn.asked}”, best first.`;
    sources = found.hits.map((h, i) => `${i + 1}. ${sourceLine({ ...(h.metadata || {}), ...h })}`);
  }
  const when = turn.time ? ` · ${new Date(turn.time).toLocaleString()}` : "";
  const asked = turn.asked !== turn.question ? `\n\n_Asked as: ${turn.asked}_` : "";
  const out = [`## ${turn.question}`, `_${turn.mode} search${when}_${asked}`, answer || "_No answer._"];
  if (sources.length) out.push(`### Sources\n\n${sources.join("\n")}`);
  return `${out.join("\n\n")}\n`;
}

function sourceLine(c) {
  if (c.document_id || c.document_title) {
    const chars = c.start_char !== undefined && c.start_char !== null ? `characters ${c.start_char}–${c.end_char}` : "";
    return [c.document_title || c.document_id, pages(c.page_start, c.page_end), c.document_section, chars].filter(Boolean).join(", ");
  }
  if (communityOf(c) !== null) return `Community report ${communityOf(c)}${c.title ? `: ${c.title}` : ""}`;
  if (c.source && c.target) return `Relationship: ${c.source} — ${c.target}`;
  if (c.section === "entities" && c.title) return `Entity: ${c.title}`;
  return `${c.section || "source"} ${c.id ?? ""}${c.title ? `: ${c.title}` : ""}`.trim();
}
