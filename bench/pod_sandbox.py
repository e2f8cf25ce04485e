"""What each container's sandbox and each pod's network namespace cost: pod start time and the memory of a
container's processes, with both (the default), with the sandbox alone (`uc up --no-pod-network`) and with
neither (`--no-pod-sandbox`), measured in one run, alternating.

    python3 bench/pod_sandbox.py [--uc target/dist/uc] [--pods 30] [--rounds 3]

Each round starts `uc up` on a fresh data directory, creates N busybox pods running `sleep` at once and
times from the first create to every pod Running (the node's status), then sums the private memory
(Private_Clean + Private_Dirty of /proc/<pid>/smaps_rollup) of every process below the containers' shims
(the shim itself excluded: it is the same either way). Prints one Markdown table for docs/benchmarks.md."""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time


def processes_below(roots):
    children = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(pid))
    out, stack = [], list(roots)
    while stack:
        p = stack.pop()
        for c in children.get(p, []):
            out.append(c)
            stack.append(c)
    return out


def private_kb(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            return sum(int(line.split()[1]) for line in f if line.startswith(("Private_Clean", "Private_Dirty")))
    except OSError:
        return 0


def shims(data_dir):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            continue
        if len(cmd) > 2 and cmd[1] == b"shim" and any(c.startswith(data_dir.encode()) for c in cmd):
            found.append(int(pid))
    return found


MODES = [("sandbox (bubblewrap) and network namespace (CNI)", []),
         ("sandbox, --no-pod-network", ["--no-pod-network"]),
         ("--no-pod-sandbox", ["--no-pod-sandbox"])]


def one_round(uc, pods, flags, subnet):
    with tempfile.TemporaryDirectory(prefix="uc-bench-sandbox-") as d:
        args = [uc, "up", "--data-dir", d, "--port", "0", "--pod-subnet", str(subnet), "--operators", "none",
                "--no-console"]
        args.extend(flags)
        up = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            env = {**os.environ, "KUBECONFIG": up.stdout.readline().strip().split("=", 1)[1]}
            kubectl = lambda *a, **kw: subprocess.run(["kubectl", *a], env=env, capture_output=True, text=True, **kw)
            while kubectl("get", "--raw", "/readyz").returncode != 0:
                time.sleep(0.1)
            body = "".join(f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}}}\nspec:\n  containers:\n"
                           f"  - {{name: c, image: busybox, command: [sleep, '3600']}}\n" for i in range(pods))
            started = time.monotonic()
            kubectl("apply", "-f", "-", input=body, check=True)
            while True:
                items = json.loads(kubectl("get", "pods", "-o", "json").stdout)["items"]
                if sum(p["status"].get("phase") == "Running" for p in items) == pods:
                    break
                time.sleep(0.05)
            elapsed = time.monotonic() - started
            below = processes_below(shims(d))
            memory = sum(private_kb(p) for p in below) / pods
            return elapsed, memory, len(below) / pods
        finally:
            up.terminate()
            up.wait(timeout=60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--uc", default="target/dist/uc")
    ap.add_argument("--pods", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    results = {name: [] for name, _ in MODES}
    for r in range(a.rounds):
        for i, (name, flags) in enumerate(MODES):
            results[name].append(one_round(a.uc, a.pods, flags, 200 + r * len(MODES) + i))
    print(f"| {a.pods} busybox pods, {a.rounds} rounds alternating | all Running after (median, s) | "
          "private memory per container (median, KB) | processes per container |")
    print("| --- | --- | --- | --- |")
    for name, rows in results.items():
        print(f"| {name} | "
              f"{statistics.median(r[0] for r in rows):.2f} ({', '.join(f'{r[0]:.2f}' for r in rows)}) | "
              f"{statistics.median(r[1] for r in rows):.0f} | {statistics.median(r[2] for r in rows):.0f} |")


if __name__ == "__main__":
    main()
