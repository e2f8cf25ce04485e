"""The ZooKeeper operator: ZookeeperCluster objects (the pravega operator's YAML as written) become
ensembles of real ZooKeeper servers (Debian's zookeeper), checked with the servers' own four-letter
words, zkCli.sh through kubectl exec, and kazoo from the machine."""

import json
import os
import shutil
import threading

import pytest

from conftest import ask_zookeeper as ask, wait_for

NAME = "zookeeper"
YAML = """
apiVersion: zookeeper.pravega.io/v1beta1
kind: ZookeeperCluster
metadata:
  name: zookeeper
spec:
  replicas: REPLICAS
  image:
    repository: pravega/zookeeper
    tag: 0.2.15
  storageType: persistence
  persistence:
    reclaimPolicy: Delete
    spec:
      storageClassName: standard
      resources:
        requests:
          storage: 1Gi
"""

pytestmark = pytest.mark.skipif(
    not (os.path.exists("/usr/share/zookeeper/bin/zkServer.sh") and shutil.which("java") and os.path.exists("/bin/busybox")),
    reason="needs Debian's zookeeper, a JRE and busybox (.ci/run installs them)")


def get(cluster, *args):
    r = cluster.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def status(cluster):
    return (get(cluster, "zookeepercluster", NAME) or {}).get("status", {})


def server_pods(cluster):
    items = get(cluster, "pods", "-l", f"app={NAME}")["items"]
    return {p["metadata"]["name"]: p for p in items if not p["metadata"].get("deletionTimestamp")}


def mode(ip):
    return next((line.split(":", 1)[1].strip() for line in ask(ip, "srvr").splitlines() if line.startswith("Mode:")), None)


def members(ip):
    """The server ids the server's configuration lists."""
    return sorted(int(line.split("=")[0].removeprefix("server.")) for line in ask(ip, "conf").splitlines()
                  if line.startswith("server."))


def healthy(cluster, n):
    """n servers, every one serving with exactly the n members in its configuration, one leader, and
    the status saying so."""
    pods = server_pods(cluster)
    if sorted(pods) != [f"{NAME}-{i}" for i in range(n)]:
        return False
    ips = [p["status"].get("podIP") for p in pods.values()]
    modes = [mode(ip) for ip in ips if ip]
    if len(modes) != n or modes.count("leader") != 1 or any(m not in ("leader", "follower") for m in modes):
        return False
    if any(members(ip) != list(range(1, n + 1)) for ip in ips):
        return False
    st = status(cluster)
    return st.get("readyReplicas") == n and st.get("replicas") == n and st.get("leader") == zk_leader(cluster)


def zk_leader(cluster):
    """The server that says it leads, asked with `srvr` (None unless exactly one does)."""
    leaders = [n for n, p in server_pods(cluster).items() if mode(p["status"].get("podIP") or "") == "leader"]
    return leaders[0] if len(leaders) == 1 else None


def epoch(cluster):
    """The leader's epoch (the high half of its zxid): one more for each election."""
    pods = server_pods(cluster)
    answer = ask(pods[leader_now(cluster)]["status"]["podIP"], "srvr")
    zxid = next(line.split(":", 1)[1].strip() for line in answer.splitlines() if line.startswith("Zxid:"))
    return int(zxid, 16) >> 32


def leader_now(cluster):
    """The leader by ZooKeeper's own word, waiting through an election."""
    return wait_for(lambda: zk_leader(cluster), timeout=30, message="one server that says it leads")


def apply(cluster, replicas):
    cluster.kubectl("apply", "-f", "-", input=YAML.replace("REPLICAS", str(replicas)))


def kazoo_client(cluster):
    from kazoo.client import KazooClient

    hosts = ",".join(f"{p['status']['podIP']}:2181" for p in server_pods(cluster).values())
    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=30)
    return zk


