"""MultiClusterZooKeeper on uc's Karmada-compatible control plane (`uc up --control-plane`) over three
member clusters (`uc up` each, joined with `uc join`): one real ZooKeeper ensemble across them,
deployed cluster by cluster as seed 002 specifies, checked from the MultiClusterZooKeeper's watch
history, the servers' four-letter words and kazoo."""

import json
import os
import shutil
import subprocess
import tempfile
import threading

import pytest

from conftest import ROOT, Cluster, ask_zookeeper as ask, pod_subnet, uc_binary, wait_for

EXAMPLE = ROOT / "examples" / "multicluster-zookeeper" / "mczk.yaml"
MEMBERS = ("m1", "m2", "m3")

pytestmark = pytest.mark.skipif(
    not (os.path.exists("/usr/share/zookeeper/bin/zkServer.sh") and shutil.which("java") and os.path.exists("/bin/busybox")),
    reason="needs Debian's zookeeper, a JRE and busybox (.ci/run installs them)")


class History:
    """Every state of the MultiClusterZooKeeper's status, from a watch (`kubectl get -w`)."""

    def __init__(self, cp):
        self.states = []
        # A watch of the list: it waits for the object when there is none yet.
        self.proc = cp.kubectl_bg("get", "multiclusterzookeepers", "-w", "-o", "json")
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        decoder, buf = json.JSONDecoder(), ""
        for line in self.proc.stdout:
            buf += line
            try:
                obj, end = decoder.raw_decode(buf.strip())
            except json.JSONDecodeError:
                continue
            buf = buf.strip()[end:]
            self.states.append(obj.get("status", {}))

    def records(self):
        return [s.get("records", []) for s in list(self.states)]

    def stop(self, index):
        """Stops once the watch has shown record `index` Ready."""
        try:
            wait_for(lambda: any(len(r) > index and r[index]["status"] == "Ready" for r in self.records()),
                     timeout=30, message="the watch to show the record Ready")
        finally:
            self.proc.terminate()


def state(record, key):
    return record.get("currentState", {}).get(key, [])


def check_one_at_a_time(history, index):
    """At every moment of record `index` at most one cluster deploys, and clusters complete in order."""
    seen = [r[index] for r in history.records() if len(r) > index]
    assert seen, "the record was never seen"
    for r in seen:
        assert len(state(r, "deploying")) <= 1, f"two clusters deploying at once: {r}"
        order, completed = r["order"], state(r, "completed")
        assert completed == order[: len(completed)], f"completed out of order: {r}"
        if state(r, "deploying"):
            assert state(r, "deploying") == [order[len(completed)]], f"deploying out of order: {r}"
    assert seen[-1]["status"] == "Ready"
    assert any(r["status"] == "Deploying" for r in seen), "the record never showed a deployment"


def mczk(cp):
    return json.loads(cp.kubectl("get", "multiclusterzookeeper", "zk", "-o", "json").stdout)


def deployed(cp):
    """The example deployed, its last record Ready. The module's tests build on one another, but pytest-xdist
    may hand a later one to a worker of its own (its own `planes`): there it deploys the example first."""
    if cp.kubectl("get", "multiclusterzookeeper", "zk", check=False).returncode != 0:
        cp.kubectl("apply", "-f", str(EXAMPLE))
    wait_for(lambda: last_record(cp).get("status") == "Ready", timeout=240, interval=1, message="the last record Ready")
    return mczk(cp)["status"]["records"]


def ready_condition(cp):
    return next((c for c in mczk(cp).get("status", {}).get("conditions", []) if c["type"] == "Ready"), {})


def last_record(cp):
    records = mczk(cp).get("status", {}).get("records", [])
    return records[-1] if records else {}


def server_ips(members):
    ips = {}
    for name, m in members.items():
        pods = json.loads(m.kubectl("get", "pods", "-l", "app=zk", "-o", "json").stdout)["items"]
        for p in pods:
            ips[f"{p['metadata']['name']}@{name}"] = p["status"].get("podIP", "")
    return ips


def ensemble(members):
    """(modes, configurations) of every server: `srvr`'s mode and `conf`'s sorted server lines."""
    modes, confs = {}, {}
    for who, ip in server_ips(members).items():
        modes[who] = next((l.split(": ")[1] for l in ask(ip, "srvr").splitlines() if l.startswith("Mode: ")), None)
        confs[who] = sorted(l for l in ask(ip, "conf").splitlines() if l.startswith("server."))
    return modes, confs


