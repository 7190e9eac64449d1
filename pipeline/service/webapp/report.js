// A community report opened from its citation (global's, and the "Relevant topics" of local and DRIFT):
// its title, rating, summary and findings as Markdown, and links to the passages it rests on, each of
// which opens the document at that place (`GET /v1/namespaces/{ns}/reports/{community}`).
import { get } from "./api.js";
import { el, pages, text } from "./dom.js";
import { markdownBlock, withoutCitations } from "./markdown.js";

export function communityOf(c) {
  const n = c.community ?? c.id;
  return c.section === "reports" && Number.isInteger(Number(n)) ? Number(n) : null;
}

// Fills a source card's parts ({head, where, body, card}) with report `community`'s text; false when it
// could not be read (the card says why).
export async function showReport(namespace, marker, community, entry, openDocument) {
  let report;
  try {
    report = await get(`/v1/namespaces/${encodeURIComponent(namespace)}/reports/${community}`);
  } catch (error) {
    text(entry.body, `The report could not be read: ${error.message}`);
    return false;
  }
  entry.head.replaceChildren(`[${marker}] `, withoutCitations(report.title) || `Community ${community}`);
  const rating = typeof report.rating === "number" ? `rating ${report.rating.toFixed(1)} of 10` : null;
  text(entry.where, ["community report", `community ${community}`, `level ${report.level}`, rating].filter(Boolean).join(" · "));
  const body = el("div", { class: "report" });
  if (report.summary) body.append(markdownBlock(report.summary, { class: "md summary" }));
  if (report.findings.length) {
    body.append(el("h4", {}, "Findings"), el("ol", { class: "findings" }, report.findings.map((f) => el("li", {},
      el("strong", {}, withoutCitations(f.summary)), f.explanation ? markdownBlock(f.explanation) : null))));
  }
  if (report.rating_explanation) body.append(el("p", { class: "rating" }, `Why this rating: ${withoutCitations(report.rating_explanation)}`));
  if (report.entities.length) body.append(el("p", { class: "members" }, `Members: ${report.entities.join(", ")}`));
  body.append(el("h4", {}, report.passages.length ? `Passages it rests on (${report.passages.length}${report.passages_total > report.passages.length ? ` of ${report.passages_total}` : ""})` : "No passages recorded for this community"));
  body.append(el("ul", { class: "report-passages" }, report.passages.map((p) => el("li", {},
    el("button", {
      type: "button", class: "link", "data-document": p.document_id,
      onclick: () => openDocument(namespace, p.document_id, p.start_char, p.end_char),
    }, [p.document_title, pages(p.page_start, p.page_end), p.section].filter(Boolean).join(" · ") || p.document_id),
    el("span", { class: "snippet" }, p.text)))));
  entry.body.replaceWith(body);
  entry.body = body;
  return true;
}
