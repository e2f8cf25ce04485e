#!/usr/bin/env python3
"""Where the bytes go: a heap profile of `uc up` and `uc run` holding N parents (issue 58).

The scaling run of compare-bench (docs/benchmarks.md, "Scaling"), under heaptrack: `uc up --no-engine
--no-node --in-memory` holds N Foos and the N Deployments `uc run` (the JavaScript hook
bench/foo-sync.js) makes of them. Once every Foo has its status, each process's heap at its highest point
is attributed to the uc function that allocated it (the innermost frame of a uc crate, or the named
holders below) and printed, per object held.

heaptrack sees malloc only, so uc is built with the system allocator:
  CARGO_PROFILE_RELEASE_DEBUG=line-tables-only cargo build --release -p uc --no-default-features \\
      --features cluster --target-dir target/heap
  python3 bench/heap_profile.py --uc target/heap/release/uc --parents 20000
Needs heaptrack (apt-get install heaptrack) and the Python `kubernetes` client.

With `--pods N` it profiles memory-bench's pod cycle instead: `uc up --history-seconds 20` with everything on
(API server, engine, workload controllers, node agent) while a Deployment of N simulated pods becomes
available; the heap at its highest point is attributed per pod.
"""
import argparse
import collections
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


SCALING_FLAGS = ["--no-engine", "--no-node", "--in-memory"]
POD_CYCLE_FLAGS = ["--history-seconds", "20"]