def whole(members):
    modes, confs = ensemble(members)
    values = sorted(m or "" for m in modes.values())
    return (values == ["follower"] * 4 + ["leader"]) and len({tuple(c) for c in confs.values()}) == 1 and (modes, confs)


@pytest.fixture(scope="module")
def planes():
    dirs = [tempfile.TemporaryDirectory(prefix="uc-e2e-mc-") for _ in range(4)]
    cp = Cluster(dirs[0].name, ["--control-plane", "--in-memory"]).start()
    members = {}
    try:
        for i, name in enumerate(MEMBERS):
            members[name] = Cluster(dirs[i + 1].name, ["--pod-subnet", str(pod_subnet())]).start()
            subprocess.run([uc_binary(), "join", name, "--kubeconfig", cp.kubeconfig,
                            "--cluster-kubeconfig", members[name].kubeconfig], check=True, capture_output=True)
        wait_for(lambda: all(c.get("status", {}).get("conditions", [{}])[-1].get("status") == "True"
                             for c in json.loads(cp.kubectl("get", "clusters", "-o", "json").stdout)["items"]) or None,
                 timeout=30, message="three Ready member clusters")
        yield cp, members
    finally:
        for c in [cp, *members.values()]:
            if c.proc is not None:
                c.stop()
        for d in dirs:
            d.cleanup()


def test_an_ensemble_is_deployed_across_three_clusters_one_cluster_at_a_time(planes):
    cp, members = planes
    history = History(cp)
    cp.kubectl("apply", "-f", str(EXAMPLE))
    wait_for(lambda: last_record(cp).get("status") == "Ready", timeout=240, interval=1, message="record 1 Ready")
    history.stop(0)
    binding = json.loads(cp.kubectl("get", "resourcebinding", "zk-zookeepercluster", "-o", "json").stdout)
    order = [c["name"] for c in binding["spec"]["clusters"]]
    assert order == list(MEMBERS)
    assert [c["replicas"] for c in binding["spec"]["clusters"]] == [2, 2, 1], "static weights 2/2/1 of 5"
    record = mczk(cp)["status"]["records"][0]
    assert record["order"] == order, "the record deploys in the scheduling order"
    assert set(record["observedGenerations"]) == {"multiclusterzookeeper", "zookeeper"}
    check_one_at_a_time(history, 0)
    fully = next(c for c in binding["status"]["conditions"] if c["type"] == "FullyApplied")
    assert fully["status"] == "True", binding["status"]
    # One ensemble: a leader, four followers, the same five servers (clusterset names) everywhere.
    modes, confs = wait_for(lambda: whole(members), timeout=60, interval=1, message="one leader and four followers")
    lines = next(iter(confs.values()))
    assert len(lines) == 5 and all(".svc.clusterset.local:2888:3888:participant" in l for l in lines), lines
    for i, name in enumerate(MEMBERS):
        assert sum(1 for l in lines if f".{name}.zk-headless.default.svc.clusterset.local" in l) == [2, 2, 1][i]
    # Each member's ZooKeeper operator ran its part: ids, replicas, the ensemble's list.
    parts = {n: json.loads(m.kubectl("get", "zookeepercluster", "zk", "-o", "json").stdout) for n, m in members.items()}
    assert [parts[n]["spec"]["replicas"] for n in MEMBERS] == [2, 2, 1]
    assert [parts[n]["spec"]["ensemble"]["firstId"] for n in MEMBERS] == [1, 11, 21]
    # A znode written through m1 is read through m3.
    from kazoo.client import KazooClient

    ips = server_ips(members)
    writer = KazooClient(hosts=f"{ips['zk-0@m1']}:2181", timeout=10)
    writer.start(timeout=20)
    writer.create("/across", b"written in m1", makepath=True)
    writer.stop()
    reader = KazooClient(hosts=f"{ips['zk-0@m3']}:2181", timeout=10)
    reader.start(timeout=20)
    reader.sync("/across")
    assert reader.get("/across")[0] == b"written in m1"
    reader.stop()


