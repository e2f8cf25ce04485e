// A pod's page: Details (its state, conditions, each container's state, image, ports, environment with
// where each value comes from, mounts, and the pod's volumes), Events, and Logs (followed, with
// timestamps, wrapping, search, pause and download).
import { api, listWatch, h, path, age, condition, crumbs, fieldsView, health, refusal, fieldRow } from "./k8s.js";

const TABS = ["details", "events", "logs"];

export function show(root, [ns, name, tab = "details", container]) {
  const base = `#/pod/${ns}/${name}`;
  root.append(crumbs(["Cluster", "#/cluster"], ["Pods", "#/cluster"], ns, name), h("h1", {}, `Pod ${name}`),
    h("p", { class: "muted" }, `in ${ns}`),
    h("nav", { class: "tabs", "aria-label": "Pod" }, TABS.map((t) => h("a", { href: `${base}/${t}`, id: `tab-${t}`, class: t === tab ? "active" : "",
      "aria-current": t === tab ? "page" : null }, t[0].toUpperCase() + t.slice(1)))));
  const body = h("div", {});
  root.append(body);
  if (tab === "logs") return logs(body, ns, name, container);
  const stops = [];
  let pod = null;
  stops.push(listWatch(path("v1", "pods", ns), (items) => {
    pod = items.find((p) => p.metadata.name === name) || null;
    if (!pod) { body.replaceChildren(h("p", { class: "muted" }, `No pod ${name} in ${ns} (deleted?).`)); return; }
    if (tab === "details") body.replaceChildren(details(pod));
    else if (!body.firstChild || body.dataset.uid !== pod.metadata.uid) {
      body.dataset.uid = pod.metadata.uid;
      body.replaceChildren();
      stops.push(events(body, pod));
    }
  }, { onError: (e) => body.replaceChildren(refusal(e, "list", "pods", ns)) }));
  return () => stops.forEach((s) => s());
}

function details(p) {
  const owner = (p.metadata.ownerReferences || []).find((o) => o.controller) || (p.metadata.ownerReferences || [])[0];
  const statuses = new Map([...(p.status?.initContainerStatuses || []), ...(p.status?.containerStatuses || [])].map((c) => [c.name, c]));
  return h("div", {},
    h("table", { id: "pod-summary", class: "summary" },
      fieldRow("Status", h("span", { class: `phase ${health(p)}`, id: "pod-phase" }, p.metadata.deletionTimestamp ? "Terminating" : p.status?.phase || "Pending")),
      fieldRow("Ready", condition(p, "Ready")?.status || "Unknown"),
      fieldRow("Node", p.spec?.nodeName || "not scheduled"),
      fieldRow("Pod IP", p.status?.podIP || ""),
      fieldRow("Owner", owner ? `${owner.kind} ${owner.name}` : "none"),
      fieldRow("Service account", p.spec?.serviceAccountName || "default"),
      fieldRow("Restart policy", p.spec?.restartPolicy || "Always"),
      fieldRow("QoS class", p.status?.qosClass || ""),
      fieldRow("Created", `${p.metadata.creationTimestamp || ""} (${age(p.metadata.creationTimestamp)} ago)`)),
    h("h2", {}, "Conditions"), fieldsView((p.status?.conditions || []).map(({ type, status, reason, message, lastTransitionTime }) =>
      ({ type, status, reason: reason || "", message: message || "", lastTransitionTime: lastTransitionTime || "" }))),
    [...(p.spec?.initContainers || []).map((c) => [c, "Init container"]), ...(p.spec?.containers || []).map((c) => [c, "Container"])]
      .map(([c, what]) => containerCard(c, what, statuses.get(c.name), p)),
    h("h2", {}, "Volumes"), volumes(p.spec?.volumes || []));
}

// A container's state in words: running since, waiting and why, terminated with its code.
function stateOf(s) {
  if (!s?.state) return h("span", { class: "phase pending" }, "Not started");
  if (s.state.running) return h("span", { class: `phase ${s.ready ? "ok" : "pending"}` }, `Running since ${s.state.running.startedAt || ""}${s.ready ? "" : ", not ready"}`);
  if (s.state.waiting) {
    const w = s.state.waiting;
    return h("span", { class: `phase ${/BackOff|Err|Invalid/.test(w.reason || "") ? "bad" : "pending"}` }, `Waiting: ${w.reason || ""}${w.message ? ` — ${w.message}` : ""}`);
  }
  const t = s.state.terminated || {};
  return h("span", { class: `phase ${t.exitCode === 0 ? "ok" : "bad"}` }, `Terminated: ${t.reason || ""} (exit code ${t.exitCode ?? "?"})`);
}

