// OperatorHub: the catalogs' packages as tiles (search and filters), a package's page, the Install form
// (OperatorGroup + Subscription, as OLM's console makes them) and the install's progress with Approve.
import { api, listWatch, h, path, phase, crumbs, refusal, conditionStatus, gated, fieldRow, currentNamespace } from "./k8s.js";

const PACKAGES = "/apis/packages.operators.coreos.com/v1/packagemanifests";
const SUBS = "/apis/operators.coreos.com/v1alpha1/subscriptions";
const LEVELS = ["Basic Install", "Seamless Upgrades", "Full Lifecycle", "Deep Insights", "Auto Pilot"];

const desc = (p) => {
  const ch = (p.status.channels || []).find((c) => c.name === p.status.defaultChannel) || (p.status.channels || [])[0];
  return ch?.currentCSVDesc || {};
};
// The package's icon (its CSV's spec.icon), drawn at `size` pixels whatever the image's own size.
const icon = (d, size = 40) => {
  const i = (d.icon || [])[0];
  const style = `width:${size}px;height:${size}px`;
  return i && /^image\/(png|jpeg|gif|svg\+xml|webp)$/.test(i.mediatype)
    ? h("img", { class: "icon", src: `data:${i.mediatype};base64,${i.base64data}`, alt: "", style })
    : h("div", { class: "icon noicon", style, "aria-hidden": "true" });
};
const provider = (p) => p.status.provider?.name || desc(p).provider?.name || "";
const categories = (p) => String(desc(p).annotations?.categories || "").split(",").map((s) => s.trim()).filter(Boolean);

export function list(root) {
  let packages = [];
  let subs = [];
  let subsRefused = null;
  const state = { text: "", provider: new Set(), category: new Set(), level: new Set(), installed: new Set() };
  const search = h("input", { type: "search", id: "hub-search", placeholder: "Filter by keyword…",
    oninput: (e) => { state.text = e.target.value.toLowerCase(); draw(); } });
  const filters = h("aside", { class: "filters", id: "hub-filters" });
  const tiles = h("div", { class: "tiles", id: "hub-tiles" });
  root.append(h("h1", {}, "OperatorHub"),
    h("p", { class: "muted" }, "Operators from the cluster's catalogs. Install one to create its Subscription."),
    h("div", { class: "toolbar" }, search), h("div", { class: "layout" }, filters, tiles));
  const installed = (p) => subs.some((s) => s.spec?.name === p.metadata.name && s.spec?.source === p.status.catalogSource);
  // Each filter group: what a package has of it, and the values chosen.
  const groups = {
    installed: (p) => [installed(p) ? "Installed" : "Not installed"],
    provider: (p) => [provider(p)].filter(Boolean),
    category: categories,
    level: (p) => [desc(p).annotations?.capabilities].filter(Boolean),
  };
  const matches = (p, except) => {
    const d = desc(p);
    const text = `${p.metadata.name} ${d.displayName || ""} ${d.annotations?.description || ""} ${(d.keywords || []).join(" ")}`.toLowerCase();
    return (!state.text || text.includes(state.text)) && Object.entries(groups).every(([g, of]) =>
      g === except || !state[g].size || of(p).some((v) => state[g].has(v)));
  };
  // A filter's count: the packages it would show with the other groups' choices kept (as OperatorHub counts).
  const checkbox = (group, value, id) => {
    const count = packages.filter((p) => matches(p, group) && groups[group](p).includes(value)).length;
    return h("label", {}, h("input", { type: "checkbox", id, checked: state[group].has(value),
      onchange: (e) => { e.target.checked ? state[group].add(value) : state[group].delete(value); draw(); } }),
    ` ${value} `, h("span", { class: "count", "data-count": count }, `(${count})`));
  };
  const slug = (v) => v.replace(/[^A-Za-z0-9]+/g, "-").toLowerCase();
  function draw() {
    const providers = [...new Set(packages.map(provider).filter(Boolean))].sort();
    const cats = [...new Set(packages.flatMap(categories))].sort();
    filters.replaceChildren(...[
      h("h2", {}, "Install state"), ["Installed", "Not installed"].map((v) => checkbox("installed", v, `filter-install-${slug(v)}`)),
      subsRefused && h("p", { class: "muted" }, "Install state unknown: you may not list Subscriptions in all namespaces."),
      h("h2", {}, "Provider"), providers.map((v) => checkbox("provider", v, `filter-provider-${slug(v)}`)),
      h("h2", {}, "Category"), cats.map((v) => checkbox("category", v, `filter-category-${slug(v)}`)),
      h("h2", {}, "Capability level"), LEVELS.map((v) => checkbox("level", v, `filter-level-${slug(v)}`))].flat());
    const shown = packages.filter((p) => matches(p, null))
      .sort((a, b) => (desc(a).displayName || a.metadata.name).localeCompare(desc(b).displayName || b.metadata.name));
    tiles.replaceChildren(...shown.map((p) => {
      const d = desc(p);
      return h("a", { class: "tile", href: `#/package/${p.metadata.namespace}/${p.metadata.name}`, "data-package": p.metadata.name },
        icon(d), installed(p) && h("span", { class: "badge installed" }, "Installed"),
        h("div", { class: "name" }, d.displayName || p.metadata.name),
        h("div", { class: "muted" }, `provided by ${provider(p) || "unknown"}`),
        h("p", {}, d.annotations?.description || ""),
        d.annotations?.capabilities && h("span", { class: "badge" }, d.annotations.capabilities));
    }));
    if (!shown.length) tiles.append(h("p", { class: "muted" }, packages.length ? "No operator matches." : "Reading the catalogs…"));
  }
  const stops = [listWatch(PACKAGES, (items) => { packages = items; draw(); },
    { onError: (e) => tiles.replaceChildren(refusal(e, "list", "PackageManifests", "")) }),
  listWatch(SUBS, (items) => { subs = items; subsRefused = null; draw(); }, { onError: (e) => { subsRefused = e; draw(); } })];
  return () => stops.forEach((s) => s());
}

