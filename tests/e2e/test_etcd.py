"""The etcd operator: EtcdCluster objects (the coreos YAML as written) become clusters of real etcd
processes (Debian's etcd-server), checked with etcdctl (Debian's etcd-client) from the machine."""

import base64
import http.client
import json
import os
import signal
import subprocess

import pytest

from conftest import wait_for

NAME = "example-etcd-cluster"
SEED_YAML = """
apiVersion: "etcd.database.coreos.com/v1beta2"
kind: "EtcdCluster"
metadata:
  name: "example-etcd-cluster"
spec:
  size: 3
  version: "3.2.13"
"""

pytestmark = pytest.mark.skipif(not (os.path.exists("/usr/bin/etcd") and os.path.exists("/usr/bin/etcdctl")),
                                reason="needs Debian's etcd-server and etcd-client (.ci/run installs them)")


def get(cluster, *args):
    r = cluster.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def status(cluster):
    return (get(cluster, "etcdcluster", NAME) or {}).get("status", {})


def endpoints(cluster):
    """Client URLs of the client Service's ready endpoints."""
    ep = get(cluster, "endpoints", f"{NAME}-client") or {}
    return [f"http://{a['ip']}:2379" for s in ep.get("subsets") or [] for a in s.get("addresses") or []]


def etcdctl(cluster, *args, check=True):
    env = {**os.environ, "ETCDCTL_API": "3"}
    r = subprocess.run(["etcdctl", "--command-timeout=5s", f"--endpoints={','.join(endpoints(cluster))}", *args],
                       capture_output=True, text=True, env=env, timeout=30)
    if check and r.returncode != 0:
        raise AssertionError(f"etcdctl {' '.join(args)}: {r.stdout}\n{r.stderr}")
    return r


def members(cluster):
    r = etcdctl(cluster, "member", "list", "-w", "json", check=False)
    return json.loads(r.stdout).get("members", []) if r.returncode == 0 else []


def healthy(cluster, size):
    """`size` started voting members, every endpoint healthy, the status saying so."""
    ms = members(cluster)
    if len(ms) != size or any(m.get("isLearner") or not m.get("name") for m in ms):
        return False
    if len(endpoints(cluster)) != size or etcdctl(cluster, "endpoint", "health", check=False).returncode != 0:
        return False
    st = status(cluster)
    return st.get("phase") == "Running" and st.get("readyMembers") == size


def b64(s):
    return base64.b64encode(s.encode()).decode()


def kv(cluster, path, body):
    """One call to etcd's JSON gateway on a ready member (keep-alive: a thousand writes take a moment)."""
    host, port = endpoints(cluster)[0].removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def write_keys(cluster, n):
    host, port = endpoints(cluster)[0].removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    for i in range(n):
        conn.request("POST", "/v3/kv/put", json.dumps({"key": b64(f"key-{i:04}"), "value": b64(f"value-{i}")}),
                     {"Content-Type": "application/json"})
        r = conn.getresponse()
        assert r.status == 200, r.read()
        r.read()
    conn.close()


def key_count(cluster):
    r = kv(cluster, "/v3/kv/range", {"key": b64("key-"), "range_end": b64("key."), "count_only": True})
    return int(r.get("count", 0))


def create_cluster(cluster):
    cluster.kubectl("apply", "-f", "-", input=SEED_YAML)
    wait_for(lambda: healthy(cluster, 3), timeout=60, message="3 healthy members")


def test_etcd_cluster_bootstraps_and_replaces_a_deleted_member(cluster):
    create_cluster(cluster)
    ms = members(cluster)
    assert sorted(m["name"] for m in ms) == [f"{NAME}-000{i}" for i in range(3)]
    assert all(m["peerURLs"][0] == f"http://{m['name']}.{NAME}.default.svc:2380" for m in ms), "peer URLs are DNS names"
    st = status(cluster)
    assert st["members"]["ready"] == [f"{NAME}-000{i}" for i in range(3)] and st["currentVersion"] == "3.2.13"
    svc = get(cluster, "svc", NAME)
    assert svc["spec"]["clusterIP"] == "None"
    assert get(cluster, "svc", f"{NAME}-client")["spec"]["ports"][0]["port"] == 2379
    write_keys(cluster, 1000)
    assert key_count(cluster) == 1000
    cluster.kubectl("delete", "pod", f"{NAME}-0001", "--wait=false")
    wait_for(lambda: healthy(cluster, 3) and f"{NAME}-0001" not in [m["name"] for m in members(cluster)],
             timeout=60, message="the deleted member replaced")
    assert f"{NAME}-0003" in [m["name"] for m in members(cluster)]
    assert key_count(cluster) == 1000, "no data lost"


