// Installed operators: every ClusterServiceVersion with its phase; one operator's page with its
// conditions and, per API it provides, the instances and a "Create" form generated from the CRD's schema
// with the YAML beside it.
import { api, listWatch, h, path, phase, age, toYaml, resourceOf, crumbs, scoped, currentNamespace, refusalRow, conditionStatus, gated, fieldRow } from "./k8s.js";
import { schemaForm } from "./schema-form.js";
import { findingsOf, listProblems } from "./instance.js";

const OLM = "operators.coreos.com/v1alpha1";

export const instanceHref = (o) =>
  `#/instance/${encodeURIComponent(o.apiVersion)}/${o.kind}/${o.metadata.namespace || "-"}/${o.metadata.name}`;

export function list(root) {
  const table = h("tbody", { id: "csv-rows" });
  root.append(h("h1", {}, "Installed operators"),
    h("p", { class: "muted" }, currentNamespace() ? `In the namespace ${currentNamespace()}.` : "In all namespaces."),
    h("table", {}, h("thead", {}, h("tr", {}, ["Name", "Namespace", "Version", "Managed namespaces", "Status", "Provided APIs"].map((t) => h("th", { scope: "col" }, t)))), table));
  return listWatch(scoped(OLM, "clusterserviceversions"), (items) => {
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
  }, { onError: (e) => table.replaceChildren(refusalRow(6, e, "list", "ClusterServiceVersions")) });
}

export function csv(root, [ns, name]) {
  const stops = [];
  const head = h("div", {});
  const subscription = h("div", { id: "subscription" });
  const apis = h("div", {});
  root.append(head, subscription, apis);
  let drawnApis = false;
  let current = null;
  let subs = [];
  // The Subscription's table follows it; the Uninstall action is made again only when the Subscription
  // comes or goes (so that a status written meanwhile does not close its open dialog).
  const table = h("div", {});
  const actions = h("div", {});
  subscription.append(actions, table);
  let actionsFor = null;
  const drawSubscription = () => {
    const sub = subs.find((x) => x.status?.installedCSV === name || x.status?.currentCSV === name
      || x.spec?.startingCSV === name) || null;
    const original = current && !current.metadata.labels?.["olm.copiedFrom"];
    table.replaceChildren(...(sub && original ? [subscriptionTable(sub)] : []));
    const key = original ? sub?.metadata.uid || "none" : null;
    if (key !== actionsFor) {
      actionsFor = key;
      actions.replaceChildren(...(original ? [uninstallButton(current, sub)] : []));
    }
  };
  stops.push(listWatch(path(OLM, "clusterserviceversions", ns), (items) => {
    const c = items.find((i) => i.metadata.name === name);
    current = c || null;
    head.replaceChildren(crumbs(["Installed operators", "#/installed"], c?.spec.displayName || name));
    if (!c) { head.append(h("p", { class: "muted" }, `No CSV ${name} in ${ns}.`)); drawSubscription(); return; }
    const copied = c.metadata.labels?.["olm.copiedFrom"];
    head.append(h("h1", {}, c.spec.displayName || name),
      h("p", {}, "Phase: ", h("span", { id: "csv-phase" }, phase(c.status?.phase)), " ", h("span", { class: "muted" }, c.status?.message || "")),
      copied ? h("p", { class: "muted" }, "A copy OLM keeps in each namespace the operator serves; it is installed in ",
        h("a", { href: `#/csv/${copied}/${name}` }, copied), ".") : "",
      h("h2", {}, "Conditions"),
      h("table", { id: "csv-conditions" }, h("tr", {}, ["Phase", "Reason", "Message", "When"].map((t) => h("th", { scope: "col" }, t))),
        (c.status?.conditions || []).slice().reverse().map((x) => h("tr", {}, h("td", {}, phase(x.phase)), h("td", {}, x.reason || ""),
          h("td", {}, x.message || ""), h("td", {}, age(x.lastTransitionTime))))));
    drawSubscription();
    if (!drawnApis) {
      drawnApis = true;
      for (const owned of c.spec.customresourcedefinitions?.owned || []) stops.push(providedApi(apis, c, owned));
    }
  }));
  stops.push(listWatch(path(OLM, "subscriptions", ns), (items) => { subs = items; drawSubscription(); }, { onError: () => {} }));
  return () => stops.forEach((s) => s());
}

// The Subscription that installed the operator: its channel, approval, state, and its conditions as `oc
// describe sub` lists them (seed 001 chapter 7: CatalogSourcesUnhealthy, InstallPlanMissing,
// InstallPlanPending, InstallPlanFailed), each coloured by what it means.
export function subscriptionTable(sub) {
  const st = sub.status || {};
  return h("div", {}, h("h2", {}, "Subscription"),
    h("table", { id: "subscription-status", class: "summary" },
      fieldRow("Name", sub.metadata.name), fieldRow("Channel", sub.spec?.channel || ""),
      fieldRow("Approval", sub.spec?.installPlanApproval || "Automatic"), fieldRow("State", phase(st.state || "resolving")),
      fieldRow("Installed version", st.installedCSV || ""), fieldRow("Current version", st.currentCSV || "")),
    h("h3", {}, "Subscription conditions"),
    (st.conditions || []).length
      ? h("table", { id: "subscription-conditions" }, h("tr", {}, ["Type", "Status", "Reason", "Message", "Last transition"].map((t) => h("th", { scope: "col" }, t))),
        st.conditions.map((c) => h("tr", { "data-condition": c.type }, h("td", {}, c.type), h("td", {}, conditionStatus(c)), h("td", {}, c.reason || ""),
          h("td", {}, c.message || ""), h("td", {}, c.lastTransitionTime ? `${c.lastTransitionTime} (${age(c.lastTransitionTime)} ago)` : ""))))
      : h("p", { class: "muted" }, "None reported yet."));
}