export function pkg(root, [ns, name]) {
  let stop = listWatch(path("packages.operators.coreos.com/v1", "packagemanifests", ns), (items) => {
    const p = items.find((i) => i.metadata.name === name);
    root.replaceChildren();
    if (!p) { root.append(crumbs(["OperatorHub", "#/hub"], name), h("p", { class: "muted" }, `No package ${name} in ${ns}.`)); return; }
    const d = desc(p);
    let examples = [];
    try { examples = JSON.parse(d.annotations?.["alm-examples"] || "[]"); } catch { /* shown as none */ }
    root.append(crumbs(["OperatorHub", "#/hub"], d.displayName || name),
      h("div", { class: "toolbar" }, icon(d, 64), h("h1", {}, d.displayName || name),
        h("button", { id: "install", onclick: () => { location.hash = `#/install/${ns}/${name}`; } }, "Install")),
      h("div", { class: "split" },
        h("div", {},
          h("div", { class: "card", id: "package-description" }, ...(d.description || "").split("\n\n").map((para) => h("p", {}, para))),
          h("h2", {}, "Provided APIs"),
          h("table", {}, h("tr", {}, h("th", {}, "Kind"), h("th", {}, "Version"), h("th", {}, "CRD")),
            (d.customresourcedefinitions?.owned || []).map((c) => h("tr", {}, h("td", {}, c.kind), h("td", {}, c.version), h("td", {}, c.name)))),
          h("h2", {}, "Examples (alm-examples)"),
          h("pre", { id: "alm-examples" }, JSON.stringify(examples, null, 2))),
        h("div", {},
          h("table", {},
            h("tr", {}, h("th", {}, "Capability level"), h("td", {}, d.annotations?.capabilities || "")),
            h("tr", {}, h("th", {}, "Provider"), h("td", {}, provider(p))),
            h("tr", {}, h("th", {}, "Catalog"), h("td", {}, `${p.status.catalogSourceDisplayName} (${p.status.catalogSource})`)),
            h("tr", {}, h("th", {}, "Default channel"), h("td", {}, p.status.defaultChannel))),
          h("h2", {}, "Channels and versions"),
          h("table", {}, h("tr", {}, h("th", {}, "Channel"), h("th", {}, "Versions (newest first)")),
            (p.status.channels || []).map((c) => h("tr", {}, h("td", {}, c.name),
              h("td", {}, (c.entries || [{ version: c.currentCSVDesc?.version }]).map((e) => e.version).join(", "))))))));
  });
  return () => stop();
}

// The namespace, created unless it is there. Asked first (a list by name: an empty list, not a 404 or a
// 409, when it is not); a user who may not list namespaces creates it, and one that exists is no error.
async function ensureNamespace(name) {
  const listed = await api(`/api/v1/namespaces?fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`).catch(() => null);
  if (listed?.items?.length) return;
  await api("/api/v1/namespaces", { method: "POST", body: { apiVersion: "v1", kind: "Namespace", metadata: { name } } })
    .catch((e) => { if (e.status !== 409) throw e; });
}

