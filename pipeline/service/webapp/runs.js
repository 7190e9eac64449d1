// A namespace's index runs in the documents view: the live progress panel, fed stage by stage by the
// run's events (`GET .../runs/{id}/events`, read with fetch so the key goes in a header), and the run
// history with each run's time, documents, model calls, tokens, cost and failures.
import { ApiError, events, get } from "./api.js";
import { clear, el, text } from "./dom.js";

export const ENDED = new Set(["succeeded", "failed"]);
const RECONNECTS = 5; // a stream cut again and again without an event is given up on

export function when(iso) {
  if (!iso) return "–";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString(undefined, { dateStyle: "short", timeStyle: "medium" });
}

// What a finished stage wrote: "2 rows" for its own table, else each asset's rows by name.
function rowsOf(stage, assets) {
  const rows = Object.entries(assets).filter(([, m]) => typeof m.rows === "number");
  const plural = (n) => `${n} row${n === 1 ? "" : "s"}`;
  if (rows.length === 1 && rows[0][0] === stage) return plural(rows[0][1].rows);
  return rows.map(([asset, m]) => `${asset}: ${plural(m.rows)}`).join(", ");
}

const seconds = (s) => (typeof s === "number" ? `${s.toFixed(1)} s` : "");

// The panel (`#run-progress`) follows one run at a time: `started()` when it begins, `ended(final)` once
// its stream has said how it ended (final is null when that could not be read).
export class RunProgress {
  constructor(panel, { started, ended }) {
    this.panel = panel;
    this.title = panel.querySelector(".run-title");
    this.line = panel.querySelector(".run-state");
    this.stages = panel.querySelector(".run-stages");
    this.started = started;
    this.ended = ended;
    this.following = null; // {namespace, id, controller}
  }

  busy() {
    return this.following !== null;
  }

  stop() {
    if (this.following) this.following.controller.abort();
    this.following = null;
  }

  hide() {
    this.stop();
    this.panel.hidden = true;
  }

  async follow(namespace, id) {
    if (this.following && this.following.namespace === namespace && this.following.id === id) return;
    this.stop();
    const controller = new AbortController();
    const mine = { namespace, id, controller };
    this.following = mine;
    this.panel.hidden = false;
    this.panel.dataset.run = id;
    text(this.title, `Run ${id}`);
    this.state("queued", "Queued: it starts when the namespace's run in flight ends.");
    const path = `/v1/namespaces/${encodeURIComponent(namespace)}/runs/${encodeURIComponent(id)}`;
    let final = null;
    for (let tries = 0; !final && tries < RECONNECTS; tries++) {
      clear(this.stages); // each stream tells the run from its start
      try {
        await events(`${path}/events`, (kind, data) => {
          tries = 0;
          if (kind === "run") final = data;
          else this.event(kind, data);
        }, controller.signal);
        // Cut before the run ended (an idle limit, a restart): its record says whether to look again.
        if (!final) { const record = await get(path, controller.signal); if (ENDED.has(record.status)) final = record; }
      } catch (error) {
        if (error.name === "AbortError") return;
        this.state("error", `The run's progress could not be read: ${error instanceof ApiError ? error.code : error.message}`);
        break;
      }
    }
    if (this.following !== mine) return;
    this.following = null;
    if (final) this.finish(final);
    this.ended(final);
  }

  state(value, message) {
    this.panel.dataset.state = value;
    text(this.line, message);
  }

  event(kind, data) {
    if (kind === "run_started") {
      this.state("running", "Running.");
      this.started();
    } else if (kind === "status" && data.status) {
      this.panel.dataset.state = data.status;
    } else if (kind === "stage_started") {
      this.stage(data.stage).dataset.state = "running";
      text(this.line, `Running: ${data.stage}`);
    } else if (kind === "stage_progress") {
      const item = this.stage(data.stage);
      const bar = item.querySelector("progress");
      bar.max = Math.max(1, data.total || 0);
      bar.value = Math.min(data.done || 0, bar.max);
      bar.hidden = false;
      text(item.querySelector(".stage-count"), `${data.what ? `${data.what} ` : ""}${data.done} of ${data.total}`);
    } else if (kind === "stage_finished") {
      const item = this.stage(data.stage);
      item.dataset.state = "done";
      text(item.querySelector(".stage-time"), seconds(data.seconds));
      const count = item.querySelector(".stage-count");
      if (!count.textContent) text(count, rowsOf(data.stage, data.assets || {}));
    }
  }

  stage(name) {
    const found = [...this.stages.children].find((li) => li.dataset.stage === name);
    if (found) return found;
    const item = el("li", { "data-stage": name, "data-state": "running" },
      el("span", { class: "stage-name" }, name),
      el("progress", { max: 1, value: 0, hidden: true, "aria-label": `${name} progress` }),
      el("span", { class: "stage-count" }),
      el("span", { class: "stage-time" }));
    this.stages.append(item);
    return item;
  }

  finish(final) {
    for (const item of this.stages.querySelectorAll("li[data-state='running']")) item.dataset.state = final.status === "succeeded" ? "done" : "stopped";
    const why = final.status === "failed" ? ` (${final.reason || "failed"})${(final.failures || []).length ? `: ${final.failures.join("; ")}` : ""}` : "";
    const time = typeof final.seconds === "number" ? ` in ${seconds(final.seconds)}` : "";
    this.state(final.status, `Run ${final.status}${time}${why}`);
  }
}

const COLUMNS = ["Requested", "Status", "Time", "Documents", "Model calls", "Tokens", "Cost", "Failures"];

// The namespace's runs, newest first: one row each.
export function fillHistory(table, runs) {
  clear(table);
  table.append(el("thead", {}, el("tr", {}, COLUMNS.map((c, i) => el("th", { scope: "col", class: i >= 2 && i <= 6 ? "num" : null }, c)))));
  table.append(el("tbody", {}, runs.map((r) => {
    const usage = r.usage || {};
    const tokens = (usage.llm_prompt_tokens || 0) + (usage.llm_completion_tokens || 0);
    const cost = typeof usage.llm_cost_usd === "number" ? `$${usage.llm_cost_usd.toFixed(4)}` : "–";
    const status = r.status === "failed" && r.reason ? `failed (${r.reason})` : r.status;
    return el("tr", { "data-run": r.id, "data-status": r.status },
      el("td", { title: r.id }, when(r.requested_at)),
      el("td", {}, status),
      el("td", { class: "num" }, seconds(r.seconds) || "–"),
      el("td", { class: "num" }, String((r.documents || []).length)),
      el("td", { class: "num" }, usage.llm_calls ?? "–"),
      el("td", { class: "num" }, usage.llm_calls === undefined ? "–" : String(tokens)),
      el("td", { class: "num" }, cost),
      el("td", { class: "failures" }, (r.failures || []).join("; ") || "–"));
  })));
}
