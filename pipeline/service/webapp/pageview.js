// The cited page itself: a PDF page drawn by the server (`GET .../pages/{n}.png?width=`, fetched with the
// key's header and shown from an object URL) under the line boxes of `GET .../pages/{n}.json`: the quoted
// sentence strongly lit, the rest of its passage lightly shaded. Previous and next page within the
// document, and zoom: fit width, 100% and 150%. The server caches each page per width, so only the few
// widths of WIDTHS are ever asked for. Boxes are page fractions from the top-left, placed in percent, so
// they follow the image at every zoom.
import { get, getBlob } from "./api.js";
import { el, pages, text } from "./dom.js";

export const WIDTHS = [800, 1200, 1600];
const ZOOMS = [["fit", "Fit width"], ["1", "100%"], ["1.5", "150%"]];
const CSS_PX_PER_PT = 96 / 72; // a page at 100% is as large as printed

export function isPdf(title) {
  return /\.pdf$/i.test(title || "");
}

// The number of the page holding document offset `at`, among a document view's pages (null: none).
export function pageAt(viewPages, at) {
  const found = (viewPages || []).find((p) => at >= p.start && at < p.end);
  return found ? found.number : null;
}

// The smallest drawn width that is sharp at `cssWidth` CSS pixels on this screen, else the largest.
export function widthFor(cssWidth) {
  const needed = cssWidth * (window.devicePixelRatio || 1);
  return WIDTHS.find((w) => w >= needed) || WIDTHS[WIDTHS.length - 1];
}

export class PageView {
  // {namespace, documentId, title, page, sentence, passage, section}: sentence and passage are document
  // offsets {start, end} (either may be null); `section` names the cited page's section.
  constructor(place) {
    this.place = place;
    this.page = place.page;
    this.count = null;
    this.zoom = "fit";
    this.asked = 0; // the latest load: an earlier one answering late is dropped
    this.url = null;
    this.read = new Map(); // page -> its boxes, read once
    this.where = el("figcaption", { class: "pageview-where" });
    this.prev = el("button", { type: "button", class: "secondary pageview-prev", "aria-label": "Previous page", onclick: () => this.turn(this.page - 1) }, "‹ Prev");
    this.next = el("button", { type: "button", class: "secondary pageview-next", "aria-label": "Next page", onclick: () => this.turn(this.page + 1) }, "Next ›");
    this.number = el("span", { class: "pageview-number", "aria-live": "polite" });
    this.zoomChoice = el("select", { class: "pageview-zoom", "aria-label": "Zoom", onchange: () => this.setZoom(this.zoomChoice.value) },
      ZOOMS.map(([value, label]) => el("option", { value }, label)));
    this.image = el("img", { class: "pageview-image", alt: "" });
    this.boxes = el("div", { class: "pageview-boxes" });
    this.sheet = el("div", { class: "pageview-sheet" }, this.image, this.boxes);
    this.scroller = el("div", { class: "pageview-scroll", tabindex: "0", "aria-label": "The page" }, this.sheet);
    this.note = el("p", { class: "pageview-note" });
    this.element = el("figure", { class: "pageview", "data-state": "loading" },
      this.where, el("div", { class: "pageview-tools", role: "toolbar", "aria-label": "Page" }, this.prev, this.number, this.next, this.zoomChoice),
      this.scroller, this.note);
  }

  // Page `page` with its boxes; resolves when it is shown (data-state "ready"), throws when the page
  // could not be read (its ApiError: e.g. 415 not_a_pdf, 404 source_unavailable).
  async show(page) {
    if (page < 1 || (this.count && page > this.count)) return;
    const asked = ++this.asked;
    const { namespace, documentId, sentence, passage } = this.place;
    const base = `/v1/namespaces/${encodeURIComponent(namespace)}/documents/${encodeURIComponent(documentId)}/pages/${page}`;
    const query = new URLSearchParams();
    if (sentence) { query.set("start", sentence.start); query.set("end", sentence.end); }
    if (passage) { query.set("passage_start", passage.start); query.set("passage_end", passage.end); }
    this.element.dataset.state = "loading";
    this.prev.disabled = this.next.disabled = true;
    const boxes = this.read.get(page) || await get(`${base}.json?${query}`);
    this.read.set(page, boxes);
    this.box = boxes; // its size in points: the width a zoom asks for
    const blob = await getBlob(`${base}.png?width=${this.drawnWidth()}`);
    if (asked !== this.asked) return;
    this.page = page;
    this.count = boxes.page_count;
    this.draw(boxes, URL.createObjectURL(blob));
    await this.image.decode().catch(() => {}); // laid out before it is called shown
    if (asked !== this.asked) return;
    this.element.dataset.page = String(page);
    this.element.dataset.pageCount = String(this.count);
    this.element.dataset.state = "ready";
    this.toLight();
  }

  // Another page, or the same one drawn anew (a zoom): what fails is said under the page shown.
  async turn(page) {
    try {
      await this.show(page);
    } catch (error) {
      this.element.dataset.state = "ready";
      text(this.note, `Page ${page} could not be drawn: ${error.message}`);
      this.prev.disabled = this.page <= 1;
      this.next.disabled = this.page >= this.count;
    }
  }

