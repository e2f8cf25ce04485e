#!/usr/bin/env bash
# Remakes deploy/controller.order, the link order of the controller build (deploy/build-controller.sh):
# every function `uc run` executes in compare-bench's Table 5-2 scenarios, recorded with valgrind's
# callgrind, in the order of their addresses in the binary. Run it when the rustc version changes (the
# order names symbols, and their hashes change with rustc) or after large changes to the engine.
#   bash bench/controller-order.sh
# Needs valgrind (installed here if missing) and about five minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind; }
bash deploy/build-controller.sh
cargo build --profile dist --locked -p uc -p uc-bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# compare-bench stops each scenario's `uc run` with SIGTERM: uc exits and callgrind writes its profile.
cat > "$work/uc" <<EOF
#!/bin/sh
exec valgrind --tool=callgrind --demangle=no --callgrind-out-file=$work/callgrind.%p $PWD/target/controller/uc "\$@"
EOF
chmod +x "$work/uc"
target/dist/compare-bench --no-convergence --no-scaling --window 60 --controller-uc "$work/uc" \
  --scenarios "uc alone,uc + tfjob + catset + donothing,uc + 4" --report "$work/report.md"
python3 bench/link_order.py "$work" target/controller/uc deploy/controller.order
