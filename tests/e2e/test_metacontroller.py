"""Metacontroller's API on uc, driven as a Metacontroller user would: `kubectl apply -k` of the example
directory (CRD, CompositeController, DecoratorController, Python hooks as a Deployment behind a Service),
then a Hello parent (v1 hooks: children keyed by name), a rolling update gated by status checks (watched
event by event), a decorated ConfigMap (v2 hooks: attachments keyed namespace/name; labels set and
removed), the hooks moved to HTTPS with a CA bundle and a bearer token from Secrets (endpointConfigs), a
wrong token failing without touching a child, and the finalize hook on deletion.

The tests share one cluster and run in file order (each starts from where the one before left off)."""

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import Cluster, wait_for

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "metacontroller"
NS = "hello-metacontroller"
HOST = f"hello-hooks.{NS}"

pytestmark = pytest.mark.skipif(shutil.which("python3") is None, reason="the hooks run on python3")


@pytest.fixture(scope="module")
def mc():
    with tempfile.TemporaryDirectory(prefix="uc-e2e-") as d:
        c = Cluster(d).start()
        try:
            c.kubectl("apply", "-k", str(EXAMPLE))
            c.kubectl("-n", NS, "rollout", "status", "deployment/hello-hooks", "--timeout=90s", timeout=100)
            yield c
        finally:
            assert c.stop() == 0, "uc up did not stop cleanly on Ctrl-C"


def get(c, *args):
    r = c.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def condition(obj, kind):
    return next((x for x in (obj or {}).get("status", {}).get("conditions", []) if x["type"] == kind), {})


def hello_pods(c):
    return {p["metadata"]["name"]: p for p in get(c, "pods", "-l", "hello=hi")["items"]}


def ready(pod):
    return not pod["metadata"].get("deletionTimestamp") and any(
        x["type"] == "Ready" and x["status"] == "True" for x in pod.get("status", {}).get("conditions", []))


def message(pod):
    return pod["spec"]["containers"][0]["env"][0]["value"]


