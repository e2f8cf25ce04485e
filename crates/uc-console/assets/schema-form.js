// A form generated from a CRD's OpenAPI v3 schema: an input per field (selects for enums, checkboxes for
// booleans, numbers with their bounds, fieldsets for objects), required fields marked, defaults as
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

function input(schema, keys, obj, required, onChange) {
  const id = fieldId(keys);
  const current = get(obj, keys);
  const help = schema.description ? h("div", { class: "help" }, schema.description.split("\n")[0]) : null;
  const label = h("label", { for: id }, keys[keys.length - 1], required ? " *" : "");
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
  return h("div", { class: "field" }, label, el, help);
}

function fields(schema, keys, obj, onChange, depth) {
  const required = new Set(schema.required || []);
  const out = [];
  for (const [name, prop] of Object.entries(schema.properties || {})) {
    const k = [...keys, name];
    if (prop.type === "object" && prop.properties && depth < MAX_DEPTH) {
      out.push(h("fieldset", {}, h("legend", {}, name, required.has(name) ? " *" : ""),
        prop.description && h("div", { class: "help" }, prop.description.split("\n")[0]),
        fields(prop, k, obj, onChange, depth + 1)));
    } else if (["string", "integer", "number", "boolean"].includes(prop.type) || Array.isArray(prop.enum)) {
      out.push(input(prop, k, obj, required.has(name), onChange));
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
  return h("div", {}, fields(spec, ["spec"], obj, onChange, 0));
}