function containerCard(c, what, s, pod) {
  return h("section", { class: "card container", "data-container": c.name, "aria-label": `${what} ${c.name}` },
    h("h2", {}, `${what} ${c.name}`),
    h("table", { class: "summary" },
      fieldRow("Image", c.image || ""),
      fieldRow("State", stateOf(s)),
      fieldRow("Restarts", String(s?.restartCount ?? 0)),
      c.command && fieldRow("Command", [...c.command, ...(c.args || [])].join(" ")),
      c.ports?.length && fieldRow("Ports", c.ports.map((p) => `${p.containerPort}/${p.protocol || "TCP"}${p.name ? ` (${p.name})` : ""}`).join(", ")),
      fieldRow("Logs", h("a", { href: `#/pod/${pod.metadata.namespace}/${pod.metadata.name}/logs/${c.name}` }, "Follow the logs"))),
    h("h3", {}, "Environment"), env(c),
    h("h3", {}, "Mounts"), c.volumeMounts?.length
      ? fieldsView(c.volumeMounts.map((m) => ({ volume: m.name, mountPath: m.mountPath, subPath: m.subPath || "", readOnly: m.readOnly ? "yes" : "no" })))
      : h("p", { class: "muted" }, "None."));
}

// Where an environment variable's value comes from, as `kubectl describe` says it.
export function envSource(e) {
  const f = e.valueFrom;
  if (!f) return e.value ?? "";
  if (f.configMapKeyRef) return `key ${f.configMapKeyRef.key} of ConfigMap ${f.configMapKeyRef.name}${f.configMapKeyRef.optional ? " (optional)" : ""}`;
  if (f.secretKeyRef) return `key ${f.secretKeyRef.key} of Secret ${f.secretKeyRef.name}${f.secretKeyRef.optional ? " (optional)" : ""}`;
  if (f.fieldRef) return `field ${f.fieldRef.fieldPath} of the pod`;
  if (f.resourceFieldRef) return `resource ${f.resourceFieldRef.resource}${f.resourceFieldRef.containerName ? ` of ${f.resourceFieldRef.containerName}` : ""}`;
  return JSON.stringify(f);
}

function env(c) {
  const vars = (c.env || []).map((e) => h("tr", {}, h("td", {}, h("code", {}, e.name)), h("td", {}, envSource(e))));
  const from = (c.envFrom || []).map((e) => {
    const src = e.configMapRef ? `every key of ConfigMap ${e.configMapRef.name}` : e.secretRef ? `every key of Secret ${e.secretRef.name}` : JSON.stringify(e);
    return h("tr", {}, h("td", {}, e.prefix ? h("code", {}, `${e.prefix}*`) : h("span", { class: "muted" }, "(all)")), h("td", {}, src));
  });
  if (!vars.length && !from.length) return h("p", { class: "muted" }, "None.");
  return h("table", { class: "env" }, h("tr", {}, h("th", { scope: "col" }, "Name"), h("th", { scope: "col" }, "Value or source")), vars, from);
}

// A volume's source in words.
export function volumeSource(v) {
  const [type, src] = Object.entries(v).find(([k]) => k !== "name") || ["unknown", {}];
  const detail = {
    configMap: () => `ConfigMap ${src.name}`,
    secret: () => `Secret ${src.secretName}`,
    persistentVolumeClaim: () => `PersistentVolumeClaim ${src.claimName}${src.readOnly ? " (read-only)" : ""}`,
    emptyDir: () => `empty directory${src.medium ? ` in ${src.medium}` : ""}${src.sizeLimit ? `, at most ${src.sizeLimit}` : ""}`,
    hostPath: () => `host path ${src.path}`,
    projected: () => `projected: ${(src.sources || []).map((s) => Object.keys(s)[0]).join(", ")}`,
    downwardAPI: () => `the pod's fields: ${(src.items || []).map((i) => i.fieldRef?.fieldPath || i.resourceFieldRef?.resource).join(", ")}`,
  }[type];
  return [type, detail ? detail() : JSON.stringify(src)];
}

function volumes(list) {
  if (!list.length) return h("p", { class: "muted" }, "None.");
  return h("table", { id: "pod-volumes" }, h("tr", {}, ["Name", "Type", "Source"].map((t) => h("th", { scope: "col" }, t))),
    list.map((v) => { const [type, src] = volumeSource(v); return h("tr", { "data-volume": v.name }, h("td", {}, v.name), h("td", {}, type), h("td", {}, src)); }));
}

