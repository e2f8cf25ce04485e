"""Crash safety of the node: `kill -9` of `uc up` at random moments of an etcd cluster's life (idle,
scaling 3 -> 5 -> 3, replacing a member) must lose nothing. The members' processes survive and are
re-adopted (same pids), the cluster comes back to its size with every member voting and every key,
no automatic restore fires, and a clean stop at the end leaves no process uc started."""

import json
import os
import random
import signal
import subprocess
import time

import pytest

from conftest import Cluster, wait_for
from test_etcd import NAME, endpoints, get, healthy, key_count, members, write_keys

ROUNDS = int(os.environ.get("UC_CRASH_ROUNDS", "10"))
# What happens before the kill, round by round (the kill lands at a random moment during it).
ACTIONS = ["idle", "scale5", "replace", "scale3", "idle", "replace", "scale5", "scale3", "replace", "idle"]

pytestmark = pytest.mark.skipif(not (os.path.exists("/usr/bin/etcd") and os.path.exists("/usr/bin/etcdctl")),
                                reason="needs Debian's etcd-server and etcd-client (.ci/run installs them)")


def processes(data_dir):
    """(pid, start time, cmdline) of the shims of this data directory and their children."""
    out = []
    shims = set()
    entries = [p for p in os.listdir("/proc") if p.isdigit()]
    stats = {}
    for pid in entries:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if fields[0] == "Z":
            continue
        stats[int(pid)] = (int(fields[1]), int(fields[19]), [c.decode(errors="replace") for c in cmd if c])
        if len(cmd) > 2 and cmd[1] == b"shim" and any(c.startswith(data_dir.encode()) for c in cmd):
            shims.add(int(pid))
    # A container's processes are the shim's descendants (in the node's sandbox, below bubblewrap).
    below = set(shims)
    grew = True
    while grew:
        more = {pid for pid, (ppid, _, _) in stats.items() if ppid in below and pid not in below}
        below |= more
        grew = bool(more)
    for pid, (ppid, start, cmd) in stats.items():
        # bubblewrap's processes are the sandbox around a container, not the container.
        if pid in below and not (cmd and cmd[0].endswith("bwrap")):
            out.append((pid, start, cmd))
    return out


def log_tail(data_dir, lines=120):
    """The last lines `uc up` logged in this data directory, for a failure's message."""
    with open(os.path.join(data_dir, "uc.log"), errors="replace") as f:
        return "\n".join(f.read().splitlines()[-lines:])


def member_pids(data_dir):
    """Member name -> pid of its etcd process."""
    out = {}
    for pid, _, cmd in processes(data_dir):
        for arg in cmd:
            if arg.startswith(f"--name={NAME}-") and cmd[0].endswith("etcd"):
                out[arg.split("=", 1)[1]] = pid
    return out


SPEC = {"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdCluster", "metadata": {"name": NAME},
        "spec": {"size": 3, "version": "3.4.23",
                 # Were quorum lost for 20 s after a restart, a restore would roll the data back: it must not happen.
                 "restoreOnQuorumLoss": {"backupName": "safety-net", "afterSeconds": 20}}}


def test_kill_9_of_uc_up_loses_no_etcd_cluster(make_cluster, tmp_path):
    seed = int(os.environ.get("UC_CRASH_SEED", str(int(time.time()))))
    rng = random.Random(seed)
    print(f"crash soak seed {seed}")
    c = make_cluster()
    data_dir = c.data_dir
    c.kubectl("apply", "-f", "-", input=json.dumps(SPEC))
    wait_for(lambda: healthy(c, 3), timeout=90, message="3 healthy members")
    write_keys(c, 500)
    backup = {"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdBackup", "metadata": {"name": "safety-net"},
              "spec": {"etcdEndpoints": endpoints(c), "storageType": "Local", "local": {"path": str(tmp_path / "net.db")}}}
    c.kubectl("apply", "-f", "-", input=json.dumps(backup))
    wait_for(lambda: ((get(c, "etcdbackup", "safety-net") or {}).get("status") or {}).get("succeeded"),
             timeout=30, message="the backup")
    size = 3
    seen = set()
    for round_, action in enumerate(ACTIONS[:ROUNDS]):
        replaced = None
        if action == "scale5" and size == 3:
            size = 5
            c.kubectl("patch", "etcdcluster", NAME, "--type=merge", "-p", '{"spec":{"size":5}}')
        elif action == "scale3" and size == 5:
            size = 3
            c.kubectl("patch", "etcdcluster", NAME, "--type=merge", "-p", '{"spec":{"size":3}}')
        elif action == "replace":
            replaced = rng.choice(sorted(m["name"] for m in members(c)))
            c.kubectl("delete", "pod", replaced, "--wait=false")
        time.sleep(rng.uniform(0, 4))
        seen.update((pid, start) for pid, start, _ in processes(data_dir))
        c.kill9()
        # Nothing of the node runs now; the members do.
        before = member_pids(data_dir)
        assert len([m for m in before if m != replaced]) >= 2, f"round {round_} ({action}): the members outlive uc up"
        c.start()
        wait_for(lambda: healthy(c, size) and key_count(c) >= 500, timeout=150, interval=0.5,
                 message=f"round {round_} ({action}): {size} healthy members with every key")
        assert key_count(c) == 500, f"round {round_}: keys lost"
        after = member_pids(data_dir)
        for name, pid in before.items():
            if name in after and name != replaced:
                assert after[name] == pid, f"round {round_} ({action}): {name} was re-adopted, not started again"
        voting = [m for m in members(c) if not m.get("isLearner")]
        assert len(voting) == size
        restores = json.loads(c.kubectl("get", "etcdrestores", "-o", "json").stdout)["items"]
        assert restores == [], f"round {round_}: no restore: {restores}"
        seen.update((pid, start) for pid, start, _ in processes(data_dir))
    assert c.stop() == 0, "uc up stops cleanly on SIGINT"
    left = processes(data_dir)
    assert left == [], f"processes left after a clean stop: {left}\n{log_tail(data_dir)}"
    still = []
    for pid, start in seen:
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            fields = stat[stat.rfind(")") + 2:].split()
            if int(fields[19]) == start and fields[0] != "Z":
                still.append((pid, stat[:stat.rfind(")") + 1], fields[0]))
        except OSError:
            pass
    assert still == [], f"processes uc started still run: {still}"


