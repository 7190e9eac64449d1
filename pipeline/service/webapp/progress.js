// Signs of work: while a question has no answer text yet, the phase it is in, read from the stream's own
// events (the follow-up condensed, a wait for a free worker, the route taken, the context read: global's map step is done once its
// context arrives, and its reduce step writes the answer), with the seconds it has taken so far. The
// first `delta` (or the end) hides it: from then on the answer itself shows the work.
import { el, text } from "./dom.js";

// What each mode is doing before its context arrives, and after (writing the answer from it).
const SEARCHING = {
  global: "Map step: the community reports are read in batches",
  local: "Finding the entities the question names and what surrounds them",
  drift: "Priming with the community reports, then following up locally",
  lazy: "Ranking the passages and the concepts they name",
  basic: "Searching the passages",
  vector: "Searching the passages",
  chunks: "Walking the chunk graph",
};
const WRITING = { global: "reduce step: writing the answer from the mapped findings" };

export class Progress {
  constructor(box, mode) {
    this.box = box;
    this.mode = mode;
    this.contexts = 0;
    this.started = performance.now();
    this.label = el("span", { class: "progress-phase" });
    this.clock = el("span", { class: "progress-time" });
    box.replaceChildren(el("span", { class: "spinner", "aria-hidden": "true" }), this.label, this.clock);
    box.hidden = false;
    box.dataset.phase = "sent";
    this.tick = setInterval(() => this.time(), 1000);
    this.say("sent", `Sending the question to ${mode} search…`);
  }

  say(phase, words) {
    this.box.dataset.phase = phase;
    text(this.label, words);
    this.time();
  }

  time() {
    const s = Math.floor((performance.now() - this.started) / 1000);
    text(this.clock, s >= 1 ? ` · ${s} s` : "");
  }

  hear(kind, data = {}) {
    if (this.box.hidden) return;
    if (kind === "condense") this.say("condense", "Reading the follow-up with the conversation before it…");
    else if (kind === "queued") { // the service's: every worker of the query's lane is busy
      const ahead = data.ahead ? ` (${data.ahead} question${data.ahead === 1 ? "" : "s"} ahead)` : "";
      this.say("queued", `Waiting for a free worker${ahead}…`);
    }
    else if (kind === "route") {
      const mode = data.route || data.mode || this.mode;
      if (data.mode === "auto") {
        const why = data.reason ? `: ${data.reason}` : "";
        this.say("route", `Routed to ${mode}${why}. ${SEARCHING[mode] || "Searching"}…`);
      } else this.say("route", `${SEARCHING[mode] || "Searching"}…`);
      this.mode = mode;
    } else if (kind === "context") {
      this.contexts += 1;
      const rows = (data.sources || []).length;
      const step = this.mode === "drift" ? `Step ${this.contexts}: ` : "";
      const writing = WRITING[this.mode] || "writing the answer";
      this.say("context", `${step}Read ${rows} row${rows === 1 ? "" : "s"} of context; ${writing}…`);
    } else if (kind === "delta" || kind === "done" || kind === "error") this.stop();
  }

  stop() {
    clearInterval(this.tick);
    this.box.hidden = true;
    this.box.dataset.phase = "idle";
  }
}