export function install(root, [ns, name]) {
  let stopped = false;
  (async () => {
    const p = await api(path("packages.operators.coreos.com/v1", "packagemanifests", ns, name));
    if (stopped) return;
    const channels = p.status.channels || [];
    const channelSel = h("select", { id: "install-channel", "aria-labelledby": "install-channel-title" }, channels.map((c) => h("option", { value: c.name, selected: c.name === p.status.defaultChannel }, c.name)));
    const versionSel = h("select", { id: "install-version", "aria-labelledby": "install-version-title" });
    const modes = (ch) => (ch?.currentCSVDesc?.installModes || []).filter((m) => m.supported).map((m) => m.type);
    const modeBox = h("div", { id: "install-mode", role: "radiogroup", "aria-labelledby": "install-mode-title" });
    // A specific namespace: the one the header chose, else the operator's own.
    const nsInput = h("input", { type: "text", id: "install-namespace", value: currentNamespace() || `${name}-operator` });
    const approval = h("div", { role: "radiogroup", "aria-labelledby": "install-approval-title" }, ["Automatic", "Manual"].map((a) => h("label", {},
      h("input", { type: "radio", name: "approval", value: a, id: `approval-${a.toLowerCase()}`, checked: a === "Automatic" }), ` ${a} `)));
    const error = h("p", { class: "error", id: "install-error" });
    function channelChanged() {
      const ch = channels.find((c) => c.name === channelSel.value);
      versionSel.replaceChildren(...(ch?.entries || [{ name: ch?.currentCSV, version: ch?.currentCSVDesc?.version }])
        .map((e, i) => h("option", { value: e.name, selected: i === 0 }, e.version)));
      const supported = modes(ch);
      const choices = [];
      if (supported.includes("AllNamespaces")) choices.push(["all", "All namespaces on the cluster (operators)"]);
      if (supported.includes("OwnNamespace") || supported.includes("SingleNamespace")) choices.push(["single", "A specific namespace on the cluster"]);
      modeBox.replaceChildren(...choices.map(([v, label], i) => h("label", { style: "display:block" },
        h("input", { type: "radio", name: "mode", value: v, id: `mode-${v}`, checked: i === 0, onchange: modeChanged }), ` ${label}`)));
      modeChanged();
    }
    const submitButton = h("button", { type: "submit", id: "install-submit" }, "Install");
    const target = () => (root.querySelector("input[name=mode]:checked")?.value === "single" ? nsInput.value.trim() : "operators");
    // Installing is creating a Subscription in the target namespace: greyed out when the user may not.
    const gate = () => gated(submitButton, "create", "operators.coreos.com", "subscriptions", target());
    function modeChanged() {
      const single = root.querySelector("input[name=mode]:checked")?.value === "single";
      nsInput.disabled = !single;
      gate();
    }
    nsInput.addEventListener("change", gate);
    channelSel.addEventListener("change", channelChanged);
    async function submit(e) {
      e.preventDefault();
      error.textContent = "";
      const single = root.querySelector("input[name=mode]:checked")?.value === "single";
      const namespace = target();
      const ch = channels.find((c) => c.name === channelSel.value);
      try {
        await ensureNamespace(namespace);
        if (single) {
          const groups = await api(path("operators.coreos.com/v1", "operatorgroups", namespace));
          if (!groups.items.length) {
            await api(path("operators.coreos.com/v1", "operatorgroups", namespace), { method: "POST", body: { apiVersion: "operators.coreos.com/v1",
              kind: "OperatorGroup", metadata: { name: `${namespace}-group`, namespace }, spec: { targetNamespaces: [namespace] } } });
          }
        }
        const spec = { name, channel: ch.name, source: p.status.catalogSource, sourceNamespace: p.status.catalogSourceNamespace,
          installPlanApproval: root.querySelector("input[name=approval]:checked").value };
        if (versionSel.value && versionSel.value !== ch.currentCSV) spec.startingCSV = versionSel.value;
        await api(path("operators.coreos.com/v1alpha1", "subscriptions", namespace), { method: "POST",
          body: { apiVersion: "operators.coreos.com/v1alpha1", kind: "Subscription", metadata: { name, namespace }, spec } });
        location.hash = `#/plan/${namespace}/${name}`;
      } catch (err) {
        error.textContent = err.message;
      }
    }
    const display = p.status.channels?.[0]?.currentCSVDesc?.displayName || name;
    root.append(crumbs(["OperatorHub", "#/hub"], [display, `#/package/${ns}/${name}`], "Install"), h("h1", {}, `Install ${display}`),
      h("form", { class: "card", id: "install-form", onsubmit: submit },
        h("h2", { id: "install-channel-title" }, "Update channel"), channelSel,
        h("h2", { id: "install-version-title" }, "Version"), versionSel,
        h("h2", { id: "install-mode-title" }, "Installation mode"), modeBox, h("label", {}, "Namespace ", nsInput),
        h("h2", { id: "install-approval-title" }, "Update approval"), approval,
        h("p", {}, submitButton), error));
    channelChanged();
  })().catch((e) => root.append(h("p", { class: "error" }, e.message)));
  return () => { stopped = true; };
}

