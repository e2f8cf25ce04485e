// The Kubernetes API as the pages use it: requests (through the console, with the user's token),
// list-then-watch from a resourceVersion, discovery of a kind's resource, and small DOM helpers.

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

// The session's CSRF token, from the cookie the console set at login.
function csrfToken() {
  const pair = document.cookie.split(";").map((c) => c.trim()).find((c) => c.startsWith("uc-console-csrf="));
  return pair ? decodeURIComponent(pair.slice("uc-console-csrf=".length)) : "";
}

// A request; a read the network cut before any answer (Chromium cuts what is in flight when a network
// interface appears, as a pod's does on a `uc up` machine) asked again, twice at most. A change is not:
// it may have been made.
async function fetchRetryingReads(path, init, tries = 3) {
  try {
    return await fetch(path, init);
  } catch (e) {
    if (init.method !== "GET" || tries <= 1 || !(e instanceof TypeError)) throw e;
    await new Promise((r) => setTimeout(r, 300));
    return fetchRetryingReads(path, init, tries - 1);
  }
}

// A request to the API; the decoded JSON answer. 401 sends the browser to the login page.
export async function api(path, { method = "GET", body, contentType = "application/json", accept = "application/json" } = {}) {
  // The console refuses a change without the session's CSRF token: a cookie only its own pages can read.
  const headers = { Accept: accept, "X-CSRF-Token": csrfToken() };
  let payload = body;
  if (body !== undefined && typeof body !== "string") payload = JSON.stringify(body);
  if (payload !== undefined) headers["Content-Type"] = contentType;
  const r = await fetchRetryingReads(path, { method, headers, body: payload, credentials: "same-origin" });
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

// Every list-and-watch of the page goes over one connection (`/console/watch`: a browser keeps six per
// host, and a page may watch a dozen collections). The server lists each path, watches it from there
// and resumes; the stream is opened again (listing everything anew) when the set of paths changes.
const mux = { subs: new Map(), next: 1, controller: null, timer: null };

function reopen() {
  clearTimeout(mux.timer);
  mux.timer = setTimeout(openStream, 20);
}

async function openStream() {
  if (mux.controller) mux.controller.abort();
  mux.controller = null;
  const entries = [...mux.subs.entries()];
  if (!entries.length) return;
  const controller = new AbortController();
  mux.controller = controller;
  const query = entries.map(([, s]) => `path=${encodeURIComponent(s.path)}`).join("&");
  try {
    const r = await fetch(`/console/watch?${query}`, { signal: controller.signal, credentials: "same-origin" });
    if (r.status === 401) { location.href = "/login"; return; }
    if (!r.ok) throw new Error(`watch: HTTP ${r.status}`);
    const reader = r.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const text = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (!text.trim()) continue;
        const msg = JSON.parse(text);
        const [id, sub] = entries[msg.i] || [];
        if (!sub || !mux.subs.has(id)) continue;
        if (msg.list) {
          sub.items = new Map((msg.list.items || []).map((o) => [keyOf(o), o]));
        } else if (msg.event) {
          const ev = msg.event;
          if (ev.type === "BOOKMARK" || !ev.object?.metadata) continue;
          if (ev.type === "DELETED") sub.items.delete(keyOf(ev.object));
          else sub.items.set(keyOf(ev.object), ev.object);
        } else if (msg.error) {
          if (sub.onError) sub.onError(new ApiError(msg.error.code || 500, msg.error));
          continue;
        }
        sub.onChange([...sub.items.values()]);
      }
    }
  } catch (e) {
    if (controller.signal.aborted) return;
  }
  // The stream ended (the console restarted?): open it again.
  if (mux.controller === controller) setTimeout(() => { if (mux.controller === controller) openStream(); }, 1000);
}

// Lists a collection, then follows it; `onChange(items)` after each change. Returns a function that
// stops it.
export function listWatch(collection, onChange, { labelSelector, fieldSelector, onError } = {}) {
  const p = new URLSearchParams();
  if (labelSelector) p.set("labelSelector", labelSelector);
  if (fieldSelector) p.set("fieldSelector", fieldSelector);
  const query = p.toString();
  const id = mux.next++;
  mux.subs.set(id, { path: query ? `${collection}?${query}` : collection, onChange, onError, items: new Map() });
  reopen();
  return () => { mux.subs.delete(id); reopen(); };
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
  const cls = /^(Succeeded|Running|Ready|True|Complete|AtLatestKnown|READY|Bound|Active|completed|Created|Present)$/.test(t) ? "ok"
    : /(Fail|Error|CrashLoop|BackOff|False|TRANSIENT)/.test(t) ? "bad" : "pending";
  return h("span", { class: `phase ${cls}` }, t || "—");
}

