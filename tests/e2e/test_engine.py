"""The universal controller engine on the embedded cluster: the sample-controller with both hook kinds,
failure modes, finalize and customize hooks, shared watches, controller lifecycle."""

import json
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import ROOT, engine_get, http_get, wait_for

EXAMPLE = ROOT / "examples" / "sample-controller"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(cluster, *args):
    r = cluster.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def uc_condition(cluster, name, type_):
    uc = get(cluster, "uc", name) or {}
    for c in uc.get("status", {}).get("conditions", []):
        if c["type"] == type_:
            return c
    return {}


def setup_js(cluster):
    cluster.kubectl("apply", "-f", str(EXAMPLE / "crd.yaml"))
    cluster.kubectl("create", "configmap", "sample-controller-hook", f"--from-file={EXAMPLE / 'sync.js'}")
    cluster.kubectl("apply", "-f", str(EXAMPLE / "controller.yaml"))


@pytest.fixture
def webhook_example(cluster):
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(EXAMPLE / "webhook.py"), str(port)])
    cluster.kubectl("apply", "-f", str(EXAMPLE / "crd.yaml"))
    manifest = (EXAMPLE / "controller-webhook.yaml").read_text().replace("127.0.0.1:8080", f"127.0.0.1:{port}")
    cluster.kubectl("apply", "-f", "-", input=manifest)
    yield
    proc.terminate()
    proc.wait()


def exercise_sample_controller(cluster):
    wait_for(lambda: uc_condition(cluster, "sample-controller", "Ready").get("status") == "True", timeout=20, message="controller ready")
    cluster.kubectl("apply", "-f", str(EXAMPLE / "foo.yaml"))
    d = wait_for(lambda: get(cluster, "deploy", "example-foo"), message="the Deployment")
    assert d["spec"]["replicas"] == 1
    assert d["metadata"]["ownerReferences"][0]["kind"] == "Foo"
    uid = d["metadata"]["uid"]
    # Another writer's field survives, and replicas change in place.
    cluster.kubectl("annotate", "deploy", "example-foo", "team=other")
    cluster.kubectl("label", "deploy", "example-foo", "extra=kept")
    cluster.kubectl("patch", "foo", "example-foo", "--type=merge", "-p", '{"spec":{"replicas":3}}')
    d = wait_for(lambda: (x := get(cluster, "deploy", "example-foo")) and x["spec"]["replicas"] == 3 and x, message="replicas 3")
    assert d["metadata"]["uid"] == uid, "updated in place"
    assert d["metadata"]["annotations"]["team"] == "other" and d["metadata"]["labels"]["extra"] == "kept"
    # The Deployment's status is mirrored into the Foo's.
    cluster.kubectl("patch", "deploy", "example-foo", "--subresource=status", "--type=merge", "-p", '{"status":{"availableReplicas":3,"replicas":3}}')
    foo = wait_for(lambda: (f := get(cluster, "foo", "example-foo")) and f.get("status", {}).get("availableReplicas") == 3 and f,
                   message="Foo.status.availableReplicas")
    assert foo["status"]["observedGeneration"] == foo["metadata"]["generation"]
    cluster.kubectl("delete", "foo", "example-foo")
    wait_for(lambda: get(cluster, "deploy", "example-foo") is None, message="the Deployment deleted with its Foo")


def test_sample_controller_javascript_hook(cluster):
    setup_js(cluster)
    exercise_sample_controller(cluster)
    assert cluster.metric("uc_hook_errors_total", controller="sample-controller", hook="sync") == 0


def test_sample_controller_webhook(cluster, webhook_example):
    exercise_sample_controller(cluster)
    assert cluster.metric("uc_hook_duration_seconds_count", controller="sample-controller", hook="sync") > 0


class FlakyHook:
    """A webhook whose behaviour the test switches: ok, slow, error, garbage, nochildren, undeclared."""

    def __init__(self):
        self.mode = "ok"
        hook = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                mode = hook.mode
                if mode == "slow":
                    time.sleep(3)
                foo = req["parent"]
                cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": foo["metadata"]["name"]},
                      "data": {"replicas": str(foo["spec"].get("replicas"))}}
                answers = {
                    "ok": {"status": {"availableReplicas": foo["spec"].get("replicas")}, "children": [cm]},
                    "slow": {"children": []},
                    "nochildren": {"status": {"availableReplicas": 0}},
                    "undeclared": {"children": [cm, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}]},
                    "othernamespace": {"children": [{**cm, "metadata": {"name": "x", "namespace": "kube-system"}}]},
                }
                if mode == "error":
                    self.send_response(500)
                    self.end_headers()
                    self.wfile.write(b"internal error")
                    return
                body = b"{not json" if mode == "garbage" else json.dumps(answers[mode]).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def flaky_controller(name, port=None, js=None):
    hook = {"webhook": {"url": f"http://127.0.0.1:{port}/", "timeout": "1s"}} if port else {"javascript": {"source": js, "timeout": "500ms", "memoryLimitMiB": 32}}
    return json.dumps({"apiVersion": "universalcontroller.njuics.cn/v1alpha1", "kind": "UniversalController",
                       "metadata": {"name": name},
                       "spec": {"generateSelector": True, "parentResource": {"apiVersion": "njuics.cn/v1alpha1", "resource": "foos"},
                                "childResources": [{"apiVersion": "v1", "resource": "configmaps", "updateStrategy": {"method": "InPlace"}}],
                                "hooks": {"sync": hook}}})