def hook_logs(c):
    """The logs of the hooks' pod that is not going away. `kubectl logs deployment/hello-hooks` may pick a
    pod of the previous rollout still terminating, and fail once it is gone; "" when none is there."""
    pods = get(c, "-n", NS, "pods", "-l", "app=hello-hooks")["items"]
    live = [p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")]
    if not live:
        return ""
    r = c.kubectl("-n", NS, "logs", f"pod/{live[0]}", check=False)
    return r.stdout if r.returncode == 0 else ""


def ensure_hello(mc):
    """The example's Hello `hi` with its two pods ready. The tests of this module share one cluster, but
    test workers side by side may split the module between them: a test that needs the Hello an earlier
    one made creates it when its worker ran none of those."""
    if get(mc, "hello", "hi") is not None:
        return  # made by an earlier test on this worker, in whatever state that test left it
    mc.kubectl("apply", "-f", str(EXAMPLE / "my-hello.yaml"))
    wait_for(lambda: (get(mc, "hello", "hi") or {}).get("status", {}).get("readyReplicas") == 2,
             timeout=60, message="the Hello's two pods ready")


def test_a_composite_controller_in_metacontrollers_yaml_runs_its_children(mc):
    cc = wait_for(lambda: condition(get(mc, "compositecontroller", "hello-controller"), "Ready").get("status") == "True"
                  and get(mc, "compositecontroller", "hello-controller"), message="the CompositeController running")
    assert cc["status"]["conditions"][0]["reason"] == "Running"
    mc.kubectl("apply", "-f", str(EXAMPLE / "my-hello.yaml"))
    status = wait_for(lambda: (s := (get(mc, "hello", "hi") or {}).get("status", {})).get("readyReplicas") == 2 and s,
                      timeout=60, message="two ready pods in the Hello's status")
    assert status["childKeys"] == ["hi-0", "hi-1"], "v1 hooks key a namespaced parent's children by name"
    hello = get(mc, "hello", "hi")
    assert hello["metadata"]["finalizers"] == ["metacontroller.io/compositecontroller-hello-controller"]
    pods = hello_pods(mc)
    assert {message(p) for p in pods.values()} == {"hello, world"}
    owner = pods["hi-0"]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Hello", "hi", True)
    table = mc.kubectl("get", "compositecontrollers").stdout
    assert "READY" in table and "SYNCED" in table and "hello-controller" in table


def test_a_rolling_update_waits_for_each_recreated_pod_to_pass_its_status_checks(mc):
    ensure_hello(mc)
    from kubernetes import client, watch

    core = client.CoreV1Api(mc.api_client())
    listed = core.list_namespaced_pod("default", label_selector="hello=hi")
    state = {p.metadata.name: p for p in listed.items}
    mc.kubectl("patch", "hello", "hi", "--type=merge", "-p", '{"spec":{"message":"bonjour"}}')
    worst, deleted = 0, []
    for ev in watch.Watch().stream(core.list_namespaced_pod, "default", label_selector="hello=hi",
                                   resource_version=listed.metadata.resource_version, timeout_seconds=90):
        pod = ev["object"]
        if ev["type"] == "DELETED":
            state.pop(pod.metadata.name, None)
            deleted.append(pod.metadata.name)
        else:
            state[pod.metadata.name] = pod
        available = [p for p in state.values() if not p.metadata.deletion_timestamp and any(
            x.type == "Ready" and x.status == "True" for x in (p.status.conditions or []))]
        worst = max(worst, 2 - len(available))
        if len(available) == 2 and all(p.spec.containers[0].env[0].value == "bonjour" for p in available):
            break
    else:
        pytest.fail(f"the rollout did not finish: {sorted(state)}")
    assert worst == 1, "one pod at a time was recreated (never both down, and at least one was)"
    assert sorted(set(deleted)) == ["hi-0", "hi-1"]
    revisions = get(mc, "controllerrevisions.metacontroller.k8s.io")["items"]
    assert revisions and all(r["metadata"]["labels"]["metacontroller.k8s.io/resource"] == "hellos" for r in revisions)
    cond = wait_for(lambda: (c := condition(get(mc, "hello", "hi"), "Updated")).get("status") == "True" and c,
                    message="the rollout reported complete")
    assert cond["reason"] == "RolloutComplete"


def test_a_decorator_controller_attaches_and_labels_with_v2_keys(mc):
    mc.kubectl("create", "configmap", "settings", "--from-literal=colour=blue")
    mc.kubectl("label", "configmap", "settings", "example.com/stale=yes")
    undecorated = get(mc, "configmap", "settings")
    mc.kubectl("annotate", "configmap", "settings", "example.com/copy=please")
    copy = wait_for(lambda: get(mc, "configmap", "settings-copy"), message="the attachment")
    assert copy["data"] == {"colour": "blue"}
    assert copy["metadata"]["annotations"]["metacontroller.k8s.io/decorator-controller"] == "configmap-copier"
    assert copy["metadata"]["ownerReferences"][0]["uid"] == undecorated["metadata"]["uid"]
    target = wait_for(lambda: (t := get(mc, "configmap", "settings"))["metadata"].get("annotations", {})
                      .get("example.com/attachments") and t, message="the target annotated with what the hook saw")
    assert target["metadata"]["annotations"]["example.com/attachments"] == "default/settings-copy", "v2 keys"
    labels = target["metadata"]["labels"]
    assert labels.get("example.com/copied") == "true" and "example.com/stale" not in labels, "null removes a label"
    # An InPlace attachment follows its target.
    mc.kubectl("patch", "configmap", "settings", "--type=merge", "-p", '{"data":{"colour":"green"}}')
    wait_for(lambda: get(mc, "configmap", "settings-copy")["data"] == {"colour": "green"}, message="the copy updated")
    # A ConfigMap without the annotation is not decorated.
    mc.kubectl("create", "configmap", "plain", "--from-literal=a=b")
    dc = wait_for(lambda: (d := get(mc, "decoratorcontroller", "configmap-copier"))["status"].get("parents") and d,
                  message="the decorator's status")
    assert dc["status"]["parents"] == 1, "only the annotated ConfigMap is a target"
    assert get(mc, "configmap", "plain-copy") is None


def tls_material(d: Path):
    run = lambda *a: subprocess.run(["openssl", *a], check=True, capture_output=True, cwd=d)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
        "-subj", "/CN=hello-hooks-ca")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out", "tls.csr", "-subj", "/CN=hello-hooks")
    (d / "ext.cnf").write_text(f"subjectAltName=DNS:{HOST},DNS:{HOST}.svc\n")
    run("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "tls.crt",
        "-days", "2", "-extfile", "ext.cnf")