// Uninstall, as OpenShift's console does it (seed 001 §5.1): the Subscription removed, so that the operator
// takes no more updates; with "completely" (the default) its ClusterServiceVersion too — what the install
// made (controllers, RBAC) goes with it; CRDs stay — and, when asked, every instance of its kinds first.
// Without a Subscription (removed before), the CSV alone.
function uninstallButton(c, sub) {
  const owned = c.spec.customresourcedefinitions?.owned || [];
  const ns = c.metadata.namespace;
  const completely = h("input", { type: "checkbox", id: "uninstall-completely", checked: true, disabled: !sub,
    onchange: () => { operands.disabled = !completely.checked; if (!completely.checked) operands.checked = false; } });
  const operands = h("input", { type: "checkbox", id: "uninstall-operands" });
  const message = h("p", { id: "uninstall-message", role: "status" });
  const dialog = h("dialog", { id: "uninstall-dialog", "aria-labelledby": "uninstall-title" },
    h("h2", { id: "uninstall-title" }, `Uninstall ${c.spec.displayName || c.metadata.name}?`),
    h("p", {}, sub ? `The Subscription ${sub.metadata.name} is removed: the operator takes no more updates.`
      : "It has no Subscription (removed before): its ClusterServiceVersion is deleted."),
    h("label", { class: "choice" }, completely, ` Also completely remove the operator from ${ns}: its ClusterServiceVersion `
      + `${c.metadata.name}, and with it the controllers and RBAC the install made. Its CustomResourceDefinitions stay.`),
    owned.length ? h("label", { class: "choice" }, operands, ` Also delete every instance of ${owned.map((o) => o.kind).join(", ")}`) : null,
    message,
    h("div", { class: "toolbar" },
      h("button", { id: "uninstall-confirm", class: "danger", onclick: async (e) => {
        e.target.disabled = true;
        try {
          if (operands.checked) await deleteOperands(owned, message);
          if (sub) {
            message.textContent = "Removing the Subscription…";
            await api(path(OLM, "subscriptions", sub.metadata.namespace, sub.metadata.name), { method: "DELETE" });
          }
          if (completely.checked) {
            message.textContent = "Deleting the ClusterServiceVersion…";
            await api(path(OLM, "clusterserviceversions", ns, c.metadata.name), { method: "DELETE" });
          }
          dialog.close();
          if (completely.checked) location.hash = "#/installed";
        } catch (err) {
          message.className = "error";
          message.textContent = err.message;
          e.target.disabled = false;
        }
      } }, "Uninstall"),
      h("button", { class: "secondary", onclick: () => dialog.close() }, "Cancel")));
  const button = h("button", { id: "uninstall", class: "danger", onclick: () => dialog.showModal() }, "Uninstall operator");
  return h("div", { class: "toolbar" }, gated(button, "delete", "operators.coreos.com", sub ? "subscriptions" : "clusterserviceversions", ns), dialog);
}

async function deleteOperands(owned, message) {
  for (const o of owned) {
    const apiVersion = `${o.name.split(".").slice(1).join(".")}/${o.version}`;
    const r = await resourceOf(apiVersion, o.kind);
    const list = await api(path(apiVersion, r.plural)); // every namespace: every instance, as the dialog says
    for (const item of list.items || []) {
      message.textContent = `Deleting ${o.kind} ${item.metadata.name}…`;
      await api(path(apiVersion, r.plural, item.metadata.namespace, item.metadata.name), { method: "DELETE" })
        .catch((e) => { if (e.status !== 404) throw e; });
    }
  }
}