def warning_events(cluster, name):
    evs = json.loads(cluster.kubectl("get", "events", "--field-selector", f"involvedObject.name={name}", "-o", "json").stdout)["items"]
    return [e for e in evs if e["type"] == "Warning"]


def test_hook_failures_change_nothing_and_recover(cluster):
    cluster.kubectl("apply", "-f", str(EXAMPLE / "crd.yaml"))
    hook = FlakyHook()
    cluster.kubectl("apply", "-f", "-", input=flaky_controller("flaky", port=hook.port))
    cluster.kubectl("apply", "-f", str(EXAMPLE / "foo.yaml"))
    cm = wait_for(lambda: get(cluster, "cm", "example-foo"), message="the child ConfigMap")
    for mode in ["slow", "error", "garbage", "nochildren", "undeclared", "othernamespace"]:
        hook.mode = mode
        before = len(warning_events(cluster, "example-foo"))
        cluster.kubectl("patch", "foo", "example-foo", "--type=merge", "-p", json.dumps({"spec": {"replicas": 7}}))
        wait_for(lambda: len(warning_events(cluster, "example-foo")) > before, timeout=15, message=f"a Warning event for {mode}")
        cond = wait_for(lambda: (c := uc_condition(cluster, "flaky", "Synced")).get("status") == "False" and c, message=f"Synced=False for {mode}")
        assert "example-foo" in cond["message"]
        now = get(cluster, "cm", "example-foo")
        assert now is not None and now["metadata"]["uid"] == cm["metadata"]["uid"], f"{mode}: child deleted or replaced"
        assert now["data"] == cm["data"], f"{mode}: child changed"
        assert get(cluster, "secret", "s") is None and get(cluster, "-n", "kube-system", "cm", "x") is None
        # Recovery: the hook works again, the pending change lands.
        hook.mode = "ok"
        wait_for(lambda: get(cluster, "cm", "example-foo")["data"]["replicas"] == "7", timeout=20, message=f"recovery after {mode}")
        wait_for(lambda: uc_condition(cluster, "flaky", "Synced").get("status") == "True", timeout=10, message="Synced=True")
        cluster.kubectl("patch", "foo", "example-foo", "--type=merge", "-p", json.dumps({"spec": {"replicas": 1}}))
        cm = wait_for(lambda: (c := get(cluster, "cm", "example-foo")) and c["data"]["replicas"] == "1" and c, message="back to 1")
    assert cluster.kubectl("get", "--raw", "/healthz").returncode == 0


@pytest.mark.parametrize("script", [
    "function sync(r) { if (r.parent.spec.replicas == 7) { while (true) {} } return ok(r); }",
    "function sync(r) { if (r.parent.spec.replicas == 7) { var a = []; while (true) { a.push(new Array(100000).fill(7)); } } return ok(r); }",
])
def test_runaway_javascript_is_stopped(cluster, script):
    helper = "function ok(r) { var f = r.parent; return {status: {availableReplicas: f.spec.replicas}, children: [{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: f.metadata.name}, data: {replicas: String(f.spec.replicas)}}]}; }\n"
    cluster.kubectl("apply", "-f", str(EXAMPLE / "crd.yaml"))
    cluster.kubectl("apply", "-f", "-", input=flaky_controller("runaway", js=helper + script))
    cluster.kubectl("apply", "-f", str(EXAMPLE / "foo.yaml"))
    cm = wait_for(lambda: get(cluster, "cm", "example-foo"), message="the child ConfigMap")
    cluster.kubectl("patch", "foo", "example-foo", "--type=merge", "-p", '{"spec":{"replicas":7}}')
    wait_for(lambda: warning_events(cluster, "example-foo"), timeout=15, message="a Warning event")
    assert get(cluster, "cm", "example-foo")["data"] == cm["data"]
    cluster.kubectl("patch", "foo", "example-foo", "--type=merge", "-p", '{"spec":{"replicas":2}}')
    wait_for(lambda: get(cluster, "cm", "example-foo")["data"]["replicas"] == "2", timeout=20, message="recovery")


