// The console's router: `#/<page>/<params...>` → a page module's render(root, params), which returns
// a function that stops what it started (watches, timers) when the user goes elsewhere.
import * as hub from "./hub.js";
import * as installed from "./installed.js";
import * as instance from "./instance.js";
import * as controllers from "./controllers.js";
import * as cluster from "./cluster.js";
import { h } from "./k8s.js";

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
};

let stop = null;

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const name = parts[0] || "hub";
  const render = routes[name] || hub.list;
  if (stop) { try { stop(); } catch { /* already stopped */ } }
  const root = document.getElementById("page");
  root.replaceChildren();
  const section = { hub: "hub", package: "hub", install: "hub", plan: "hub", installed: "installed", csv: "installed",
    create: "installed", instance: "installed", controllers: "controllers", cluster: "cluster", logs: "cluster" }[name];
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.page === section);
  try {
    stop = render(root, parts.slice(1)) || null;
  } catch (e) {
    root.append(h("p", { class: "error" }, String(e)));
  }
}

window.addEventListener("hashchange", route);
route();