def endpoint(token_secret):
    return {"spec": {"endpointConfigs": [{
        "host": HOST,
        "caBundle": {"secretRef": {"name": "hello-hooks-tls", "namespace": NS, "key": "ca.crt"}},
        "authorization": {"secretRef": {"name": token_secret, "namespace": NS, "key": "token"}},
    }]}}


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make certificates")
def test_hooks_over_https_with_a_bearer_token_and_a_wrong_token_touches_nothing(mc, tmp_path):
    ensure_hello(mc)
    tls_material(tmp_path)
    (tmp_path / "token").write_text("s3cret-token\n")
    mc.kubectl("-n", NS, "create", "secret", "generic", "hello-hooks-tls", *(
        f"--from-file={k}={tmp_path / k}" for k in ("tls.crt", "tls.key", "ca.crt", "token")))
    mc.kubectl("-n", NS, "create", "secret", "generic", "hello-hooks-token", "--from-literal=token=s3cret-token")
    mc.kubectl("-n", NS, "create", "secret", "generic", "wrong-token", "--from-literal=token=guessed")
    # The hooks also serve HTTPS (8443, behind the Service's 443) once the Secret is mounted.
    mc.kubectl("-n", NS, "patch", "service", "hello-hooks", "--type=json", "-p", json.dumps(
        [{"op": "add", "path": "/spec/ports/-", "value": {"name": "https", "port": 443, "targetPort": 8443}}]))
    mc.kubectl("-n", NS, "patch", "deployment", "hello-hooks", "--type=json", "-p", json.dumps([
        {"op": "add", "path": "/spec/template/spec/volumes/-", "value": {"name": "tls", "secret": {"secretName": "hello-hooks-tls"}}},
        {"op": "add", "path": "/spec/template/spec/containers/0/volumeMounts/-", "value": {"name": "tls", "mountPath": "/tls"}},
    ]))
    mc.kubectl("-n", NS, "rollout", "status", "deployment/hello-hooks", "--timeout=90s", timeout=100)
    wait_for(lambda: "serving hooks on 8080, 8443" in hook_logs(mc), timeout=30, message="the hooks serving HTTPS")
    https = json.dumps({"spec": {"hooks": {
        "sync": {"webhook": {"url": f"https://{HOST}/sync", "timeout": "10s"}},
        "finalize": {"webhook": {"url": f"https://{HOST}/sync", "timeout": "10s"}}}, **endpoint("hello-hooks-token")["spec"]}})
    mc.kubectl("patch", "compositecontroller", "hello-controller", "--type=merge", "-p", https)
    mc.kubectl("patch", "hello", "hi", "--type=merge", "-p", '{"spec":{"message":"hola"}}')
    wait_for(lambda: len(ps := hello_pods(mc)) == 2 and all(ready(p) and message(p) == "hola" for p in ps.values()),
             timeout=90, message="the pods rolled through the HTTPS hook")
    wait_for(lambda: condition(get(mc, "hello", "hi"), "Updated").get("reason") == "RolloutComplete",
             message="the rollout complete")
    assert "https \"POST /sync HTTP/1.1\" 200" in hook_logs(mc)

    # A wrong token: the hook refuses every call, and nothing of the Hello changes.
    before = {n: p["metadata"]["uid"] for n, p in hello_pods(mc).items()}
    revisions = {r["metadata"]["name"] for r in get(mc, "controllerrevisions.metacontroller.k8s.io")["items"]}
    mc.kubectl("patch", "compositecontroller", "hello-controller", "--type=merge", "-p", json.dumps(endpoint("wrong-token")))
    generation = get(mc, "compositecontroller", "hello-controller")["metadata"]["generation"]
    wait_for(lambda: get(mc, "compositecontroller", "hello-controller")["status"].get("observedGeneration") == generation,
             message="the controller restarted with the wrong token")
    mc.kubectl("patch", "hello", "hi", "--type=merge", "-p", '{"spec":{"message":"ciao","replicas":3}}')
    synced = wait_for(lambda: (c := condition(get(mc, "compositecontroller", "hello-controller"), "Synced"))
                      .get("status") == "False" and c, timeout=30, message="the sync failing")
    assert "401" in synced["message"] and "default/hi" in synced["message"], synced
    assert "refused /sync: wrong or missing bearer token" in hook_logs(mc)
    pods = hello_pods(mc)
    assert {n: p["metadata"]["uid"] for n, p in pods.items()} == before, "no pod created, deleted or replaced"
    assert {message(p) for p in pods.values()} == {"hola"}
    assert {r["metadata"]["name"] for r in get(mc, "controllerrevisions.metacontroller.k8s.io")["items"]} == revisions

    # The right token again: the Hello converges.
    mc.kubectl("patch", "compositecontroller", "hello-controller", "--type=merge", "-p",
               json.dumps(endpoint("hello-hooks-token")))
    wait_for(lambda: len(ps := hello_pods(mc)) == 3 and all(ready(p) and message(p) == "ciao" for p in ps.values()),
             timeout=120, message="three pods saying ciao")
    wait_for(lambda: condition(get(mc, "compositecontroller", "hello-controller"), "Synced").get("status") == "True",
             message="synced again")


def test_the_finalize_hook_runs_before_the_parent_goes(mc):
    ensure_hello(mc)
    mc.kubectl("delete", "hello", "hi", "--wait=false")
    wait_for(lambda: get(mc, "hello", "hi") is None, timeout=60, message="the Hello gone")
    assert hello_pods(mc) == {}, "the finalize hook's empty answer deleted the pods before the parent went"
    logs = hook_logs(mc)
    assert "finalize default/hi: 0 pods left" in logs, logs[-2000:]
