// The page: sign-in, namespaces with their status, the question, the streamed answer, the document
// view and the namespace's evaluation report. The key lives in this tab's sessionStorage only.
import { ApiError, get, key, post, request, stream } from "./api.js";
import { Answer } from "./answer.js";
import { twoLevel } from "./highlight.js";
import { documentPage } from "./pageview.js";
import { QuerySettings } from "./settings.js";
import { clear, el, pages, text } from "./dom.js";
import { showEntity } from "./graph.js";
import { Conversation } from "./conversation.js";
import { Progress } from "./progress.js";
import { fillEval } from "./eval.js";
import { DocumentsView, offerNewNamespace } from "./documents.js";

const $ = (id) => document.getElementById(id);
const ui = {
  answer: $("answer"), sources: $("sources"), entities: $("entities"), context: $("context").tBodies[0],
  route: $("route"), status: $("answer-status"), hits: $("hits"), graph: $("graph"), graphSection: $("graph-section"),
  graphCaption: $("graph-caption"), showEntity: (entity) => showEntity(ui, $("namespace").value, entity),
  openDocument: (...args) => openDocument(...args),
};
let namespaces = [];
let modes = [];
let running = null; // the AbortController of the query in flight
let estimateAsked = 0;
let noModel = false; // the server said it has no model: no estimate to ask for
let settings = null; // the chosen mode's settings form (settings.js), once the modes are known
const documentsView = new DocumentsView((...args) => openDocument(...args));
// The namespace's questions and answers, kept in this browser (conversation.js); Regenerate asks again.
const conversation = new Conversation(
  { section: $("conversation-section"), list: $("conversation"), count: $("conversation-count"), clear: $("conversation-clear") },
  ui, { openDocument: (...args) => openDocument(...args), ask: (turn) => ask(null, turn), busy: () => running !== null },
);

// For the browser test and a curious reader: the page's own API calls, with the signed-in key.
window.graphrag = { request, get, post };

function notice(message) {
  const box = $("notice");
  box.hidden = !message;
  text(box, message || "");
}

async function signIn(value) {
  key.set(value);
  try {
    const listed = await get("/v1/namespaces"); // one at a time: each holds one of the key's slots
    const known = await get("/v1/modes");
    namespaces = listed.namespaces;
    modes = known.modes;
    fillModes(known.default);
    settings = new QuerySettings($("mode"), $("settings"), modes, askEstimate);
  } catch (error) {
    key.clear();
    notice(error instanceof ApiError && error.status === 401 ? "That key was not accepted." : `Sign-in failed: ${error.message}`);
    return;
  }
  notice("");
  $("signin").hidden = true;
  $("signed-in").hidden = false;
  text($("who"), `${namespaces.length} namespace${namespaces.length === 1 ? "" : "s"}`);
  $("main").hidden = false;
  fillNamespaces();
  offerNewNamespace(reloadNamespaces);
  $("question").focus();
}

function signOut() {
  if (running) running.abort();
  key.clear();
  location.reload();
}

function fillModes(preferred) {
  const select = clear($("mode"));
  for (const m of modes) select.append(el("option", { value: m.name, title: m.summary }, m.name));
  select.value = preferred;
}

function fillNamespaces(chosen) {
  const select = clear($("namespace"));
  for (const ns of namespaces) {
    const state = ns.error ? ns.error.code : ns.indexed ? "indexed" : "not indexed";
    select.append(el("option", { value: ns.namespace }, `${ns.namespace} (${state})`));
  }
  if (chosen) select.value = chosen;
  showStatus();
}

// A namespace made from the page's "new namespace" form: the key's list read again, the new one chosen.
async function reloadNamespaces(chosen) {
  try { namespaces = (await get("/v1/namespaces")).namespaces; } catch { return; }
  text($("who"), `${namespaces.length} namespace${namespaces.length === 1 ? "" : "s"}`);
  fillNamespaces(chosen);
}

function current() {
  return namespaces.find((n) => n.namespace === $("namespace").value);
}

function showStatus() {
  const ns = current();
  const box = clear($("ns-status"));
  if (!ns) return;
  conversation.open(key.get(), ns.namespace);
  if (ns.error) {
    box.append(ns.error.message);
  } else if (!ns.indexed) {
    box.append("Not indexed yet: pipeline index --namespace ", ns.namespace);
  } else {
    const ready = Object.entries(ns.ready || {}).filter(([, ok]) => ok).map(([m]) => m);
    const last = ns.last_run ? new Date(ns.last_run).toLocaleString() : "unknown";
    box.append(`${ns.tables.length} tables · last run ${last} · method ${ns.method || "not recorded"} · ready: ${ready.join(", ") || "none"}`);
    box.append(el("details", {}, el("summary", {}, "Tables"),
      el("ul", {}, ns.tables.map((t) => el("li", {}, `${t.name} (${t.kind}): ${t.rows ?? "?"} rows`)))));
  }
  documentsView.show(ns.namespace).then(() => loadEval(ns.namespace)); // one read at a time: each holds a key slot
  askEstimate();
}

async function loadEval(namespace) {
  const section = $("eval-section");
  section.hidden = true;
  let data;
  try { data = await get(`/v1/namespaces/${encodeURIComponent(namespace)}/eval`); } catch { return; }
  if (!data.report || !data.report.metrics) return;
  fillEval($("eval"), data.report);
  const count = data.report.questions ?? data.report.n_questions;
  text($("eval-caption"), `pipeline eval on ${namespace}${count !== undefined ? `, ${count} question${count === 1 ? "" : "s"}` : ""}`);
  section.hidden = false;
}

