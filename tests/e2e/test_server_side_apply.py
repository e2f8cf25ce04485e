"""Server-side apply against `uc up` with kubectl and the Python client: field managers, conflicts,
force, lists merged by their keys, dry runs, and updates that move ownership."""

import http.client
import json
import ssl
import threading
from urllib.parse import urlparse

import pytest

from conftest import MANIFESTS

ROUNDS, THREADS = 300, 3  # applies and deletes raced against each other, by each of THREADS threads

CONFIGMAP = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, labels: {team: a}}
data: {mode: MODE, level: "1"}
"""

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: busybox
        command: [sleep, "3600"]
        env: ENV
"""


def managers(cluster, *resource):
    obj = json.loads(cluster.kubectl("get", *resource, "-o", "json", "--show-managed-fields").stdout)
    return {(m["manager"], m["operation"]) for m in obj["metadata"].get("managedFields", [])}, obj


def test_kubectl_server_side_apply_owns_conflicts_and_forces(cluster):
    cm = CONFIGMAP.replace("MODE", "fast")
    out = cluster.kubectl("apply", "--server-side", "-f", "-", input=cm).stdout
    assert "serverside-applied" in out
    owners, obj = managers(cluster, "configmap", "settings")
    assert owners == {("kubectl", "Apply")}
    fields = obj["metadata"]["managedFields"][0]["fieldsV1"]
    assert fields["f:data"] == {"f:mode": {}, "f:level": {}} and fields["f:metadata"]["f:labels"] == {"f:team": {}}
    # Another manager changing kubectl's field: refused with the field named, nothing changed.
    ops = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: MODE}\n"
    other = cluster.kubectl("apply", "--server-side", "--field-manager=ops", "-f", "-",
                            input=ops.replace("MODE", "safe"), check=False)
    assert other.returncode != 0
    assert 'conflict with "kubectl"' in other.stderr and ".data.mode" in other.stderr, other.stderr
    assert cluster.kubectl("get", "cm", "settings", "-o", "jsonpath={.data.mode}").stdout == "fast"
    # The same value is shared; forcing takes the field over.
    cluster.kubectl("apply", "--server-side", "--field-manager=ops", "-f", "-", input=ops.replace("MODE", "fast"))
    cluster.kubectl("apply", "--server-side", "--field-manager=ops", "--force-conflicts", "-f", "-",
                    input=ops.replace("MODE", "safe"))
    owners, obj = managers(cluster, "configmap", "settings")
    assert obj["data"]["mode"] == "safe" and owners == {("kubectl", "Apply"), ("ops", "Apply")}
    kubectl_fields = next(m for m in obj["metadata"]["managedFields"] if m["manager"] == "kubectl")["fieldsV1"]
    assert "f:mode" not in kubectl_fields["f:data"], "ownership of mode moved to ops"
    # kubectl stops declaring level and the label: they go; mode stays (ops owns it).
    cluster.kubectl("apply", "--server-side", "-f", "-",
                    input="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: safe}\n")
    obj = json.loads(cluster.kubectl("get", "cm", "settings", "-o", "json").stdout)
    assert obj["data"] == {"mode": "safe"} and "team" not in obj["metadata"].get("labels", {})
    # A field no manager declares any more goes whole, as structured-merge-diff prunes it (not `data: {}`);
    # while another manager owns something under it, only what the applier owned goes.
    bare = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n"
    cluster.kubectl("apply", "--server-side", "--field-manager=ops", "-f", "-", input=bare)
    obj = json.loads(cluster.kubectl("get", "cm", "settings", "-o", "json").stdout)
    assert obj["data"] == {"mode": "safe"}, "kubectl still owns mode"
    cluster.kubectl("apply", "--server-side", "-f", "-", input=bare)
    obj = json.loads(cluster.kubectl("get", "cm", "settings", "-o", "json").stdout)
    assert "data" not in obj, obj


