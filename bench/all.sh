#!/usr/bin/env bash
# Every benchmark of uc in one go; each writes its section of docs/benchmarks.md.
#   bash bench/all.sh
# Needs: a Rust toolchain, Python 3 with kopf (installed here if missing), etcd (etcd-bench).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c 'import kopf, kubernetes' 2>/dev/null || python3 -m pip install --quiet kopf kubernetes
# uc without its embedded cluster, as the image builds it (deploy/build-controller.sh): what `uc run`
# runs from in compare-bench's Table 5-2.
bash deploy/build-controller.sh
# A link order the engine's changes have put out of date costs the controller ~1 MB of resident code:
# remade (about five minutes), then the controller built again with it.
if ! bash deploy/order-check.sh; then
  bash bench/controller-order.sh
  bash deploy/build-controller.sh
fi
mkdir -p target/dist && cp target/controller/uc target/dist/uc-controller
cargo build --profile dist --locked -p uc -p uc-bench
# The `dist` uc links the functions `uc up` runs together (deploy/dist.order, crates/uc/build.rs): an order
# out of date leaves ~25 MB more of `uc up`'s code resident. Remade (a few minutes), then uc linked again.
if ! bash deploy/order-check.sh deploy/dist.order target/dist/uc; then
  bash bench/dist-order.sh target/dist/uc
  cargo build --profile dist --locked -p uc -p uc-bench
fi
target/dist/apiserver-bench
target/dist/engine-bench
# The scaling table up to a million parents (issue 58's acceptance; the 10^6 row alone takes ~7 minutes and
# ~7 GB between `uc up` and `uc run`).
target/dist/compare-bench --scale 1000,10000,100000,1000000
target/dist/memory-bench
# Real etcd members: needs etcd on PATH (sudo apt-get install -y etcd-server).
target/dist/etcd-bench
