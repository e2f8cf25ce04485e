#!/usr/bin/env bash
# The console's third-party components, bundled: CodeMirror 6 (with the yaml parser) and dagre, at the
# exact versions package-lock.json pins, into ../assets/vendor/ (committed; uc builds them into its
# binary, so neither uc nor its tests need npm). Run after changing src/ or a version:
#   bash crates/uc-console/web/build.sh
# .ci/run runs it too and fails when the committed bundles differ from what it builds. `npm ci` also
# installs the browser tests' axe-core (a development dependency, never bundled).
set -euo pipefail
cd "$(dirname "$0")"
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
out=../assets/vendor
mkdir -p "$out"
for entry in editor graph; do
  node_modules/.bin/esbuild "src/$entry.js" --bundle --format=esm --minify --target=es2020 \
    --legal-comments=eof --log-level=warning --outfile="$out/$entry.js"
done
# Their licences (MIT, ISC …: a copy must carry them), beside the bundles and served with them.
node licenses.mjs > "$out/LICENSES.txt"
