#!/usr/bin/env bash
# Builds uc as a controller deployment runs it: the image's binary (Dockerfile) and the one compare-bench's
# Table 5-2 measures (bench/all.sh). Output: target/controller/uc.
#   bash deploy/build-controller.sh
# - Without the embedded cluster (no API server, no node agent: `--no-default-features --features jemalloc`),
#   in the `controller` profile (Cargo.toml: fat LTO, one codegen unit, optimised for size).
# - The functions a controller runs laid out together (deploy/controller.order, made by
#   bench/controller-order.sh): most of a controller's resident set was code, because the kernel maps a
#   file in 64 KB blocks around each page touched and a controller touches code all over the binary.
#   The order names symbols of the rustc it was made with (its first line); another rustc links
#   unordered, only bigger in memory.
# - Relative relocations packed (`-z pack-relative-relocs`, glibc >= 2.36): the 600 KB table the loader
#   reads at every start becomes 11 KB.
# - glibc linked in (`+crt-static`, a static PIE: still loaded at a random address): a dynamically linked
#   uc mapped 2.2 MB of libc, libm and the loader for the few dozen functions it calls; linked in, those
#   functions are in the link order with the rest (1.1 MB less resident). Host names resolve through
#   glibc's own `files` and `dns` sources (nsswitch.conf: the image's distroless has only those); another
#   source listed there (mdns, ldap) is loaded from the machine's glibc, which must then be the same version.
# - jemalloc without per-thread caches (`tcache:false`): they held ~1.4 MB of a controller's 5 MB of heap.
# Measured in docs/benchmarks.md (Table 5-2); needs rustc's own linker, rust-lld (the default on
# x86_64 Linux since Rust 1.90).
set -euo pipefail
cd "$(dirname "$0")/.."
order="$PWD/deploy/controller.order"
link=(-C target-feature=+crt-static -C link-arg=-Wl,-z,pack-relative-relocs)
if [ -f "$order" ]; then
  made_with=$(head -1 "$order" | sed 's/^# //')
  if [ "$(rustc --version)" != "$made_with" ]; then
    echo "deploy/controller.order was made with $made_with, this is $(rustc --version): its symbols will not" \
      "match and the code is linked unordered (a bigger resident set; bash bench/controller-order.sh remakes it)" >&2
  fi
  link+=(-C link-arg=-Wl,--symbol-ordering-file="$order" -C link-arg=-Wl,--no-warn-symbol-ordering)
fi
# The workspace's allocator settings (.cargo/config.toml) without thread caches.
export JEMALLOC_SYS_WITH_MALLOC_CONF="dirty_decay_ms:0,muzzy_decay_ms:0,narenas:1,tcache:false"
cargo rustc --profile controller --locked -p uc --bin uc --no-default-features --features jemalloc -- "${link[@]}"
# An order made before the engine's latest changes misses the functions they renamed: say so.
if [ -f "$order" ]; then bash deploy/order-check.sh || true; fi
