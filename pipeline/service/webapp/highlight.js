// The two levels of a cited place, in text as on a page image: the quoted sentence in a strong mark, the
// rest of its passage lightly shaded. Offsets are the document's characters, as citations carry them.
import { el } from "./dom.js";
import { matchedSentence } from "./hits.js";

// The quoted sentence of citation `c` as document offsets {start, end}, within the passage `view.span`
// of the document window `view`: the quote the server found for it (a result's `quotes`: an offline
// answer's sentence, placed exactly), else the answer's sentence found word for word in the passage,
// else the passage's sentence sharing the most words with it (a model's answer restates). Null: none.
export function quotedSpan(c, view, quotes, sentence) {
  const span = view.span;
  if (!span) return null;
  const inside = (s) => s && s.start >= span.start && s.end <= span.end && s.end > s.start ? s : null;
  const quote = (quotes || []).find((q) => String(q.source) === String(c.id) && q.document_id === c.document_id);
  if (quote && inside({ start: quote.start_char, end: quote.end_char })) return { start: quote.start_char, end: quote.end_char };
  if (!sentence) return null;
  const passage = view.text.slice(span.start - view.window.start, span.end - view.window.start);
  const at = passage.indexOf(sentence);
  if (at >= 0) return { start: span.start + at, end: span.start + at + sentence.length };
  const found = matchedSentence(passage, sentence);
  return found ? inside({ start: span.start + found.start, end: span.start + found.end }) : null;
}

// `text` (the document's characters from `at`) with the passage [passage.start, passage.end) shaded and
// the sentence [sentence.start, sentence.end) inside it strongly marked; either may be null.
export function twoLevel(text, at, passage, sentence) {
  const out = document.createDocumentFragment();
  const end = at + text.length;
  const clip = (s) => s && s.start < end && s.end > at ? { start: Math.max(s.start, at), end: Math.min(s.end, end) } : null;
  const shaded = clip(passage);
  const lit = clip(sentence);
  const piece = (lo, hi) => text.slice(lo - at, hi - at);
  if (!shaded) {
    if (!lit) { out.append(text); return out; }
    out.append(piece(at, lit.start), el("mark", { class: "quoted" }, piece(lit.start, lit.end)), piece(lit.end, end));
    return out;
  }
  const lo = lit ? Math.max(lit.start, shaded.start) : null;
  const hi = lit ? Math.min(lit.end, shaded.end) : null;
  // With no sentence in it, the passage is itself what is pointed at: a mark, lightly shaded all the same.
  const inner = el(lit && lo < hi ? "span" : "mark", { class: "span" });
  if (lit && lo < hi) inner.append(piece(shaded.start, lo), el("mark", { class: "quoted" }, piece(lo, hi)), piece(hi, shaded.end));
  else inner.append(piece(shaded.start, shaded.end));
  out.append(piece(at, shaded.start), inner, piece(shaded.end, end));
  return out;
}
