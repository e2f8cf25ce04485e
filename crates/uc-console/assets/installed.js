// Installed operators: every ClusterServiceVersion with its phase; one operator's page with its
// conditions and, per API it provides, the instances and a "Create" form generated from the CRD's schema
// with the YAML beside it.
import { api, listWatch, h, path, phase, age, toYaml, resourceOf } from "./k8s.js";
import { schemaForm } from "./schema-form.js";

const CSVS = "/apis/operators.coreos.com/v1alpha1/clusterserviceversions";

export const instanceHref = (o) =>
  `#/instance/${encodeURIComponent(o.apiVersion)}/${o.kind}/${o.metadata.namespace || "-"}/${o.metadata.name}`;

export function list(root) {
  const table = h("tbody", { id: "csv-rows" });
  root.append(h("h1", {}, "Installed operators"),
    h("table", {}, h("thead", {}, h("tr", {}, ["Name", "Namespace", "Version", "Managed namespaces", "Status", "Provided APIs"].map((t) => h("th", {}, t)))), table));
  return listWatch(CSVS, (items) => {
    items.sort((a, b) => `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`));
    table.replaceChildren(...items.map((c) => {
      const copied = c.metadata.labels?.["olm.copiedFrom"];
      const targets = c.metadata.annotations?.["olm.targetNamespaces"];
      return h("tr", { "data-csv": c.metadata.name },
        h("td", {}, h("a", { href: `#/csv/${c.metadata.namespace}/${c.metadata.name}` }, c.spec.displayName || c.metadata.name),
          h("div", { class: "muted" }, c.metadata.name)),
        h("td", {}, c.metadata.namespace),
        h("td", {}, c.spec.version || ""),
        h("td", {}, targets === undefined ? "" : targets === "" ? "All namespaces" : targets),
        h("td", {}, phase(c.status?.phase), copied ? h("div", { class: "muted" }, `copied from ${copied}`) : h("div", { class: "muted" }, c.status?.reason || "")),
        h("td", {}, (c.spec.customresourcedefinitions?.owned || []).map((o) => h("div", {}, o.kind))));
    }));
    if (!items.length) table.append(h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No operator installed. See OperatorHub.")));
  });
}

export function csv(root, [ns, name]) {
  const stops = [];
  const head = h("div", {});
  const apis = h("div", {});
  root.append(head, apis);
  let drawnApis = false;
  stops.push(listWatch(path("operators.coreos.com/v1alpha1", "clusterserviceversions", ns), (items) => {
    const c = items.find((i) => i.metadata.name === name);
    head.replaceChildren();
    if (!c) { head.append(h("p", { class: "muted" }, `No CSV ${name} in ${ns}.`)); return; }
    head.append(h("h1", {}, c.spec.displayName || name),
      h("p", {}, "Phase: ", h("span", { id: "csv-phase" }, phase(c.status?.phase)), " ", h("span", { class: "muted" }, c.status?.message || "")),
      h("h2", {}, "Conditions"),
      h("table", {}, h("tr", {}, ["Phase", "Reason", "Message", "When"].map((t) => h("th", {}, t))),
        (c.status?.conditions || []).slice().reverse().map((x) => h("tr", {}, h("td", {}, phase(x.phase)), h("td", {}, x.reason || ""),
          h("td", {}, x.message || ""), h("td", {}, age(x.lastTransitionTime))))));
    if (!drawnApis) {
      drawnApis = true;
      for (const owned of c.spec.customresourcedefinitions?.owned || []) stops.push(providedApi(apis, c, owned));
    }
  }));
  return () => stops.forEach((s) => s());
}