def write_znodes(cluster, count):
    """Creates /data/n000 ... through the client Service's servers."""
    zk = kazoo_client(cluster)
    try:
        zk.ensure_path("/data")
        for i in range(count):
            zk.create(f"/data/n{i:03}", str(i).encode())
    finally:
        zk.stop()
        zk.close()


def znodes_on_every_server(cluster, count):
    """Each server, asked alone, has every znode the test wrote."""
    from kazoo.client import KazooClient

    for p in server_pods(cluster).values():
        zk = KazooClient(hosts=f"{p['status']['podIP']}:2181", timeout=10)
        zk.start(timeout=30)
        try:
            zk.sync("/data")
            children = zk.get_children("/data")
            assert len(children) == count, f"{p['metadata']['name']} has {len(children)} of {count} znodes"
        finally:
            zk.stop()
            zk.close()


class PodReadiness:
    """Watches the server pods from a resourceVersion and keeps the most pods unready at one moment."""

    def __init__(self, cluster):
        from kubernetes import client, watch

        self.v1 = client.CoreV1Api(cluster.api_client())
        rv = self.v1.list_namespaced_pod("default", label_selector=f"app={NAME}").metadata.resource_version
        self.watch = watch.Watch()
        self.state = {}
        self.worst = 0
        self.thread = threading.Thread(target=self.run, args=(rv,), daemon=True)
        self.thread.start()

    def run(self, rv):
        try:
            self.follow(rv)
        except Exception:  # noqa: BLE001 - the stream ends when the test stops it
            pass

    def follow(self, rv):
        for ev in self.watch.stream(self.v1.list_namespaced_pod, "default", label_selector=f"app={NAME}",
                                    resource_version=rv, timeout_seconds=600):
            pod = ev["object"]
            if ev["type"] == "DELETED" or pod.metadata.deletion_timestamp:
                self.state.pop(pod.metadata.name, None)
            else:
                ready = any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
                self.state[pod.metadata.name] = ready
            self.worst = max(self.worst, sum(1 for r in self.state.values() if not r))

    def stop(self):
        self.watch.stop()


def test_an_ensemble_elects_a_leader_and_replicates(cluster):
    # The operator's pods pass Pod Security's restricted level, enforced here.
    cluster.kubectl("label", "namespace", "default", "pod-security.kubernetes.io/enforce=restricted")
    apply(cluster, 3)
    wait_for(lambda: healthy(cluster, 3), timeout=120, message="3 servers, one leader, two followers")
    pods = server_pods(cluster)
    modes = sorted(mode(p["status"]["podIP"]) for p in pods.values())
    assert modes == ["follower", "follower", "leader"]
    out = cluster.kubectl("get", "zk").stdout
    assert out.split("\n")[0].split() == ["NAME", "REPLICAS", "READY", "VERSION", "LEADER", "AGE"], out
    st = status(cluster)
    assert st["members"]["ready"] == [f"{NAME}-{i}" for i in range(3)]
    assert st["currentVersion"] == "0.2.15" and st["internalClientEndpoint"] == f"{NAME}-client:2181"
    # A znode written through one server is read through another.
    host = lambda i: f"{NAME}-{i}.{NAME}-headless.default.svc.cluster.local:2181"  # noqa: E731
    cluster.kubectl("exec", f"{NAME}-0", "--", "zkCli.sh", "-server", host(0), "create", "/a", "x")
    read = cluster.kubectl("exec", f"{NAME}-2", "--", "zkCli.sh", "-server", host(2), "get", "/a").stdout
    # The value's line; zkCli's watcher prints its connection event from another thread, before or after.
    assert "x" in read.strip().splitlines(), read
    # Every server's myid is its ordinal + 1.
    for i in range(3):
        assert cluster.kubectl("exec", f"{NAME}-{i}", "--", "cat", "/data/myid").stdout.strip() == str(i + 1)


