// One instance (a parent): Details (conditions, status), Resources (its children as a tree, live over
// watches: kind, name, status, age; pods with readiness, restarts and logs; the revision each child of a
// rolling update is on), Events, and YAML (editable, saved with the resourceVersion it was read at, so a
// concurrent change is a conflict rather than lost).
import { api, listWatch, h, path, phase, age, resourceOf, condition, toYaml, ApiError, crumbs, fieldsView, health, kindSchema, refusal, conditionStatus, gated } from "./k8s.js";
import { check, pathText } from "./schema-check.js";

// Kinds a parent's children are commonly of (those of the controller that owns its kind are added).
const CHILD_KINDS = [
  ["v1", "Pod"], ["v1", "Service"], ["v1", "ConfigMap"], ["v1", "PersistentVolumeClaim"], ["v1", "Secret"],
  ["apps/v1", "Deployment"], ["apps/v1", "ReplicaSet"], ["apps/v1", "StatefulSet"], ["batch/v1", "Job"],
  ["policy/v1", "PodDisruptionBudget"],
];
const REVISIONS = "universalcontroller.njuics.cn/v1alpha1";

// A pod's status as the tree shows it: its phase coloured by readiness (Running but not Ready is not
// green), containers ready, restarts, and links to its page and logs.
function podStatus(p) {
  const ready = condition(p, "Ready")?.status === "True";
  const restarts = (p.status?.containerStatuses || []).reduce((n, c) => n + (c.restartCount || 0), 0);
  const total = (p.spec?.containers || []).length;
  const readyCount = (p.status?.containerStatuses || []).filter((c) => c.ready).length;
  const waiting = (p.status?.containerStatuses || []).map((c) => c.state?.waiting?.reason).find(Boolean);
  const text = p.metadata.deletionTimestamp ? "Terminating" : waiting || p.status?.phase || "Pending";
  return [h("span", { class: `phase ${health(p)}` }, text), ` ${readyCount}/${total} ready`,
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

// A node of the tree and its children (to a depth of 4): kind, name (a pod's linked to its page), status
// coloured by health, the revision it is on, age.
function treeNode(o, depth, byOwner, on, latest) {
  const rev = on.get(`${o.kind}/${o.metadata.name}`);
  const kids = depth < 4 ? (byOwner.get(o.metadata.uid) || []) : [];
  kids.sort((a, b) => `${a.kind}/${a.metadata.name}`.localeCompare(`${b.kind}/${b.metadata.name}`));
  const name = o.kind === "Pod" ? h("a", { href: `#/pod/${o.metadata.namespace}/${o.metadata.name}`, class: "pod-link" }, h("b", {}, o.metadata.name))
    : h("b", {}, o.metadata.name);
  return h("li", { "data-kind": o.kind, "data-name": o.metadata.name, "data-revision": rev ?? "", "data-health": health(o) },
    h("span", { class: `node health-${health(o)}` }, h("span", { class: "kind" }, o.kind), name,
      h("span", {}, statusOf(o)), rev !== undefined && h("span", { class: "rev" }, `revision ${rev}${rev === latest ? " (latest)" : ""}`),
      h("span", { class: "muted" }, age(o.metadata.creationTimestamp))),
    kids.length ? h("ul", {}, kids.map((k) => treeNode(k, depth + 1, byOwner, on, latest))) : null);
}

// The rollout line: the Updated condition and how many children each revision has.
function drawRollout(rollout, parent, revisions) {
  const updated = condition(parent, "Updated");
  rollout.replaceChildren();
  if (revisions.length) {
    const counts = revisions.slice().sort((a, b) => b.revision - a.revision).map((r) =>
      `revision ${r.revision}: ${(r.children || []).reduce((n, g) => n + (g.names || []).length, 0)}`);
    rollout.append(h("p", {}, h("b", {}, "Rollout: "), updated ? [phase(updated.status === "True" ? "Complete" : "Progressing"), ` ${updated.message || ""} `] : "",
      h("span", { class: "muted" }, counts.join(" · "))));
  }
}

const SVG = "http://www.w3.org/2000/svg";
const svg = (tag, attrs, ...children) => {
  const el = document.createElementNS(SVG, tag);
  for (const [key, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) el.setAttribute(key, v);
  el.append(...children.filter((c) => c !== null && c !== undefined));
  return el;
};

// More children of one kind under one owner than this are drawn as one node counting them by health (a
// Deployment of 1,000 pods stays a picture one can read, and quick to lay out).
export const MAX_SIBLINGS = 10;

const HEALTH_ORDER = ["bad", "pending", "ok"];

// The objects under `parent` (to a depth of 4) as the topology's nodes and owner → child edges; siblings of
// one kind beyond MAX_SIBLINGS as one group node `{ id, group: { kind, count, ok, pending, bad, health } }`.
export function topologyGraph(parent, byOwner) {
  const nodes = [];
  const edges = [];
  const seen = new Set();
  const visit = (o, depth) => {
    if (seen.has(o.metadata.uid)) return;
    seen.add(o.metadata.uid);
    const label = Math.max(o.kind.length + 2, o.metadata.name.length, 14);
    nodes.push({ id: o.metadata.uid, object: o, width: Math.min(320, 24 + label * 7.4), height: 62 });
    if (depth >= 4) return;
    const kids = (byOwner.get(o.metadata.uid) || []).slice()
      .sort((a, b) => `${a.kind}/${a.metadata.name}`.localeCompare(`${b.kind}/${b.metadata.name}`));
    const byKind = new Map();
    for (const k of kids) {
      if (!byKind.has(k.kind)) byKind.set(k.kind, []);
      byKind.get(k.kind).push(k);
    }
    for (const [kind, same] of byKind) {
      if (same.length > MAX_SIBLINGS) {
        const group = siblingGroup(kind, same);
        const id = `${o.metadata.uid}/${kind}`;
        nodes.push({ id, group, width: Math.min(320, 24 + Math.max(kind.length + 6, groupCounts(group).length, 26) * 7.4), height: 62 });
        edges.push({ from: o.metadata.uid, to: id });
        continue;
      }
      for (const k of same) {
        edges.push({ from: o.metadata.uid, to: k.metadata.uid });
        visit(k, depth + 1);
      }
    }
  };
  visit(parent, 0);
  return { nodes, edges };
}

// Siblings of one kind counted by health; the group's own health is the worst among them.
function siblingGroup(kind, objects) {
  const tally = { ok: 0, pending: 0, bad: 0 };
  for (const x of objects) tally[health(x)] += 1;
  return { kind, count: objects.length, ...tally, health: HEALTH_ORDER.find((x) => tally[x] > 0) || "ok" };
}

// A status line short enough for a topology node.
function shortStatus(o) {
  if (o.kind === "Pod") {
    const cs = o.status?.containerStatuses || [];
    const waiting = cs.map((c) => c.state?.waiting?.reason).find(Boolean);
    return `${o.metadata.deletionTimestamp ? "Terminating" : waiting || o.status?.phase || "Pending"} · ${cs.filter((c) => c.ready).length}/${(o.spec?.containers || []).length} ready`;
  }
  const s = statusOf(o);
  return typeof s === "string" ? s : s?.textContent || "";
}

// The topology: parent above its children, laid out by dagre, each node coloured by its health (a pod by
// readiness) and a pod's node a link to its page.
function topology(holder, parent, byOwner, layout) {
  const { nodes, edges } = topologyGraph(parent, byOwner);
  const placed = layout(nodes, edges);
  const picture = svg("svg", { width: placed.width, height: placed.height, viewBox: `0 0 ${placed.width} ${placed.height}`,
    role: "group", "aria-label": `Topology of ${parent.kind} ${parent.metadata.name}` });
  for (const e of placed.edges) {
    picture.append(svg("polyline", { class: "edge", points: e.points.map((p) => `${p.x},${p.y}`).join(" "), "marker-end": "url(#arrow)" }));
  }
  picture.prepend(svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" },
    svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow" }))));
  for (const n of nodes) {
    const { x, y } = placed.nodes.get(n.id);
    if (n.group) { picture.append(groupNode(n, x, y)); continue; }
    const o = n.object;
    const state = health(o);
    const label = `${o.kind} ${o.metadata.name}: ${shortStatus(o)}`;
    const box = svg("g", { class: `topo-node health-${state}`, "data-kind": o.kind, "data-name": o.metadata.name, "data-health": state,
      transform: `translate(${x - n.width / 2},${y - n.height / 2})` },
    svg("title", {}, label),
    svg("rect", { width: n.width, height: n.height, rx: 6 }),
    svg("rect", { class: "bar", width: 6, height: n.height, rx: 3 }),
    svg("text", { x: 14, y: 18, class: "kind" }, o.kind),
    svg("text", { x: 14, y: 36, class: "name" }, o.metadata.name),
    svg("text", { x: 14, y: 53, class: "status" }, shortStatus(o)));
    // A pod's link is named by its title (an aria-label would have to repeat the words the node shows).
    picture.append(o.kind === "Pod" ? svg("a", { href: `#/pod/${o.metadata.namespace}/${o.metadata.name}` }, svg("title", {}, label), box) : box);
  }
  holder.replaceChildren(picture, h("p", { class: "muted legend" }, h("span", { class: "swatch ok" }), " ready ",
    h("span", { class: "swatch pending" }), " progressing or not ready ", h("span", { class: "swatch bad" }), " failing"));
}

// How many of a group are ready, not ready and failing (those there are).
export const groupCounts = (g) => [[g.ok, "ready"], [g.pending, "not ready"], [g.bad, "failing"]]
  .filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}`).join(" · ");

// A group of siblings in the topology: how many, and how many are ready, progressing or failing.
function groupNode(n, x, y) {
  const g = n.group;
  const plural = g.kind.endsWith("s") ? `${g.kind}es` : `${g.kind}s`;
  const counts = groupCounts(g);
  return svg("g", { class: `topo-node topo-group health-${g.health}`, "data-kind": g.kind, "data-count": g.count, "data-health": g.health,
    transform: `translate(${x - n.width / 2},${y - n.height / 2})` },
  svg("title", {}, `${g.count} ${plural}: ${counts} (the Resources tab lists each)`),
  svg("rect", { width: n.width, height: n.height, rx: 6 }),
  svg("rect", { class: "bar", width: 6, height: n.height, rx: 3 }),
  svg("text", { x: 14, y: 18, class: "kind" }, `${g.count} ${plural}`),
  svg("text", { x: 14, y: 36, class: "name" }, counts),
  svg("text", { x: 14, y: 53, class: "status" }, "each in the Resources tab"));
}

// The parent's children, followed: drawn as a tree (`view` "resources") or a topology ("topology").
function resources(root, parent, ns, view) {
  const tree = view === "topology" ? h("div", { id: "topology", class: "topology" }) : h("ul", { class: "tree", id: "resource-tree" });
  const rollout = h("div", { id: "rollout" });
  root.append(rollout, tree);
  let graph = null;
  if (view === "topology") import("./vendor/graph.js").then((g) => { graph = g; draw(); });
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
    if (view === "topology") {
      if (graph) topology(tree, parent, byOwner, graph.layout);
    } else {
      tree.replaceChildren(treeNode(parent, 0, byOwner, on, latest));
    }
    drawRollout(rollout, parent, revisions);
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
  // The controllers of the parent's kind name its children's kinds (followed over the page's watch: a user
  // who may not list them gets the common kinds, and no failed request).
  const childKinds = async (ucs) => {
    for (const uc of ucs) {
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
  };
  stops.push(listWatch(path(REVISIONS, "universalcontrollers"), (ucs) => { childKinds(ucs).catch(() => {}); }, { onError: () => {} }));
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

// The YAML tab: the object in an editor (highlighting, and the kind's schema checked as you type), saved
// with the resourceVersion it was read at — checked by the server first (a dry run), so a refusal loses
// nothing and a change made meanwhile is a conflict to reload, not a lost update.
function yamlTab(root, objPath, apiVersion, kind, name, plural, ns) {
  const holder = h("div", { id: "instance-yaml", class: "editor" });
  const msg = h("p", { id: "yaml-message", role: "status" });
  const problems = h("ul", { id: "yaml-problems", class: "problems" });
  const group = apiVersion.includes("/") ? apiVersion.split("/")[0] : "";
  root.append(h("div", { class: "toolbar" }, gated(h("button", { id: "yaml-save" }, "Save"), "update", group, plural, ns),
    h("button", { class: "secondary", id: "yaml-reload" }, "Reload")), msg, holder, problems);
  (async () => {
    const [{ yamlEditor }, schema] = await Promise.all([import("./vendor/editor.js"), kindSchema(apiVersion, kind)]);
    const editor = yamlEditor(holder, { label: `YAML of ${kind} ${name}`, findings: findingsOf(schema) });
    holder.ucEditor = editor;
    const reload = async () => {
      const o = await api(objPath);
      delete o.metadata.managedFields; // as kubectl shows an object, unless asked
      editor.setText(toYaml(o) + "\n");
      msg.className = "";
      msg.textContent = "";
      problems.replaceChildren();
    };
    const save = async () => {
      msg.className = "";
      const errors = listProblems(problems, editor);
      if (errors) {
        msg.className = "error";
        msg.textContent = `Not saved: ${errors} problem${errors > 1 ? "s" : ""} to fix first (below).`;
        return;
      }
      try {
        msg.textContent = "Checking with the server (dry run)…";
        await api(`${objPath}?dryRun=All`, { method: "PUT", body: editor.text(), contentType: "application/yaml" });
        msg.textContent = "Saving…";
        await api(objPath, { method: "PUT", body: editor.text(), contentType: "application/yaml" });
        await reload();
        msg.textContent = "Saved.";
      } catch (e) {
        msg.className = "error";
        msg.textContent = e instanceof ApiError && e.status === 409
          ? `Conflict: the object changed since it was loaded. Reload to see the new version. (${e.message})` : `Not saved: ${e.message}`;
      }
    };
    root.querySelector("#yaml-save").addEventListener("click", save);
    root.querySelector("#yaml-reload").addEventListener("click", () => reload().catch((e) => { msg.className = "error"; msg.textContent = e.message; }));
    await reload();
  })().catch((e) => { msg.className = "error"; msg.textContent = e.message; });
}

// The editor's problems listed under it, each with its line; the number of errors.
export function listProblems(list, editor) {
  const found = editor.check();
  list.replaceChildren(...found.map((d) => h("li", { class: d.severity, "data-severity": d.severity },
    `Line ${editor.view.state.doc.lineAt(d.from).number}: ${d.message}`)));
  return found.filter((d) => d.severity === "error").length;
}

// The schema check for the editor: each finding labelled with its field's path.
export const findingsOf = (schema) => (schema
  ? (o) => check(o, schema.root, { components: schema.components }).map((f) => ({ ...f, label: `${pathText(f.path) || "(the object)"}: ${f.message}` }))
  : null);

// Details: the conditions as a table, the rest of the status and the spec as fields.
function details(o) {
  const { conditions = [], ...status } = o.status || {};
  return h("div", {}, h("h2", {}, "Conditions"),
    conditions.length ? h("table", { id: "instance-conditions" }, h("tr", {}, ["Type", "Status", "Reason", "Message", "Age"].map((t) => h("th", { scope: "col" }, t))),
      conditions.map((c) => h("tr", { "data-condition": c.type }, h("td", {}, c.type), h("td", {}, conditionStatus(c)), h("td", {}, c.reason || ""),
        h("td", {}, c.message || ""), h("td", {}, age(c.lastTransitionTime)))))
      : h("p", { class: "muted" }, "No conditions."),
    h("div", { class: "split" },
      h("section", { id: "instance-status", "aria-labelledby": "status-title" }, h("h2", { id: "status-title" }, "Status"), fieldsView(status)),
      h("section", { id: "instance-spec", "aria-labelledby": "spec-title" }, h("h2", { id: "spec-title" }, "Spec"), fieldsView(o.spec || {}))));
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
  const tabs = ["details", "resources", "topology", "events", "yaml"];
  root.append(crumbs(["Installed operators", "#/installed"], kind, name), h("h1", {}, `${kind} ${name}`), h("p", { class: "muted" }, `${apiVersion}${ns ? ` in ${ns}` : ""}`),
    h("nav", { class: "tabs", "aria-label": kind }, tabs.map((t) => h("a", { href: `${base}/${t}`, class: t === tab ? "active" : "", id: `tab-${t}`,
      "aria-current": t === tab ? "page" : null }, t === "yaml" ? "YAML" : t[0].toUpperCase() + t.slice(1)))));
  const body = h("div", {});
  root.append(body);
  let stop = () => {};
  let stopped = false;
  resourceOf(apiVersion, kind).then((r) => {
    if (stopped) return;
    const collection = path(apiVersion, r.plural, r.namespaced ? ns : null);
    const objPath = path(apiVersion, r.plural, r.namespaced ? ns : null, name);
    if (tab === "yaml") { yamlTab(body, objPath, apiVersion, kind, name, r.plural, r.namespaced ? ns : null); return; }
    let inner = null;
    let uid = null;
    const current = { value: null };
    stop = listWatch(collection, (items) => {
      const o = items.find((i) => i.metadata.name === name);
      if (!o) { body.replaceChildren(h("p", { class: "muted" }, "Not found (deleted?).")); return; }
      const parent = { ...o, apiVersion, kind };
      if (tab === "details") {
        body.replaceChildren(details(o));
        return;
      }
      // Resources and events follow the parent; started once, with the parent updated in place.
      if (uid !== o.metadata.uid) {
        if (inner) inner.stop();
        body.replaceChildren();
        uid = o.metadata.uid;
        current.value = parent;
        inner = tab === "events" ? events(body, parent, ns) : resources(body, current.value, ns, tab);
      } else {
        Object.assign(current.value, parent);
        inner.redraw();
      }
    }, { onError: (e) => body.replaceChildren(refusal(e, "list", r.plural, ns || "")) });
    const outer = stop;
    stop = () => { outer(); if (inner) inner.stop(); };
  }).catch((e) => body.append(h("p", { class: "error" }, e.message)));
  return () => { stopped = true; stop(); };
}
