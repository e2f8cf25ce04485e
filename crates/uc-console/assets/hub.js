// OperatorHub: the catalogs' packages as tiles (search and filters), a package's page, the Install form
// (OperatorGroup + Subscription, as OLM's console makes them) and the install's progress with Approve.
import { api, listWatch, h, path, phase, ApiError } from "./k8s.js";

const PACKAGES = "/apis/packages.operators.coreos.com/v1/packagemanifests";
const SUBS = "/apis/operators.coreos.com/v1alpha1/subscriptions";
const LEVELS = ["Basic Install", "Seamless Upgrades", "Full Lifecycle", "Deep Insights", "Auto Pilot"];

const desc = (p) => {
  const ch = (p.status.channels || []).find((c) => c.name === p.status.defaultChannel) || (p.status.channels || [])[0];
  return ch?.currentCSVDesc || {};
};
const icon = (d) => {
  const i = (d.icon || [])[0];
  return i ? h("img", { src: `data:${i.mediatype};base64,${i.base64data}`, alt: "" }) : h("div", { class: "noicon" });
};
const provider = (p) => p.status.provider?.name || desc(p).provider?.name || "";
const categories = (p) => String(desc(p).annotations?.categories || "").split(",").map((s) => s.trim()).filter(Boolean);

export function list(root) {
  let packages = [];
  let subs = [];
  const state = { text: "", provider: new Set(), category: new Set(), level: new Set(), installed: new Set() };
  const search = h("input", { type: "search", id: "hub-search", placeholder: "Filter by keyword…",
    oninput: (e) => { state.text = e.target.value.toLowerCase(); draw(); } });
  const filters = h("aside", { class: "filters", id: "hub-filters" });
  const tiles = h("div", { class: "tiles", id: "hub-tiles" });
  root.append(h("h1", {}, "OperatorHub"),
    h("p", { class: "muted" }, "Operators from the cluster's catalogs. Install one to create its Subscription."),
    h("div", { class: "toolbar" }, search), h("div", { class: "layout" }, filters, tiles));
  const installed = (p) => subs.some((s) => s.spec?.name === p.metadata.name && s.spec?.source === p.status.catalogSource);
  const checkbox = (set, value, id) => h("label", {}, h("input", { type: "checkbox", id, checked: set.has(value),
    onchange: (e) => { e.target.checked ? set.add(value) : set.delete(value); draw(); } }), " ", value);
  function draw() {
    const providers = [...new Set(packages.map(provider).filter(Boolean))].sort();
    const cats = [...new Set(packages.flatMap(categories))].sort();
    filters.replaceChildren(...[
      h("h3", {}, "Install state"), ["Installed", "Not installed"].map((v) => checkbox(state.installed, v, `filter-install-${v.replace(" ", "-").toLowerCase()}`)),
      h("h3", {}, "Provider"), providers.map((v) => checkbox(state.provider, v, `filter-provider-${v}`)),
      h("h3", {}, "Category"), cats.map((v) => checkbox(state.category, v, `filter-category-${v}`)),
      h("h3", {}, "Capability level"), LEVELS.map((v) => checkbox(state.level, v, `filter-level-${v.replace(" ", "-").toLowerCase()}`))].flat());
    const shown = packages.filter((p) => {
      const d = desc(p);
      const text = `${p.metadata.name} ${d.displayName || ""} ${d.annotations?.description || ""} ${(d.keywords || []).join(" ")}`.toLowerCase();
      const inst = installed(p) ? "Installed" : "Not installed";
      return (!state.text || text.includes(state.text))
        && (!state.provider.size || state.provider.has(provider(p)))
        && (!state.category.size || categories(p).some((c) => state.category.has(c)))
        && (!state.level.size || state.level.has(d.annotations?.capabilities))
        && (!state.installed.size || state.installed.has(inst));
    }).sort((a, b) => (desc(a).displayName || a.metadata.name).localeCompare(desc(b).displayName || b.metadata.name));
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
  const stops = [listWatch(PACKAGES, (items) => { packages = items; draw(); }),
    listWatch(SUBS, (items) => { subs = items; draw(); })];
  return () => stops.forEach((s) => s());
}

export function pkg(root, [ns, name]) {
  let stop = listWatch(path("packages.operators.coreos.com/v1", "packagemanifests", ns), (items) => {
    const p = items.find((i) => i.metadata.name === name);
    root.replaceChildren();
    if (!p) { root.append(h("p", { class: "muted" }, `No package ${name} in ${ns}.`)); return; }
    const d = desc(p);
    let examples = [];
    try { examples = JSON.parse(d.annotations?.["alm-examples"] || "[]"); } catch { /* shown as none */ }
    root.append(
      h("div", { class: "toolbar" }, icon(d), h("h1", {}, d.displayName || name),
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

async function ensure(collection, obj) {
  try {
    return await api(collection, { method: "POST", body: obj });
  } catch (e) {
    if (e instanceof ApiError && e.status === 409) return null; // there already
    throw e;
  }
}

export function install(root, [ns, name]) {
  let stopped = false;
  (async () => {
    const p = await api(path("packages.operators.coreos.com/v1", "packagemanifests", ns, name));
    if (stopped) return;
    const channels = p.status.channels || [];
    const channelSel = h("select", { id: "install-channel" }, channels.map((c) => h("option", { value: c.name, selected: c.name === p.status.defaultChannel }, c.name)));
    const versionSel = h("select", { id: "install-version" });
    const modes = (ch) => (ch?.currentCSVDesc?.installModes || []).filter((m) => m.supported).map((m) => m.type);
    const modeBox = h("div", { id: "install-mode" });
    const nsInput = h("input", { type: "text", id: "install-namespace", value: `${name}-operator` });
    const approval = h("div", {}, ["Automatic", "Manual"].map((a) => h("label", {},
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
    function modeChanged() {
      const single = root.querySelector("input[name=mode]:checked")?.value === "single";
      nsInput.disabled = !single;
    }
    channelSel.addEventListener("change", channelChanged);
    async function submit(e) {
      e.preventDefault();
      error.textContent = "";
      const single = root.querySelector("input[name=mode]:checked")?.value === "single";
      const target = single ? nsInput.value.trim() : "operators";
      const ch = channels.find((c) => c.name === channelSel.value);
      try {
        await ensure("/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: target } });
        if (single) {
          const groups = await api(path("operators.coreos.com/v1", "operatorgroups", target));
          if (!groups.items.length) {
            await ensure(path("operators.coreos.com/v1", "operatorgroups", target), { apiVersion: "operators.coreos.com/v1",
              kind: "OperatorGroup", metadata: { name: `${target}-group`, namespace: target }, spec: { targetNamespaces: [target] } });
          }
        }
        const spec = { name, channel: ch.name, source: p.status.catalogSource, sourceNamespace: p.status.catalogSourceNamespace,
          installPlanApproval: root.querySelector("input[name=approval]:checked").value };
        if (versionSel.value && versionSel.value !== ch.currentCSV) spec.startingCSV = versionSel.value;
        await api(path("operators.coreos.com/v1alpha1", "subscriptions", target), { method: "POST",
          body: { apiVersion: "operators.coreos.com/v1alpha1", kind: "Subscription", metadata: { name, namespace: target }, spec } });
        location.hash = `#/plan/${target}/${name}`;
      } catch (err) {
        error.textContent = err.message;
      }
    }
    root.append(h("h1", {}, `Install ${p.status.channels?.[0]?.currentCSVDesc?.displayName || name}`),
      h("form", { class: "card", id: "install-form", onsubmit: submit },
        h("h2", {}, "Update channel"), channelSel,
        h("h2", {}, "Version"), versionSel,
        h("h2", {}, "Installation mode"), modeBox, h("label", {}, "Namespace ", nsInput),
        h("h2", {}, "Update approval"), approval,
        h("p", {}, h("button", { type: "submit", id: "install-submit" }, "Install")), error));
    channelChanged();
  })().catch((e) => root.append(h("p", { class: "error" }, e.message)));
  return () => { stopped = true; };
}

export function plan(root, [ns, name]) {
  const head = h("div", {});
  const body = h("div", {});
  root.append(h("h1", {}, `Installing ${name} in ${ns}`), head, body);
  let plans = [];
  let sub = null;
  let csvs = [];
  function draw() {
    head.replaceChildren();
    body.replaceChildren();
    if (!sub) { head.append(h("p", { class: "muted" }, "Waiting for the Subscription…")); return; }
    const st = sub.status || {};
    const conds = (st.conditions || []).filter((c) => c.status === "True");
    head.append(h("table", { id: "subscription-status" },
      h("tr", {}, h("th", {}, "Subscription state"), h("td", {}, phase(st.state || "resolving"))),
      h("tr", {}, h("th", {}, "Current CSV"), h("td", {}, st.currentCSV || "")),
      h("tr", {}, h("th", {}, "Installed CSV"), h("td", {}, st.installedCSV || "")),
      conds.map((c) => h("tr", {}, h("th", {}, c.type), h("td", {}, `${c.reason || ""} ${c.message || ""}`)))));
    const ref = st.installPlanRef?.name;
    const ip = plans.find((x) => x.metadata.name === ref);
    if (ip) {
      const needsApproval = ip.spec.approval === "Manual" && !ip.spec.approved;
      body.append(h("h2", {}, `InstallPlan ${ref}`),
        h("p", {}, "Phase: ", h("span", { id: "plan-phase" }, phase(ip.status?.phase || "")), " ",
          needsApproval && h("button", { id: "approve", onclick: async (e) => {
            e.target.disabled = true;
            await api(path("operators.coreos.com/v1alpha1", "installplans", ns, ref), { method: "PATCH",
              contentType: "application/merge-patch+json", body: { spec: { approved: true } } });
          } }, "Approve")),
        h("table", {}, h("tr", {}, h("th", {}, "Kind"), h("th", {}, "Name"), h("th", {}, "Status")),
          (ip.status?.plan || []).map((s) => h("tr", {}, h("td", {}, s.resource.kind), h("td", {}, s.resource.name), h("td", {}, phase(s.status))))));
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