def test_a_clean_stop_stops_pods_and_a_restart_runs_them_again(make_cluster):
    c = make_cluster()
    c.kubectl("run", "web", "--image=uc/http-server", "--restart=Never", "--", "--port", "8080")
    wait_for(lambda: ((get(c, "pod", "web") or {}).get("status") or {}).get("phase") == "Running", message="Running")
    # Running once the shim started it; the sandbox (bubblewrap, in the pod's network namespace) execs
    # the container's command a moment later.
    pids = wait_for(lambda: p if len(p := [pid for pid, _, _ in processes(c.data_dir)]) == 2 else None,
                    message="a shim and its container")
    assert c.stop() == 0
    assert processes(c.data_dir) == [], "a clean stop leaves nothing running"
    c.start()
    # Stopped by the node, not failed: it runs again, one restart more, though its policy is Never.
    st = wait_for(lambda: (s := (get(c, "pod", "web") or {}).get("status") or {}) and s.get("phase") == "Running"
                  and s["containerStatuses"][0]["restartCount"] == 1 and s, message="running again")
    assert st["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] in (0, 143)
    # Never two processes for one container: a shim and its command, once the sandbox has started it.
    wait_for(lambda: len(processes(c.data_dir)) == 2, message="one shim and one container")
    # A second `uc up` on the same data directory is refused.
    r = subprocess.run([os.environ.get("UC_BIN") or os.path.join(os.path.dirname(__file__), "../../target/debug/uc"),
                        "up", "--data-dir", c.data_dir, "--port", "0"], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "another `uc up` is running" in r.stderr


def test_a_pod_deleted_while_uc_is_down_is_stopped_when_it_comes_back(make_cluster):
    c = make_cluster()
    c.kubectl("run", "web", "--image=uc/http-server", "--", "--port", "8080")
    wait_for(lambda: ((get(c, "pod", "web") or {}).get("status") or {}).get("phase") == "Running", message="Running")
    # Running once the shim started it; the sandbox execs the container's command a moment later.
    wait_for(lambda: len(processes(c.data_dir)) == 2, message="a shim and its container")
    c.kill9()
    # With the node away the pod cannot finish terminating; delete it without grace, as an
    # administrator would.
    c2 = Cluster(c.data_dir, ["--no-node"]).start()
    c2.kubectl("delete", "pod", "web", "--grace-period=0", "--force", "--wait=false")
    wait_for(lambda: get(c2, "pod", "web") is None, message="the pod gone")
    assert len(processes(c.data_dir)) == 2, "still running: nobody stopped it"
    c2.stop(sig=signal.SIGINT)
    c.start()
    wait_for(lambda: processes(c.data_dir) == [], message="the orphaned container stopped")


@pytest.mark.skipif(not os.path.exists("/bin/busybox"), reason="needs Debian's busybox (.ci/run installs it)")
def test_a_containers_grandchildren_go_with_it(cluster):
    def sleepers():
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    args = [a.decode() for a in f.read().split(b"\0") if a]
            except OSError:
                continue
            if args and args[-1] in ("3001", "3002") and "sleep" in " ".join(args) and "-c" not in args:
                found.append(pid)
        return found

    assert sleepers() == []
    # A shell that leaves children behind, one of them in a session of its own.
    cluster.kubectl("run", "family", "--image=busybox", "--", "sh", "-c",
                    "sleep 3001 & setsid sleep 3002 & wait")
    wait_for(lambda: len(sleepers()) == 2, timeout=30, message="the grandchildren running")
    cluster.kubectl("delete", "pod", "family", "--timeout=60s")
    wait_for(lambda: sleepers() == [], timeout=30, message="the grandchildren gone with the pod")
