"""kubectl against `uc up`: the everyday commands behave as against kube-apiserver."""

import json

from conftest import MANIFESTS, wait_for

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: IMAGE
        env: [{name: A, value: "1"}]
        ports: [{containerPort: 80}]
"""


def apply_foo(cluster):
    cluster.kubectl("apply", "-f", str(MANIFESTS / "foo-crd.yaml"))
    cluster.kubectl("apply", "-f", str(MANIFESTS / "foo.yaml"))


def test_crd_then_custom_object_with_printer_columns(cluster):
    apply_foo(cluster)
    out = cluster.kubectl("get", "foos").stdout.splitlines()
    assert out[0].split() == ["NAME", "DEPLOYMENT", "REPLICAS", "AGE"]
    assert out[1].split()[:3] == ["example-foo", "example-foo", "1"]
    y = cluster.kubectl("get", "foo", "example-foo", "-o", "yaml").stdout
    assert "deploymentName: example-foo" in y and "generation: 1" in y and "uid:" in y
    obj = json.loads(cluster.kubectl("get", "fo", "example-foo", "-o", "json").stdout)
    assert obj["metadata"]["resourceVersion"].isdigit()
    assert obj["spec"]["replicas"] == 1


def test_get_watch_sees_a_later_change(cluster):
    apply_foo(cluster)
    w = cluster.kubectl_bg("get", "foo", "example-foo", "-w", "--request-timeout=30s")

    def next_row():
        # kubectl prints the listed object, then one row per change; EOF when the watch times out.
        for line in iter(w.stdout.readline, ""):
            if line.startswith("example-foo"):
                return line.split()
        return None

    first = next_row()
    cluster.kubectl("patch", "foo", "example-foo", "--type=merge", "-p", '{"spec":{"replicas":7}}')
    second = next_row()
    w.terminate()
    w.communicate(timeout=10)
    assert first and second and (first[2], second[2]) == ("1", "7"), (first, second)


def test_three_patch_types_and_generation(cluster):
    apply_foo(cluster)
    cluster.kubectl("patch", "foo", "example-foo", "--type=merge", "-p", '{"spec":{"replicas":3}}')
    cluster.kubectl("patch", "foo", "example-foo", "--type=json", "-p", '[{"op":"replace","path":"/spec/replicas","value":4}]')
    obj = json.loads(cluster.kubectl("get", "foo", "example-foo", "-o", "json").stdout)
    assert obj["spec"]["replicas"] == 4 and obj["metadata"]["generation"] == 3
    # Strategic merge patch on a built-in kind merges containers and env by name.
    cluster.kubectl("apply", "-f", "-", input=DEPLOYMENT.replace("IMAGE", "nginx:1.25"))
    cluster.kubectl("patch", "deployment", "web", "-p",
                    '{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"B","value":"2"}]},{"name":"side","image":"alpine"}]}}}}')
    d = json.loads(cluster.kubectl("get", "deploy", "web", "-o", "json").stdout)
    cs = d["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in cs] == ["web", "side"]
    assert cs[0]["image"] == "nginx:1.25"
    assert [e["name"] for e in cs[0]["env"]] == ["A", "B"]
    # Status patches do not touch the spec or the generation (a Foo has no controller here to rewrite them).
    gen = obj["metadata"]["generation"]
    cluster.kubectl("patch", "foo", "example-foo", "--subresource=status", "--type=merge", "-p", '{"status":{"availableReplicas":5}}')
    f2 = json.loads(cluster.kubectl("get", "foo", "example-foo", "-o", "json").stdout)
    assert f2["status"]["availableReplicas"] == 5 and f2["metadata"]["generation"] == gen and f2["spec"]["replicas"] == 4


def test_apply_again_is_a_three_way_merge(cluster):
    cluster.kubectl("apply", "-f", "-", input=DEPLOYMENT.replace("IMAGE", "nginx:1.25"))
    cluster.kubectl("apply", "-f", "-", input=DEPLOYMENT.replace("IMAGE", "nginx:1.26").replace('value: "1"', 'value: "9"'))
    d = json.loads(cluster.kubectl("get", "deploy", "web", "-o", "json").stdout)
    c = d["spec"]["template"]["spec"]["containers"][0]
    assert c["image"] == "nginx:1.26" and c["env"] == [{"name": "A", "value": "9"}]
    assert d["metadata"]["generation"] == 2
    assert d["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == "25%"  # server-side defaults


def test_replace_with_stale_resource_version_is_refused(cluster):
    apply_foo(cluster)
    stale = cluster.kubectl("get", "foo", "example-foo", "-o", "json").stdout
    cluster.kubectl("patch", "foo", "example-foo", "--type=merge", "-p", '{"spec":{"replicas":2}}')
    r = cluster.kubectl("replace", "-f", "-", input=stale, check=False)
    assert r.returncode != 0
    assert "Conflict" in r.stderr and "the object has been modified" in r.stderr
    assert json.loads(cluster.kubectl("get", "foo", "example-foo", "-o", "json").stdout)["spec"]["replicas"] == 2


def owned_configmap(name, owner_uid, finalizer=False):
    meta = {
        "name": name,
        "ownerReferences": [{"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo", "name": "example-foo",
                             "uid": owner_uid, "blockOwnerDeletion": True}],
    }
    if finalizer:
        meta["finalizers"] = ["example.com/hold"]
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}})


def test_foreground_delete_removes_dependents_first(cluster):
    apply_foo(cluster)
    uid = cluster.kubectl("get", "foo", "example-foo", "-o", "jsonpath={.metadata.uid}").stdout
    cluster.kubectl("apply", "-f", "-", input=owned_configmap("dep-a", uid, finalizer=True))
    cluster.kubectl("apply", "-f", "-", input=owned_configmap("dep-b", uid))
    d = cluster.kubectl_bg("delete", "foo", "example-foo", "--cascade=foreground", "--timeout=30s")
    # dep-b goes at once; dep-a waits for its finalizer, and the owner waits for dep-a.
    wait_for(lambda: cluster.kubectl("get", "cm", "dep-b", check=False).returncode != 0, message="dep-b deleted")
    foo = json.loads(cluster.kubectl("get", "foo", "example-foo", "-o", "json").stdout)
    assert "foregroundDeletion" in foo["metadata"]["finalizers"] and foo["metadata"]["deletionTimestamp"]
    assert cluster.kubectl("get", "cm", "dep-a", "-o", "jsonpath={.metadata.deletionTimestamp}").stdout
    # The owner is still there (checked above), so kubectl, which waits for it to go, is still waiting.
    assert d.poll() is None, "kubectl delete returned before the dependents were gone"
    cluster.kubectl("patch", "cm", "dep-a", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    assert d.wait(timeout=30) == 0
    assert cluster.kubectl("get", "foo", "example-foo", check=False).returncode != 0


def test_background_and_orphan_propagation(cluster):
    apply_foo(cluster)
    uid = cluster.kubectl("get", "foo", "example-foo", "-o", "jsonpath={.metadata.uid}").stdout
    cluster.kubectl("apply", "-f", "-", input=owned_configmap("kept", uid))
    cluster.kubectl("delete", "foo", "example-foo", "--cascade=orphan")
    refs = cluster.kubectl("get", "cm", "kept", "-o", "jsonpath={.metadata.ownerReferences}").stdout
    assert refs == "", "orphaned dependent still references its owner"
    apply_foo(cluster)
    uid = cluster.kubectl("get", "foo", "example-foo", "-o", "jsonpath={.metadata.uid}").stdout
    cluster.kubectl("apply", "-f", "-", input=owned_configmap("gone", uid))
    cluster.kubectl("delete", "foo", "example-foo")
    wait_for(lambda: cluster.kubectl("get", "cm", "gone", check=False).returncode != 0, message="background GC")
    assert cluster.kubectl("get", "cm", "kept", check=False).returncode == 0


def test_delete_waits_for_finalizer(cluster):
    apply_foo(cluster)
    cluster.kubectl("patch", "foo", "example-foo", "--type=merge", "-p", '{"metadata":{"finalizers":["example.com/x"]}}')
    d = cluster.kubectl_bg("delete", "foo", "example-foo", "--timeout=30s")
    # The delete reached the server (deletionTimestamp set), and the object stays while the finalizer does.
    foo = wait_for(lambda: (f := json.loads(cluster.kubectl("get", "foo", "example-foo", "-o", "json").stdout))
                   ["metadata"].get("deletionTimestamp") and f, message="deletion started")
    assert foo["metadata"]["finalizers"] == ["example.com/x"]
    assert d.poll() is None, "delete returned while a finalizer was still set"
    # No new finalizers once deletion started.
    r = cluster.kubectl("patch", "foo", "example-foo", "--type=merge", "-p", '{"metadata":{"finalizers":["example.com/x","example.com/y"]}}', check=False)
    assert r.returncode != 0 and "no new finalizers" in r.stderr
    cluster.kubectl("patch", "foo", "example-foo", "--type=json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    assert d.wait(timeout=30) == 0
    assert cluster.kubectl("get", "foo", "example-foo", check=False).returncode != 0


def test_api_resources_and_explain(cluster):
    apply_foo(cluster)
    out = cluster.kubectl("api-resources").stdout
    for needle in ["pods", "deployments", "customresourcedefinitions", "foos", "leases", "controllerrevisions"]:
        assert needle in out, needle
    foo_line = next(line for line in out.splitlines() if line.startswith("foos "))
    assert foo_line.split()[1:] == ["fo", "samplecontroller.k8s.io/v1alpha1", "true", "Foo"]
    ex = cluster.kubectl("explain", "foo.spec").stdout
    assert "deploymentName" in ex and "Name of the Deployment." in ex and "-required-" in ex
    assert "KIND:       Pod" in cluster.kubectl("explain", "pods").stdout


def test_namespace_deletion_removes_its_objects(cluster):
    cluster.kubectl("apply", "-f", "-", input='{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"scratch"}}')
    cluster.kubectl("-n", "scratch", "apply", "-f", "-", input=DEPLOYMENT.replace("IMAGE", "nginx"))
    r = cluster.kubectl("delete", "namespace", "scratch", "--timeout=30s")
    assert "deleted" in r.stdout
    assert cluster.kubectl("get", "ns", "scratch", check=False).returncode != 0
    assert cluster.kubectl("get", "deploy", "-A", "-o", "name").stdout.strip() == ""


def test_crd_delete_removes_custom_objects_and_stops_serving(cluster):
    apply_foo(cluster)
    cluster.kubectl("wait", "--for=condition=established", "crd/foos.samplecontroller.k8s.io")
    cluster.kubectl("delete", "crd", "foos.samplecontroller.k8s.io", "--timeout=30s")
    wait_for(lambda: "foos" not in cluster.kubectl("api-resources").stdout, message="foos no longer served")
    apply_foo(cluster)
    assert cluster.kubectl("get", "foos", "-o", "name").stdout.strip() == "foo.samplecontroller.k8s.io/example-foo"


def test_scale_subresource(cluster):
    apply_foo(cluster)
    cluster.kubectl("scale", "foo", "example-foo", "--replicas=5")
    assert cluster.kubectl("get", "foo", "example-foo", "-o", "jsonpath={.spec.replicas}").stdout == "5"
    r = cluster.kubectl("scale", "foo", "example-foo", "--replicas=50", check=False)
    assert r.returncode != 0 and "spec.replicas" in r.stderr


def test_typed_create_commands_send_protobuf_and_work(cluster):
    # kubectl's `create <kind>` commands send application/vnd.kubernetes.protobuf bodies.
    cluster.kubectl("create", "namespace", "typed")
    cluster.kubectl("-n", "typed", "create", "configmap", "cm", "--from-literal=a=b")
    cluster.kubectl("-n", "typed", "create", "secret", "generic", "s", "--from-literal=k=v")
    cluster.kubectl("-n", "typed", "create", "deployment", "web", "--image=nginx:1.25", "--replicas=0", "--port=80")
    cluster.kubectl("-n", "typed", "create", "job", "once", "--image=alpine")
    cluster.kubectl("-n", "typed", "create", "service", "clusterip", "svc", "--tcp=80:8080")
    assert json.loads(cluster.kubectl("-n", "typed", "get", "cm", "cm", "-o", "json").stdout)["data"] == {"a": "b"}
    assert json.loads(cluster.kubectl("-n", "typed", "get", "secret", "s", "-o", "json").stdout)["data"] == {"k": "dg=="}
    d = json.loads(cluster.kubectl("-n", "typed", "get", "deploy", "web", "-o", "json").stdout)
    assert d["spec"]["replicas"] == 0, "a meaningful zero survives decoding"
    assert d["spec"]["strategy"]["type"] == "RollingUpdate"
    c = d["spec"]["template"]["spec"]["containers"][0]
    assert c["image"] == "nginx:1.25" and c["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert "stdin" not in c and "creationTimestamp" not in d["spec"]["template"]["metadata"]
    svc = json.loads(cluster.kubectl("-n", "typed", "get", "svc", "svc", "-o", "json").stdout)
    assert svc["spec"]["ports"][0]["targetPort"] == 8080 and svc["spec"]["ports"][0]["port"] == 80
    job = json.loads(cluster.kubectl("-n", "typed", "get", "job", "once", "-o", "json").stdout)
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def client_counters(cluster):
    """apiserver_client_* samples of /metrics, by (metric, client)."""
    out = {}
    for line in cluster.kubectl("get", "--raw", "/metrics").stdout.splitlines():
        if line.startswith("apiserver_client_"):
            series, value = line.rsplit(" ", 1)
            name, client = series.split('{client="', 1)
            out[(name, client[:-2])] = float(value)
    return out


def test_metrics_count_requests_and_bytes_per_client(cluster):
    before = client_counters(cluster)
    kubectl = [c for (m, c) in before if c.startswith("kubectl/")]
    assert kubectl, f"kubectl is named by its User-Agent: {sorted(before)}"
    assert any(c.startswith("uc-engine/") for (m, c) in before) and any(c.startswith("uc-node/") for (m, c) in before)
    listing = cluster.kubectl("get", "--raw", "/api/v1/namespaces/kube-system/pods").stdout
    after = client_counters(cluster)
    grew = max(after[("apiserver_client_response_bytes_total", c)] - before.get(("apiserver_client_response_bytes_total", c), 0)
               for c in kubectl)
    assert grew >= len(listing), "the list's bytes are counted for kubectl"
    assert cluster.kubectl("get", "--raw", "/metrics", check=False).returncode == 0


def test_cordon_and_field_selectors_on_unset_fields(cluster):
    def schedulable(value):
        return cluster.kubectl("get", "nodes", "--field-selector", f"spec.unschedulable={value}",
                               "-o", "jsonpath={.items[*].metadata.name}").stdout.split()

    node = cluster.kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}").stdout
    assert schedulable("false") == [node], "a node never cordoned has no spec.unschedulable, and selects as false"
    cluster.kubectl("cordon", node)
    assert schedulable("true") == [node] and schedulable("false") == []
    assert "SchedulingDisabled" in cluster.kubectl("get", "node", node).stdout
    cluster.kubectl("uncordon", node)
    assert schedulable("false") == [node]


def get_table(cluster, *args):
    """`kubectl get` output: the header's columns and each row's cells (split on runs of 2+ spaces)."""
    import re
    lines = cluster.kubectl("get", *args).stdout.splitlines()
    split = lambda line: [c for c in re.split(r"\s{2,}", line.strip()) if c]
    return split(lines[0]), [split(line) for line in lines[1:]]


def test_get_prints_built_in_kinds_with_kube_apiservers_columns(cluster):
    """`kubectl get` shows what the server's Table holds: kube's printers' columns and cells, the wide
    ones with `-o wide`, events ending with their name, pods' states in the kubelet's words."""
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
           "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(svc))
    node_port = cluster.kubectl("get", "svc", "web", "-o", "jsonpath={.spec.ports[0].nodePort}").stdout
    header, rows = get_table(cluster, "svc", "web", "-o", "wide")
    assert header == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]
    assert rows[0][1] == "NodePort" and rows[0][3] == "<none>", rows
    assert rows[0][4] == f"80:{node_port}/TCP" and rows[0][6] == "app=web", rows
    header, _ = get_table(cluster, "svc", "web")
    assert "SELECTOR" not in header, "a wide column only with -o wide"

    cluster.kubectl("run", "crash", "--image=busybox", "--restart=Always", "--", "sh", "-c", "exit 1")
    cluster.kubectl("run", "fail", "--image=busybox", "--restart=Never", "--", "sh", "-c", "exit 3")
    header, _ = get_table(cluster, "pods", "-o", "wide")
    assert header == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE", "READINESS GATES"]

    def status(name):
        _, rows = get_table(cluster, "pod", name)
        return rows[0]

    wait_for(lambda: status("fail")[2] == "Error", timeout=60, message="a pod whose container exited 3 shows Error")
    crashed = wait_for(lambda: (lambda r: r if r[2] in ("CrashLoopBackOff", "Error") and r[3].endswith("ago)") else None)(
        status("crash")), timeout=60, message="restarts with how long ago the last one was")
    assert crashed[1] == "0/1" and crashed[3].split()[0].isdigit(), crashed

    cluster.kubectl("create", "job", "once", "--image=busybox", "--", "true")
    header, _ = get_table(cluster, "jobs", "-o", "wide")
    assert header == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    wait_for(lambda: get_table(cluster, "job", "once")[1][0][1:3] == ["Complete", "1/1"], timeout=60,
             message="the job's row says Complete, 1/1")
    # Its selector was generated from its uid, and its pods carry its name (kube's job strategy).
    uid = cluster.kubectl("get", "job", "once", "-o", "jsonpath={.metadata.uid}").stdout
    assert get_table(cluster, "job", "once", "-o", "wide")[1][0][-1] == f"batch.kubernetes.io/controller-uid={uid}"
    pods = json.loads(cluster.kubectl("get", "pods", "-l", "batch.kubernetes.io/job-name=once", "-o", "json").stdout)
    assert [p["metadata"]["labels"]["controller-uid"] for p in pods["items"]] == [uid], pods

    header, rows = get_table(cluster, "events", "-o", "wide")
    assert header[:4] == ["LAST SEEN", "TYPE", "REASON", "OBJECT"] and header[-1] == "NAME", header
    assert any(r[3] == "pod/crash" for r in rows), "events name their object as kind/name"
    header, rows = get_table(cluster, "componentstatuses")
    assert header == ["NAME", "STATUS", "MESSAGE", "ERROR"] and rows[0][1] == "Healthy", (header, rows)