// The namespace the pages work in ("" for all namespaces), chosen in the header and kept in the browser.
const NS_KEY = "uc-console-namespace";
export const currentNamespace = () => localStorage.getItem(NS_KEY) || "";
export function setNamespace(ns) {
  if (ns) localStorage.setItem(NS_KEY, ns);
  else localStorage.removeItem(NS_KEY);
  window.dispatchEvent(new Event("uc-namespace"));
}

// A collection in the chosen namespace (or across all of them when none is chosen).
export const scoped = (apiVersion, plural) => path(apiVersion, plural, currentNamespace() || null);

// What a refused list says: the verb, the resource and where, as the API server answered it.
export function refusal(err, verb, resource, namespace = currentNamespace()) {
  const where = namespace ? `in the namespace ${namespace}` : "in all namespaces";
  if (err?.status === 403) {
    return h("div", { class: "forbidden", role: "alert", "data-forbidden": `${verb} ${resource}` },
      h("b", {}, "Forbidden: "), `you may not ${verb} ${resource} ${where}.`,
      namespace ? "" : " Choose a namespace you may read in the header.",
      h("div", { class: "muted" }, err.message));
  }
  return h("div", { class: "error", role: "alert" }, `${verb} ${resource}: ${err?.message || err}`);
}

// A row of a table body saying why it is empty.
export const refusalRow = (columns, err, verb, resource, namespace) =>
  h("tr", {}, h("td", { colspan: columns }, refusal(err, verb, resource, namespace)));

// Breadcrumbs: [[label, href], ..., label].
export function crumbs(...items) {
  return h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("ol", {}, items.map((item, i) =>
    h("li", {}, Array.isArray(item) ? h("a", { href: item[1] }, item[0])
      : h("span", { "aria-current": i === items.length - 1 ? "page" : null }, item)))));
}

// Whether the server serves an API group, asked of its group list (a group installed since the page
// loaded is found): to know without a 404.
export async function servesGroup(group) {
  const list = await api("/apis");
  return (list.groups || []).some((g) => g.name === group);
}

// An object's fields for people: scalars as values, lists of scalars joined, lists of objects as tables
// when their items share their fields (conditions, ports), nested objects as nested lists.
export function fieldsView(v, depth = 0) {
  if (v === null || v === undefined) return h("span", { class: "muted" }, "—");
  if (typeof v !== "object") return String(v);
  if (Array.isArray(v)) {
    if (!v.length) return h("span", { class: "muted" }, "none");
    if (v.every((x) => x === null || typeof x !== "object")) return v.map(String).join(", ");
    const keys = [...new Set(v.flatMap((x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.keys(x) : [])))];
    const flat = v.every((x) => x && !Array.isArray(x) && Object.values(x).every((y) => y === null || typeof y !== "object"));
    if (flat && keys.length <= 8) {
      return h("table", { class: "fields" }, h("tr", {}, keys.map((k) => h("th", { scope: "col" }, words(k)))),
        v.map((x) => h("tr", {}, keys.map((k) => h("td", {}, x[k] === undefined ? "" : String(x[k]))))));
    }
    return h("ol", { class: "fields" }, v.map((x) => h("li", {}, fieldsView(x, depth + 1))));
  }
  const entries = Object.entries(v);
  if (!entries.length) return h("span", { class: "muted" }, "none");
  return h("dl", { class: "fields" }, entries.map(([k, x]) => [h("dt", {}, words(k)), h("dd", {}, fieldsView(x, depth + 1))]));
}

// A field's name in words: readyReplicas → Ready replicas.
export const words = (k) => {
  const s = String(k).replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/[_-]+/g, " ");
  return s.charAt(0).toUpperCase() + s.slice(1).toLowerCase().replace(/\b(ip|uid|cidr|api|csv|url|id)\b/g, (m) => m.toUpperCase());
};

// How healthy an object reads: "ok", "pending", "bad" (colours of the tree and the topology). A pod is
// healthy when Ready, not merely Running.
export function health(o) {
  if (o.metadata?.deletionTimestamp) return "pending";
  if (o.kind === "Pod") {
    const waiting = (o.status?.containerStatuses || []).map((c) => c.state?.waiting?.reason || "");
    if (o.status?.phase === "Failed" || waiting.some((r) => /BackOff|Err|Invalid/.test(r))) return "bad";
    if (o.status?.phase === "Succeeded") return "ok";
    return condition(o, "Ready")?.status === "True" ? "ok" : "pending";
  }
  const ready = condition(o, "Ready") || condition(o, "Available");
  if (ready) return ready.status === "True" ? "ok" : condition(o, "Failed")?.status === "True" ? "bad" : "pending";
  if (o.status?.phase) {
    const p = o.status.phase;
    return /Fail|Error/.test(p) ? "bad" : /^(Running|Succeeded|Bound|Active|Ready|Complete)$/.test(p) ? "ok" : "pending";
  }
  const want = o.spec?.replicas;
  if (want !== undefined) return (o.status?.readyReplicas ?? 0) >= want ? "ok" : "pending";
  return "ok";
}

