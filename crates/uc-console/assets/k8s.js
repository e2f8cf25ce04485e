// The Kubernetes API as the pages use it: requests (through the console, with the user's token),
// list-then-watch from a resourceVersion, discovery of a kind's resource, and small DOM helpers.

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

// A request to the API; the decoded JSON answer. 401 sends the browser to the login page.
export async function api(path, { method = "GET", body, contentType = "application/json", accept = "application/json" } = {}) {
  const headers = { Accept: accept };
  let payload = body;
  if (body !== undefined && typeof body !== "string") payload = JSON.stringify(body);
  if (payload !== undefined) headers["Content-Type"] = contentType;
  const r = await fetch(path, { method, headers, body: payload, credentials: "same-origin" });
  if (r.status === 401) {
    location.href = "/login";
    throw new ApiError(401, { message: "Unauthorized" });
  }
  const text = await r.text();
  let data = text;
  if ((r.headers.get("content-type") || "").includes("json")) {
    try { data = JSON.parse(text); } catch { /* left as text */ }
  }
  if (!r.ok) throw new ApiError(r.status, typeof data === "object" ? data : { message: text });
  return data;
}

// The path of a resource: collection (no name) or object.
export function path(apiVersion, plural, namespace, name, sub) {
  const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  let p = namespace ? `${base}/namespaces/${namespace}/${plural}` : `${base}/${plural}`;
  if (name) p += `/${name}`;
  if (sub) p += `/${sub}`;
  return p;
}

const discovered = new Map();

// The resource of a kind: { plural, namespaced }.
export async function resourceOf(apiVersion, kind) {
  const key = `${apiVersion}/${kind}`;
  if (!discovered.has(key)) {
    const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    const list = await api(base);
    for (const r of list.resources || []) {
      if (!r.name.includes("/")) discovered.set(`${apiVersion}/${r.kind}`, { plural: r.name, namespaced: r.namespaced });
    }
  }
  const found = discovered.get(key);
  if (!found) throw new Error(`${apiVersion} has no kind ${kind}`);
  return found;
}

const keyOf = (o) => `${o.metadata.namespace || ""}/${o.metadata.name}`;

// Lists a collection, then watches it from the list's resourceVersion; `onChange(items)` after each
// change. Resumes a watch that ends from the last resourceVersion seen; lists again on 410 Gone.
// Returns a function that stops it.
export function listWatch(collection, onChange, { labelSelector, fieldSelector, onError } = {}) {
  let stopped = false;
  let controller = null;
  const items = new Map();
  const q = (extra) => {
    const p = new URLSearchParams(extra);
    if (labelSelector) p.set("labelSelector", labelSelector);
    if (fieldSelector) p.set("fieldSelector", fieldSelector);
    return `${collection}?${p}`;
  };
  const emit = () => onChange([...items.values()]);
  async function list() {
    const l = await api(q({}));
    items.clear();
    for (const o of l.items || []) items.set(keyOf(o), o);
    emit();
    return l.metadata.resourceVersion;
  }
  async function run() {
    let rv = null;
    while (!stopped) {
      try {
        if (rv === null) rv = await list();
        controller = new AbortController();
        const r = await fetch(q({ watch: "1", resourceVersion: rv, allowWatchBookmarks: "true", timeoutSeconds: "240" }),
          { signal: controller.signal, credentials: "same-origin", headers: { Accept: "application/json" } });
        if (r.status === 401) { location.href = "/login"; return; }
        if (!r.ok) { rv = null; await sleep(1000); continue; }
        const reader = r.body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let nl;
          while ((nl = buffer.indexOf("\n")) >= 0) {
            const line = buffer.slice(0, nl).trim();
            buffer = buffer.slice(nl + 1);
            if (!line) continue;
            const ev = JSON.parse(line);
            if (ev.type === "ERROR") { rv = null; break; }
            if (ev.object?.metadata?.resourceVersion) rv = ev.object.metadata.resourceVersion;
            if (ev.type === "BOOKMARK") continue;
            if (ev.type === "DELETED") items.delete(keyOf(ev.object));
            else items.set(keyOf(ev.object), ev.object);
            emit();
          }
          if (rv === null) break;
        }
      } catch (e) {
        if (stopped) return;
        if (onError) onError(e);
        await sleep(1000);
      }
    }
  }
  run();
  return () => { stopped = true; if (controller) controller.abort(); };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// An element: h("div", {class: "x", onclick: f}, child, "text", [more children]).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "html") el.innerHTML = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  const add = (c) => {
    if (c === undefined || c === null || c === false) return;
    if (Array.isArray(c)) c.forEach(add);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  };
  children.forEach(add);
  return el;
}

// How long ago a timestamp was, as kubectl says it (5s, 3m, 2h, 4d).
export function age(ts) {
  if (!ts) return "";
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(ts)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

// A condition of an object's status.
export const condition = (o, type) => (o?.status?.conditions || []).find((c) => c.type === type);

// YAML for people (block style; strings quoted when they would read as something else).
export function toYaml(v, indent = "") {
  const scalar = (x) => {
    if (x === null || x === undefined) return "null";
    if (typeof x === "number" || typeof x === "boolean") return String(x);
    const s = String(x);
    if (s === "" || /^[\s\-?:,\[\]{}#&*!|>'"%@`]|: |\s#|\s$|^(true|false|null|yes|no|on|off|~)$|^[-+]?[\d.]+(e[-+]?\d+)?$/i.test(s) || s.includes("\n")) {
      return JSON.stringify(s);
    }
    return s;
  };
  if (Array.isArray(v)) {
    if (!v.length) return "[]";
    return v.map((x) => {
      if (x && typeof x === "object" && !Array.isArray(x) && Object.keys(x).length) {
        const inner = toYaml(x, indent + "  ");
        return `${indent}- ${inner.slice(indent.length + 2)}`;
      }
      return `${indent}- ${x && typeof x === "object" ? toYaml(x, indent + "  ").trimStart() : scalar(x)}`;
    }).join("\n");
  }
  if (v && typeof v === "object") {
    const keys = Object.keys(v);
    if (!keys.length) return "{}";
    return keys.map((k) => {
      const x = v[k];
      const key = scalar(k);
      if (x && typeof x === "object" && (Array.isArray(x) ? x.length : Object.keys(x).length)) {
        return `${indent}${key}:\n${toYaml(x, Array.isArray(x) ? indent : indent + "  ")}`;
      }
      return `${indent}${key}: ${x && typeof x === "object" ? toYaml(x) : scalar(x)}`;
    }).join("\n");
  }
  return scalar(v);
}

// A status line with a class by how it reads.
export function phase(text) {
  const t = String(text || "");
  const cls = /^(Succeeded|Running|Ready|True|Complete|AtLatestKnown|READY|Bound|Active|completed)$/.test(t) ? "ok"
    : /(Fail|Error|CrashLoop|False|Unknown|TRANSIENT)/.test(t) ? "bad" : "pending";
  return h("span", { class: `phase ${cls}` }, t || "—");
}
