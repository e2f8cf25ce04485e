#!/usr/bin/env bash
# Whether a link order still fits its build (deploy/controller.order the controller build's,
# target/controller/uc, unless told another): the order names functions by their mangled symbols, whose hashes change with the code, so after changes to the
# engine some of its functions are no longer found and the linker places those anywhere (a 4-controller
# `uc run` 11.1 MB resident with an order that found 4,421 of 4,421 functions, 12.4 MB with one that found
# 4,114 of 4,425). A few missing cost as much when they are on every request's path: 4,418 of 4,444 found
# (the engine client's layers among the 26 renamed), 11.5 MB against 10.8 MB with the order remade
# (docs/benchmarks.md). Exits 1, saying so, when any is not found; bench/controller-order.sh (bench/dist-order.sh) remakes it.
#   bash deploy/order-check.sh                                   (the controller's order and build)
#   bash deploy/order-check.sh deploy/dist.order target/dist/uc   (the `dist` build's: bench/dist-order.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
order=${1:-deploy/controller.order} binary=${2:-target/controller/uc}
remake=bench/controller-order.sh
[ "$order" = deploy/controller.order ] || remake=bench/dist-order.sh
[ -f "$order" ] && [ -f "$binary" ] || { echo "no $order or no $binary" >&2; exit 1; }
listed=$(grep -vc '^#' "$order")
found=$(comm -12 <(grep -v '^#' "$order" | sort -u) <(nm --defined-only "$binary" | awk '{print $3}' | sort -u) | wc -l)
if [ "$found" -lt "$listed" ]; then
  echo "$order is out of date: $found of its $listed functions are in $binary (bash $remake remakes it)" >&2
  exit 1
fi