def test_the_policies_the_operator_wrote_validate_against_karmadas_crds(planes):
    cp, _ = planes
    deployed(cp)
    checked = 0
    for kind in ("propagationpolicies", "overridepolicies", "serviceexports", "serviceimports"):
        for obj in json.loads(cp.kubectl("get", kind, "-o", "json").stdout)["items"]:
            fresh = {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                     "metadata": {"name": obj["metadata"]["name"] + "-dry-run", "namespace": "default"}}
            if "spec" in obj:
                fresh["spec"] = obj["spec"]
            cp.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(fresh))
            checked += 1
    assert checked >= 1 + 3 + 1 + 1, "a PropagationPolicy, three OverridePolicies, the export and the import"
    # The schemas are Karmada's: what they forbid is refused.
    bad = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": {"name": "bad"},
           "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "Secret"}],
                    "placement": {"replicaScheduling": {"replicaSchedulingType": "Sideways"}}}}
    r = cp.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(bad), check=False)
    assert r.returncode != 0 and "replicaSchedulingType" in r.stderr, r.stderr


def test_a_spec_change_rolls_cluster_by_cluster_as_a_new_record(planes):
    cp, members = planes
    before = deployed(cp)
    first = before[-1]
    generation = first["observedGenerations"]["zookeeper"]
    history = History(cp)
    cp.kubectl("patch", "multiclusterzookeeper", "zk", "--type", "merge", "-p",
               json.dumps({"spec": {"zookeeper": {"config": {"tickTime": 2500}}}}))
    wait_for(lambda: len(mczk(cp)["status"]["records"]) == len(before) + 1 and last_record(cp)["status"] == "Ready",
             timeout=300, interval=1, message="a new record Ready")
    history.stop(len(before))
    records = mczk(cp)["status"]["records"]
    assert records[: len(before)] == before, "the records before stay as history"
    assert records[-1]["observedGenerations"]["zookeeper"] > generation
    check_one_at_a_time(history, len(before))
    wait_for(lambda: whole(members), timeout=60, interval=1, message="the ensemble whole after the roll")
    for who, ip in server_ips(members).items():
        assert "tickTime=2500" in ask(ip, "conf"), f"{who} runs the old configuration"


def test_a_stopped_member_holds_its_record_in_deploying_until_it_returns(planes):
    cp, members = planes
    records = len(deployed(cp))
    cp.kubectl("patch", "multiclusterzookeeper", "zk", "--type", "merge", "-p",
               json.dumps({"spec": {"zookeeper": {"config": {"tickTime": 3000}}}}))
    wait_for(lambda: len(mczk(cp)["status"]["records"]) == records + 1 and state(last_record(cp), "deploying") == ["m2"],
             timeout=240, interval=0.2, message="the new record deploying m2")
    m2 = members["m2"]
    address = m2.server_and_token()[0]
    assert m2.stop() == 0
    cond = wait_for(lambda: (c := ready_condition(cp)).get("reason") == "ClusterUnavailable" and c,
                    timeout=60, interval=0.5, message="the Ready condition saying m2 is unavailable")
    assert "m2" in cond["message"] and "not ready" in cond["message"], cond
    record = last_record(cp)
    assert (state(record, "deploying"), state(record, "completed"), record["status"]) == (["m2"], ["m1"], "Deploying")
    cluster = json.loads(cp.kubectl("get", "cluster", "m2", "-o", "json").stdout)
    assert next(c for c in cluster["status"]["conditions"] if c["type"] == "Ready")["status"] == "False"
    # Started again with the same command (`uc up --port 0 ...`): it serves where the control plane
    # knows it, and the record completes without `uc join` run again.
    assert m2.port == 0
    m2.start()
    assert m2.server_and_token()[0] == address
    wait_for(lambda: last_record(cp).get("status") == "Ready", timeout=300, interval=1, message="the new record Ready")
    assert ready_condition(cp)["status"] == "True"
    wait_for(lambda: whole(members), timeout=90, interval=1, message="the ensemble whole with m2 back")


