// The licences of the packages bundled into ../assets/vendor/ (every package package-lock.json installs
// for the bundles, not the build's tools), as each ships them: written beside the bundles, built into uc
// and served with them (/static/vendor/LICENSES.txt). Run by build.sh.
import { readFileSync, readdirSync, existsSync } from "node:fs";
import { join } from "node:path";

const lock = JSON.parse(readFileSync("package-lock.json", "utf8"));
const out = ["The licences of the packages bundled in editor.js and graph.js (crates/uc-console/web/package-lock.json)."];
for (const [where, pkg] of Object.entries(lock.packages).filter(([p, x]) => p && !x.dev).sort(([a], [b]) => a.localeCompare(b))) {
  const name = where.replace(/^.*node_modules\//, "");
  out.push("", `== ${name} ${pkg.version} (${pkg.license || "licence below"})`);
  const files = existsSync(where) ? readdirSync(where).filter((f) => /^licen[cs]e/i.test(f)).sort() : [];
  if (!files.length) throw new Error(`${name} ships no licence file`);
  for (const f of files) out.push(readFileSync(join(where, f), "utf8").trim());
}
process.stdout.write(out.join("\n") + "\n");
