// The cluster: nodes, pods (with logs, followed), and on a multi-cluster control plane its member
// clusters and each MultiClusterZooKeeper's deployment records as a timeline per cluster.
import { api, listWatch, h, path, phase, age, condition, resourceOf } from "./k8s.js";

export function show(root) {
  const nodes = h("tbody", { id: "nodes" });
  const pods = h("tbody", { id: "pods" });
  const members = h("div", { id: "members" });
  root.append(h("h1", {}, "Cluster"),
    h("h2", {}, "Nodes"), h("table", {}, h("tr", {}, ["Name", "Ready", "Pods", "Age"].map((t) => h("th", {}, t))), nodes),
    members,
    h("h2", {}, "Pods"), h("table", {}, h("tr", {}, ["Namespace", "Name", "Status", "Ready", "Restarts", "Node", "Age", ""].map((t) => h("th", {}, t))), pods));
  let podItems = [];
  let nodeItems = [];
  const drawNodes = () => nodes.replaceChildren(...nodeItems.map((n) => h("tr", {}, h("td", {}, n.metadata.name),
    h("td", {}, phase(condition(n, "Ready")?.status)), h("td", {}, podItems.filter((p) => p.spec?.nodeName === n.metadata.name).length),
    h("td", {}, age(n.metadata.creationTimestamp)))));
  const stops = [
    listWatch("/api/v1/nodes", (items) => { nodeItems = items; drawNodes(); }),
    listWatch("/api/v1/pods", (items) => {
      podItems = items.sort((a, b) => `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`));
      drawNodes();
      pods.replaceChildren(...podItems.map((p) => {
        const cs = p.status?.containerStatuses || [];
        return h("tr", {}, h("td", {}, p.metadata.namespace), h("td", {}, p.metadata.name), h("td", {}, phase(p.status?.phase)),
          h("td", {}, `${cs.filter((c) => c.ready).length}/${(p.spec?.containers || []).length}`),
          h("td", {}, cs.reduce((n, c) => n + (c.restartCount || 0), 0)), h("td", {}, p.spec?.nodeName || ""),
          h("td", {}, age(p.metadata.creationTimestamp)), h("td", {}, h("a", { href: `#/logs/${p.metadata.namespace}/${p.metadata.name}` }, "logs")));
      }));
    }),
  ];
  // A Karmada control plane: member clusters, and MultiClusterZooKeeper records.
  resourceOf("cluster.karmada.io/v1alpha1", "Cluster").then(() => {
    const clusters = h("tbody", { id: "member-clusters" });
    const records = h("div", { id: "mczk-records" });
    members.append(h("h2", {}, "Member clusters"), h("table", {}, h("tr", {}, ["Name", "Ready", "API endpoint", "Age"].map((t) => h("th", {}, t))), clusters),
      h("h2", {}, "MultiClusterZooKeeper deployments"), records);
    stops.push(listWatch("/apis/cluster.karmada.io/v1alpha1/clusters", (items) => clusters.replaceChildren(...items.map((c) =>
      h("tr", {}, h("td", {}, c.metadata.name), h("td", {}, phase(condition(c, "Ready")?.status)), h("td", {}, c.spec?.apiEndpoint || ""),
        h("td", {}, age(c.metadata.creationTimestamp)))))));
    resourceOf("zookeeper.uc.njuics.cn/v1alpha1", "MultiClusterZooKeeper").then((r) => {
      // Each deployment record (status.records, seed 002's): its clusters in order, each pending,
      // deploying or completed; the newest record first, earlier ones as history.
      stops.push(listWatch(path("zookeeper.uc.njuics.cn/v1alpha1", r.plural), (items) => records.replaceChildren(...items.map((m) =>
        h("div", { class: "card", "data-mczk": m.metadata.name }, h("b", {}, `${m.metadata.namespace}/${m.metadata.name}`),
          (m.status?.records || []).slice().reverse().map((rec, i) => h("div", { class: i ? "muted" : "" },
            h("p", {}, `${rec.status} — generations ${JSON.stringify(rec.observedGenerations || {})} — ${rec.lastTransitionTime || ""}`),
            (rec.order || []).map((cluster) => {
              const state = ["completed", "deploying", "pending"].find((s) => (rec.currentState?.[s] || []).includes(cluster)) || "pending";
              const steps = ["pending", "deploying", "completed"];
              const at = steps.indexOf(state);
              return h("div", { class: "timeline", "data-cluster": cluster, "data-state": state }, h("span", { style: "min-width:120px" }, cluster),
                steps.map((s, k) => h("span", { class: `step ${k < at ? "done" : k === at ? (s === "completed" ? "done" : "now") : ""}` }, s)));
            }))))))));
    }).catch(() => {});
  }).catch(() => { /* not a control plane */ });
  return () => stops.forEach((s) => s());
}

// A pod's logs, followed: the API's log stream (?follow=true), container by container.
export function logs(root, [ns, name, container]) {
  const out = h("pre", { id: "logs", style: "max-height: 70vh" });
  const picker = h("select", { id: "log-container", onchange: () => { location.hash = `#/logs/${ns}/${name}/${picker.value}`; } });
  root.append(h("h1", {}, `Logs of ${ns}/${name}`), h("div", { class: "toolbar" }, "Container ", picker, h("span", { class: "muted" }, "following")), out);
  const controller = new AbortController();
  (async () => {
    const pod = await api(path("v1", "pods", ns, name));
    const names = (pod.spec.containers || []).map((c) => c.name);
    const chosen = container || names[0];
    picker.replaceChildren(...names.map((n) => h("option", { value: n, selected: n === chosen }, n)));
    const r = await fetch(`${path("v1", "pods", ns, name, "log")}?container=${encodeURIComponent(chosen)}&follow=true&tailLines=1000`,
      { signal: controller.signal, credentials: "same-origin" });
    if (!r.ok) { out.textContent = (await r.text()) || `HTTP ${r.status}`; return; }
    const reader = r.body.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      out.append(decoder.decode(value, { stream: true }));
      out.scrollTop = out.scrollHeight;
    }
  })().catch((e) => { if (e.name !== "AbortError") out.append(`\n${e.message}`); });
  return () => controller.abort();
}