// A kind's schema from the API server's OpenAPI v3 document of its group version: { root, components },
// or null when the server has none for it (or the user may not read it).
export async function kindSchema(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  const doc = await api(group ? `/openapi/v3/apis/${group}/${version}` : `/openapi/v3/api/${version}`).catch(() => null);
  const schemas = doc?.components?.schemas || {};
  const root = Object.values(schemas).find((s) => (s["x-kubernetes-group-version-kind"] || [])
    .some((g) => g.group === group && g.version === version && g.kind === kind));
  return root ? { root, components: schemas } : null;
}

// How a condition reads: "ok", "pending" or "bad". Most conditions say something good when True (Ready,
// Available); some say something wrong (OLM's CatalogSourcesUnhealthy, InstallPlanFailed, a Degraded
// operator), and for those False is the good news.
export function conditionHealth(type, status) {
  const negative = /(Unhealthy|Missing|Failed|Failure|Degraded|Deprecated|Pending|Pressure|Unavailable)$/.test(type || "");
  if (status === "Unknown" || !status) return "pending";
  const good = negative ? status === "False" : status === "True";
  if (good) return "ok";
  return negative && /Pending$/.test(type) ? "pending" : "bad";
}

// A row of a two-column table of fields: its label (a row header) and its value.
export const fieldRow = (label, value) => h("tr", {}, h("th", { scope: "row" }, label), h("td", {}, value));

// A condition's status, coloured by what it means for its type.
export const conditionStatus = (c) => h("span", { class: `phase ${conditionHealth(c.type, c.status)}`, "data-health": conditionHealth(c.type, c.status) }, c.status || "Unknown");

// Whether the user may `verb` the `resource` of `group` (in `namespace`), as `kubectl auth can-i` asks it:
// a SelfSubjectAccessReview, asked once in 30 seconds (pages redraw live). When the answer cannot be had,
// yes: the server decides on the request itself.
const answers = new Map();
const accessKey = (verb, group, resource, namespace) => [verb, group, resource, namespace || ""].join(" ");
// The question asked within the last 30 seconds, if it was: { at, answer (a promise), allowed once known }.
const recent = (key) => {
  const entry = answers.get(key);
  return entry && Date.now() - entry.at < 30000 ? entry : null;
};

export function can(verb, group, resource, namespace) {
  const key = accessKey(verb, group, resource, namespace);
  const known = recent(key);
  if (known) return known.answer;
  const review = { apiVersion: "authorization.k8s.io/v1", kind: "SelfSubjectAccessReview",
    spec: { resourceAttributes: { verb, group, resource, ...(namespace ? { namespace } : {}) } } };
  const entry = { at: Date.now(), allowed: undefined };
  entry.answer = api("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", { method: "POST", body: review })
    .then((a) => a?.status?.allowed !== false, () => true)
    .then((allowed) => { entry.allowed = allowed; return allowed; });
  answers.set(key, entry);
  return entry.answer;
}

// An action the user may not take is shown disabled, saying what they may not do (as OpenShift's console
// greys out what RBAC denies); asked again for the same button (its namespace changed), the latest answer
// counts. An answer already had applies at once, so a page drawn again does not flicker. Returns the button.
export function gated(button, verb, group, resource, namespace) {
  const asked = (button.ucAsked || 0) + 1;
  button.ucAsked = asked;
  const apply = (allowed) => {
    if (button.ucAsked !== asked) return;
    const wasDenied = button.dataset.access === "denied";
    button.ucDenied?.remove();
    button.ucDenied = null;
    button.dataset.access = allowed ? "allowed" : "denied";
    if (allowed) {
      // Enabled again only if this made it disabled (a page may disable it for reasons of its own).
      if (wasDenied) { button.disabled = false; button.removeAttribute("title"); delete button.dataset.forbidden; }
      return;
    }
    const why = `You may not ${verb} ${resource}${namespace ? ` in ${namespace}` : ""}.`;
    button.disabled = true;
    button.title = why;
    button.dataset.forbidden = `${verb} ${resource}`;
    const denied = h("span", { class: "muted denied" }, ` ${why}`);
    button.ucDenied = denied;
    // A button being drawn has no parent yet: its note goes beside it once the drawing is done.
    if (button.parentNode) button.after(denied);
    else queueMicrotask(() => { if (button.ucDenied === denied) button.after(denied); });
  };
  const known = recent(accessKey(verb, group, resource, namespace));
  if (known?.allowed !== undefined) apply(known.allowed);
  else can(verb, group, resource, namespace).then(apply);
  return button;
}