def start_up(uc: str, out: pathlib.Path, data: str, flags: list[str]) -> tuple[subprocess.Popen, str]:
    """`uc up` under heaptrack; its kubeconfig once it prints it."""
    p = subprocess.Popen(
        ["heaptrack", "-o", str(out / "up"), uc, "up", "--port", "0", "--data-dir", data, *flags],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in p.stdout:
        if line.startswith("export KUBECONFIG="):
            threading.Thread(target=lambda: [None for _ in p.stdout], daemon=True).start()
            return p, line.strip().split("=", 1)[1]
    raise SystemExit("uc up stopped before printing its kubeconfig")


def kubectl(kc: str, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(["kubectl", "--kubeconfig", kc, *args], input=stdin, text=True, check=True,
                          capture_output=True).stdout


def wait_served(kc: str, resource: str) -> None:
    for _ in range(600):
        if subprocess.run(["kubectl", "--kubeconfig", kc, "get", resource, "-A", "--chunk-size=1"],
                          capture_output=True).returncode == 0:
            return
        time.sleep(0.1)
    raise SystemExit(f"{resource} not served")


def controller(kc: str) -> None:
    """uc's CRDs, the Foo CRD and the sample controller with the benchmark's JavaScript hook."""
    uc_crds = subprocess.run([ARGS.uc, "crds"], text=True, check=True, capture_output=True).stdout
    kubectl(kc, "apply", "-f", "-", stdin=uc_crds)
    kubectl(kc, "apply", "-f", str(ROOT / "examples/sample-controller/crd.yaml"))
    wait_served(kc, "foos.njuics.cn")
    wait_served(kc, "universalcontrollers.universalcontroller.njuics.cn")
    source = (ROOT / "bench/foo-sync.js").read_text()
    uc = {"apiVersion": "universalcontroller.njuics.cn/v1alpha1", "kind": "UniversalController",
          "metadata": {"name": "sample-controller"},
          "spec": {"generateSelector": True,
                   "parentResource": {"apiVersion": "njuics.cn/v1alpha1", "resource": "foos"},
                   "childResources": [{"apiVersion": "apps/v1", "resource": "deployments",
                                       "updateStrategy": {"method": "InPlace"}}],
                   "hooks": {"sync": {"javascript": {"source": source}}}}}
    kubectl(kc, "apply", "-f", "-", stdin=json.dumps(uc))


def create_foos(kc: str, n: int, writers: int = 8) -> None:
    from kubernetes import client, config
    api_client = config.new_client_from_config(config_file=kc)
    api = client.CustomObjectsApi(api_client)

    def write(w: int) -> None:
        for i in range(w, n, writers):
            body = {"apiVersion": "njuics.cn/v1alpha1", "kind": "Foo", "metadata": {"name": f"foo-{i}"},
                    "spec": {"deploymentName": f"foo-{i}", "replicas": 1}}
            api.create_namespaced_custom_object("njuics.cn", "v1alpha1", "default", "foos", body)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def converged(kc: str, n: int, timeout: float) -> float:
    """Seconds until every Foo has a status of its generation (listed every few seconds)."""
    start = time.time()
    while time.time() - start < timeout:
        foos = json.loads(kubectl(kc, "get", "foos", "-o", "json"))["items"]
        done = sum(1 for f in foos
                   if (f.get("status") or {}).get("observedGeneration", 0) >= f["metadata"].get("generation", 1)
                   or "availableReplicas" in (f.get("status") or {}))
        print(f"  {done} of {n} Foos have their status", flush=True)
        if done >= n:
            return time.time() - start
        time.sleep(5)
    raise SystemExit("not converged in time")


def pid_of(pattern: str) -> int:
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                cmd = open(f"/proc/{d}/cmdline", "rb").read().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if cmd.startswith(ARGS.uc) and pattern in cmd:
                return int(d)
    raise SystemExit(f"no process {pattern!r}")


def hwm_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


SIZE = re.compile(r"^([0-9.]+)([KMGT]?)B? peak memory consumed over (\d+) calls from")
UNIT = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def attribute(printed: str) -> tuple[collections.Counter, collections.Counter]:
    """Peak bytes by the innermost frame in uc's own code (`crates/...:line`, its function) and by its
    file, from `heaptrack_print -p -m 0` (every backtrace printed whole, outermost frame last)."""
    by_frame: collections.Counter = collections.Counter()
    by_file: collections.Counter = collections.Counter()
    size, function, label = 0.0, "", None
    for line in printed.splitlines():
        m = SIZE.match(line)
        if m:
            if size and label:
                by_frame[label] += size
                by_file[label.split(" ")[0]] += size
            elif size:
                by_frame["(no frame in uc's crates)"] += size
                by_file["(no frame in uc's crates)"] += size
            size, label = float(m.group(1)) * UNIT[m.group(2)], None
            continue
        stripped = line.strip()
        if stripped.startswith("at "):
            where = stripped[3:]
            if label is None and where.startswith("crates/"):
                label = f"{where.rsplit(':', 1)[0]} {re.sub(r'::h[0-9a-f]{16}$', '', function)}"
        elif stripped and not stripped.startswith("in "):
            function = stripped
    if size:
        key = label or "(no frame in uc's crates)"
        by_frame[key] += size
        by_file[key.split(" ")[0]] += size
    return by_frame, by_file


def report(name: str, out: pathlib.Path, objects: int) -> str:
    files = sorted(out.glob(f"{name}*.zst")) + sorted(out.glob(f"{name}*.gz"))
    if not files:
        return f"{name}: no heaptrack file\n"
    printed = subprocess.run(["heaptrack_print", "-f", str(files[-1]), "-p", "1", "-a", "0", "-T", "0", "-m", "0",
                              "-n", "1000000"], capture_output=True, text=True).stdout
    (out / f"{name}.peaks.txt").write_text(printed)
    peak = re.search(r"peak heap memory consumption: (.*)", printed)
    by_frame, by_file = attribute(printed)
    total = sum(by_frame.values()) or 1
    text = f"{name}: peak heap {peak.group(1) if peak else '?'}, {objects} objects held\n"
    for title, counter in (("by file", by_file), ("by allocating function", by_frame)):
        text += f"  {title}:\n"
        for label, b in counter.most_common(20):
            text += f"    {b / 1e6:8.1f} MB  {b / objects:7.0f} B/object  {100 * b / total:5.1f} %  {label}\n"
    return text


def deployment(pods: int) -> str:
    """memory-bench's Deployment of simulated pods."""
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "churn", "namespace": "default"},
        "spec": {"replicas": pods, "selector": {"matchLabels": {"app": "churn"}},
                 "template": {"metadata": {"labels": {"app": "churn"}},
                              "spec": {"containers": [{"name": "main", "image": "alpine",
                                                       "command": ["sleep", "infinity"]}]}}}})