export function plan(root, [ns, name]) {
  const head = h("div", {});
  const body = h("div", {});
  root.append(crumbs(["Installed operators", "#/installed"], `${name} in ${ns}`), h("h1", {}, `Installing ${name} in ${ns}`), head, body);
  let plans = [];
  let sub = null;
  let csvs = [];
  function draw() {
    head.replaceChildren();
    body.replaceChildren();
    if (!sub) { head.append(h("p", { class: "muted" }, "Waiting for the Subscription…")); return; }
    const st = sub.status || {};
    head.append(h("table", { id: "subscription-status" },
      fieldRow("Subscription state", phase(st.state || "resolving")),
      fieldRow("Current CSV", st.currentCSV || ""),
      fieldRow("Installed CSV", st.installedCSV || ""),
      (st.conditions || []).map((c) => h("tr", { "data-condition": c.type }, h("th", { scope: "row" }, c.type),
        h("td", {}, conditionStatus(c), ` ${c.reason || ""} ${c.message || ""}`)))));
    const ref = st.installPlanRef?.name;
    const ip = plans.find((x) => x.metadata.name === ref);
    if (ip) {
      const needsApproval = ip.spec.approval === "Manual" && !ip.spec.approved;
      body.append(h("h2", {}, `InstallPlan ${ref}`),
        h("p", {}, "Phase: ", h("span", { id: "plan-phase" }, phase(ip.status?.phase || "")), " ",
          needsApproval && gated(h("button", { id: "approve", onclick: async (e) => {
            e.target.disabled = true;
            await api(path("operators.coreos.com/v1alpha1", "installplans", ns, ref), { method: "PATCH",
              contentType: "application/merge-patch+json", body: { spec: { approved: true } } });
          } }, "Approve"), "patch", "operators.coreos.com", "installplans", ns)),
        h("table", {}, h("tr", {}, h("th", {}, "Kind"), h("th", {}, "Name"), h("th", {}, "Status")),
          (ip.status?.plan || []).map((s) => h("tr", { "data-step": s.resource.name }, h("td", {}, s.resource.kind), h("td", {}, s.resource.name),
            h("td", {}, stepStatus(s.status, needsApproval))))));
    }
    const csv = csvs.find((c) => c.metadata.name === (st.installedCSV || st.currentCSV));
    if (csv) {
      body.append(h("h2", {}, "ClusterServiceVersion"),
        h("p", {}, h("a", { href: `#/csv/${ns}/${csv.metadata.name}` }, csv.metadata.name), " ",
          h("span", { id: "csv-phase" }, phase(csv.status?.phase)), " ", h("span", { class: "muted" }, csv.status?.message || "")));
    }
  }
  const stops = [
    listWatch(path("operators.coreos.com/v1alpha1", "subscriptions", ns), (items) => { sub = items.find((s) => s.metadata.name === name) || null; draw(); }),
    listWatch(path("operators.coreos.com/v1alpha1", "installplans", ns), (items) => { plans = items; draw(); }),
    listWatch(path("operators.coreos.com/v1alpha1", "clusterserviceversions", ns), (items) => { csvs = items; draw(); }),
  ];
  return () => stops.forEach((s) => s());
}

// An InstallPlan step's status by what it means: nothing is wrong with a step not yet made (Unknown before
// approval, NotPresent), one made or there is done, one waiting for its API is in progress.
export function stepStatus(status, waitingForApproval) {
  const meaning = { Created: "ok", Present: "ok", WaitingForAPI: "pending", NotPresent: "idle", Unknown: "idle" }[status] || "bad";
  const label = waitingForApproval && status === "Unknown" ? "Waiting for approval" : status || "—";
  return h("span", { class: `phase ${meaning}`, "data-status": status }, label);
}
