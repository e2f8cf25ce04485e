#!/usr/bin/env bash
# Counts the instructions `uc up` or `uc run` executes in a compare-bench convergence run, with
# callgrind: deterministic enough to compare builds on a machine whose load moves CPU-seconds (and whose
# VM may have no hardware counters). Every process of that kind the benchmark starts runs under
# `valgrind --tool=callgrind` (about 50 times slower) and dumps a profile when the benchmark stops it.
#
#   bash bench/callgrind.sh <uc binary> up|run [parents]    (default 1000 parents)
#
# Prints each profile (in the order the processes started) and its total; `callgrind_annotate --inclusive=yes <profile>` shows where they go.
# Between runs of one build the totals move by about 4 % (how events batch, timers): count a change of a
# few percent on the code it touches alone.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '7p' "$0"; exit 2; }
bin=$(realpath "$1"); which=$2; parents=${3:-1000}
case $which in up|run) ;; *) echo "which process: up or run, not $which" >&2; exit 2 ;; esac
command -v valgrind >/dev/null || { echo "valgrind is required (apt-get install valgrind)" >&2; exit 1; }
out=$(mktemp -d /tmp/uc-callgrind.XXXX)
wrapper=$out/uc
cat > "$wrapper" <<WRAP
#!/usr/bin/env bash
if [ "\$1" = "$which" ]; then
  valgrind --tool=callgrind --callgrind-out-file=$out/$which.%p "$bin" "\$@" &
  child=\$!
  trap 'kill -TERM \$child; wait \$child; exit 0' TERM
  wait \$child
else
  exec "$bin" "\$@"
fi
WRAP
chmod +x "$wrapper"
cargo build --profile dist -q -p uc-bench --bin compare-bench
target/dist/compare-bench --uc "$wrapper" --no-table --no-scaling --impls uc-js --parents "$parents" \
  --timeout 600 --report "$out/report.md" > "$out/compare-bench.log" 2>&1 || true
# A process the benchmark killed outright has no profile; one still running is stopped so it dumps.
pkill -TERM -f "callgrind-out-file=$out/" 2>/dev/null || true
for _ in $(seq 60); do pgrep -f "callgrind-out-file=$out/" >/dev/null || break; sleep 1; done
grep -E 'limit|parents \(' "$out/compare-bench.log" || true
# In the order the processes started: for `up` the write-bound limit's three clusters, then one per live
# and per backlog run (three each); for `run` the live runs, then the backlog runs.
for f in $(ls "$out"/"$which".* 2>/dev/null | sort -t. -k3 -n); do
  echo "$f: $(grep -m1 '^summary:' "$f" | awk '{print $2}') instructions"
done