def test_uc_run_brings_the_operator_to_a_control_plane_it_does_not_run_on(make_cluster, tmp_path):
    """`uc run --multicluster-zookeeper` against a control plane that only serves Karmada's API (as
    Karmada's would): it installs the operator and registers its interpreter webhook, which answers
    Karmada's ResourceInterpreterContext over HTTPS with the CA it registered."""
    import base64
    import ssl
    import urllib.request

    cp = make_cluster(["--control-plane", "--no-engine", "--in-memory"])
    run = subprocess.Popen([uc_binary(), "run", "--kubeconfig", cp.kubeconfig, "--multicluster-zookeeper",
                            "--metrics-addr", "127.0.0.1:0"], stderr=open(tmp_path / "run.log", "wb"))
    try:
        config = wait_for(lambda: json.loads(cp.kubectl("get", "resourceinterpreterwebhookconfigurations", "-o", "json").stdout)["items"],
                          timeout=30, message="the interpreter webhook registered")[0]
        hook = config["webhooks"][0]
        assert hook["rules"][0]["kinds"] == ["ZookeeperCluster"]
        assert "ReviseReplica" in hook["rules"][0]["operations"]
        wait_for(lambda: cp.kubectl("get", "crd", "multiclusterzookeepers.zookeeper.uc.njuics.cn", check=False).returncode == 0,
                 timeout=30, message="the MultiClusterZooKeeper CRD")
        wait_for(lambda: cp.kubectl("get", "universalcontroller", "multicluster-zookeeper-operator", check=False).returncode == 0,
                 timeout=30, message="the operator's controller")
        ca = base64.b64decode(hook["clientConfig"]["caBundle"]).decode()
        tls = ssl.create_default_context(cadata=ca)
        body = json.dumps({"apiVersion": "config.karmada.io/v1alpha1", "kind": "ResourceInterpreterContext",
                           "request": {"uid": "u-1", "operation": "ReviseReplica", "replicas": 2,
                                       "object": {"spec": {"replicas": 5}}}}).encode()
        req = urllib.request.Request(hook["clientConfig"]["url"], data=body, headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, context=tls, timeout=10) as r:
            answer = json.loads(r.read())["response"]
        assert (answer["uid"], answer["successful"], answer["patchType"]) == ("u-1", True, "JSONPatch")
        assert json.loads(base64.b64decode(answer["patch"])) == [{"op": "replace", "path": "/spec/replicas", "value": 0}]
    finally:
        run.terminate()
        run.wait(timeout=15)


def test_karmadas_nginx_sample_propagates_with_its_overrides_and_goes_when_deleted(planes):
    """Karmada's own samples/nginx (member1/member2 renamed m1/m2): a Deployment divided 1/1, each
    cluster's copy overridden by its rule, status collected back; deleting the template deletes the
    binding, the Works and the members' copies."""
    cp, members = planes
    samples = ROOT / "crates" / "uc-karmada" / "testdata"
    for name in ("nginx_deployment.yaml", "nginx_propagationpolicy.yaml", "nginx_overridepolicy.yaml"):
        text = (samples / name).read_text().replace("member1", "m1").replace("member2", "m2")
        cp.kubectl("apply", "-f", "-", input=text)

    def binding():
        r = cp.kubectl("get", "resourcebinding", "nginx-deployment", "-o", "json", check=False)
        return json.loads(r.stdout) if r.returncode == 0 else {}

    def applied():
        b = binding()
        fully = [c for c in b.get("status", {}).get("conditions", []) if c["type"] == "FullyApplied"]
        items = b.get("status", {}).get("aggregatedStatus", [])
        return fully and fully[0]["status"] == "True" and all(i.get("health") == "Healthy" for i in items) and b

    b = wait_for(applied, timeout=60, interval=0.5, message="the nginx binding fully applied and healthy")
    assert [(c["name"], c["replicas"]) for c in b["spec"]["clusters"]] == [("m1", 1), ("m2", 1)]
    assert [i["status"]["readyReplicas"] for i in b["status"]["aggregatedStatus"]] == [1, 1]
    works = json.loads(cp.kubectl("get", "works", "-A", "-o", "json").stdout)["items"]
    spaces = sorted(w["metadata"]["namespace"] for w in works if w["spec"]["workload"]["manifests"][0]["kind"] == "Deployment"
                    and w["spec"]["workload"]["manifests"][0]["metadata"]["name"] == "nginx")
    assert spaces == ["karmada-es-m1", "karmada-es-m2"]
    d1 = json.loads(members["m1"].kubectl("get", "deployment", "nginx", "-o", "json").stdout)
    d2 = json.loads(members["m2"].kubectl("get", "deployment", "nginx", "-o", "json").stdout)
    assert d1["spec"]["replicas"] == 1 and d2["spec"]["replicas"] == 1, "2 replicas divided by weights 1/1"
    assert d1["metadata"]["annotations"].get("env") == "skoala-stage", "member1's annotationsOverrider"
    assert d2["metadata"]["labels"].get("env") == "skoala-dev", "member2's labelsOverrider"
    assert "env" not in d1["metadata"].get("labels", {}) and "env" not in d2["metadata"].get("annotations", {})
    assert members["m3"].kubectl("get", "deployment", "nginx", check=False).returncode != 0, "m3 is not a target"
    cp.kubectl("delete", "deployment", "nginx")
    wait_for(lambda: not binding(), timeout=30, message="the binding to go with its template")
    for m in ("m1", "m2"):
        wait_for(lambda: members[m].kubectl("get", "deployment", "nginx", check=False).returncode != 0,
                 timeout=30, message=f"the Deployment deleted from {m}")
    cp.kubectl("delete", "-f", "-", input=(samples / "nginx_overridepolicy.yaml").read_text())
    cp.kubectl("delete", "-f", "-", input=(samples / "nginx_propagationpolicy.yaml").read_text())


