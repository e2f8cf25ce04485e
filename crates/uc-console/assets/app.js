// The console's router: `#/<page>/<params...>` → a page module's render(root, params), which returns
// a function that stops what it started (watches, timers) when the user goes elsewhere; and the header's
// namespace chooser, whose choice the pages list in (every page is drawn again when it changes).
import * as hub from "./hub.js";
import * as installed from "./installed.js";
import * as instance from "./instance.js";
import * as controllers from "./controllers.js";
import * as cluster from "./cluster.js";
import * as pod from "./pod.js";
import { h, listWatch, currentNamespace, setNamespace } from "./k8s.js";

const routes = {
  hub: hub.list,
  package: hub.pkg,
  install: hub.install,
  plan: hub.plan,
  installed: installed.list,
  csv: installed.csv,
  create: installed.create,
  instance: instance.show,
  controllers: controllers.list,
  cluster: cluster.show,
  logs: cluster.logs,
  pod: pod.show,
};
const SECTIONS = { hub: "hub", package: "hub", install: "hub", plan: "installed", installed: "installed", csv: "installed",
  create: "installed", instance: "installed", controllers: "controllers", cluster: "cluster", logs: "cluster", pod: "cluster" };

let stop = null;

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const name = parts[0] || "hub";
  const render = routes[name] || hub.list;
  if (stop) { try { stop(); } catch { /* already stopped */ } }
  const root = document.getElementById("page");
  root.replaceChildren();
  const section = SECTIONS[name];
  for (const a of document.querySelectorAll("header nav a")) {
    a.classList.toggle("active", a.dataset.page === section);
    if (a.dataset.page === section) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  try {
    stop = render(root, parts.slice(1)) || null;
  } catch (e) {
    root.append(h("p", { class: "error" }, String(e)));
  }
}

// The namespace chooser: a text field suggesting the namespaces the user may list (one who may not types
// theirs); empty for all namespaces.
function namespaceChooser() {
  const input = document.getElementById("namespace");
  const options = document.getElementById("namespaces");
  input.value = currentNamespace();
  const commit = () => {
    const ns = input.value.trim();
    if (ns !== currentNamespace()) setNamespace(ns);
  };
  input.addEventListener("change", commit);
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") commit(); });
  listWatch("/api/v1/namespaces", (items) => {
    options.replaceChildren(...items.map((n) => n.metadata.name).sort().map((n) => h("option", { value: n })));
  }, { onError: () => options.replaceChildren() });
}

window.addEventListener("hashchange", route);
window.addEventListener("uc-namespace", route);
namespaceChooser();
route();