def test_scaling_reconfigures_one_server_at_a_time_and_keeps_the_data(cluster):
    apply(cluster, 3)
    wait_for(lambda: healthy(cluster, 3), timeout=120, message="3 servers")
    write_znodes(cluster, 200)
    readiness = PodReadiness(cluster)
    writer = Writer(cluster)
    try:
        for n in (5, 3, 1, 3):
            apply(cluster, n)
            wait_for(lambda: healthy(cluster, n), timeout=180, message=f"{n} servers, each configured with exactly the {n}")
            znodes_on_every_server(cluster, 200)
        assert readiness.worst <= 1, f"{readiness.worst} server pods were unready at one moment"
    finally:
        readiness.stop()
        writer.stop()
    # A client writing throughout lost no acknowledged write.
    every_acked_write_is_there(cluster, writer)
    # Removed servers' claims went with them (reclaimPolicy Delete).
    claims = sorted(c["metadata"]["name"] for c in get(cluster, "pvc")["items"])
    assert claims == [f"data-{NAME}-{i}" for i in range(3)]
    events = [e for e in get(cluster, "events")["items"] if e["involvedObject"]["kind"] == "ZookeeperCluster"]
    reasons = [e["reason"] for e in events]
    assert reasons.count("MemberAdded") == 4 and reasons.count("MemberRemoved") == 4, \
        [(e["reason"], e["message"][:160]) for e in events]


def test_lost_servers_come_back_with_their_data_and_lost_quorum_is_reported(cluster):
    apply(cluster, 3)
    wait_for(lambda: healthy(cluster, 3), timeout=120, message="3 servers")
    write_znodes(cluster, 20)
    # One server's pod deleted: it comes back as the same member (same myid, same claim).
    old_uid = server_pods(cluster)[f"{NAME}-1"]["metadata"]["uid"]
    cluster.kubectl("delete", "pod", f"{NAME}-1")
    wait_for(lambda: (p := server_pods(cluster).get(f"{NAME}-1")) and p["metadata"]["uid"] != old_uid,
             timeout=60, message="a new pod for zookeeper-1")
    wait_for(lambda: healthy(cluster, 3), timeout=120, message="zookeeper-1 back in the ensemble")
    assert cluster.kubectl("exec", f"{NAME}-1", "--", "cat", "/data/myid").stdout.strip() == "2"
    znodes_on_every_server(cluster, 20)
    # Two of three deleted: the status says quorum is lost (watched, so a short loss is seen too);
    # nothing is wiped, and once the pods are back the ensemble recovers with the data.
    from kubernetes import client, watch

    api = client.CustomObjectsApi(cluster.api_client())
    rv = api.list_namespaced_custom_object("zookeeper.pravega.io", "v1beta1", "default", "zookeeperclusters")["metadata"]["resourceVersion"]
    cluster.kubectl("delete", "pod", f"{NAME}-1", f"{NAME}-2", "--wait=false")
    lost = None
    for ev in watch.Watch().stream(api.list_namespaced_custom_object, "zookeeper.pravega.io", "v1beta1", "default",
                                   "zookeeperclusters", resource_version=rv, timeout_seconds=120):
        conditions = ev["object"].get("status", {}).get("conditions", [])
        lost = next((c for c in conditions if c["type"] == "Error" and c["status"] == "True"), None)
        if lost:
            break
    assert lost and lost["reason"] == "QuorumLost", lost
    wait_for(lambda: healthy(cluster, 3), timeout=180, message="the ensemble recovered")
    znodes_on_every_server(cluster, 20)


class Writer:
    """Creates /w/nNNNNN in a loop through kazoo (which moves to another server when one goes) and
    keeps the writes the ensemble acknowledged."""

    def __init__(self, cluster):
        self.zk = kazoo_client(cluster)
        self.zk.ensure_path("/w")
        self.acked = []
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        import time

        i = 0
        while self.running:
            try:
                self.zk.create(f"/w/n{i:05}", b"x")
                self.acked.append(i)
            except Exception:  # noqa: BLE001 - not acknowledged (connection loss): may or may not be there
                time.sleep(0.2)
            i += 1
            time.sleep(0.02)

    def stop(self):
        self.running = False
        self.thread.join(timeout=30)
        self.zk.stop()
        self.zk.close()