function body() {
  const mode = modes.find((m) => m.name === $("mode").value);
  const field = mode ? mode.question : "question";
  return { ...(settings ? settings.values() : {}), namespace: $("namespace").value, [field]: $("question").value };
}

// With a model configured, what the question would cost, shown before it is sent.
async function askEstimate() {
  const mode = modes.find((m) => m.name === $("mode").value);
  const box = $("estimate");
  text(box, "");
  if (noModel || !mode || !mode.estimate || !$("question").value.trim()) return;
  const asked = ++estimateAsked;
  try {
    const found = await post(`/v1/estimate/${encodeURIComponent(mode.name)}`, body());
    if (asked !== estimateAsked) return;
    if (!found.estimate) { noModel = /no model/.test(found.reason || ""); return; }
    const e = found.estimate;
    const via = e.routed ? ` if routed to ${e.routed}, the dearest` : "";
    text(box, `Estimate: at most ${e.calls} model calls, ${e.prompt_tokens + e.completion_tokens} tokens, $${e.cost_usd.toFixed(4)} (${e.model}${via})`);
  } catch { /* an estimate is a courtesy: the question can still be asked */ }
}

// `again`: a turn of the conversation asked once more (Regenerate), in its own namespace, mode and body;
// otherwise the question typed, a follow-up condensed with the conversation before it (conversation.js).
async function ask(event, again = null) {
  if (event) event.preventDefault();
  if (running || (!again && !$("question").value.trim())) return;
  const namespace = again ? again.namespace : $("namespace").value;
  const mode = again ? again.mode : $("mode").value;
  const answer = new Answer(ui, namespace, openDocument);
  running = new AbortController();
  $("send").disabled = true;
  $("cancel").disabled = false;
  const handlers = {
    route: (d) => answer.route(d), context: (d) => answer.context(d), delta: (d) => answer.delta(d),
    retract: (d) => answer.retract(d), citation: (d) => answer.citation(d), done: (d) => answer.done(d),
    error: (d) => answer.fail(`${d.code}: ${d.message}`),
  };
  const progress = new Progress($("progress"), mode); // the phase, until the answer's first words
  try {
    const turn = await conversation.begin({ namespace, mode, body: again ? again.body : body(), again, progress, signal: running.signal });
    await stream(mode, turn.body, (kind, data) => {
      progress.hear(kind, data);
      if (handlers[kind]) handlers[kind](data);
      turn.hear(kind, data);
    }, running.signal);
    if (ui.answer.dataset.state === "streaming") answer.fail("The answer stopped before it was complete.");
  } catch (error) {
    if (error.name === "AbortError") answer.fail("Cancelled.", "cancelled");
    else answer.fail(error instanceof ApiError ? `${error.code}: ${error.message}` : `Failed: ${error.message}`);
  } finally {
    progress.stop();
    running = null;
    $("send").disabled = false;
    $("cancel").disabled = true;
  }
}

// The document at the cited passage [start, end): a PDF's page itself (pageview.js), any other file's text,
// the quoted sentence `sentence` ({start, end}, document offsets; null: none) marked, the passage shaded.
async function openDocument(namespace, documentId, start, end, sentence = null) {
  const dialog = $("document");
  const box = clear($("document-text"));
  text($("document-title"), documentId);
  text($("document-where"), "Loading…");
  dialog.showModal();
  let view;
  try {
    view = await get(`/v1/namespaces/${encodeURIComponent(namespace)}/documents/${encodeURIComponent(documentId)}?start=${start}&end=${end}&full=true`);
  } catch (error) {
    text($("document-where"), `The document could not be read: ${error.message}`);
    return;
  }
  text($("document-title"), view.title);
  const cut = view.window.start > 0 || view.window.end < view.length ? ` (characters ${view.window.start}–${view.window.end} of ${view.length})` : "";
  // A file without pages or sections (a .txt) is placed by its characters: the line is never empty.
  const span = view.span ? `characters ${view.span.start}–${view.span.end} of ${view.length}` : "";
  text($("document-where"), [pages(view.page_start, view.page_end), view.section].filter(Boolean).join(" · ") + cut || span);
  if (await documentPage(box, namespace, view, sentence)) return;
  // Page labels where pages start, then the text with the cited span marked.
  const starts = view.pages.filter((p) => p.start > view.window.start).map((p) => p);
  let at = view.window.start;
  const pieces = [];
  for (const p of starts) {
    pieces.push({ lo: at, hi: p.start }, { label: `page ${p.number}` });
    at = p.start;
  }
  pieces.push({ lo: at, hi: view.window.end });
  for (const piece of pieces) {
    if (piece.label) { box.append(el("span", { class: "page-label" }, piece.label)); continue; }
    box.append(twoLevel(view.text.slice(piece.lo - view.window.start, piece.hi - view.window.start), piece.lo, view.span, sentence));
  }
  const mark = box.querySelector("mark") || box.querySelector(".span");
  if (mark) mark.scrollIntoView({ block: "center" });
}

$("signin").addEventListener("submit", (event) => {
  event.preventDefault();
  const value = $("key").value.trim();
  $("key").value = "";
  if (value) signIn(value);
});
$("signout").addEventListener("click", signOut);
$("namespace").addEventListener("change", showStatus);
$("mode").addEventListener("change", askEstimate);
let typing = 0;
$("question").addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(askEstimate, 700); });
$("ask").addEventListener("submit", ask);
$("question").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $("ask").requestSubmit();
  }
});
$("cancel").addEventListener("click", () => running && running.abort());
$("document-close").addEventListener("click", () => $("document").close());
if (key.get()) signIn(key.get());
