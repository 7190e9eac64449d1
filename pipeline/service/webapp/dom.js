// Building DOM from data: every string becomes a text node (textContent), never markup, so a document
// holding <script> or <img onerror=...> shows those characters and runs nothing.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node) {
  node.replaceChildren();
  return node;
}

export function text(node, value) {
  node.textContent = value === undefined || value === null ? "" : String(value);
  return node;
}

// `whole` with [lo, hi) wrapped in `wrap` (a node made by the caller); offsets relative to `whole`.
export function marked(whole, lo, hi, wrap) {
  const out = document.createDocumentFragment();
  lo = Math.max(0, Math.min(lo, whole.length));
  hi = Math.max(lo, Math.min(hi, whole.length));
  out.append(document.createTextNode(whole.slice(0, lo)));
  wrap.textContent = whole.slice(lo, hi);
  out.append(wrap);
  out.append(document.createTextNode(whole.slice(hi)));
  return out;
}

export function pages(first, last) {
  if (first === undefined || first === null) return "";
  return first === last || last === undefined || last === null ? `p. ${first}` : `pp. ${first}–${last}`;
}
