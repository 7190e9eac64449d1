// Query settings beside the mode choice, built from the chosen mode's options as JSON Schema (`GET
// /v1/modes`: the registry's request model, with its types, bounds, defaults and descriptions), never
// written by hand: a field added to a mode's options model appears here. Numbers get their bounds,
// enumerations a choice, booleans a checkbox, objects a JSON box; each field's description is its help.
// Only the fields a reader changed go into the query's body (the rest keep the configured values), and
// each mode keeps its own changes while the page is open.
import { clear, el, text } from "./dom.js";

// What kind of field a property is: its non-null alternatives (an option left at null keeps the
// configured value, so null is never offered as such).
export function fieldOf(name, property, defs = {}) {
  const resolve = (s) => (s && s.$ref ? defs[s.$ref.split("/").pop()] || {} : s || {});
  const branches = (property.anyOf || property.oneOf || [property]).map(resolve).filter((b) => b.type !== "null");
  const base = { name, label: property.title || name, help: property.description || "", initial: property.default ?? null };
  const choices = branches.flatMap((b) => b.enum || (b.const !== undefined ? [b.const] : []));
  const number = branches.find((b) => b.type === "integer" || b.type === "number");
  if (branches.length === 1 && choices.length) return { ...base, kind: "choice", choices };
  if (branches.length === 1 && number) return { ...base, kind: "number", bounds: number };
  if (branches.length === 1 && branches[0].type === "boolean") return { ...base, kind: "boolean" };
  if (branches.length === 1 && branches[0].type === "string") return { ...base, kind: "string", bounds: branches[0] };
  // a number or a word, such as global's level (an integer or "auto")
  if (number && choices.length && branches.length === choices.length + 1) return { ...base, kind: "number-or", bounds: number, choices };
  return { ...base, kind: "json" };
}

function control(field, id, help) {
  const common = { id, name: field.name, "data-field": field.name, "aria-describedby": help };
  const b = field.bounds || {};
  switch (field.kind) {
    case "number": {
      const low = b.minimum ?? b.exclusiveMinimum;
      const high = b.maximum ?? b.exclusiveMaximum;
      return el("input", {
        ...common, type: "number", min: low, max: high, step: b.type === "integer" ? 1 : "any",
        placeholder: field.initial ?? "default", inputmode: b.type === "integer" ? "numeric" : "decimal",
      });
    }
    case "boolean":
      return el("input", { ...common, type: "checkbox", checked: field.initial === true });
    case "choice":
      return el("select", common, el("option", { value: "" }, field.initial === null ? "default" : `default (${field.initial})`),
        field.choices.map((c) => el("option", { value: String(c) }, String(c))));
    case "string":
      return el("input", { ...common, type: "text", minlength: b.minLength, maxlength: b.maxLength, placeholder: "default" });
    case "number-or":
      return el("input", { ...common, type: "text", placeholder: `default; a number or ${field.choices.join(", ")}` });
    default:
      return el("textarea", { ...common, rows: 2, placeholder: "default; JSON" });
  }
}

// The value a control holds, as the body carries it; undefined: not changed (the configured value).
// Throws a message for what cannot be sent as it is.
function valueOf(field, input) {
  if (field.kind === "boolean") return input.checked === (field.initial === true) ? undefined : input.checked;
  const raw = input.value.trim();
  if (raw === "") return undefined;
  if (field.kind === "number") return Number(raw);
  if (field.kind === "choice") return field.choices.find((c) => String(c) === raw);
  if (field.kind === "string") return raw;
  if (field.kind === "number-or") {
    if (field.choices.includes(raw)) return raw;
    if (/^-?\d+(\.\d+)?$/.test(raw)) return Number(raw);
    throw new Error(`a number or ${field.choices.join(", ")}`);
  }
  try { return JSON.parse(raw); } catch { throw new Error("not JSON"); }
}

export class QuerySettings {
  // `select`: the mode choice; `box`: a <details> the form goes in; `modes`: `GET /v1/modes`' list;
  // `onChange`: called after each change (the cost estimate is asked again).
  constructor(select, box, modes, onChange) {
    this.select = select;
    this.box = box;
    this.modes = modes;
    this.onChange = onChange;
    this.changed = new Map(); // mode -> {field: value}
    this.summary = el("summary", {}, "Settings");
    this.form = el("div", { class: "settings-form" });
    clear(box).append(this.summary, this.form);
    select.addEventListener("change", () => this.show());
    this.show();
  }

  get mode() {
    return this.modes.find((m) => m.name === this.select.value);
  }

  // The chosen mode's fields, filled with the changes it already has.
  show() {
    const mode = this.mode;
    const schema = (mode && mode.options) || { properties: {} };
    const mine = this.changed.get(mode ? mode.name : "") || {};
    const fields = Object.entries(schema.properties || {}).map(([name, p]) => fieldOf(name, p, schema.$defs));
    this.box.dataset.mode = mode ? mode.name : "";
    this.box.hidden = !fields.length;
    const rows = fields.map((field) => {
      const id = `setting-${field.name}`;
      const help = `${id}-help`;
      const input = control(field, id, help);
      if (field.name in mine) {
        if (field.kind === "boolean") input.checked = mine[field.name];
        else input.value = typeof mine[field.name] === "object" ? JSON.stringify(mine[field.name]) : String(mine[field.name]);
      }
      input.addEventListener("change", () => this.take(field, input));
      const label = el("label", { for: id }, field.label);
      return el("div", { class: `setting ${field.kind === "boolean" ? "boolean" : ""}`, "data-field": field.name },
        field.kind === "boolean" ? [input, label] : [label, input],
        el("small", { class: "help", id: help }, field.help));
    });
    const reset = el("button", { type: "button", class: "secondary settings-reset", onclick: () => this.reset() }, "Reset to defaults");
    this.form.replaceChildren(...rows, rows.length ? reset : "");
    this.count();
  }

  take(field, input) {
    const name = this.mode.name;
    const mine = { ...(this.changed.get(name) || {}) };
    input.setCustomValidity("");
    let value;
    try { value = valueOf(field, input); } catch (error) { input.setCustomValidity(error.message); input.reportValidity(); }
    if (value === undefined) delete mine[field.name];
    else mine[field.name] = value;
    this.changed.set(name, mine);
    this.count();
    if (this.onChange) this.onChange();
  }

  reset() {
    if (!this.mode) return;
    this.changed.delete(this.mode.name);
    this.show();
    if (this.onChange) this.onChange();
  }

  count() {
    const n = Object.keys(this.values()).length;
    text(this.summary, n ? `Settings (${n} changed)` : "Settings");
  }

  // The changed fields of the chosen mode: what goes into the query's body besides the question.
  values() {
    return { ...(this.changed.get(this.mode ? this.mode.name : "") || {}) };
  }
}
