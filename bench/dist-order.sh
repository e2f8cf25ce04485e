#!/usr/bin/env bash
# Remakes deploy/dist.order, the link order of the `dist` build's uc (crates/uc/build.rs applies it): every
# function `uc up` executes while it starts, runs a Deployment of simulated pods through a cycle of
# memory-bench, and serves ConfigMaps, recorded with valgrind's callgrind, in the order of their addresses.
# Most of an idle `uc up`'s resident set was its code (37 of 80 MB): the kernel maps a binary in 64 KB
# blocks around each page touched, and `uc up` touches code all over its 40 MB of it. Run it when the rustc
# version changes (the order names symbols, and their hashes change with rustc) or after large changes.
#   bash bench/dist-order.sh [uc binary, default target/dist/uc]
# Needs valgrind (installed here if missing) and about ten minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind; }
uc=${1:-}
if [ -z "$uc" ]; then
  cargo build --profile dist --locked -p uc -p uc-bench
  uc=target/dist/uc
fi
bench=$(dirname "$uc")/memory-bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# memory-bench stops `uc up` with SIGINT: uc exits and callgrind writes its profile.
cat > "$work/uc" <<EOF2
#!/bin/sh
exec valgrind --tool=callgrind --demangle=no --callgrind-out-file=$work/callgrind.%p $(realpath "$uc") "\$@"
EOF2
chmod +x "$work/uc"
"$bench" --uc "$work/uc" --cycles 1 --pods 100 --history-seconds 5 --configmaps 300 --configmap-cycles 1 \
  --report "$work/report.md"
python3 bench/link_order.py "$work" "$uc" deploy/dist.order