def test_unknown_resource_is_reported(cluster):
    uc = {"apiVersion": "universalcontroller.njuics.cn/v1alpha1", "kind": "UniversalController", "metadata": {"name": "lost"},
          "spec": {"parentResource": {"apiVersion": "nowhere.example.com/v1", "resource": "widgets"},
                   "hooks": {"sync": {"javascript": {"source": "function sync(r) { return {children: []}; }"}}}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(uc))
    cond = wait_for(lambda: (c := uc_condition(cluster, "lost", "Ready")).get("reason") == "UnknownResource" and c, message="UnknownResource")
    assert cond["status"] == "False" and "nowhere.example.com/v1" in cond["message"]
    out = cluster.kubectl("get", "uc").stdout
    assert "lost" in out and "UnknownResource" in out
    # Defining the resource later lets the controller start.
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.nowhere.example.com"},
        "spec": {"group": "nowhere.example.com", "names": {"kind": "Widget", "plural": "widgets"}, "scope": "Namespaced",
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}))
    wait_for(lambda: uc_condition(cluster, "lost", "Ready").get("status") == "True", timeout=20, message="Ready once the CRD exists")


FINALIZE_JS = """
function sync(r) { return {children: [], status: {phase: 'Running'}}; }
function finalize(r) {
  var a = r.parent.metadata.annotations || {};
  return {children: [], status: {phase: 'Finalizing'}, finalized: a['allow-delete'] === 'yes'};
}
"""

CUSTOMIZE_JS = """
function customize(r) {
  return {relatedResources: [{apiVersion: 'v1', resource: 'configmaps', names: [r.parent.spec.deploymentName + '-config']}]};
}
function sync(r) {
  var cms = r.related['ConfigMap.v1'] || {};
  var cm = cms[r.parent.spec.deploymentName + '-config'];
  return {children: [], status: {seen: cm ? cm.data.colour : 'none'}};
}
"""


BAR_CRD = json.dumps({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "bars.njuics.cn"},
    "spec": {"group": "njuics.cn", "names": {"kind": "Bar", "plural": "bars"}, "scope": "Namespaced",
             "versions": [{"name": "v1alpha1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                               "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]}})

BAR = json.dumps({"apiVersion": "njuics.cn/v1alpha1", "kind": "Bar", "metadata": {"name": "bar"}, "spec": {"deploymentName": "bar"}})


def js_controller(name, source, extra_hooks=(), parent="foos"):
    hooks = {"sync": {"javascript": {"source": source}}}
    for h in extra_hooks:
        hooks[h] = {"javascript": {"source": source}}
    return json.dumps({"apiVersion": "universalcontroller.njuics.cn/v1alpha1", "kind": "UniversalController", "metadata": {"name": name},
                       "spec": {"parentResource": {"apiVersion": "njuics.cn/v1alpha1", "resource": parent}, "generateSelector": True,
                                "childResources": [{"apiVersion": "apps/v1", "resource": "deployments"}], "hooks": hooks}})


def test_finalize_hook_holds_deletion(cluster):
    cluster.kubectl("apply", "-f", "-", input=BAR_CRD)
    cluster.kubectl("apply", "-f", "-", input=js_controller("fin", FINALIZE_JS, ["finalize"], parent="bars"))
    cluster.kubectl("apply", "-f", "-", input=BAR)
    wait_for(lambda: "universalcontroller.njuics.cn/fin" in (get(cluster, "bar", "bar") or {}).get("metadata", {}).get("finalizers", []),
             message="the controller's finalizer")
    cluster.kubectl("delete", "bar", "bar", "--wait=false")
    bar = wait_for(lambda: (f := get(cluster, "bar", "bar")) and f.get("status", {}).get("phase") == "Finalizing" and f, message="finalizing")
    assert bar["metadata"]["deletionTimestamp"]
    # The finalize hook has answered `finalized: false` twice more since: the parent is still there.
    calls = cluster.metric("uc_hook_duration_seconds_count", controller="fin", hook="finalize")
    wait_for(lambda: cluster.metric("uc_hook_duration_seconds_count", controller="fin", hook="finalize") >= calls + 2,
             message="the finalize hook asked again")
    assert get(cluster, "bar", "bar") is not None, "deleted before the hook said finalized"
    cluster.kubectl("annotate", "bar", "bar", "allow-delete=yes")
    wait_for(lambda: get(cluster, "bar", "bar") is None, timeout=20, message="deleted after finalized: true")


