// One instance (a parent): Details (conditions, status), Resources (its children as a tree, live over
// watches: kind, name, status, age; pods with readiness, restarts and logs; the revision each child of a
// rolling update is on), Events, and YAML (editable, saved with the resourceVersion it was read at, so a
// concurrent change is a conflict rather than lost).
import { api, listWatch, h, path, phase, age, resourceOf, condition, toYaml, ApiError } from "./k8s.js";

// Kinds a parent's children are commonly of (those of the controller that owns its kind are added).
const CHILD_KINDS = [
  ["v1", "Pod"], ["v1", "Service"], ["v1", "ConfigMap"], ["v1", "PersistentVolumeClaim"], ["v1", "Secret"],
  ["apps/v1", "Deployment"], ["apps/v1", "ReplicaSet"], ["apps/v1", "StatefulSet"], ["batch/v1", "Job"],
  ["policy/v1", "PodDisruptionBudget"],
];
const REVISIONS = "universalcontroller.njuics.cn/v1alpha1";

function podStatus(p) {
  const ready = condition(p, "Ready")?.status === "True";
  const restarts = (p.status?.containerStatuses || []).reduce((n, c) => n + (c.restartCount || 0), 0);
  const total = (p.spec?.containers || []).length;
  const readyCount = (p.status?.containerStatuses || []).filter((c) => c.ready).length;
  return [phase(p.metadata.deletionTimestamp ? "Terminating" : p.status?.phase), ` ${readyCount}/${total} ready`,
    h("span", { class: "muted" }, ` restarts ${restarts}`), " ",
    h("a", { href: `#/logs/${p.metadata.namespace}/${p.metadata.name}`, class: "logs-link" }, "logs"),
    h("span", { class: ready ? "ready" : "unready", "data-ready": String(ready) })];
}

function statusOf(o) {
  if (o.kind === "Pod") return podStatus(o);
  if (o.status?.phase) return phase(o.status.phase);
  const ready = condition(o, "Ready") || condition(o, "Available");
  if (ready) return phase(ready.status === "True" ? "Ready" : ready.reason || "NotReady");
  if (o.status?.readyReplicas !== undefined || o.spec?.replicas !== undefined) {
    return `${o.status?.readyReplicas ?? o.status?.availableReplicas ?? 0}/${o.spec?.replicas ?? ""} ready`;
  }
  return "";
}

// The revision number each child is on, from the parent's ControllerRevisions.
function revisionsOf(revisions) {
  const on = new Map();
  let latest = 0;
  for (const r of revisions) {
    latest = Math.max(latest, r.revision || 0);
    for (const g of r.children || []) for (const n of g.names || []) on.set(`${g.kind}/${n}`, r.revision);
  }
  return { on, latest };
}

