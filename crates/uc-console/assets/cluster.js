// The cluster: nodes, pods (in the chosen namespace, each with its page and logs), and on a multi-cluster
// control plane its member clusters and each MultiClusterZooKeeper's deployment records as a timeline per
// cluster.
import { listWatch, h, path, phase, age, condition, resourceOf, scoped, currentNamespace, refusalRow, servesGroup, health } from "./k8s.js";

export function show(root) {
  const nodes = h("tbody", { id: "nodes" });
  const pods = h("tbody", { id: "pods" });
  const members = h("div", { id: "members" });
  const th = (t) => h("th", { scope: "col" }, t);
  root.append(h("h1", {}, "Cluster"),
    h("h2", {}, "Nodes"), h("table", {}, h("thead", {}, h("tr", {}, ["Name", "Ready", "Pods", "Age"].map(th))), nodes),
    members,
    h("h2", {}, "Pods", h("span", { class: "muted" }, currentNamespace() ? ` in ${currentNamespace()}` : " in all namespaces")),
    h("table", {}, h("thead", {}, h("tr", {}, ["Namespace", "Name", "Status", "Ready", "Restarts", "Node", "Age", "Logs"].map(th))), pods));
  let podItems = [];
  let nodeItems = [];
  const drawNodes = () => nodes.replaceChildren(...nodeItems.map((n) => h("tr", {}, h("td", {}, n.metadata.name),
    h("td", {}, phase(condition(n, "Ready")?.status)), h("td", {}, podItems.filter((p) => p.spec?.nodeName === n.metadata.name).length),
    h("td", {}, age(n.metadata.creationTimestamp)))));
  const stops = [
    listWatch("/api/v1/nodes", (items) => { nodeItems = items; drawNodes(); },
      { onError: (e) => nodes.replaceChildren(refusalRow(4, e, "list", "nodes")) }),
    listWatch(scoped("v1", "pods"), (items) => {
      podItems = items.sort((a, b) => `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`));
      drawNodes();
      pods.replaceChildren(...podItems.map((p) => {
        const cs = p.status?.containerStatuses || [];
        return h("tr", { "data-pod": p.metadata.name }, h("td", {}, p.metadata.namespace),
          h("td", {}, h("a", { href: `#/pod/${p.metadata.namespace}/${p.metadata.name}` }, p.metadata.name)),
          h("td", {}, h("span", { class: `phase ${health(p)}` }, p.metadata.deletionTimestamp ? "Terminating" : p.status?.phase || "Pending")),
          h("td", {}, `${cs.filter((c) => c.ready).length}/${(p.spec?.containers || []).length}`),
          h("td", {}, cs.reduce((n, c) => n + (c.restartCount || 0), 0)), h("td", {}, p.spec?.nodeName || ""),
          h("td", {}, age(p.metadata.creationTimestamp)),
          h("td", {}, h("a", { href: `#/pod/${p.metadata.namespace}/${p.metadata.name}/logs`, "aria-label": `Logs of ${p.metadata.name}` }, "logs")));
      }));
      if (!podItems.length) pods.append(h("tr", {}, h("td", { colspan: 8, class: "muted" }, "No pods.")));
    }, { onError: (e) => pods.replaceChildren(refusalRow(8, e, "list", "pods")) }),
  ];
  // A Karmada control plane: member clusters, and MultiClusterZooKeeper records.
  // Asked of the API's group list, so that a cluster without them answers no 404.
  servesGroup("cluster.karmada.io").then((served) => {
    if (!served) return;
    const clusters = h("tbody", { id: "member-clusters" });
    const records = h("div", { id: "mczk-records" });
    members.append(h("h2", {}, "Member clusters"), h("table", {}, h("tr", {}, ["Name", "Ready", "API endpoint", "Age"].map((t) => h("th", {}, t))), clusters),
      h("h2", {}, "MultiClusterZooKeeper deployments"), records);
    stops.push(listWatch("/apis/cluster.karmada.io/v1alpha1/clusters", (items) => clusters.replaceChildren(...items.map((c) =>
      h("tr", {}, h("td", {}, c.metadata.name), h("td", {}, phase(condition(c, "Ready")?.status)), h("td", {}, c.spec?.apiEndpoint || ""),
        h("td", {}, age(c.metadata.creationTimestamp)))))));
    servesGroup("zookeeper.uc.njuics.cn").then((zk) => zk && resourceOf("zookeeper.uc.njuics.cn/v1alpha1", "MultiClusterZooKeeper")).then((r) => {
      if (!r) return;
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

// The logs route of earlier links (`#/logs/<namespace>/<pod>[/<container>]`): the pod page's Logs tab.
export function logs(root, [ns, name, container]) {
  location.replace(`#/pod/${ns}/${name}/logs${container ? `/${container}` : ""}`);
}