def test_joining_again_updates_the_clusters_endpoint(planes, tmp_path):
    """`uc join` of a name that joined before updates its Cluster: a wrong address turns it unready, the
    right one ready again."""
    import yaml

    cp, members = planes

    def cluster_state():
        c = json.loads(cp.kubectl("get", "cluster", "m3", "-o", "json").stdout)
        ready = next((x["status"] for x in c.get("status", {}).get("conditions", []) if x["type"] == "Ready"), None)
        return c["spec"]["apiEndpoint"], ready

    good, _ = cluster_state()
    config = yaml.safe_load(open(members["m3"].kubeconfig))
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    moved = tmp_path / "moved.kubeconfig"
    moved.write_text(yaml.safe_dump(config))

    def join(kubeconfig):
        subprocess.run([uc_binary(), "join", "m3", "--kubeconfig", cp.kubeconfig, "--cluster-kubeconfig", str(kubeconfig)],
                       check=True, capture_output=True)

    join(moved)
    wait_for(lambda: cluster_state() == ("https://127.0.0.1:1", "False"), timeout=60, message="m3 unready at the wrong address")
    join(members["m3"].kubeconfig)
    wait_for(lambda: cluster_state() == (good, "True"), timeout=60, message="m3 ready again at its address")


def test_a_work_whose_manifest_labels_are_no_map_fails_with_its_field_and_the_plane_goes_on(planes):
    """Karmada's Work CRD keeps its manifests as they are written (no embedded-resource checks), so anyone
    who may write a Work can hand the execution controller a manifest whose labels are a string: that
    Work reports the field, and the Works after it are still applied."""
    cp, members = planes
    def work(name, labels):
        return json.dumps({"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
                           "metadata": {"name": name, "namespace": "karmada-es-m3"},
                           "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": name, "namespace": "default", "labels": labels},
                               "data": {"k": "v"}}]}}})
    cp.kubectl("create", "-f", "-", input=work("odd-labels", "not-a-map"))
    cp.kubectl("create", "-f", "-", input=work("plain-labels", {"team": "a"}))

    def applied(name):
        r = cp.kubectl("get", "work", name, "-n", "karmada-es-m3", "-o", "json")
        conds = json.loads(r.stdout).get("status", {}).get("conditions", [])
        return next((c for c in conds if c["type"] == "Applied"), None)

    bad = wait_for(lambda: applied("odd-labels"), timeout=30, message="the odd Work's Applied condition")
    assert bad["status"] == "False"
    assert "spec.workload.manifests[0].metadata.labels: must be an object" in bad["message"]
    good = wait_for(lambda: applied("plain-labels"), timeout=30, message="the plain Work's Applied condition")
    assert good["status"] == "True", good
    cm = json.loads(members["m3"].kubectl("get", "configmap", "plain-labels", "-o", "json").stdout)
    assert cm["metadata"]["labels"] == {"team": "a", "karmada.io/managed": "true"}
    assert members["m3"].kubectl("get", "configmap", "odd-labels", check=False).returncode != 0
    cp.kubectl("delete", "work", "odd-labels", "plain-labels", "-n", "karmada-es-m3")