function events(root, pod) {
  const rows = h("tbody", { id: "pod-events" });
  root.append(h("table", {}, h("thead", {}, h("tr", {}, ["Type", "Reason", "Message", "Count", "Age"].map((t) => h("th", { scope: "col" }, t)))), rows));
  return listWatch(path("v1", "events", pod.metadata.namespace), (items) => {
    const mine = items.filter((e) => e.involvedObject?.uid === pod.metadata.uid
      || (e.involvedObject?.kind === "Pod" && e.involvedObject?.name === pod.metadata.name))
      .sort((a, b) => Date.parse(b.lastTimestamp || b.eventTime || 0) - Date.parse(a.lastTimestamp || a.eventTime || 0));
    rows.replaceChildren(...mine.map((e) => h("tr", {}, h("td", {}, e.type), h("td", {}, e.reason), h("td", {}, e.message),
      h("td", {}, e.count ?? 1), h("td", {}, age(e.lastTimestamp || e.eventTime)))));
    if (!mine.length) rows.append(h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No events.")));
  }, { onError: (e) => rows.replaceChildren(h("tr", {}, h("td", { colspan: 5 }, refusal(e, "list", "events", pod.metadata.namespace)))) });
}

// A log line as the API sends it with timestamps=true: "<RFC 3339 time> <text>".
export function splitLine(line) {
  const at = line.indexOf(" ");
  return at > 0 && /^\d{4}-\d\d-\d\dT/.test(line) ? [line.slice(0, at), line.slice(at + 1)] : ["", line];
}

const MAX_LINES = 20000;

function logs(root, ns, name, container) {
  const out = h("pre", { id: "logs", class: "logs", tabindex: "0", role: "log", "aria-label": "Log lines", "aria-live": "off" });
  const picker = h("select", { id: "log-container", "aria-label": "Container",
    onchange: () => { location.hash = `#/pod/${ns}/${name}/logs/${picker.value}`; } });
  const times = h("input", { type: "checkbox", id: "log-timestamps", checked: true, onchange: () => draw() });
  const wrap = h("input", { type: "checkbox", id: "log-wrap", checked: true, onchange: () => out.classList.toggle("nowrap", !wrap.checked) });
  const search = h("input", { type: "search", id: "log-search", placeholder: "Search the logs…", "aria-label": "Search the logs", oninput: () => draw() });
  const count = h("span", { id: "log-count", class: "muted", role: "status" });
  const pause = h("button", { type: "button", id: "log-pause", class: "secondary", "aria-pressed": "false", onclick: () => {
    paused = !paused;
    pause.textContent = paused ? "Resume" : "Pause";
    pause.setAttribute("aria-pressed", String(paused));
    state.textContent = paused ? "paused" : "following";
    if (!paused) draw();
  } }, "Pause");
  const state = h("span", { class: "muted", id: "log-state" }, "following");
  const download = h("button", { type: "button", id: "log-download", class: "secondary", onclick: () => {
    const text = shown().map(([ts, line]) => (times.checked && ts ? `${ts} ${line}` : line)).join("\n");
    const a = h("a", { href: URL.createObjectURL(new Blob([`${text}\n`], { type: "text/plain" })), download: `${name}-${picker.value}.log` });
    document.body.append(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  } }, "Download");
  root.append(h("div", { class: "toolbar logbar" }, h("label", {}, "Container ", picker),
    h("label", {}, times, " Timestamps"), h("label", {}, wrap, " Wrap lines"), search, count, pause, download, state), out);
  const lines = [];
  let paused = false;
  let partial = "";
  let scheduled = false;
  const shown = () => {
    const q = search.value.toLowerCase();
    return q ? lines.filter(([, l]) => l.toLowerCase().includes(q)) : lines;
  };
  function draw() {
    scheduled = false;
    if (paused) return;
    const q = search.value;
    const list = shown();
    count.textContent = q ? `${list.length} of ${lines.length} lines match` : `${lines.length} lines`;
    out.replaceChildren(...list.map(([ts, line]) => h("div", { class: "line" },
      times.checked && ts ? h("span", { class: "ts" }, `${ts} `) : null, marked(line, q))));
    out.scrollTop = out.scrollHeight;
  }
  const later = () => { if (!scheduled) { scheduled = true; requestAnimationFrame(draw); } };
  const controller = new AbortController();
  (async () => {
    const pod = await api(path("v1", "pods", ns, name));
    const names = [...(pod.spec.initContainers || []), ...(pod.spec.containers || [])].map((c) => c.name);
    const chosen = container || (pod.spec.containers || [])[0]?.name;
    picker.replaceChildren(...names.map((n) => h("option", { value: n, selected: n === chosen }, n)));
    const r = await fetch(`${path("v1", "pods", ns, name, "log")}?container=${encodeURIComponent(chosen)}&follow=true&timestamps=true&tailLines=1000`,
      { signal: controller.signal, credentials: "same-origin" });
    if (!r.ok) { out.textContent = (await r.text()) || `HTTP ${r.status}`; return; }
    const reader = r.body.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const text = partial + decoder.decode(value, { stream: true });
      const parts = text.split("\n");
      partial = parts.pop();
      for (const l of parts) lines.push(splitLine(l));
      if (lines.length > MAX_LINES) lines.splice(0, lines.length - MAX_LINES);
      later();
    }
    state.textContent = "ended";
  })().catch((e) => { if (e.name !== "AbortError") out.append(`\n${e.message}`); });
  return () => controller.abort();
}

// A line with what the search matches marked.
function marked(line, q) {
  if (!q) return line;
  const parts = [];
  const lower = line.toLowerCase();
  const needle = q.toLowerCase();
  let from = 0;
  for (let at = lower.indexOf(needle); at >= 0; at = lower.indexOf(needle, from)) {
    parts.push(line.slice(from, at), h("mark", {}, line.slice(at, at + q.length)));
    from = at + q.length;
  }
  parts.push(line.slice(from));
  return parts;
}
