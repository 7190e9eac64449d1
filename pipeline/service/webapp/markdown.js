// An answer's Markdown as the reader sees it: markdown-it (vendored, markdown-it.min.js, its licence in
// markdown-it.LICENSE.txt) with HTML disabled and no images, so a `<script>` or `<img>` a model or a
// document wrote shows as those characters. Its citation blocks become marker buttons, and while the
// answer streams nothing half-written shows: an unfinished citation block is held back until it closes,
// an unclosed `**` is closed for the moment.
import { el } from "./dom.js";

const md = window.markdownit({ html: false, linkify: false, typographer: false, breaks: true });
md.disable(["image"]);

// What a model writes for a context section, as the server reads it (service/chat_citations.py).
const SECTION = {
  reports: "reports", report: "reports", entities: "entities", entity: "entities",
  relationships: "relationships", relationship: "relationships", claims: "claims", claim: "claims",
  sources: "sources", source: "sources", communities: "reports", community: "reports",
};
// `[Data: Sources (1, 2)]`, global's `[Community ID: 7]` / `[Communities: 7, 9, +more]`, or `[n]`.
export const CITED = /\[Data:\s*([^\]]*)\]|\[(?:Community IDs?|Communities):\s*([-\d,\s+more]*)\]|\[(\d+)\]/gi;
const PART = /([A-Za-z]+)\s*\(([^)]*)\)/g;
// What may still become a citation block: an opening bracket and only the characters one is made of.
const OPENING = /\[[A-Za-z:\s\d(),;+\-]*$/;
const MAX_BLOCK = 400; // longer than any block: an opening bracket unclosed by then is ordinary text
const TOKEN = /\uE000(\d+)\uE001/g; // a block's place in the text while markdown-it renders it
const HAS_TOKEN = /\uE000\d+\uE001/;

// The rows one block names, as section:id keys in the order written ([n]: the marker n itself).
export function blockKeys(match) {
  if (match[3] !== undefined) return [`#${match[3]}`];
  if (match[2] !== undefined) return (match[2].match(/-?\d+/g) || []).map((n) => `reports:${Number(n)}`);
  const keys = [];
  for (const [, label, ids] of match[1].matchAll(PART)) {
    const section = SECTION[label.toLowerCase()];
    if (section) for (const n of ids.match(/-?\d+/g) || []) keys.push(`${section}:${Number(n)}`);
  }
  return keys;
}

// While streaming, the text without what is not yet readable: a trailing unfinished citation block and
// trailing emphasis stars; an open `**` or code span closed at the end.
export function readable(text) {
  let shown = text;
  const open = shown.lastIndexOf("[");
  if (open >= 0 && shown.length - open <= MAX_BLOCK && OPENING.test(shown.slice(open))) shown = shown.slice(0, open);
  shown = shown.replace(/\*+$/, "");
  for (const [mark, lone] of [["**", /\*\*/g], ["*", /(?<!\*)\*(?!\*)/g], ["`", /`/g]]) {
    // in the last paragraph, without list bullets ("* item"), which are no emphasis
    const paragraph = shown.slice(shown.lastIndexOf("\n\n") + 1).replace(/^\s*\*\s/gm, "");
    const count = (paragraph.match(lone) || []).length;
    if (count % 2 === 0) continue;
    const last = [...shown.matchAll(lone)].pop().index;
    if (!shown.slice(last + mark.length).trim()) shown = shown.slice(0, last);
    else shown = shown.replace(/\s+$/, "") + mark;
  }
  return shown;
}

// `text` as rendered Markdown (a fragment), each citation block ({keys, at}: the rows it names and where
// it starts in `text`) replaced by the nodes `cite(block)` makes of it.
export function renderMarkdown(text, cite) {
  const blocks = [];
  const marked = text.replace(CITED, (...match) => {
    blocks.push({ keys: blockKeys(match), at: match[4] });
    return `\uE000${blocks.length - 1}\uE001`;
  });
  const template = document.createElement("template"); // inert: nothing in it loads or runs
  template.innerHTML = md.render(marked);
  const walker = document.createTreeWalker(template.content, NodeFilter.SHOW_TEXT);
  const found = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) if (HAS_TOKEN.test(node.data)) found.push(node);
  for (const node of found) {
    const out = [];
    let at = 0;
    for (const m of node.data.matchAll(TOKEN)) {
      out.push(node.data.slice(at, m.index));
      out.push(...cite(blocks[Number(m[1])]));
      at = m.index + m[0].length;
    }
    out.push(node.data.slice(at));
    node.replaceWith(...out.filter((n) => n !== ""));
  }
  for (const a of template.content.querySelectorAll("a")) {
    a.rel = "noopener noreferrer";
    a.target = "_blank";
  }
  return template.content;
}

// A Markdown text with its citation blocks left out (a DRIFT step's answer, a report's finding).
export function withoutCitations(text) {
  return String(text || "").replace(CITED, "").replace(/\[Data:[^\]]*$/, "").replace(/[ \t]+([.,;:])/g, "$1");
}

export function markdownBlock(text, attrs = {}) {
  const box = el("div", { class: "md", ...attrs });
  box.append(renderMarkdown(withoutCitations(text), () => []));
  return box;
}
