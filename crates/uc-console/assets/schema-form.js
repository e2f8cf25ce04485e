// A form generated from a CRD's OpenAPI v3 schema: an input per field (selects for enums, checkboxes for
// booleans, numbers with their bounds, fieldsets for objects), required fields first and marked — a field
// required inside an optional section says it is required only when that section is given — defaults as
// placeholders, descriptions as help. `onChange(obj)` gets the object the form describes; fields the
// form cannot show (lists, free-form maps) stay as the starting object has them, for the YAML view.
import { h } from "./k8s.js";

const MAX_DEPTH = 4;

const get = (obj, keys) => keys.reduce((o, k) => (o == null ? undefined : o[k]), obj);
function set(obj, keys, value) {
  let o = obj;
  keys.slice(0, -1).forEach((k) => { if (typeof o[k] !== "object" || o[k] === null) o[k] = {}; o = o[k]; });
  const last = keys[keys.length - 1];
  if (value === undefined) delete o[last];
  else o[last] = value;
  // Drop objects a cleared field left empty.
  for (let i = keys.length - 1; i > 0; i--) {
    const parent = get(obj, keys.slice(0, i - 1)) ?? obj;
    const child = get(obj, keys.slice(0, i));
    if (child && typeof child === "object" && !Array.isArray(child) && !Object.keys(child).length) delete parent[keys[i - 1]];
  }
}

const fieldId = (keys) => `field-${keys.join("-")}`;

// How a field's label says it is required: `*` when the object needs it, words when only its section does.
const marker = (required, section) => {
  if (!required) return "";
  return section ? h("span", { class: "when" }, ` required when ${section} is given`) : h("span", { class: "required", "aria-hidden": "true" }, " *");
};

function input(schema, keys, obj, required, section, onChange) {
  const id = fieldId(keys);
  const current = get(obj, keys);
  const helpId = `${id}-help`;
  const help = schema.description ? h("div", { class: "help", id: helpId }, schema.description.split("\n")[0]) : null;
  const label = h("label", { for: id }, keys[keys.length - 1], marker(required, section));
  let el;
  if (Array.isArray(schema.enum)) {
    el = h("select", { id, onchange: () => { set(obj, keys, el.value === "" ? undefined : el.value); onChange(); } },
      h("option", { value: "" }, schema.default !== undefined ? `(default: ${schema.default})` : "—"),
      schema.enum.map((v) => h("option", { value: v, selected: current === v }, v)));
  } else if (schema.type === "boolean") {
    el = h("input", { type: "checkbox", id, checked: current === true,
      onchange: () => { set(obj, keys, el.checked ? true : undefined); onChange(); } });
  } else if (schema.type === "integer" || schema.type === "number") {
    el = h("input", { type: "number", id, value: current ?? "", min: schema.minimum, max: schema.maximum,
      step: schema.type === "integer" ? 1 : "any", placeholder: schema.default ?? "",
      oninput: () => { set(obj, keys, el.value === "" ? undefined : Number(el.value)); onChange(); } });
  } else {
    el = h("input", { type: "text", id, value: current ?? "", placeholder: schema.default ?? "", pattern: schema.pattern,
      oninput: () => { set(obj, keys, el.value === "" ? undefined : el.value); onChange(); } });
  }
  if (required && !section && schema.type !== "boolean") el.required = true;
  if (help) el.setAttribute("aria-describedby", helpId);
  return h("div", { class: "field", "data-required": required ? (section ? "when-section" : "yes") : "no" }, label, el, help);
}

// The fields of an object schema, required ones first (each group in the schema's order). `section` names
// the nearest enclosing optional object, if any.
function fields(schema, keys, obj, onChange, depth, section) {
  const required = new Set(schema.required || []);
  const props = Object.entries(schema.properties || {});
  const ordered = [...props.filter(([n]) => required.has(n)), ...props.filter(([n]) => !required.has(n))];
  const out = [];
  for (const [name, prop] of ordered) {
    const k = [...keys, name];
    if (prop.type === "object" && prop.properties && depth < MAX_DEPTH) {
      const inner = required.has(name) ? section : section || name;
      out.push(h("fieldset", { "data-section": name }, h("legend", {}, name, marker(required.has(name), section),
        required.has(name) || section ? "" : h("span", { class: "when" }, " optional")),
        prop.description && h("div", { class: "help" }, prop.description.split("\n")[0]),
        fields(prop, k, obj, onChange, depth + 1, inner)));
    } else if (["string", "integer", "number", "boolean"].includes(prop.type) || Array.isArray(prop.enum)) {
      out.push(input(prop, k, obj, required.has(name), section, onChange));
    } else {
      out.push(h("div", { class: "field muted" }, `${name}: ${prop.type || "any"} — in the YAML view`));
    }
  }
  return out;
}

// The form for `schema` (the CRD version's openAPIV3Schema), editing `obj` in place.
export function schemaForm(schema, obj, onChange) {
  const spec = schema?.properties?.spec;
  if (!spec) return h("p", { class: "muted" }, "This kind's schema has no spec: use the YAML view.");
  return h("div", {}, fields(spec, ["spec"], obj, onChange, 0, null));
}
