// The namespace's documents view: its documents in a table (sortable, filtered by status), and for a key
// that may change them (the list's `writable`) upload by picker or drop, replace, delete (each behind a
// confirmation dialog) and retry; a document's chunks, each opening its passage in the document view;
// the run that takes the changes in, live (runs.js), and the run history. What the key may not do is not
// shown: the server refuses it anyway.
import { ApiError, get, post, request, send } from "./api.js";
import { clear, el, pages, text } from "./dom.js";
import { ENDED, RunProgress, fillHistory, when } from "./runs.js";

const $ = (id) => document.getElementById(id);
const STATUSES = ["queued", "parsing", "indexed", "failed", "deleted"];
const COLUMNS = [
  { key: "name", label: "name" }, { key: "type", label: "type" }, { key: "pages", label: "pages", num: true },
  { key: "size", label: "size", num: true }, { key: "status", label: "status" },
  { key: "last_indexed", label: "last indexed" }, { key: "reason", label: "reason" },
];

function bytes(n) {
  if (n === null || n === undefined) return "–";
  return n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1048576).toFixed(1)} MB`;
}

function refusal(error) {
  if (!(error instanceof ApiError)) return error.message;
  return `${error.message} (${error.code})`;
}

// The confirmation dialog (`#confirm`): resolves {ok, file} when it closes; with `file` it asks for one
// (a replacement) and its OK waits until one is chosen.
function confirmed({ title, message, ok, file = false }) {
  const dialog = $("confirm");
  const input = $("confirm-file");
  text($("confirm-title"), title);
  text($("confirm-text"), message);
  text($("confirm-ok"), ok);
  input.value = "";
  input.required = file;
  $("confirm-file-row").hidden = !file;
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve({ ok: dialog.returnValue === "ok", file: input.files[0] || null }), { once: true });
  });
}

export class DocumentsView {
  constructor(openDocument) {
    this.openDocument = openDocument;
    this.namespace = null;
    this.docs = [];
    this.writable = false;
    this.filter = "all";
    this.sort = { key: "name", dir: 1 };
    this.asked = 0; // the namespace's showing: a late answer for another one is dropped
    this.progress = new RunProgress($("run-progress"), {
      started: () => this.refresh(),
      ended: () => this.refresh().then((ok) => ok && this.loadRuns(true)),
    });
    const input = $("documents-file");
    input.addEventListener("change", () => { this.upload([...input.files]); input.value = ""; });
    const drop = $("documents-drop");
    drop.addEventListener("dragover", (event) => { event.preventDefault(); drop.classList.add("over"); });
    drop.addEventListener("dragleave", () => drop.classList.remove("over"));
    drop.addEventListener("drop", (event) => {
      event.preventDefault();
      drop.classList.remove("over");
      this.upload([...event.dataTransfer.files]);
    });
    $("documents-retry-all").addEventListener("click", () => this.change("POST", "documents/retry", "Every failed document"));
    $("chunks-close").addEventListener("click", () => { $("chunks-panel").hidden = true; });
  }

  path(tail = "") {
    return `/v1/namespaces/${encodeURIComponent(this.namespace)}/${tail}`;
  }

  async show(namespace) {
    const asked = ++this.asked;
    this.namespace = namespace;
    this.progress.hide();
    $("documents-section").hidden = true;
    $("chunks-panel").hidden = true;
    clear($("upload-outcomes"));
    if (await this.refresh(asked)) await this.loadRuns(true, asked);
  }

  // The list read again; false when the section has nothing to show (or another namespace was chosen).
  async refresh(asked = this.asked) {
    let data;
    try { data = await get(this.path("documents")); } catch { return false; }
    if (asked !== this.asked) return false;
    this.docs = data.documents;
    this.writable = data.writable === true;
    this.version = data.index_version;
    const shown = this.docs.length > 0 || this.writable; // an empty namespace is shown to who may fill it
    $("documents-section").hidden = !shown;
    if (shown) this.render();
    return shown;
  }

  // The history; with `follow`, the oldest run still in flight is followed in the progress panel.
  async loadRuns(follow, asked = this.asked) {
    let data;
    try { data = await get(this.path("runs")); } catch { return; }
    if (asked !== this.asked) return;
    $("runs-section").hidden = !data.runs.length;
    fillHistory($("runs"), data.runs);
    const live = data.runs.filter((r) => !ENDED.has(r.status)).at(-1);
    if (follow && live && !this.progress.busy()) this.progress.follow(this.namespace, live.id);
  }

