// The namespace's last `pipeline eval` report as a table a person reads at any width: one row per
// metric (named in words, with its unit), one column per mode; counts such as statuses and routes as
// "completed 38 · failed 2", never an object.
import { el } from "./dom.js";

const NAMES = {
  questions: "Questions", context_recall: "Context recall (%)", answer_coverage: "Answer coverage (%)",
  answer_words: "Answer words (%)", page_recall_at_5: "Page recall at 5 (%)", median_page_span: "Median page span",
  judge_accuracy: "Judge accuracy (%)", judged: "Judged", unjudged: "Not judged", calls: "Model calls",
  prompt_tokens: "Prompt tokens", completion_tokens: "Completion tokens", latency_p50_ms: "Latency p50 (ms)",
  latency_p95_ms: "Latency p95 (ms)", statuses: "Statuses", routes: "Routes", failures: "Failures",
};

export function metricName(key) {
  if (NAMES[key]) return NAMES[key];
  const words = key.replace(/_/g, " ").replace(/ ms$/, " (ms)").replace(/ pct$/, " (%)");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

export function formatValue(v) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "number") return Number.isInteger(v) ? v.toLocaleString("en") : v.toFixed(1);
  if (Array.isArray(v)) return v.map(formatValue).join(", ");
  if (typeof v === "object") {
    const parts = Object.entries(v).sort((a, b) => (b[1] ?? 0) - (a[1] ?? 0)).map(([k, n]) => `${k} ${formatValue(n)}`);
    return parts.join(" · ") || "–";
  }
  return String(v);
}

// Fills `table` with `report`'s overall metrics: rows are metrics, columns the modes.
export function fillEval(table, report) {
  const metrics = report.metrics;
  const modes = Object.keys(metrics);
  const names = [...new Set(Object.values(metrics).flatMap((m) => Object.keys(m.overall || {})))];
  table.replaceChildren(
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "metric"), modes.map((m) => el("th", { scope: "col", class: "num mode" }, m)))),
    el("tbody", {}, names.map((n) => el("tr", { "data-metric": n }, el("th", { scope: "row" }, metricName(n)),
      modes.map((m) => {
        const v = (metrics[m].overall || {})[n];
        return el("td", { class: typeof v === "object" && v !== null ? "counts" : "num" }, formatValue(v));
      })))));
}