def test_customize_related_changes_trigger_sync(cluster):
    cluster.kubectl("apply", "-f", "-", input=BAR_CRD)
    cluster.kubectl("create", "configmap", "bar-config", "--from-literal=colour=red")
    cluster.kubectl("apply", "-f", "-", input=js_controller("custom", CUSTOMIZE_JS, ["customize"], parent="bars"))
    cluster.kubectl("apply", "-f", "-", input=BAR)
    wait_for(lambda: (get(cluster, "bar", "bar") or {}).get("status", {}).get("seen") == "red", message="related ConfigMap seen")
    cluster.kubectl("patch", "cm", "bar-config", "--type=merge", "-p", '{"data":{"colour":"blue"}}')
    wait_for(lambda: get(cluster, "bar", "bar")["status"]["seen"] == "blue", message="a related change re-syncs")


def test_pruned_status_fields_do_not_cause_a_write_loop(cluster):
    cluster.kubectl("apply", "-f", str(EXAMPLE / "crd.yaml"))
    # The Foo schema has no `phase`: the server prunes it from every status write.
    cluster.kubectl("apply", "-f", "-", input=js_controller("pruned", "function sync(r) { return {children: [], status: {phase: 'x', availableReplicas: 1}}; }"))
    cluster.kubectl("apply", "-f", str(EXAMPLE / "foo.yaml"))
    wait_for(lambda: (get(cluster, "foo", "example-foo") or {}).get("status", {}).get("availableReplicas") == 1, message="status written")
    # A sentinel change makes the controller sync once more; once it has, nothing else may have been written.
    synced = cluster.metric("uc_reconciles_total", controller="pruned", result="success")
    cluster.kubectl("annotate", "foo", "example-foo", "sentinel=1")
    rv = get(cluster, "foo", "example-foo")["metadata"]["resourceVersion"]
    wait_for(lambda: cluster.metric("uc_reconciles_total", controller="pruned", result="success") > synced,
             message="the sync after the sentinel")
    assert get(cluster, "foo", "example-foo")["metadata"]["resourceVersion"] == rv, "the controller keeps rewriting the status"


def test_watches_are_shared_and_edits_restart_one_controller(cluster):
    setup_js(cluster)
    cluster.kubectl("apply", "-f", "-", input=BAR_CRD)
    cluster.kubectl("apply", "-f", "-", input=js_controller("second", "function sync(r) { return {children: []}; }", parent="bars"))
    wait_for(lambda: uc_condition(cluster, "second", "Ready").get("status") == "True", timeout=20, message="second ready")
    wait_for(lambda: uc_condition(cluster, "sample-controller", "Ready").get("status") == "True", timeout=20, message="first ready")
    assert cluster.metric("uc_watches_open", resource="apps/v1/deployments") == 1
    assert cluster.metric("uc_watches_started_total", resource="apps/v1/deployments") == 1
    assert cluster.metric("uc_watches_open", resource="njuics.cn/v1alpha1/foos") == 1
    cluster.kubectl("apply", "-f", str(EXAMPLE / "foo.yaml"))
    wait_for(lambda: get(cluster, "deploy", "example-foo"), message="the Deployment")
    # Editing one UC restarts only that controller: the shared Deployment watch stays open throughout.
    cluster.kubectl("patch", "uc", "second", "--type=merge", "-p", '{"spec":{"resyncPeriodSeconds":30}}')
    wait_for(lambda: (get(cluster, "uc", "second") or {}).get("status", {}).get("observedGeneration") == 2, message="second restarted")
    assert cluster.metric("uc_watches_started_total", resource="apps/v1/deployments") == 1
    assert get(cluster, "uc", "sample-controller")["status"]["observedGeneration"] == 1
    cluster.kubectl("patch", "foo", "example-foo", "--type=merge", "-p", '{"spec":{"replicas":2}}')
    wait_for(lambda: get(cluster, "deploy", "example-foo")["spec"]["replicas"] == 2, message="the first controller still works")
    # Deleting a UC stops it and leaves its children alone.
    cluster.kubectl("delete", "uc", "sample-controller")
    # The engine forgets a stopped controller's queue: once it has stopped, its child is still there.
    wait_for(lambda: 'uc_queue_depth{controller="sample-controller"}' not in cluster.metrics(), message="sample-controller stopped")
    assert get(cluster, "deploy", "example-foo") is not None
    assert cluster.metric("uc_watches_open", resource="apps/v1/deployments") == 1, "still used by the second controller"