// One provided API: its instances (everywhere the operator serves), and a Create button.
function providedApi(root, c, owned) {
  const group = owned.name.split(".").slice(1).join(".");
  const apiVersion = `${group}/${owned.version}`;
  const rows = h("tbody", {});
  root.append(h("div", { class: "toolbar" }, h("h2", {}, owned.displayName || owned.kind),
    h("a", { href: `#/create/${c.metadata.namespace}/${c.metadata.name}/${owned.name}`, id: `create-${owned.kind}` },
      h("button", { type: "button" }, `Create ${owned.kind}`))),
  h("table", { "data-kind": owned.kind }, h("thead", {}, h("tr", {}, ["Name", "Namespace", "Status", "Age"].map((t) => h("th", { scope: "col" }, t)))), rows));
  let stop = () => {};
  let stopped = false;
  resourceOf(apiVersion, owned.kind).then((r) => {
    if (stopped) return;
    stop = listWatch(r.namespaced ? scoped(apiVersion, r.plural) : path(apiVersion, r.plural), (items) => {
      rows.replaceChildren(...items.map((o) => h("tr", {},
        h("td", {}, h("a", { href: instanceHref({ ...o, apiVersion, kind: owned.kind }) }, o.metadata.name)),
        h("td", {}, o.metadata.namespace || ""),
        h("td", {}, phase(o.status?.phase || (o.status?.conditions || []).find((x) => x.type === "Ready")?.status || "")),
        h("td", {}, age(o.metadata.creationTimestamp)))));
      if (!items.length) rows.append(h("tr", {}, h("td", { colspan: 4, class: "muted" }, "None yet.")));
    }, { onError: (e) => rows.replaceChildren(refusalRow(4, e, "list", r.plural)) });
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
    const chosen = currentNamespace();
    const served = targets ? targets.split(",") : [];
    const defaultNs = chosen && (!served.length || served.includes(chosen)) ? chosen : served[0] || chosen || "default";
    const obj = JSON.parse(JSON.stringify(example || { apiVersion, kind, metadata: { name: "" }, spec: {} }));
    obj.apiVersion = apiVersion;
    obj.metadata = { name: obj.metadata?.name || "", namespace: defaultNs, ...(obj.metadata?.labels ? { labels: obj.metadata.labels } : {}) };
    const schema = version.schema?.openAPIV3Schema;
    // The YAML beside the form: the form's object until the user edits it, then what is created.
    const { yamlEditor, diagnose } = await import("./vendor/editor.js");
    const holder = h("div", { id: "create-yaml", class: "editor" });
    const problems = h("ul", { id: "create-problems", class: "problems" });
    let yamlEdited = false;
    let syncing = false;
    const editor = yamlEditor(holder, { label: `YAML of the new ${kind}`, findings: findingsOf(schema ? { root: schema, components: {} } : null),
      onChange: () => { if (!syncing) yamlEdited = true; } });
    holder.ucEditor = editor;
    const sync = () => {
      if (yamlEdited) return;
      syncing = true;
      editor.setText(toYaml(obj) + "\n");
      syncing = false;
    };
    const nameInput = h("input", { type: "text", id: "field-metadata-name", value: obj.metadata.name,
      oninput: () => { obj.metadata.name = nameInput.value; sync(); } });
    const nsInput = h("input", { type: "text", id: "field-metadata-namespace", value: obj.metadata.namespace,
      oninput: () => { obj.metadata.namespace = nsInput.value; sync(); }, onchange: () => gate() });
    // Creating is the `create` verb on the kind's resource in the chosen namespace: greyed out when denied.
    const createButton = h("button", { type: "submit", id: "create-submit" }, "Create");
    const gate = () => gated(createButton, "create", crd.spec.group, crd.spec.names.plural,
      crd.spec.scope === "Namespaced" ? nsInput.value.trim() || defaultNs : undefined);
    const error = h("pre", { class: "error", id: "create-error", hidden: true });
    // Created as the server checks it first (a dry run): a refusal shows its field paths and makes nothing.
    async function submit(e) {
      e.preventDefault();
      error.hidden = true;
      if (yamlEdited && listProblems(problems, editor)) {
        error.textContent = "Not created: fix the YAML's problems (below it) first.";
        error.hidden = false;
        return;
      }
      const namespace = (yamlEdited ? diagnose(editor.text()).object?.metadata?.namespace : obj.metadata.namespace) || defaultNs;
      const r = await resourceOf(apiVersion, kind);
      const body = yamlEdited ? { body: editor.text(), contentType: "application/yaml" } : { body: obj };
      const collection = path(apiVersion, r.plural, r.namespaced ? namespace : null);
      try {
        await api(`${collection}?dryRun=All`, { method: "POST", ...body });
        const created = await api(collection, { method: "POST", ...body });
        location.hash = instanceHref({ ...created, apiVersion, kind });
      } catch (err) {
        error.textContent = err.message;
        error.hidden = false;
      }
    }
    root.append(crumbs(["Installed operators", "#/installed"], [c.spec.displayName || csvName, `#/csv/${ns}/${csvName}`], `Create ${kind}`),
      h("h1", {}, `Create ${kind}`),
      h("p", { class: "muted" }, `${apiVersion}, provided by ${c.spec.displayName || csvName}. The form and the YAML describe the same object; once you edit the YAML, it is what is created.`),
      h("form", { class: "schema", id: "create-form", onsubmit: submit },
        h("div", { class: "split" },
          h("div", {},
            h("div", { class: "field" }, h("label", { for: "field-metadata-name" }, "name", h("span", { class: "required", "aria-hidden": "true" }, " *")), nameInput),
            h("div", { class: "field" }, h("label", { for: "field-metadata-namespace" }, "namespace"), nsInput),
            schemaForm(schema, obj, sync)),
          h("div", {}, h("h2", {}, "YAML"), holder, problems)),
        error, h("p", {}, createButton)));
    gate();
    sync();
  })().catch((e) => root.append(h("p", { class: "error" }, e.message)));
}
