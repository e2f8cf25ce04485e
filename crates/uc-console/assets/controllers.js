// Controllers: every UniversalController, CompositeController and DecoratorController with READY and
// SYNCED, its parents, and its hooks' calls, latency (p50, p99) and error rate from the engine's metrics;
// a controller whose sync failed shows the last error.
import { api, listWatch, h, path, phase, condition } from "./k8s.js";

const KINDS = [
  ["universalcontroller.njuics.cn/v1alpha1", "universalcontrollers", "UniversalController"],
  ["metacontroller.k8s.io/v1alpha1", "compositecontrollers", "CompositeController"],
  ["metacontroller.k8s.io/v1alpha1", "decoratorcontrollers", "DecoratorController"],
];

const ms = (s) => (s === null || s === undefined ? "—" : s < 0.001 ? `${(s * 1e6).toFixed(0)} µs` : `${(s * 1000).toFixed(1)} ms`);

export function list(root) {
  const rows = h("tbody", { id: "controller-rows" });
  root.append(h("h1", {}, "Controllers"),
    h("p", { class: "muted" }, "Hook figures since the engine started, from its metrics; refreshed every 5 seconds."),
    h("table", {}, h("thead", {}, h("tr", {}, ["Name", "Kind", "Parent", "Ready", "Synced", "Parents", "Hook", "Calls", "p50", "p99", "Errors", "Last error"].map((t) => h("th", {}, t)))), rows));
  const controllers = new Map();
  let hooks = [];
  const draw = () => {
    const all = [...controllers.values()].flat().sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    rows.replaceChildren(...all.flatMap((c) => {
      const mine = hooks.filter((x) => x.controller === c.metadata.name);
      const synced = condition(c, "Synced");
      const lastError = synced && synced.status !== "True" ? synced.message : "";
      const cells = (hk) => [h("td", {}, hk?.hook || "—"), h("td", {}, hk ? hk.calls : ""), h("td", {}, ms(hk?.p50)), h("td", {}, ms(hk?.p99)),
        h("td", {}, hk ? `${(hk.error_rate * 100).toFixed(1)}% (${hk.errors})` : "")];
      const first = h("tr", { "data-controller": c.metadata.name },
        h("td", { rowspan: Math.max(1, mine.length) }, c.metadata.name),
        h("td", { rowspan: Math.max(1, mine.length) }, c.kind),
        h("td", { rowspan: Math.max(1, mine.length) }, c.spec?.parentResource?.resource || (c.spec?.resources || []).map((r) => r.resource).join(", ")),
        h("td", { rowspan: Math.max(1, mine.length) }, phase(condition(c, "Ready")?.status)),
        h("td", { rowspan: Math.max(1, mine.length) }, phase(synced?.status)),
        h("td", { rowspan: Math.max(1, mine.length) }, c.status?.parents ?? ""),
        cells(mine[0]),
        h("td", { rowspan: Math.max(1, mine.length), class: "error" }, lastError));
      return [first, ...mine.slice(1).map((hk) => h("tr", {}, cells(hk)))];
    }));
  };
  const stops = KINDS.map(([v, plural, kind]) => listWatch(path(v, plural), (items) => {
    controllers.set(kind, items.map((o) => ({ ...o, kind })));
    draw();
  }, { onError: () => {} }));
  const refresh = () => api("/console/hooks").then((x) => { hooks = x; draw(); }).catch(() => {});
  refresh();
  const timer = setInterval(refresh, 5000);
  return () => { clearInterval(timer); stops.forEach((s) => s()); };
}