def test_uc_run_against_another_api_server(make_cluster):
    import urllib.error
    import urllib.request

    from conftest import uc_binary

    api = make_cluster(extra_args=["--no-engine"])
    assert api.kubectl("get", "crd", "-o", "name").stdout.strip() == "", "no engine, no uc CRDs yet"
    port = free_port()
    console_port = free_port()
    engine = subprocess.Popen([uc_binary(), "run", "--kubeconfig", api.kubeconfig, "--metrics-addr", f"127.0.0.1:{port}",
                               "--console", f"127.0.0.1:{console_port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def ready():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                    return r.status == 200
            except (urllib.error.URLError, ConnectionError):
                return False

        wait_for(ready, timeout=30, message="/readyz")
        crds = api.kubectl("get", "crd", "-o", "name").stdout
        assert "universalcontrollers.universalcontroller.njuics.cn" in crds and "controllerrevisions.universalcontroller.njuics.cn" in crds
        setup_js(api)
        api.kubectl("apply", "-f", str(EXAMPLE / "foo.yaml"))
        wait_for(lambda: get(api, "deploy", "example-foo"), timeout=20, message="the Deployment made by `uc run`")
        admin = api.server_and_token()[1]
        assert 'uc_watches_open{resource="apps/v1/deployments"} 1' in engine_get(f"http://127.0.0.1:{port}/metrics", admin)
        # The console next to it (--console): the API as the bearer of a token it accepts, nothing without.
        token = api.kubectl("config", "view", "--raw", "-o", "jsonpath={.users[0].user.token}").stdout.strip()
        console = f"http://127.0.0.1:{console_port}"

        def fetch(path, token=None):
            return http_get(console + path, token, timeout=5)
        status, body = fetch("/apis/apps/v1/namespaces/default/deployments", token)
        assert status == 200 and "example-foo" in body
        assert fetch("/apis/apps/v1/namespaces/default/deployments")[0] == 401
        assert fetch("/apis/apps/v1/namespaces/default/deployments", "wrong")[0] == 401
        status, body = fetch("/console/hooks", token)
        assert status == 200 and any(h["controller"] == "sample-controller" and h["calls"] >= 1 for h in json.loads(body)), body
    finally:
        engine.terminate()
        assert engine.wait(timeout=15) == 0


def managers_of(c, kind, name):
    shown = json.loads(c.kubectl("get", kind, name, "-o", "json", "--show-managed-fields").stdout)
    return {(m["manager"], m["operation"]) for m in shown["metadata"]["managedFields"]}


def test_engine_applies_children_client_side_when_asked(make_cluster):
    # --client-side-apply: children are created and updated (tracked as Update), never applied.
    c = make_cluster(extra_args=["--client-side-apply"])
    setup_js(c)
    c.kubectl("apply", "-f", str(EXAMPLE / "foo.yaml"))
    wait_for(lambda: get(c, "deploy", "example-foo"), timeout=20, message="the Deployment")
    c.kubectl("patch", "foo", "example-foo", "--type=merge", "-p", '{"spec":{"replicas":3}}')
    wait_for(lambda: get(c, "deploy", "example-foo")["spec"]["replicas"] == 3, message="the update")
    managers = managers_of(c, "deploy", "example-foo")
    assert "Update" in {op for _, op in managers} and "Apply" not in {op for _, op in managers}, managers


def test_engine_applies_children_server_side(cluster):
    # By default the engine writes children by server-side apply, as field manager `uc`, forced.
    c = cluster
    setup_js(c)
    c.kubectl("apply", "-f", str(EXAMPLE / "foo.yaml"))
    d = wait_for(lambda: get(c, "deploy", "example-foo"), timeout=20, message="the Deployment")
    assert d["spec"]["replicas"] == 1
    assert ("uc", "Apply") in managers_of(c, "deploy", "example-foo")
    c.kubectl("patch", "foo", "example-foo", "--type=merge", "-p", '{"spec":{"replicas":4}}')
    wait_for(lambda: get(c, "deploy", "example-foo")["spec"]["replicas"] == 4, message="the update, applied")


def test_a_second_controller_of_a_parent_type_is_refused_and_nothing_fights(cluster):
    setup_js(cluster)
    wait_for(lambda: uc_condition(cluster, "sample-controller", "Ready").get("status") == "True", timeout=20, message="controller ready")
    cluster.kubectl("apply", "-f", str(EXAMPLE / "foo.yaml"))
    wait_for(lambda: (get(cluster, "foo", "example-foo") or {}).get("status", {}).get("availableReplicas") == 1,
             timeout=60, message="the Foo's Deployment available")
    rival = "function sync(r) { return {children: [], status: {availableReplicas: 42}}; }"
    cluster.kubectl("apply", "-f", "-", input=js_controller("rival", rival))
    cond = wait_for(lambda: (c := uc_condition(cluster, "rival", "Ready")).get("reason") == "ParentClaimed" and c,
                    timeout=20, message="the second controller refused")
    assert cond["status"] == "False" and '"sample-controller"' in cond["message"] and "foos.njuics.cn" in cond["message"]
    table = cluster.kubectl("get", "uc").stdout.splitlines()
    assert table[0].split()[:7] == ["NAME", "PARENT", "READY", "SYNCED", "PARENTS", "FAILING", "REASON"], table[0]
    row = next(line.split() for line in table if line.startswith("sample-controller "))
    assert row[2:6] == ["True", "True", "1", "0"], row
    # Nothing fights: after a change of the parent both controllers are told of, its writes — seen by a
    # watch from the change until the first controller's status follows it — are the first
    # controller's alone (never the rival's 42), and a handful, not a storm.
    from kubernetes import client, watch
    co = client.CustomObjectsApi(cluster.api_client())
    foos = ("njuics.cn", "v1alpha1", "default", "foos")
    changed = co.patch_namespaced_custom_object(*foos, "example-foo", {"spec": {"replicas": 2}})
    statuses = []
    for ev in watch.Watch().stream(co.list_namespaced_custom_object, *foos, field_selector="metadata.name=example-foo",
                                   resource_version=changed["metadata"]["resourceVersion"], timeout_seconds=90):
        statuses.append(ev["object"].get("status", {}).get("availableReplicas"))
        if statuses[-1] == 2:
            break
    assert statuses and statuses[-1] == 2, f"the first controller's status did not follow the change: {statuses}"
    assert 42 not in statuses, f"the refused controller wrote the parent: {statuses}"
    assert len(statuses) <= 6, f"{len(statuses)} writes of the parent for one change: {statuses}"
    # The first one gone, the second runs.
    cluster.kubectl("delete", "uc", "sample-controller")
    wait_for(lambda: uc_condition(cluster, "rival", "Ready").get("status") == "True", timeout=20, message="the second controller running")
    wait_for(lambda: get(cluster, "foo", "example-foo")["status"].get("availableReplicas") == 42, timeout=20, message="the second controller's status")


def test_controllers_with_disjoint_parent_selectors_share_a_parent_type(cluster):
    cluster.kubectl("apply", "-f", str(EXAMPLE / "crd.yaml"))
    served = {"a": 1, "b": 2}  # each controller's mark in the Foo's status
    for tier in ["a", "b"]:
        uc = json.loads(js_controller(f"tier-{tier}", f"function sync(r) {{ return {{children: [], status: {{availableReplicas: {served[tier]}}}}}; }}"))
        uc["spec"]["parentResource"]["labelSelector"] = {"matchLabels": {"tier": tier}}
        cluster.kubectl("apply", "-f", "-", input=json.dumps(uc))
    for tier in ["a", "b"]:
        wait_for(lambda: uc_condition(cluster, f"tier-{tier}", "Ready").get("status") == "True", timeout=20,
                 message=f"tier-{tier} running beside the other")
    for name, tier in [("fa", "a"), ("fb", "b"), ("nobody", "c")]:
        foo = {"apiVersion": "njuics.cn/v1alpha1", "kind": "Foo", "metadata": {"name": name, "labels": {"tier": tier}},
               "spec": {"deploymentName": name, "replicas": 1}}
        cluster.kubectl("apply", "-f", "-", input=json.dumps(foo))
    for name, tier in [("fa", "a"), ("fb", "b")]:
        wait_for(lambda: (get(cluster, "foo", name) or {}).get("status", {}).get("availableReplicas") == served[tier], timeout=20,
                 message=f"{name} served by tier-{tier}")
    wait_for(lambda: json.loads(cluster.kubectl("get", "uc", "tier-a", "-o", "json").stdout)["status"].get("parents") == 1,
             message="tier-a counts its one parent")
    assert "status" not in get(cluster, "foo", "nobody"), "a parent neither selects is left alone"
    # An overlapping selector is refused.
    overlapping = json.loads(js_controller("tier-a-too", "function sync(r) { return {children: []}; }"))
    overlapping["spec"]["parentResource"]["labelSelector"] = {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "c"]}]}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(overlapping))
    cond = wait_for(lambda: (c := uc_condition(cluster, "tier-a-too", "Ready")).get("reason") == "ParentClaimed" and c,
                    timeout=20, message="the overlapping controller refused")
    assert '"tier-a"' in cond["message"], cond