def available(kc: str, pods: int, timeout: float) -> float:
    """Seconds until the Deployment has `pods` available replicas."""
    start = time.time()
    while time.time() - start < timeout:
        d = json.loads(kubectl(kc, "get", "deployment", "churn", "-o", "json"))
        if (d.get("status") or {}).get("availableReplicas") == pods:
            return time.time() - start
        time.sleep(0.5)
    raise SystemExit("the pods were not available in time")


def pod_cycle(out: pathlib.Path) -> str:
    """`uc up` with everything on, under heaptrack, while a Deployment of `--pods` pods becomes available."""
    with tempfile.TemporaryDirectory() as data:
        up, kc = start_up(ARGS.uc, out, data, POD_CYCLE_FLAGS)
        try:
            wait_served(kc, "pods")
            time.sleep(3)
            kubectl(kc, "apply", "-f", "-", stdin=deployment(ARGS.pods))
            took = available(kc, ARGS.pods, ARGS.timeout)
            peaks = f"{ARGS.pods} pods available after {took:.1f} s; VmHWM: uc up {hwm_mb(pid_of(' up --port 0')):.1f} MB " \
                    "(under heaptrack)\n"
        finally:
            try:
                os.kill(pid_of(" up --port 0"), signal.SIGTERM)
            except (SystemExit, OSError):
                pass
            up.wait(timeout=900)
    return peaks + report("up", out, ARGS.pods)


def main() -> None:
    out = pathlib.Path(ARGS.out)
    out.mkdir(parents=True, exist_ok=True)
    if ARGS.pods:
        text = pod_cycle(out)
        (out / "report.txt").write_text(text)
        print(text)
        return
    with tempfile.TemporaryDirectory() as data:
        up, kc = start_up(ARGS.uc, out, data, SCALING_FLAGS)
        tracers = [up]
        try:
            wait_served(kc, "namespaces")
            controller(kc)
            run = ["heaptrack", "-o", str(out / "run"), ARGS.uc, "run", "--kubeconfig", kc,
                   "--metrics-addr", "127.0.0.1:0", "--leader-election-identity", "bench"]
            tracers.append(subprocess.Popen(run, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            t0 = time.time()
            create_foos(kc, ARGS.parents)
            print(f"{ARGS.parents} Foos created in {time.time() - t0:.1f} s", flush=True)
            converged(kc, ARGS.parents, ARGS.timeout)
            up_pid, run_pid = pid_of(" up --port 0"), pid_of(" run --kubeconfig")
            peaks = f"VmHWM: uc up {hwm_mb(up_pid):.1f} MB, uc run {hwm_mb(run_pid):.1f} MB (under heaptrack)\n"
        finally:
            # The programs stop; heaptrack, their parent, then writes what it recorded.
            for pattern in (" run --kubeconfig", " up --port 0"):
                try:
                    os.kill(pid_of(pattern), signal.SIGTERM)
                except (SystemExit, OSError):
                    pass
            for t in tracers:
                t.wait(timeout=900)
    text = peaks + report("up", out, 2 * ARGS.parents) + report("run", out, 2 * ARGS.parents)
    (out / "report.txt").write_text(text)
    print(text)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uc", required=True, help="uc built with the system allocator (see above)")
    ap.add_argument("--parents", type=int, default=20000)
    ap.add_argument("--pods", type=int, default=0, help="profile a Deployment of this many pods instead")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--out", default="target/heap-profile")
    ARGS = ap.parse_args()
    ARGS.uc = str(pathlib.Path(ARGS.uc).resolve())
    sys.exit(main())
