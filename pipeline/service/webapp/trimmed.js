// What "truncated" means, said plainly: the service trims the response it sends (the answer past
// PIPELINE_SERVICE_MAX_ANSWER_CHARS, evidence lists past PIPELINE_SERVICE_MAX_EVIDENCE_ITEMS, each
// evidence text past PIPELINE_SERVICE_MAX_TEXT_CHARS, a "…" where a text was cut). The answer was
// written from the whole evidence; only the copy sent back is shorter. Read from the result itself.
const LISTS = {
  evidence: ["text", "description"], points: ["description"], communities: ["summary"], hits: ["text", "content"],
  sources: ["text"], nodes: ["answer"], context_rows: [], citations: [],
};
const NAMES = { evidence: "evidence", points: "points", communities: "community summaries", hits: "hits", sources: "passages", nodes: "search steps", context_rows: "context rows", citations: "citations" };

export function trimmedNote(result) {
  if (!result) return "";
  const inner = result.route && result.result ? result.result : result;
  const said = [];
  const answerCut = typeof inner.answer === "string" && inner.answer.endsWith("…");
  if (answerCut) {
    said.push(`the answer was cut at ${(inner.answer.length - 1).toLocaleString("en")} characters`);
  }
  const cut = [];
  let longest = 0;
  for (const [field, keys] of Object.entries(LISTS)) {
    const items = inner[field];
    if (!Array.isArray(items)) continue;
    longest = Math.max(longest, items.length);
    const texts = items.flatMap((item) => keys.map((k) => item && item[k])).filter((t) => typeof t === "string" && t.endsWith("…"));
    if (texts.length) cut.push({ field, n: texts.length, limit: Math.max(...texts.map((t) => t.length - 1)) });
  }
  for (const { field, n, limit } of cut) said.push(`${n} ${NAMES[field]} text${n === 1 ? "" : "s"} shortened to ${limit.toLocaleString("en")} characters`);
  if (!said.length && longest) said.push(`lists of evidence kept to their first ${longest} items`);
  if (!said.length) return "";
  const whole = answerCut ? "" : " The answer itself is whole: it was written from the full evidence.";
  return `Trimmed to keep the response small: ${said.join("; ")}.${whole}`;
}