def test_console_lines_of_a_javascript_hook_reach_ucs_log_naming_controller_and_parent(cluster):
    cluster.kubectl("apply", "-f", str(EXAMPLE / "crd.yaml"))
    src = "function sync(r) { console.log('hello from', r.parent.metadata.name, {replicas: r.parent.spec.replicas}); return {children: []}; }"
    cluster.kubectl("apply", "-f", "-", input=js_controller("talker", src))
    cluster.kubectl("apply", "-f", str(EXAMPLE / "foo.yaml"))
    log = Path(cluster.data_dir) / "uc.log"

    def line():
        return next((l for l in log.read_text(errors="replace").splitlines() if "hello from example-foo" in l), None)

    found = wait_for(line, timeout=20, message="the console line in uc's log")
    assert '{"replicas":1}' in found and "talker" in found and "default/example-foo" in found, found


def test_a_javascript_hook_follows_its_configmap(cluster):
    """Editing the ConfigMap that holds a hook changes the children at the next sync; a version that does
    not load leaves the old one running and says so; a deleted ConfigMap is reported at once."""
    setup_js(cluster)
    wait_for(lambda: uc_condition(cluster, "sample-controller", "Ready").get("status") == "True", timeout=20, message="controller ready")
    cluster.kubectl("apply", "-f", str(EXAMPLE / "foo.yaml"))
    wait_for(lambda: get(cluster, "deploy", "example-foo"), message="the Deployment")
    source = (EXAMPLE / "sync.js").read_text()

    def put(text):
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "sample-controller-hook"}, "data": {"sync.js": text}}
        cluster.kubectl("replace", "-f", "-", input=json.dumps(cm))

    put(source.replace('image: "nginx:stable"', 'image: "nginx:reloaded"'))
    # The Foo changes so that the next sync comes at once (any sync would run the new version).
    cluster.kubectl("annotate", "foo", "example-foo", "touch=1")
    image = lambda: get(cluster, "deploy", "example-foo")["spec"]["template"]["spec"]["containers"][0]["image"]
    wait_for(lambda: image() == "nginx:reloaded", timeout=20, message="the children of the new version")
    uc = get(cluster, "uc", "sample-controller")
    assert uc["status"]["observedGeneration"] == uc["metadata"]["generation"] == 1, "no restart of the controller"
    put("var reconcile = function (")  # does not load
    cond = wait_for(lambda: (c := uc_condition(cluster, "sample-controller", "Ready")).get("reason") == "HookReloadFailed" and c,
                    timeout=20, message="the broken version reported")
    assert cond["status"] == "True" and "previous version runs" in cond["message"], cond
    cluster.kubectl("patch", "foo", "example-foo", "--type=merge", "-p", '{"spec":{"replicas":2}}')
    wait_for(lambda: get(cluster, "deploy", "example-foo")["spec"]["replicas"] == 2, timeout=20, message="the old version still syncing")
    assert image() == "nginx:reloaded"
    put(source)
    wait_for(lambda: uc_condition(cluster, "sample-controller", "Ready").get("reason") == "Running", timeout=20, message="a good version again")
    cluster.kubectl("delete", "configmap", "sample-controller-hook")
    cond = wait_for(lambda: (c := uc_condition(cluster, "sample-controller", "Ready")).get("reason") == "HookUnavailable" and c,
                    timeout=20, message="the deleted source reported")
    assert cond["status"] == "False" and "deleted" in cond["message"]