class Rollout:
    """Watches the server pods and keeps the order in which each one got `done(pod)` true, and the
    leader by ZooKeeper's own word before the first and once the first is done (a follower's restart
    moves no leadership; asked after the second, the answer would race the leader's own restart),
    and the leader's epoch before the first (each election adds one)."""

    def __init__(self, cluster, done):
        from kubernetes import client, watch

        self.v1 = client.CoreV1Api(cluster.api_client())
        rv = self.v1.list_namespaced_pod("default", label_selector=f"app={NAME}").metadata.resource_version
        self.watch = watch.Watch()
        self.cluster = cluster
        self.done = done
        self.order = []
        self.leaders = [leader_now(cluster)]
        self.epoch = epoch(cluster)
        self.thread = threading.Thread(target=self.run, args=(rv,), daemon=True)
        self.thread.start()

    def run(self, rv):
        try:
            for ev in self.watch.stream(self.v1.list_namespaced_pod, "default", label_selector=f"app={NAME}",
                                        resource_version=rv, timeout_seconds=600):
                pod = ev["object"]
                if ev["type"] != "DELETED" and self.done(pod) and pod.metadata.name not in self.order:
                    self.order.append(pod.metadata.name)
                    if len(self.order) == 1:
                        self.leaders.append(leader_now(self.cluster))
        except Exception:  # noqa: BLE001 - the stream ends when the test stops it
            pass

    def stop(self):
        self.watch.stop()

    def leader_went_last(self):
        """Every server rolled once, the first while it followed, the last the one leading once the
        first was done (so neither of the first two went while it led), and one election in all: the
        leader's own restart (a quorum lost on the way would be another)."""
        return (sorted(self.order) == [f"{NAME}-{i}" for i in range(3)] and len(self.leaders) == 2
                and self.order[0] != self.leaders[0] and self.order[2] == self.leaders[1]
                and epoch(self.cluster) == self.epoch + 1)


def rolled_out(cluster, n):
    st = status(cluster)
    upgrading = next((c for c in st.get("conditions", []) if c["type"] == "Upgrading"), {})
    return healthy(cluster, n) and upgrading.get("status") == "False"


def every_acked_write_is_there(cluster, writer):
    zk = kazoo_client(cluster)
    try:
        zk.sync("/w")
        present = {int(c.removeprefix("n")) for c in zk.get_children("/w")}
    finally:
        zk.stop()
        zk.close()
    lost = [i for i in writer.acked if i not in present]
    assert not lost, f"{len(lost)} acknowledged writes lost: {lost[:10]}"
    assert len(writer.acked) > 20, "the writer kept writing"


def test_an_upgrade_restarts_each_server_once_the_leader_last_and_loses_no_write(cluster):
    apply(cluster, 3)
    wait_for(lambda: healthy(cluster, 3), timeout=120, message="3 servers")
    writer = Writer(cluster)
    new_image = lambda pod: any(c.image.endswith(":0.2.16") and c.ready for c in pod.status.container_statuses or [])  # noqa: E731
    rollout = Rollout(cluster, new_image)
    try:
        cluster.kubectl("patch", "zk", NAME, "--type=merge", "-p", '{"spec": {"image": {"tag": "0.2.16"}}}')
        wait_for(lambda: rolled_out(cluster, 3) and status(cluster).get("currentVersion") == "0.2.16"
                 and len(rollout.order) == 3, timeout=240, message="every server on 0.2.16")
    finally:
        rollout.stop()
        writer.stop()
    assert rollout.leader_went_last(), (rollout.order, rollout.leaders, rollout.epoch, epoch(cluster))
    for p in server_pods(cluster).values():
        assert p["status"]["containerStatuses"][0]["restartCount"] == 1, p["metadata"]["name"]
    every_acked_write_is_there(cluster, writer)


