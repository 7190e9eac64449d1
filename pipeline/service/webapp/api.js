// The page's one way to the server: every call carries the key as a bearer header (never in a URL) and
// every failure comes back as an ApiError holding the server's {error: {code, message}}.
const KEY = "graphrag.key";

export const key = {
  get: () => sessionStorage.getItem(KEY),
  set: (value) => sessionStorage.setItem(KEY, value),
  clear: () => sessionStorage.removeItem(KEY),
};

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || "http_error";
    this.detail = error.detail;
  }
}

function headers(extra) {
  return { Authorization: `Bearer ${key.get() || ""}`, ...extra };
}

async function failed(response) {
  let body = null;
  try { body = await response.json(); } catch { /* not JSON: the status says enough */ }
  return new ApiError(response.status, body);
}

// The key's slots are shared with its queries (429 past the limit): a read the server refused for that
// is tried again after the Retry-After it names, a few times.
async function fetchRetrying(path, init, tries = 4) {
  for (let n = 1; ; n++) {
    const response = await fetch(path, init);
    if (response.status !== 429 || n >= tries) return response;
    const wait = Number(response.headers.get("Retry-After")) || 1;
    await new Promise((resolve) => setTimeout(resolve, wait * 1000));
  }
}

export async function request(method, path, body, signal) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }), signal };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetchRetrying(path, init);
  if (!response.ok) throw await failed(response);
  return response.json();
}

export const get = (path, signal) => request("GET", path, undefined, signal);
export const post = (path, body, signal) => request("POST", path, body, signal);

// GET an image (a PDF page) as a Blob for an object URL: an <img src> could not send the key's header.
export async function getBlob(path, signal) {
  const response = await fetchRetrying(path, { headers: headers(), signal });
  if (!response.ok) throw await failed(response);
  return response.blob();
}

// POST a query and hand each Server-Sent Event to onEvent(kind, data) as it arrives. EventSource cannot
// POST nor send headers, so this reads fetch's body stream and parses the SSE framing itself. A server
// that answers JSON instead (no streaming) is replayed as the same events.
export async function stream(mode, body, onEvent, signal) {
  const response = await fetch(`/v1/query/${encodeURIComponent(mode)}`, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
    body: JSON.stringify(body),
    signal,
  });
  if (!response.ok) throw await failed(response);
  const type = response.headers.get("Content-Type") || "";
  if (!type.startsWith("text/event-stream")) return replay(await response.json(), onEvent);
  await readEvents(response, onEvent);
}

// Send a multipart form (uploaded files: the browser sets the boundary) and read the JSON answer.
export async function send(method, path, form, signal) {
  const response = await fetchRetrying(path, { method, headers: headers(), body: form, signal });
  if (!response.ok) throw await failed(response);
  return response.json();
}

// GET a Server-Sent Events stream (a run's progress) and hand each event to onEvent(kind, data) until
// the server ends it; EventSource could not send the key's header.
export async function events(path, onEvent, signal) {
  const response = await fetchRetrying(path, { headers: headers({ Accept: "text/event-stream" }), signal });
  if (!response.ok) throw await failed(response);
  await readEvents(response, onEvent);
}

async function readEvents(response, onEvent) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
      const message = parseBlock(block);
      if (message) onEvent(message.kind, message.data);
    }
  }
}

function parseBlock(block) {
  let kind = "message";
  const data = [];
  for (const line of block.split(/\r?\n/)) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") kind = value;
    else if (field === "data") data.push(value);
  }
  return data.length ? { kind, data: JSON.parse(data.join("\n")) } : null;
}

function replay(response, onEvent) {
  const result = response.result || {};
  const inner = result.route && result.result ? result.result : result;
  if (result.route) onEvent("route", { mode: response.kind, route: result.route, reason: result.reason || null });
  onEvent("context", { sources: inner.context_rows || inner.sources || [] });
  if (inner.answer) onEvent("delta", { text: inner.answer });
  const cited = (inner.citations || []).map((c, i) => ({ marker: i + 1, ...c }));
  cited.forEach((c) => onEvent("citation", c));
  onEvent("done", { status: response.status, usage: inner.usage || {}, citations: cited, duration_s: response.duration_s, truncated: response.truncated, result });
}