def test_a_controller_whose_hook_configmap_is_missing_says_so_and_starts_once_it_exists(cluster):
    cluster.kubectl("apply", "-f", str(EXAMPLE / "crd.yaml"))
    cluster.kubectl("apply", "-f", str(EXAMPLE / "controller.yaml"))
    cond = wait_for(lambda: (c := uc_condition(cluster, "sample-controller", "Ready")).get("reason") == "HookUnavailable" and c,
                    timeout=20, message="the missing ConfigMap reported")
    assert cond["status"] == "False" and "configMap default/sample-controller-hook not found" in cond["message"], cond
    cluster.kubectl("create", "configmap", "sample-controller-hook", f"--from-file={EXAMPLE / 'sync.js'}")
    wait_for(lambda: uc_condition(cluster, "sample-controller", "Ready").get("reason") == "Running", timeout=30, message="started with the ConfigMap")
    cluster.kubectl("apply", "-f", str(EXAMPLE / "foo.yaml"))
    wait_for(lambda: get(cluster, "deploy", "example-foo"), message="the Deployment")


def test_hooks_kept_in_one_configmap_follow_it_each_by_its_key(cluster):
    """A sync and a finalize hook in one ConfigMap (one watch of it): an edit of one key reaches its
    hook alone, and the deleted ConfigMap is reported."""
    cluster.kubectl("apply", "-f", str(EXAMPLE / "crd.yaml"))
    finalize = "module.exports = {handler: (event, context) => ({children: [], finalized: true})};"
    source = (EXAMPLE / "sync.js").read_text()

    def put(sync, fin):
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "sample-controller-hook"},
              "data": {"sync.js": sync, "finalize.js": fin}}
        cluster.kubectl("apply", "-f", "-", input=json.dumps(cm))

    put(source, finalize)
    manifest = (EXAMPLE / "controller.yaml").read_text() + (
        "    finalize:\n      javascript:\n"
        "        configMapRef: {name: sample-controller-hook, namespace: default, key: finalize.js}\n")
    cluster.kubectl("apply", "-f", "-", input=manifest)
    wait_for(lambda: uc_condition(cluster, "sample-controller", "Ready").get("reason") == "Running", timeout=20, message="controller ready")
    cluster.kubectl("apply", "-f", str(EXAMPLE / "foo.yaml"))
    wait_for(lambda: get(cluster, "deploy", "example-foo"), message="the Deployment")
    put(source, "var broken = function (")
    cond = wait_for(lambda: (c := uc_condition(cluster, "sample-controller", "Ready")).get("reason") == "HookReloadFailed" and c,
                    timeout=20, message="the broken finalize version reported")
    assert "hooks.finalize: configMap default/sample-controller-hook" in cond["message"], cond
    put(source.replace('image: "nginx:stable"', 'image: "nginx:one-watch"'), finalize)
    wait_for(lambda: uc_condition(cluster, "sample-controller", "Ready").get("reason") == "Running", timeout=20, message="both keys good again")
    cluster.kubectl("annotate", "foo", "example-foo", "touch=1")
    image = lambda: get(cluster, "deploy", "example-foo")["spec"]["template"]["spec"]["containers"][0]["image"]
    wait_for(lambda: image() == "nginx:one-watch", timeout=20, message="the sync hook's new version")
    cluster.kubectl("delete", "foo", "example-foo", "--wait=false")
    wait_for(lambda: get(cluster, "foo", "example-foo") is None, timeout=20, message="the finalize hook's version finalizing")
    cluster.kubectl("delete", "configmap", "sample-controller-hook")
    cond = wait_for(lambda: (c := uc_condition(cluster, "sample-controller", "Ready")).get("reason") == "HookUnavailable" and c,
                    timeout=20, message="the deleted source reported")
    assert "configMap default/sample-controller-hook was deleted" in cond["message"], cond