def test_a_dry_run_apply_changes_nothing(cluster):
    cluster.kubectl("apply", "--server-side", "-f", "-", input=CONFIGMAP.replace("MODE", "fast"))
    rv = cluster.kubectl("get", "cm", "settings", "-o", "jsonpath={.metadata.resourceVersion}").stdout
    out = cluster.kubectl("apply", "--server-side", "--dry-run=server", "-o", "jsonpath={.data.mode}", "-f", "-",
                          input=CONFIGMAP.replace("MODE", "slow")).stdout
    assert out == "slow", "the answer shows the result"
    assert cluster.kubectl("get", "cm", "settings", "-o", "jsonpath={.data.mode}").stdout == "fast"
    assert cluster.kubectl("get", "cm", "settings", "-o", "jsonpath={.metadata.resourceVersion}").stdout == rv
    created = cluster.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-",
                              input=CONFIGMAP.replace("settings", "never").replace("MODE", "x"))
    assert "serverside-applied (server dry run)" in created.stdout
    assert cluster.kubectl("get", "cm", "never", check=False).returncode != 0


def test_lists_merge_by_their_keys_and_updates_move_ownership(cluster):
    env = '[{name: A, value: "1"}, {name: B, value: "2"}]'
    cluster.kubectl("apply", "--server-side", "-f", "-", input=DEPLOYMENT.replace("ENV", env))
    # Another manager adds a container of its own; kubectl's container is untouched.
    sidecar = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"template": {"spec": {"containers": [{"name": "side", "image": "busybox"}]}}}}
    cluster.kubectl("apply", "--server-side", "--field-manager=injector", "-f", "-", input=json.dumps(sidecar))
    containers = json.loads(cluster.kubectl("get", "deploy", "web", "-o", "json").stdout)["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["web", "side"]
    # kubectl drops env B: only B goes.
    cluster.kubectl("apply", "--server-side", "-f", "-", input=DEPLOYMENT.replace("ENV", '[{name: A, value: "1"}]'))
    d = json.loads(cluster.kubectl("get", "deploy", "web", "-o", "json").stdout)
    c = {c["name"]: c for c in d["spec"]["template"]["spec"]["containers"]}
    assert [e["name"] for e in c["web"]["env"]] == ["A"] and "side" in c
    # A merge patch is an update: its manager now owns replicas, and kubectl's next apply conflicts.
    cluster.kubectl("patch", "deploy", "web", "--type=merge", "-p", '{"spec": {"replicas": 3}}')
    owners, obj = managers(cluster, "deploy", "web")
    assert ("kubectl-patch", "Update") in owners, owners
    again = cluster.kubectl("apply", "--server-side", "-f", "-", input=DEPLOYMENT.replace("ENV", '[{name: A, value: "1"}]'),
                            check=False)
    assert again.returncode != 0 and 'conflict with "kubectl-patch"' in again.stderr and ".spec.replicas" in again.stderr


def test_an_applied_list_that_repeats_a_key_is_invalid_and_changes_nothing(cluster):
    dup = DEPLOYMENT.replace("name: web", "name: dup").replace("app: web", "app: dup")
    cluster.kubectl("apply", "--server-side", "-f", "-", input=dup.replace("ENV", '[{name: A, value: "1"}]'))
    # Two items of the keyed list env named X: kube cannot say which one a manager owns.
    env = '[{name: A, value: "1"}, {name: X, value: "1"}, {name: X, value: "2"}]'
    out = cluster.kubectl("apply", "--server-side", "-f", "-", input=dup.replace("ENV", env), check=False)
    assert out.returncode != 0, out.stdout
    assert "spec.template.spec.containers[0].env[2]" in out.stderr and 'Duplicate value: [name="X"]' in out.stderr, out.stderr
    d = json.loads(cluster.kubectl("get", "deploy", "dup", "-o", "json").stdout)
    assert d["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]
    cluster.kubectl("delete", "deploy", "dup")


def test_creates_are_tracked_and_a_write_that_changes_nothing_stores_nothing(cluster):
    # An object made by `kubectl create` belongs to kubectl-create, as in kube: applying a change to
    # one of its fields conflicts with it.
    cluster.kubectl("create", "configmap", "made", "--from-literal=mode=fast")
    owners, obj = managers(cluster, "configmap", "made")
    assert owners == {("kubectl-create", "Update")}
    assert obj["metadata"]["managedFields"][0]["fieldsV1"]["f:data"] == {".": {}, "f:mode": {}}
    applied = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: made}\ndata: {mode: MODE}\n"
    clash = cluster.kubectl("apply", "--server-side", "-f", "-", input=applied.replace("MODE", "slow"), check=False)
    assert clash.returncode != 0 and 'conflict with "kubectl-create"' in clash.stderr, clash.stderr
    # Applying the same value shares the field; applying it again changes nothing: no new
    # resourceVersion (kubectl reports it unchanged-equivalent), no watch event.
    cluster.kubectl("apply", "--server-side", "-f", "-", input=applied.replace("MODE", "fast"))
    rv = cluster.kubectl("get", "cm", "made", "-o", "jsonpath={.metadata.resourceVersion}").stdout
    cluster.kubectl("apply", "--server-side", "-f", "-", input=applied.replace("MODE", "fast"))
    cluster.kubectl("patch", "cm", "made", "--type=merge", "-p", '{"data": {"mode": "fast"}}')
    assert cluster.kubectl("get", "cm", "made", "-o", "jsonpath={.metadata.resourceVersion}").stdout == rv
    cluster.kubectl("patch", "cm", "made", "--type=merge", "-p", '{"data": {"mode": "slow"}}')
    # Watched from rv, the first event is that change: the writes that changed nothing made none.
    from kubernetes import client, watch

    v1 = client.CoreV1Api(cluster.api_client())
    stream = watch.Watch().stream(v1.list_namespaced_config_map, "default", field_selector="metadata.name=made",
                                  resource_version=rv, timeout_seconds=30)
    first = next(stream)
    assert (first["type"], first["object"].data["mode"]) == ("MODIFIED", "slow")


def test_custom_resources_apply_by_their_schema(cluster):
    cluster.kubectl("apply", "-f", str(MANIFESTS / "foo-crd.yaml"))
    foo = "apiVersion: samplecontroller.k8s.io/v1alpha1\nkind: Foo\nmetadata: {name: f}\nspec: {deploymentName: d, replicas: 2}\n"
    cluster.kubectl("apply", "--server-side", "-f", "-", input=foo)
    obj = json.loads(cluster.kubectl("get", "foo", "f", "-o", "json", "--show-managed-fields").stdout)
    assert obj["spec"] == {"deploymentName": "d", "replicas": 2}
    assert obj["metadata"]["managedFields"][0]["fieldsV1"] == {"f:spec": {"f:deploymentName": {}, "f:replicas": {}}}
    bad = cluster.kubectl("apply", "--server-side", "-f", "-", input=foo.replace("replicas: 2", "replicas: 20"), check=False)
    assert bad.returncode != 0 and "spec.replicas" in bad.stderr, "the schema still validates the result"


def test_python_client_server_side_apply(cluster):
    from kubernetes import dynamic
    from kubernetes.client import exceptions

    client = dynamic.DynamicClient(cluster.api_client())
    cms = client.resources.get(api_version="v1", kind="ConfigMap")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "py"}, "data": {"k": "1"}}
    created = cms.server_side_apply(body=body, namespace="default", field_manager="py-a")
    assert created.data.k == "1"
    body["data"]["k"] = "2"
    with pytest.raises(exceptions.ApiException) as refused:
        cms.server_side_apply(body=body, namespace="default", field_manager="py-b")
    assert refused.value.status == 409
    status = json.loads(refused.value.body)
    assert status["reason"] == "Conflict"
    assert status["details"]["causes"] == [{"reason": "FieldManagerConflict", "message": 'conflict with "py-a"', "field": ".data.k"}]
    forced = cms.server_side_apply(body=body, namespace="default", field_manager="py-b", force_conflicts=True)
    assert forced.data.k == "2"