// One provided API: its instances (everywhere the operator serves), and a Create button.
function providedApi(root, c, owned) {
  const group = owned.name.split(".").slice(1).join(".");
  const apiVersion = `${group}/${owned.version}`;
  const rows = h("tbody", {});
  root.append(h("div", { class: "toolbar" }, h("h2", {}, owned.displayName || owned.kind),
    h("a", { href: `#/create/${c.metadata.namespace}/${c.metadata.name}/${owned.name}`, id: `create-${owned.kind}` },
      h("button", { type: "button" }, `Create ${owned.kind}`))),
  h("table", { "data-kind": owned.kind }, h("thead", {}, h("tr", {}, ["Name", "Namespace", "Status", "Age"].map((t) => h("th", {}, t)))), rows));
  let stop = () => {};
  let stopped = false;
  resourceOf(apiVersion, owned.kind).then((r) => {
    if (stopped) return;
    stop = listWatch(path(apiVersion, r.plural), (items) => {
      rows.replaceChildren(...items.map((o) => h("tr", {},
        h("td", {}, h("a", { href: instanceHref({ ...o, apiVersion, kind: owned.kind }) }, o.metadata.name)),
        h("td", {}, o.metadata.namespace || ""),
        h("td", {}, phase(o.status?.phase || (o.status?.conditions || []).find((x) => x.type === "Ready")?.status || "")),
        h("td", {}, age(o.metadata.creationTimestamp)))));
      if (!items.length) rows.append(h("tr", {}, h("td", { colspan: 4, class: "muted" }, "None yet.")));
    });
  }).catch((e) => rows.append(h("tr", {}, h("td", { colspan: 4, class: "error" }, e.message))));
  return () => { stopped = true; stop(); };
}

export function create(root, [ns, csvName, crdName]) {
  (async () => {
    const [c, crd] = await Promise.all([
      api(path("operators.coreos.com/v1alpha1", "clusterserviceversions", ns, csvName)),
      api(path("apiextensions.k8s.io/v1", "customresourcedefinitions", null, crdName)),
    ]);
    const version = crd.spec.versions.find((v) => v.storage) || crd.spec.versions[0];
    const apiVersion = `${crd.spec.group}/${version.name}`;
    const kind = crd.spec.names.kind;
    let examples = [];
    try { examples = JSON.parse(c.metadata.annotations?.["alm-examples"] || "[]"); } catch { /* none */ }
    const example = examples.find((e) => e.kind === kind);
    const targets = c.metadata.annotations?.["olm.targetNamespaces"];
    const defaultNs = targets ? targets.split(",")[0] : "default";
    const obj = JSON.parse(JSON.stringify(example || { apiVersion, kind, metadata: { name: "" }, spec: {} }));
    obj.apiVersion = apiVersion;
    obj.metadata = { name: obj.metadata?.name || "", namespace: defaultNs, ...(obj.metadata?.labels ? { labels: obj.metadata.labels } : {}) };
    const yaml = h("textarea", { class: "yaml", id: "create-yaml", spellcheck: "false" });
    let yamlEdited = false;
    yaml.addEventListener("input", () => { yamlEdited = true; });
    const sync = () => { if (!yamlEdited) yaml.value = toYaml(obj) + "\n"; };
    const nameInput = h("input", { type: "text", id: "field-metadata-name", value: obj.metadata.name,
      oninput: () => { obj.metadata.name = nameInput.value; sync(); } });
    const nsInput = h("input", { type: "text", id: "field-metadata-namespace", value: obj.metadata.namespace,
      oninput: () => { obj.metadata.namespace = nsInput.value; sync(); } });
    const error = h("pre", { class: "error", id: "create-error", hidden: true });
    async function submit(e) {
      e.preventDefault();
      error.hidden = true;
      const namespace = obj.metadata.namespace || defaultNs;
      const r = await resourceOf(apiVersion, kind);
      try {
        const created = yamlEdited
          ? await api(path(apiVersion, r.plural, r.namespaced ? namespace : null), { method: "POST", body: yaml.value, contentType: "application/yaml" })
          : await api(path(apiVersion, r.plural, r.namespaced ? namespace : null), { method: "POST", body: obj });
        location.hash = instanceHref({ ...created, apiVersion, kind });
      } catch (err) {
        error.textContent = err.message;
        error.hidden = false;
      }
    }
    const schema = version.schema?.openAPIV3Schema;
    root.append(h("h1", {}, `Create ${kind}`),
      h("p", { class: "muted" }, `${apiVersion}, provided by ${c.spec.displayName || csvName}. The form and the YAML describe the same object; once you edit the YAML, it is what is created.`),
      h("form", { class: "schema", id: "create-form", onsubmit: submit },
        h("div", { class: "split" },
          h("div", {},
            h("div", { class: "field" }, h("label", { for: "field-metadata-name" }, "name *"), nameInput),
            h("div", { class: "field" }, h("label", { for: "field-metadata-namespace" }, "namespace"), nsInput),
            schemaForm(schema, obj, sync)),
          h("div", {}, h("label", { for: "create-yaml" }, "YAML"), yaml)),
        error, h("p", {}, h("button", { type: "submit", id: "create-submit" }, "Create"))));
    sync();
  })().catch((e) => root.append(h("p", { class: "error" }, e.message)));
}
