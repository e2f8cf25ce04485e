// An object checked against its kind's OpenAPI v3 schema (a CRD's openAPIV3Schema, or the API server's
// /openapi/v3 document), as the API server will check it: types, required fields, enums, bounds, lengths,
// patterns, list sizes; fields the schema does not know are reported as kubectl's strict field validation
// reports them. Each finding has the field's path (as a list of keys) and a message; `level` is "error"
// (the server refuses it) or "warning" (the server drops it).

const typeOf = (v) => (v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v);

// `#/components/schemas/X` references resolved against `components` (an /openapi/v3 document's).
export function resolve(schema, components, depth = 0) {
  if (!schema || depth > 40) return schema || {};
  if (schema.$ref) return resolve(components?.[schema.$ref.split("/").pop()] || {}, components, depth + 1);
  if (Array.isArray(schema.allOf) && schema.allOf.length === 1 && !schema.type) {
    const { allOf, ...rest } = schema;
    return { ...resolve(allOf[0], components, depth + 1), ...rest };
  }
  return schema;
}

// Whether `v` has the schema's type. What the server accepts is never refused here: a null is as if the
// field were absent (the API server drops it), and an int-or-string takes any number (a Quantity reads
// `cpu: 0.5`); the dry run before saving has the last word.
function typeMatches(schema, v) {
  const t = typeOf(v);
  if (v === null) return true;
  if (schema["x-kubernetes-int-or-string"]) return t === "integer" || t === "number" || t === "string";
  switch (schema.type) {
    case undefined: return true;
    case "number": return t === "integer" || t === "number";
    case "integer": return t === "integer";
    default: return schema.type === t;
  }
}

// The findings for `value` against `schema` at `path`.
export function check(value, schema, { components, path = [] } = {}) {
  const out = [];
  walk(value, resolve(schema, components), components, path, out, 0);
  return out;
}

function walk(v, schema, components, path, out, depth) {
  if (depth > 64) return;
  const at = (message, level = "error") => out.push({ path, message, level });
  if (!typeMatches(schema, v)) {
    at(`must be of type ${schema["x-kubernetes-int-or-string"] ? "number or string" : schema.type}, not ${typeOf(v)}`);
    return;
  }
  if (v === null) return;
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => e === v)) at(`must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(", ")}`);
  if (typeof v === "number") {
    if (schema.minimum !== undefined && (schema.exclusiveMinimum === true ? v <= schema.minimum : v < schema.minimum)) at(`must be at least ${schema.minimum}`);
    if (schema.maximum !== undefined && (schema.exclusiveMaximum === true ? v >= schema.maximum : v > schema.maximum)) at(`must be at most ${schema.maximum}`);
  }
  if (typeof v === "string") {
    if (schema.minLength !== undefined && [...v].length < schema.minLength) at(`must be at least ${schema.minLength} characters`);
    if (schema.maxLength !== undefined && [...v].length > schema.maxLength) at(`must be at most ${schema.maxLength} characters`);
    if (schema.pattern) {
      let re = null;
      try { re = new RegExp(schema.pattern, "u"); } catch { /* a pattern JavaScript cannot read: left to the server */ }
      if (re && !re.test(v)) at(`must match ${schema.pattern}`);
    }
  }
  if (Array.isArray(v)) {
    if (schema.minItems !== undefined && v.length < schema.minItems) at(`must have at least ${schema.minItems} items`);
    if (schema.maxItems !== undefined && v.length > schema.maxItems) at(`must have at most ${schema.maxItems} items`);
    const items = resolve(schema.items, components);
    if (schema.items) v.forEach((x, i) => walk(x, items, components, [...path, i], out, depth + 1));
    return;
  }
  if (typeof v === "object") objectFields(v, schema, components, path, out, depth);
}

function objectFields(v, schema, components, path, out, depth) {
  for (const name of schema.required || []) {
    if (!(name in v)) out.push({ path, message: `${name} is required`, level: "error" });
  }
  const props = schema.properties || {};
  const extra = schema.additionalProperties;
  const open = schema["x-kubernetes-preserve-unknown-fields"] === true || extra === true
    || (!schema.properties && extra === undefined);
  for (const [k, x] of Object.entries(v)) {
    if (props[k]) walk(x, resolve(props[k], components), components, [...path, k], out, depth + 1);
    else if (extra && typeof extra === "object") walk(x, resolve(extra, components), components, [...path, k], out, depth + 1);
    else if (!open) out.push({ path: [...path, k], message: `unknown field "${k}"`, level: "warning" });
  }
}

// A path as the API server writes it in its messages: spec.containers[0].image.
export const pathText = (path) => path.reduce((s, k) => (typeof k === "number" ? `${s}[${k}]` : s ? `${s}.${k}` : k), "");