def test_managed_fields_read_as_json_objects_on_every_path(cluster):
    # The store keeps each fieldsV1 as text (issue 58); no client may tell: every way an object is read
    # sends it as the JSON object kube sends, and a patch that tests it sees the object.
    cluster.kubectl("apply", "--server-side", "--field-manager=mine", "-f", "-", input=CONFIGMAP.replace("MODE", "x"))
    rv = cluster.kubectl("get", "cm", "settings", "-o", "jsonpath={.metadata.resourceVersion}").stdout
    want = {"f:data": {"f:level": {}, "f:mode": {}}, "f:metadata": {"f:labels": {"f:team": {}}}}
    host, token = cluster.server_and_token()
    u = urlparse(host)
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE

    def request(method, path, accept="application/json", body=None, content_type=None):
        conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=20)
        headers = {"Authorization": f"Bearer {token}", "Accept": accept}
        if content_type:
            headers["Content-Type"] = content_type
        conn.request(method, path, body=body, headers=headers)
        return conn, conn.getresponse()

    def read(method, path, accept="application/json", body=None, content_type=None):
        conn, resp = request(method, path, accept, body, content_type)
        text = resp.read()
        conn.close()
        assert resp.status in (200, 201), text
        return json.loads(text)

    def mine(obj):
        entry = next(e for e in obj["metadata"]["managedFields"] if e["manager"] == "mine")
        assert isinstance(entry["fieldsV1"], dict), entry
        return entry["fieldsV1"]

    one = "/api/v1/namespaces/default/configmaps/settings"
    watches = [request("GET", f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}", accept=a)
               for a in ("application/json", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")]
    # A JSON patch whose test reads the managed fields as the client sees them.
    patch = json.dumps([{"op": "test", "path": "/metadata/managedFields/0/fieldsV1/f:data/f:mode", "value": {}},
                        {"op": "add", "path": "/data/extra", "value": "1"}])
    patched = read("PATCH", one, body=patch, content_type="application/json-patch+json")
    assert patched["data"]["extra"] == "1" and mine(patched) == want
    assert mine(read("GET", one)) == want
    assert mine(read("GET", one, accept="application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")) == want
    (item,) = [i for i in read("GET", "/api/v1/namespaces/default/configmaps")["items"]
               if i["metadata"]["name"] == "settings"]
    assert mine(item) == want
    table = read("GET", one + "?includeObject=Object", accept="application/json;as=Table;g=meta.k8s.io;v=v1")
    assert mine(table["rows"][0]["object"]) == want
    for conn, resp in watches:
        event = json.loads(resp.readline())
        assert event["type"] == "MODIFIED" and mine(event["object"]) == want, event
        conn.close()
    # A collection's delete answers with the objects deleted.
    (gone,) = read("DELETE", "/api/v1/namespaces/default/configmaps?labelSelector=team%3Da")["items"]
    assert mine(gone) == want


def test_an_apply_racing_a_delete_creates_and_never_answers_not_found(cluster):
    # kube-apiserver's apply is a guaranteed update: an object deleted between its read and its write is
    # read again and created. A controller applying a child the garbage collector is deleting (the
    # Endpoints of a Service going away) must never see 404 for a race it cannot see.
    host, token = cluster.server_and_token()
    u = urlparse(host)
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    one = "/api/v1/namespaces/default/configmaps/raced"
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "raced"}, "data": {"a": "1"}})
    answers = {"apply": [], "delete": []}

    def send(method, path, payload=None, content_type=None):
        conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=20)
        headers = {"Authorization": f"Bearer {token}"}
        if content_type:
            headers["Content-Type"] = content_type
        conn.request(method, path, body=payload, headers=headers)
        resp = conn.getresponse()
        text = resp.read()
        conn.close()
        return resp.status, text

    def applying():
        for _ in range(ROUNDS):
            answers["apply"].append(send("PATCH", one + "?fieldManager=racer&force=true", body,
                                         "application/apply-patch+yaml"))

    def deleting():
        for _ in range(ROUNDS):
            answers["delete"].append(send("DELETE", one))

    threads = [threading.Thread(target=f) for f in (applying, deleting) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    applied = [status for status, _ in answers["apply"]]
    deleted = [status for status, _ in answers["delete"]]
    wrong = [(s, t[:200]) for s, t in answers["apply"] if s not in (200, 201)]
    assert not wrong, f"{len(wrong)} of {ROUNDS * THREADS} applies failed ({sorted(set(s for s, _ in wrong))}): {wrong[:3]}"
    # The race was run: applies both created and updated, deletes both found and missed the object.
    assert {200, 201} <= set(applied) and {200, 404} <= set(deleted), (sorted(set(applied)), sorted(set(deleted)))