def test_a_javascript_hook_follows_its_secret(cluster):
    """A hook whose source is in a Secret reloads as one in a ConfigMap does."""
    cluster.kubectl("apply", "-f", str(EXAMPLE / "crd.yaml"))
    source = (EXAMPLE / "sync.js").read_text()
    cluster.kubectl("create", "secret", "generic", "sample-controller-hook", f"--from-file={EXAMPLE / 'sync.js'}")
    manifest = (EXAMPLE / "controller.yaml").read_text().replace("configMapRef:", "secretRef:")
    cluster.kubectl("apply", "-f", "-", input=manifest)
    cluster.kubectl("apply", "-f", str(EXAMPLE / "foo.yaml"))
    image = lambda: (get(cluster, "deploy", "example-foo") or {}).get("spec", {}).get("template", {}).get("spec", {}) \
        .get("containers", [{}])[0].get("image")
    wait_for(lambda: image() == "nginx:stable", timeout=20, message="the Secret's version at work")
    edited = source.replace('image: "nginx:stable"', 'image: "nginx:from-secret"')
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sample-controller-hook"}, "stringData": {"sync.js": edited}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(secret))
    cluster.kubectl("annotate", "foo", "example-foo", "touch=1")
    wait_for(lambda: image() == "nginx:from-secret", timeout=20, message="the edited Secret's version")
    cluster.kubectl("delete", "secret", "sample-controller-hook")
    cond = wait_for(lambda: (c := uc_condition(cluster, "sample-controller", "Ready")).get("reason") == "HookUnavailable" and c,
                    timeout=20, message="the deleted source reported")
    assert "secret default/sample-controller-hook was deleted" in cond["message"], cond


@pytest.mark.parametrize("program", ["sync.sh", "sync_exec.py"])
def test_an_exec_hook_runs_the_sample_controller(cluster, program):
    import shutil

    if program.endswith(".sh") and not shutil.which("jq"):
        pytest.skip("needs jq (.ci/run installs it)")
    cluster.kubectl("apply", "-f", str(EXAMPLE / "crd.yaml"))
    command = ["sh" if program.endswith(".sh") else sys.executable, str(EXAMPLE / program)]
    manifest = (EXAMPLE / "controller-exec.yaml").read_text().replace(
        "command: [sh, examples/sample-controller/sync.sh]", f"command: {json.dumps(command)}")
    cluster.kubectl("apply", "-f", "-", input=manifest)
    exercise_sample_controller(cluster)