def test_etcd_member_process_killed_is_replaced(cluster):
    create_cluster(cluster)
    write_keys(cluster, 1000)
    victim = f"{NAME}-0002"
    pids = subprocess.run(["pgrep", "-f", "--", f"--name={victim}"], capture_output=True, text=True).stdout.split()
    assert pids, "the member runs as a process"
    for pid in pids:
        os.kill(int(pid), signal.SIGKILL)
    wait_for(lambda: healthy(cluster, 3) and victim not in [m["name"] for m in members(cluster)],
             timeout=60, message="the killed member replaced")
    assert key_count(cluster) == 1000


def test_etcd_scale_up_and_down_keeps_quorum_and_data(cluster):
    create_cluster(cluster)
    write_keys(cluster, 300)
    cluster.kubectl("patch", "etcdcluster", NAME, "--type=merge", "-p", '{"spec":{"size":5}}')
    seen_learner = []

    def five():
        ms = members(cluster)
        seen_learner.extend(m.get("name") or "(unstarted)" for m in ms if m.get("isLearner"))
        # Every step keeps quorum: the data stays readable throughout.
        assert key_count(cluster) == 300
        return healthy(cluster, 5)

    wait_for(five, timeout=90, interval=0.3, message="5 healthy members")
    assert seen_learner, "new members join as learners and are promoted"
    cluster.kubectl("patch", "etcdcluster", NAME, "--type=merge", "-p", '{"spec":{"size":3}}')
    wait_for(lambda: key_count(cluster) == 300 and healthy(cluster, 3), timeout=60, message="back to 3 members")
    assert sorted(m["name"] for m in members(cluster)) == [f"{NAME}-000{i}" for i in range(3)], "the newest go first"
    wait_for(lambda: len(get(cluster, "pods", "-l", f"etcd_cluster={NAME}")["items"]) == 3, message="their pods gone")


def test_invalid_etcd_specs_are_rejected_with_no_pod(cluster):
    for spec in ['{"size": 0, "version": "3.2.13"}', '{"size": 8, "version": "3.2.13"}', '{"size": 3, "version": "banana"}']:
        body = json.dumps({"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdCluster",
                           "metadata": {"name": "bad"}, "spec": json.loads(spec)})
        r = cluster.kubectl("apply", "-f", "-", input=body, check=False)
        assert r.returncode != 0 and "spec." in r.stderr, r.stderr
    assert get(cluster, "pods", "-l", "etcd_cluster=bad")["items"] == []


def test_etcd_backup_to_local_storage(cluster, tmp_path):
    create_cluster(cluster)
    write_keys(cluster, 1000)
    revision = int(kv(cluster, "/v3/kv/range", {"key": b64("key-0000")})["header"]["revision"])
    target = tmp_path / "backups" / "example.db"
    backup = {"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdBackup", "metadata": {"name": "once"},
              "spec": {"etcdEndpoints": endpoints(cluster), "storageType": "Local", "local": {"path": str(target)}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(backup))
    st = wait_for(lambda: (get(cluster, "etcdbackup", "once") or {}).get("status", {}).get("succeeded") and
                  get(cluster, "etcdbackup", "once")["status"], timeout=30, message="backup succeeded")
    assert st["etcdRevision"] >= revision and st["etcdVersion"].startswith("3.") and st["lastSuccessDate"]
    r = subprocess.run(["etcdctl", "snapshot", "status", str(target), "-w", "json"], capture_output=True, text=True,
                       env={**os.environ, "ETCDCTL_API": "3"})
    assert r.returncode == 0, r.stderr
    snap = json.loads(r.stdout)
    assert snap["revision"] >= revision and snap["totalKey"] >= 1000, snap
    # Nothing answers: the backup fails with a reason and writes no file.
    bad = {**backup, "metadata": {"name": "nowhere"},
           "spec": {**backup["spec"], "etcdEndpoints": ["http://127.0.0.1:1"], "local": {"path": str(tmp_path / "bad.db")}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(bad))
    st = wait_for(lambda: (get(cluster, "etcdbackup", "nowhere") or {}).get("status", {}).get("reason"),
                  timeout=30, message="a failure reason")
    assert "127.0.0.1:1" in st and not (tmp_path / "bad.db").exists()