function resources(root, parent, ns) {
  const tree = h("ul", { class: "tree", id: "resource-tree" });
  const rollout = h("div", { id: "rollout" });
  root.append(rollout, tree);
  const objects = new Map(); // kind → items
  let revisions = [];
  const draw = () => {
    const all = [...objects.values()].flat();
    const byOwner = new Map();
    for (const o of all) {
      for (const ref of o.metadata.ownerReferences || []) {
        if (!byOwner.has(ref.uid)) byOwner.set(ref.uid, []);
        byOwner.get(ref.uid).push(o);
      }
    }
    const { on, latest } = revisionsOf(revisions);
    const node = (o, depth) => {
      const rev = on.get(`${o.kind}/${o.metadata.name}`);
      const kids = depth < 4 ? (byOwner.get(o.metadata.uid) || []) : [];
      kids.sort((a, b) => `${a.kind}/${a.metadata.name}`.localeCompare(`${b.kind}/${b.metadata.name}`));
      return h("li", { "data-kind": o.kind, "data-name": o.metadata.name, "data-revision": rev ?? "" },
        h("span", { class: "node" }, h("span", { class: "kind" }, o.kind), h("b", {}, o.metadata.name),
          h("span", {}, statusOf(o)), rev !== undefined && h("span", { class: "rev" }, `revision ${rev}${rev === latest ? " (latest)" : ""}`),
          h("span", { class: "muted" }, age(o.metadata.creationTimestamp))),
        kids.length ? h("ul", {}, kids.map((k) => node(k, depth + 1))) : null);
    };
    tree.replaceChildren(node(parent, 0));
    const updated = condition(parent, "Updated");
    rollout.replaceChildren();
    if (revisions.length) {
      const counts = revisions.slice().sort((a, b) => b.revision - a.revision).map((r) =>
        `revision ${r.revision}: ${(r.children || []).reduce((n, g) => n + (g.names || []).length, 0)}`);
      rollout.append(h("p", {}, h("b", {}, "Rollout: "), updated ? [phase(updated.status === "True" ? "Complete" : "Progressing"), ` ${updated.message || ""} `] : "",
        h("span", { class: "muted" }, counts.join(" · "))));
    }
  };
  const stops = [];
  const watchKind = (apiVersion, kind) => {
    resourceOf(apiVersion, kind).then((r) => {
      stops.push(listWatch(path(apiVersion, r.plural, r.namespaced ? ns : null), (items) => {
        objects.set(`${apiVersion}/${kind}`, items.map((o) => ({ ...o, kind, apiVersion })));
        draw();
      }));
    }).catch(() => { /* a kind this cluster does not serve */ });
  };
  const kinds = new Map(CHILD_KINDS.map(([v, k]) => [`${v}/${k}`, [v, k]]));
  // The controller of the parent's kind names its children's kinds.
  api(path(REVISIONS, "universalcontrollers")).then(async (ucs) => {
    for (const uc of ucs.items || []) {
      const pr = uc.spec?.parentResource || {};
      if (pr.apiVersion !== parent.apiVersion) continue;
      for (const c of uc.spec?.childResources || []) {
        const list = await api(c.apiVersion.includes("/") ? `/apis/${c.apiVersion}` : `/api/${c.apiVersion}`).catch(() => null);
        const found = (list?.resources || []).find((x) => x.name === c.resource);
        if (found && !kinds.has(`${c.apiVersion}/${found.kind}`)) {
          kinds.set(`${c.apiVersion}/${found.kind}`, [c.apiVersion, found.kind]);
          watchKind(c.apiVersion, found.kind);
        }
      }
    }
  }).catch(() => {});
  for (const [v, k] of kinds.values()) watchKind(v, k);
  stops.push(listWatch(path(REVISIONS, "controllerrevisions", ns), (items) => {
    revisions = items.filter((r) => (r.metadata.ownerReferences || []).some((o) => o.uid === parent.metadata.uid));
    draw();
  }));
  draw();
  return { stop: () => stops.forEach((s) => s()), redraw: draw };
}