  render() {
    const counts = {};
    for (const d of this.docs) counts[d.status] = (counts[d.status] || 0) + 1;
    const present = STATUSES.filter((s) => counts[s]).concat(Object.keys(counts).filter((s) => !STATUSES.includes(s)));
    if (this.filter !== "all" && !counts[this.filter]) this.filter = "all";
    text($("documents-caption"), [...present.map((s) => `${counts[s]} ${s}`), `index version ${this.version ?? "–"}`].join(" · "));
    clear($("documents-filter")).append(...[["all", this.docs.length], ...present.map((s) => [s, counts[s]])].map(([s, n]) =>
      el("button", {
        type: "button", class: "secondary filter", "data-status": s, "aria-pressed": String(this.filter === s),
        onclick: () => { this.filter = s; this.render(); },
      }, `${s} (${n})`)));
    $("documents-changes").hidden = !this.writable;
    $("documents-retry-all").hidden = !this.writable || !counts.failed;
    this.table();
  }

  table() {
    const table = clear($("documents"));
    const { key, dir } = this.sort;
    table.append(el("thead", {}, el("tr", {}, COLUMNS.map((c) => el("th", {
      scope: "col", class: c.num ? "num" : null, "aria-sort": c.key === key ? (dir > 0 ? "ascending" : "descending") : "none",
    }, el("button", {
      type: "button", class: "sort", "data-key": c.key,
      onclick: () => { this.sort = { key: c.key, dir: c.key === key ? -dir : 1 }; this.table(); },
    }, c.label))), el("th", { scope: "col", "aria-label": "actions" }))));
    const order = (a, b) => {
      const x = a[key] ?? null, y = b[key] ?? null;
      if (x === y) return String(a.name).localeCompare(String(b.name));
      if (x === null) return 1; // an unknown value last, whichever way
      if (y === null) return -1;
      return (typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y))) * dir;
    };
    const rows = this.docs.filter((d) => this.filter === "all" || d.status === this.filter).sort(order);
    // Each cell names its column (`data-label`) for the phone's layout, where a row is a card.
    const cell = (label, value, attrs = {}) => el("td", { "data-label": label, "data-empty": value === "–", ...attrs }, value);
    table.append(el("tbody", {}, rows.map((d) => {
      const gone = d.status === "deleted";
      const reason = gone ? (d.removed ? "removed from the index" : "leaves the index when its run ends") : d.reason ?? "–";
      return el("tr", { "data-status": d.status, "data-id": d.id },
        el("td", { class: "name" }, d.name),
        cell("type", d.type ?? "–"),
        cell("pages", d.pages ?? "–", { class: "num" }),
        cell("size", bytes(d.size), { class: "num" }),
        el("td", {}, el("span", { class: "badge", "data-status": d.status }, d.status)),
        cell("indexed", gone || d.status === "failed" ? "–" : when(d.last_indexed), { class: "when" }),
        cell("reason", reason, { title: d.detail || "" }),
        el("td", { class: "actions" }, this.actions(d)));
    })));
  }

  actions(d) {
    const out = [];
    const button = (label, action, onclick) => el("button", { type: "button", class: "secondary", "data-action": action, "aria-label": `${label} ${d.name}`, onclick }, label);
    if ((d.index_ids || []).length && d.status !== "deleted") out.push(button("Chunks", "chunks", () => this.chunks(d)));
    if (!this.writable || d.status === "deleted") return out;
    if (d.status === "failed") out.push(button("Retry", "retry", () => this.change("POST", `documents/${d.id}/retry`, d.name)));
    out.push(button("Replace", "replace", () => this.replace(d)));
    out.push(button("Delete", "delete", () => this.remove(d)));
    return out;
  }

  // Files from the picker or a drop, sent together; each one's outcome listed as the server gave it.
  async upload(files) {
    if (!files.length || !this.writable) return;
    const list = clear($("upload-outcomes"));
    const form = new FormData();
    for (const file of files) form.append("file", file, file.name);
    list.append(...files.map((f) => el("li", { "data-outcome": "sending" }, el("strong", {}, f.name), ": sending…")));
    let answer;
    try {
      answer = await send("POST", this.path("documents"), form);
    } catch (error) {
      // The server takes a batch whole or not at all: every file of it is refused with the reason.
      const why = `refused, nothing of this batch was added: ${refusal(error)}`;
      clear(list).append(...files.map((f) => el("li", { "data-outcome": "refused" }, el("strong", {}, f.name), `: ${why}`)));
      return;
    }
    clear(list).append(...answer.documents.map((d) => el("li", { "data-outcome": d.status },
      el("strong", {}, d.uploaded_as || d.name),
      d.status === "duplicate" ? `: a duplicate of ${d.duplicate_of}, not added again` : `: ${d.status}${d.name !== (d.uploaded_as || d.name) ? ` as ${d.name}` : ""}`)));
    await this.took(answer);
  }

  // A change's 202: the list read again and its run followed (unless one is followed already: the
  // change then waits in the next run, followed when this one ends).
  async took(answer) {
    await this.refresh();
    if (answer.run && !this.progress.busy()) this.progress.follow(this.namespace, answer.run.id);
    await this.loadRuns(false);
  }

  async change(method, tail, what, form) {
    const list = clear($("upload-outcomes"));
    let answer;
    try {
      answer = form ? await send(method, this.path(tail), form) : await request(method, this.path(tail));
    } catch (error) {
      list.append(el("li", { "data-outcome": "refused" }, el("strong", {}, what), `: ${refusal(error)}`));
      return;
    }
    const done = { DELETE: "deleted", PUT: "replaced, queued for re-indexing" }[method] || "queued again";
    list.append(...(answer.documents.length ? answer.documents : [{ name: what, status: "none" }]).map((d) =>
      el("li", { "data-outcome": d.status }, el("strong", {}, d.name), d.status === "none" ? ": nothing to do" : `: ${done}`)));
    await this.took(answer);
  }

  async remove(d) {
    const answer = await confirmed({
      title: `Delete ${d.name}?`,
      message: "The file is removed now; its passages, entities, relationships, claims and reports leave the index in the run that follows, which re-clusters the graph.",
      ok: "Delete",
    });
    if (answer.ok) await this.change("DELETE", `documents/${d.id}`, d.name);
  }

  async replace(d) {
    const answer = await confirmed({
      title: `Replace ${d.name}?`,
      message: "The new file takes this document's place and name; the next run re-indexes it alone.",
      ok: "Replace",
      file: true,
    });
    if (!answer.ok || !answer.file) return;
    const form = new FormData();
    form.append("file", answer.file, answer.file.name);
    await this.change("PUT", `documents/${d.id}`, d.name, form);
  }

  // The document's chunks in order; each opens its passage in the document view.
  async chunks(d) {
    const panel = $("chunks-panel");
    const list = clear($("chunks"));
    text($("chunks-title"), `Chunks of ${d.name}`);
    panel.hidden = false;
    delete panel.dataset.ready;
    let data;
    try {
      data = await get(this.path(`documents/${encodeURIComponent(d.id)}/chunks`));
    } catch (error) {
      list.append(el("li", {}, `The chunks could not be read: ${refusal(error)}`));
      return;
    }
    const namespace = this.namespace;
    text($("chunks-title"), `Chunks of ${data.document.name} (${data.chunks.length})`);
    list.append(...data.chunks.map((c) => el("li", { class: "chunk", "data-chunk": c.id },
      el("p", { class: "where" }, [`#${(c.chunk_index ?? 0) + 1}`, pages(c.page_start, c.page_end), c.section,
        `characters ${c.start_char}–${c.end_char}`, `${c.tokens} tokens`].filter(Boolean).join(" · ")),
      el("div", { class: "passage" }, c.text),
      c.entities.length ? el("p", { class: "entities" }, `Entities: ${c.entities.join(", ")}`) : null,
      el("button", {
        type: "button", class: "secondary open-chunk",
        onclick: () => this.openDocument(namespace, data.document.id, c.start_char, c.end_char),
      }, "Open in the document"))));
    panel.dataset.ready = "true";
    panel.scrollIntoView({ block: "nearest" });
  }
}

// The "new namespace" form (folded): the page cannot know whether the key has `write: true`, so a key
// without it is told so politely from the server's 403. `created(name)` lists the namespaces again.
export function offerNewNamespace(created) {
  $("new-namespace").hidden = false;
  const form = $("new-namespace-form");
  form.onsubmit = async (event) => {
    event.preventDefault();
    const name = $("new-namespace-name").value.trim();
    const status = $("new-namespace-status");
    try {
      await post("/v1/namespaces", { namespace: name });
    } catch (error) {
      text(status, error instanceof ApiError && error.status === 403
        ? "This key may not create namespaces: that takes a key with write: true."
        : `Not created: ${refusal(error)}`);
      return;
    }
    text(status, `Created ${name}.`);
    $("new-namespace-name").value = "";
    created(name);
  };
}
