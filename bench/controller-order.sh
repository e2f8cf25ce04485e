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
python3 - "$work" target/controller/uc deploy/controller.order <<'EOF'
import glob, re, subprocess, sys

work, binary, out = sys.argv[1:]
executed = set()
for path in glob.glob(f"{work}/callgrind.*"):
    for line in open(path, errors="replace"):
        m = re.match(r"c?fn=\(\d+\) (\S+)", line)
        if m:
            executed.add(re.sub(r"'\d+$", "", m.group(1)))
nm = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
functions = sorted(
    (int(addr, 16), name)
    for addr, kind, name in (l.split(" ", 2) for l in nm.splitlines() if l.count(" ") >= 2)
    if kind in "tTwW" and name in executed
)
if len(functions) < 1000:
    sys.exit(f"only {len(functions)} functions recorded: did the scenarios run?")
rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True, check=True).stdout.strip()
with open(out, "w") as f:
    f.write(f"# {rustc}\n")
    f.writelines(f"{name}\n" for name in dict.fromkeys(name for _, name in functions))
print(f"{out}: {len(functions)} functions")
EOF