  // The image width to ask for: what the sheet will show at this zoom, on this screen.
  drawnWidth() {
    if (this.zoom === "fit" || !this.box) return widthFor(this.scroller.clientWidth || WIDTHS[0]);
    return widthFor(this.box.width_pt * CSS_PX_PER_PT * Number(this.zoom));
  }

  draw(boxes, url) {
    if (this.url) URL.revokeObjectURL(this.url);
    this.url = url;
    const { title, section } = this.place;
    const cited = this.page === this.place.page;
    text(this.number, `${this.page} / ${this.count}`);
    // The title is the card's or the dialog's heading already: the page and its section, named here.
    text(this.where, [`${pages(this.page)} of ${this.count}`, cited ? section : null].filter(Boolean).join(" · "));
    this.image.alt = `Page ${this.page} of ${title}`;
    this.image.src = url;
    this.sizeSheet();
    const lit = [];
    for (const [kind, found] of [["passage", boxes.passage], ["sentence", boxes.sentence]]) {
      for (const b of (found && found.boxes) || []) {
        lit.push(el("div", {
          class: `pageview-box ${kind}`, "data-kind": kind,
          style: `left:${b.x * 100}%;top:${b.y * 100}%;width:${b.w * 100}%;height:${b.h * 100}%`,
        }));
      }
    }
    this.boxes.replaceChildren(...lit);
    const said = boxes.sentence && boxes.sentence.boxes.length;
    text(this.note, !boxes.text_layer ? "A scanned page: it has no text to light."
      : said ? "" : sentenceElsewhere(this.place, boxes));
    this.prev.disabled = this.page <= 1;
    this.next.disabled = this.page >= this.count;
  }

  sizeSheet() {
    this.sheet.style.width = this.zoom === "fit" || !this.box ? "100%" : `${Math.round(this.box.width_pt * CSS_PX_PER_PT * Number(this.zoom))}px`;
  }

  async setZoom(zoom) {
    this.zoom = zoom;
    this.sizeSheet();
    await this.turn(this.page); // a sharper drawing when the page grew past the one shown
  }

  // The first lit line in view inside the page's own scroller (the page around it is not moved).
  toLight() {
    const first = this.boxes.querySelector(".sentence") || this.boxes.querySelector(".passage");
    if (!first) return;
    this.scroller.scrollTop = Math.max(0, first.offsetTop - 40);
    this.scroller.scrollLeft = Math.max(0, first.offsetLeft - 20);
  }

  close() {
    this.asked += 1;
    if (this.url) URL.revokeObjectURL(this.url);
    this.url = null;
  }
}

// What the page says when the quoted sentence is not lit on it.
function sentenceElsewhere(place, boxes) {
  if (!place.sentence) return boxes.passage && boxes.passage.boxes.length ? "The passage is shaded." : "";
  return boxes.page === place.page ? "The quoted sentence could not be found on the page's text." : "The quoted sentence is on another page.";
}

// The page a document view's cited place is on: the sentence's, else the passage's first.
export function citedPageNumber(view, sentence) {
  const at = sentence ? sentence.start : view.span ? view.span.start : null;
  return (at !== null && pageAt(view.pages, at)) || view.page_start || 1;
}

// The page viewer of a document view's cited place (its passage `view.span`, the sentence in it).
function pageOfView(namespace, view, sentence) {
  return new PageView({
    namespace, documentId: view.document_id, title: view.title, section: view.section,
    page: citedPageNumber(view, sentence), sentence, passage: view.span,
  });
}

// In a source card ({card, body}) of a PDF's passage (`view`, a document view): the cited page itself
// above the passage's text, which folds away under it. Resolves once the page is shown or has failed
// (then the text stays as it was and a line says why).
export async function citedPage(namespace, view, sentence, entry) {
  if (!isPdf(view.title) || !view.span) return;
  const pageView = pageOfView(namespace, view, sentence);
  entry.body.before(pageView.element);
  try {
    await pageView.show(pageView.page);
  } catch (error) {
    pageView.close();
    pageView.element.replaceWith(el("p", { class: "pageview-note" }, `The page could not be drawn: ${error.message}`));
    return;
  }
  const folded = el("details", { class: "passage-text" }, el("summary", {}, "The passage as text"));
  entry.body.replaceWith(folded);
  folded.append(entry.body);
}

// In the document view: a PDF's cited page in place of its text (`box`, hidden until the dialog closes);
// false when the document is no PDF or its page could not be drawn (the text view is shown instead).
export async function documentPage(box, namespace, view, sentence) {
  if (!isPdf(view.title) || !view.span) return false;
  const pageView = pageOfView(namespace, view, sentence);
  const dialog = box.closest("dialog");
  const gone = () => { pageView.close(); pageView.element.remove(); box.hidden = false; };
  box.hidden = true;
  box.before(pageView.element);
  if (dialog) dialog.addEventListener("close", gone, { once: true });
  try {
    await pageView.show(pageView.page);
    return true;
  } catch {
    if (dialog) dialog.removeEventListener("close", gone);
    gone();
    return false;
  }
}