def test_a_rolling_restart_remakes_each_server_once_the_leader_last(cluster):
    apply(cluster, 3)
    wait_for(lambda: healthy(cluster, 3), timeout=120, message="3 servers")
    before = {n: p["metadata"]["uid"] for n, p in server_pods(cluster).items()}
    writer = Writer(cluster)
    remade = lambda pod: pod.metadata.uid != before.get(pod.metadata.name) and any(  # noqa: E731
        c.ready for c in pod.status.container_statuses or [])
    rollout = Rollout(cluster, remade)
    try:
        cluster.kubectl("patch", "zk", NAME, "--type=merge", "-p", '{"spec": {"triggerRollingRestart": true}}')
        wait_for(lambda: rolled_out(cluster, 3) and len(rollout.order) == 3, timeout=240, message="every server remade")
    finally:
        rollout.stop()
        writer.stop()
    assert sorted(rollout.order) == sorted(before) and rollout.leader_went_last(), \
        (rollout.order, rollout.leaders, rollout.epoch, epoch(cluster))
    every_acked_write_is_there(cluster, writer)
    # The round is done: another change (synced: the budget follows it) restarts nothing while the
    # field stays true.
    uids = {n: p["metadata"]["uid"] for n, p in server_pods(cluster).items()}
    cluster.kubectl("patch", "zk", NAME, "--type=merge", "-p", '{"spec": {"maxUnavailableReplicas": 2}}')
    wait_for(lambda: get(cluster, "pdb", NAME)["spec"]["maxUnavailable"] == 2, message="the budget synced")
    assert rolled_out(cluster, 3)
    assert {n: p["metadata"]["uid"] for n, p in server_pods(cluster).items()} == uids


def test_kill_9_of_uc_during_a_scale_up_converges_with_the_data(cluster):
    apply(cluster, 3)
    wait_for(lambda: healthy(cluster, 3), timeout=120, message="3 servers")
    write_znodes(cluster, 50)
    apply(cluster, 5)
    wait_for(lambda: f"{NAME}-3" in server_pods(cluster), timeout=60, message="the first joiner's pod")
    cluster.kill9()
    cluster.start()
    wait_for(lambda: healthy(cluster, 5), timeout=240, message="5 servers after the restart")
    znodes_on_every_server(cluster, 50)


def test_an_old_claim_is_not_reused_by_a_server_that_joins_again(cluster):
    # Retain keeps a removed server's claim, with its old data and configuration; when the server
    # joins again it starts afresh (never "My id N not in the peer list", never stale data served).
    cluster.kubectl("apply", "-f", "-", input=YAML.replace("REPLICAS", "3").replace("Delete", "Retain"))
    wait_for(lambda: healthy(cluster, 3), timeout=120, message="3 servers")
    cluster.kubectl("apply", "-f", "-", input=YAML.replace("REPLICAS", "1").replace("Delete", "Retain"))
    wait_for(lambda: healthy(cluster, 1), timeout=120, message="1 server")
    claims = sorted(c["metadata"]["name"] for c in get(cluster, "pvc")["items"])
    assert claims == [f"data-{NAME}-{i}" for i in range(3)], "Retain keeps the claims"
    write_znodes(cluster, 10)  # written while servers 2 and 3 were out
    cluster.kubectl("apply", "-f", "-", input=YAML.replace("REPLICAS", "3").replace("Delete", "Retain"))
    wait_for(lambda: healthy(cluster, 3), timeout=180, message="3 servers again")
    znodes_on_every_server(cluster, 10)
    log = cluster.kubectl("logs", f"{NAME}-2", "-c", "prepare").stdout
    assert "holds an earlier member's data; this server joins afresh" in log, log