function events(root, parent, ns) {
  const rows = h("tbody", { id: "events" });
  root.append(h("table", {}, h("thead", {}, h("tr", {}, ["Type", "Reason", "Object", "Message", "Age"].map((t) => h("th", {}, t)))), rows));
  const stop = listWatch(path("v1", "events", ns), (items) => {
    const uid = parent.metadata.uid;
    const mine = items.filter((e) => e.involvedObject?.uid === uid || e.involvedObject?.name === parent.metadata.name)
      .sort((a, b) => Date.parse(b.lastTimestamp || b.eventTime || 0) - Date.parse(a.lastTimestamp || a.eventTime || 0));
    rows.replaceChildren(...mine.map((e) => h("tr", {}, h("td", {}, e.type), h("td", {}, e.reason),
      h("td", {}, `${e.involvedObject?.kind}/${e.involvedObject?.name}`), h("td", {}, e.message),
      h("td", {}, age(e.lastTimestamp || e.eventTime)))));
    if (!mine.length) rows.append(h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No events.")));
  });
  return { stop, redraw: () => {} };
}

function yamlTab(root, objPath) {
  const text = h("textarea", { class: "yaml", id: "instance-yaml", spellcheck: "false" });
  const msg = h("p", { id: "yaml-message" });
  const reload = async () => {
    const o = await api(objPath);
    delete o.metadata.managedFields; // as kubectl shows an object, unless asked
    text.value = toYaml(o) + "\n";
    msg.textContent = "";
  };
  const save = async () => {
    msg.className = "";
    msg.textContent = "Saving…";
    try {
      await api(objPath, { method: "PUT", body: text.value, contentType: "application/yaml" });
      msg.textContent = "Saved.";
      await reload();
      msg.textContent = "Saved.";
    } catch (e) {
      msg.className = "error";
      msg.textContent = e instanceof ApiError && e.status === 409
        ? `Conflict: the object changed since it was loaded. Reload to see the new version. (${e.message})` : e.message;
    }
  };
  root.append(h("div", { class: "toolbar" }, h("button", { id: "yaml-save", onclick: save }, "Save"),
    h("button", { class: "secondary", id: "yaml-reload", onclick: reload }, "Reload")), msg, text);
  reload().catch((e) => { msg.className = "error"; msg.textContent = e.message; });
}

// The route's parts: `apiVersion/kind/namespace/name[/tab]`, the apiVersion's `/` encoded as the
// console writes it (`apps%2Fv1`) or typed as is (`apps/v1`, a group's version then a Kind).
export function instanceParams(parts) {
  const grouped = parts.length >= 5 && /^v\d+((alpha|beta)\d+)?$/.test(parts[1]) && /^[A-Z]/.test(parts[2]);
  return grouped ? [`${parts[0]}/${parts[1]}`, ...parts.slice(2)] : parts;
}

export function show(root, parts) {
  const [apiVersion, kind, nsPart, name, tab = "resources"] = instanceParams(parts);
  const ns = nsPart === "-" ? null : nsPart;
  const base = `#/instance/${encodeURIComponent(apiVersion)}/${kind}/${nsPart}/${name}`;
  const tabs = ["details", "resources", "events", "yaml"];
  root.append(h("h1", {}, `${kind} ${name}`), h("p", { class: "muted" }, `${apiVersion}${ns ? ` in ${ns}` : ""}`),
    h("div", { class: "tabs" }, tabs.map((t) => h("a", { href: `${base}/${t}`, class: t === tab ? "active" : "", id: `tab-${t}` }, t[0].toUpperCase() + t.slice(1)))));
  const body = h("div", {});
  root.append(body);
  let stop = () => {};
  let stopped = false;
  resourceOf(apiVersion, kind).then((r) => {
    if (stopped) return;
    const collection = path(apiVersion, r.plural, r.namespaced ? ns : null);
    const objPath = path(apiVersion, r.plural, r.namespaced ? ns : null, name);
    if (tab === "yaml") { yamlTab(body, objPath); return; }
    let inner = null;
    let uid = null;
    const current = { value: null };
    stop = listWatch(collection, (items) => {
      const o = items.find((i) => i.metadata.name === name);
      if (!o) { body.replaceChildren(h("p", { class: "muted" }, "Not found (deleted?).")); return; }
      const parent = { ...o, apiVersion, kind };
      if (tab === "details") {
        body.replaceChildren(h("h2", {}, "Conditions"),
          h("table", {}, h("tr", {}, ["Type", "Status", "Reason", "Message", "Age"].map((t) => h("th", {}, t))),
            (o.status?.conditions || []).map((c) => h("tr", {}, h("td", {}, c.type), h("td", {}, phase(c.status)), h("td", {}, c.reason || ""),
              h("td", {}, c.message || ""), h("td", {}, age(c.lastTransitionTime))))),
          h("h2", {}, "Status"), h("pre", { id: "instance-status" }, JSON.stringify(o.status || {}, null, 2)));
        return;
      }
      // Resources and events follow the parent; started once, with the parent updated in place.
      if (uid !== o.metadata.uid) {
        if (inner) inner.stop();
        body.replaceChildren();
        uid = o.metadata.uid;
        current.value = parent;
        inner = tab === "events" ? events(body, parent, ns) : resources(body, current.value, ns);
      } else {
        Object.assign(current.value, parent);
        inner.redraw();
      }
    });
    const outer = stop;
    stop = () => { outer(); if (inner) inner.stop(); };
  }).catch((e) => body.append(h("p", { class: "error" }, e.message)));
  return () => { stopped = true; stop(); };
}
