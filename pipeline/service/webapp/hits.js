// What `vector` and `chunks` find (no written answer: the hits of their `done`), as cards: the score, the
// document with its page and section (read for each hit, one request at a time, as the source cards are),
// and the passage with the sentence that best matches the query marked.
import { get } from "./api.js";
import { el, marked, pages, text } from "./dom.js";

const STOP = new Set("a an and are as at be by for from has have how in is it its of on or that the this to was were what when where which who why with".split(" "));

function hitOf(h) {
  const m = h.metadata || {};
  return {
    id: h.id, score: h.score, text: h.text ?? h.content ?? "",
    document_id: h.document_id ?? m.document_id, document_title: h.document_title ?? m.document_title,
    start_char: h.start_char ?? m.start_char, end_char: h.end_char ?? m.end_char,
  };
}

const words = (s) => (s.toLowerCase().match(/[\p{L}\p{N}]+/gu) || []).filter((w) => w.length > 2 && !STOP.has(w));

// The hit's sentence sharing the most words with the query, as [start, end) of its text (null: none).
export function matchedSentence(passage, query) {
  const wanted = new Set(words(query));
  let best = null;
  for (const m of passage.matchAll(/[^.!?\n]+[.!?]*/g)) {
    const score = words(m[0]).filter((w) => wanted.has(w)).length;
    if (score > 0 && (!best || score > best.score)) best = { score, start: m.index, end: m.index + m[0].length };
  }
  if (!best) return null;
  const lead = passage.slice(best.start, best.end).search(/\S/);
  return { start: best.start + Math.max(0, lead), end: best.end };
}

function where(h) {
  const parts = [pages(h.page_start, h.page_end), h.section];
  if (h.start_char !== undefined && h.start_char !== null) parts.push(`characters ${h.start_char}–${h.end_char}`);
  return parts.filter(Boolean).join(" · ");
}

// The hits of `result` as cards in `list`; then each card's page and section.
export async function showHits(list, namespace, query, result, openDocument) {
  const hits = (result.hits || []).map(hitOf);
  const cards = hits.map((h, i) => {
    const found = matchedSentence(h.text, query);
    const passage = el("blockquote", { class: "passage" });
    passage.append(found ? marked(h.text, found.start, found.end, el("mark")) : h.text);
    const score = typeof h.score === "number" ? h.score : null;
    const whereLine = el("p", { class: "where" }, where(h));
    const card = el("li", { class: "hit", id: `hit-${i + 1}`, "data-document": h.document_id || "" },
      el("div", { class: "hit-head" },
        el("h3", {}, `${i + 1}. `, h.document_title || h.document_id || h.id),
        score === null ? null : el("span", { class: "score", title: "The mode's own score (higher is closer)" },
          el("meter", { min: 0, max: 1, value: Math.max(0, Math.min(1, score)) }), ` ${score.toFixed(3)}`)),
      whereLine, passage,
      h.document_id ? el("button", {
        type: "button", class: "secondary open-document",
        onclick: () => openDocument(namespace, h.document_id, h.start_char, h.end_char,
          found && h.start_char !== undefined ? { start: h.start_char + found.start, end: h.start_char + found.end } : null),
      }, "Open in the document") : null);
    return { h, card, whereLine };
  });
  list.replaceChildren(...cards.map((c) => c.card));
  list.hidden = !cards.length;
  for (const { h, card, whereLine } of cards) {
    if (h.document_id && h.start_char !== undefined && h.start_char !== null) {
      try {
        const view = await get(`/v1/namespaces/${encodeURIComponent(namespace)}/documents/${encodeURIComponent(h.document_id)}?start=${h.start_char}&end=${h.end_char}`);
        text(whereLine, where({ ...h, page_start: view.page_start, page_end: view.page_end, section: view.section }));
      } catch { /* the card stands with its characters */ }
    }
    card.dataset.loaded = "true";
  }
  list.dataset.ready = "true";
  return hits.length;
}
