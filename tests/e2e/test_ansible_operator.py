"""The Operator SDK's Ansible sample, unchanged, as an Ansible operator on uc: `uc up --watches-file` with
the SDK's memcached-molecule-operator project (tests/e2e/upstream/ansible-operator-plugins: its
watches.yaml, playbooks, roles, CRDs and samples), run by real Ansible (ansible-runner with PyPI's
`ansible`, which bundles kubernetes.core). What its own molecule test (`molecule/default/tasks/
memcached_test.yml`) checks on a real cluster is checked here: the Deployment made by the role follows
`spec.size`, the playbook's `k8s_status` and `osdk_metric`s, the Secret watch's role, a deleted
dependent put back, the finalizer role run on delete. Beyond it: the SDK's status conditions, a failing
task reported (status and Event) without touching other resources, and the API proxy refusing whoever
does not hold a run's kubeconfig."""

import contextlib
import fcntl
import glob
import json
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from conftest import wait_for
from test_helm_operator import install_through_olm, uc

PROJECT = (Path(__file__).resolve().parent / "upstream" / "ansible-operator-plugins" / "testdata"
           / "memcached-molecule-operator")
SAMPLE = PROJECT / "config" / "samples" / "cache_v1alpha1_memcached.yaml"


def get(c, *args):
    r = c.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def condition(obj, type_):
    return next((x for x in (obj or {}).get("status", {}).get("conditions", []) if x["type"] == type_), {})


@contextlib.contextmanager
def the_samples_marker():
    """The sample's role bumps its metrics once per machine, marked by /tmp/metricsbumped (in the SDK, the
    operator container's /tmp): tests running the sample take turns, each starting without the mark."""
    with open("/tmp/uc-e2e-metricsbumped.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists("/tmp/metricsbumped"):
            os.remove("/tmp/metricsbumped")
        yield


def proxy_refuses_strangers(c):
    """The proxy a run's kubeconfig names serves only requests carrying that kubeconfig's password."""
    configs = glob.glob(f"/tmp/uc-ansible-{c.proc.pid}/runner/**/kubeconfig", recursive=True)
    assert configs, "a run's kubeconfig"
    cfg = yaml.safe_load(open(configs[0]))
    server = cfg["clusters"][0]["cluster"]["server"]
    assert oct(os.stat(configs[0]).st_mode & 0o777) == "0o600", "only uc reads a run's kubeconfig"
    for auth in [None, "Basic " + __import__("base64").b64encode(b"x:wrong").decode()]:
        req = urllib.request.Request(server + "/api/v1/namespaces/default/secrets")
        if auth:
            req.add_header("Authorization", auth)
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        assert e.value.code == 401


def test_the_sdks_memcached_ansible_sample_reconciles_heals_and_finalizes(make_cluster):
    if not shutil.which("ansible-runner"):
        pytest.skip("ansible-runner (PyPI) runs the roles")
    with the_samples_marker():
        c = make_cluster(["--watches-file", str(PROJECT / "watches.yaml")])
        try:
            run(c)
        finally:
            shutil.rmtree(f"/tmp/uc-ansible-{c.proc.pid}", ignore_errors=True)


def run(c):
    wait_for(lambda: c.kubectl("get", "memcacheds", check=False).returncode == 0, timeout=30, message="the CRD served")
    c.kubectl("apply", "-f", str(SAMPLE))
    cr = wait_for(lambda: (m := get(c, "memcached", "memcached-sample")) and condition(m, "Successful").get("status") == "True" and m,
                  timeout=240, message="a successful run")
    assert cr["metadata"]["finalizers"] == ["cache.example.com/finalizer"], "the watch's finalizer"
    running = condition(cr, "Running")
    assert (running["status"], running["reason"], running["message"]) == ("True", "Successful", "Awaiting next reconciliation")
    assert running["ansibleResult"]["failures"] == 0 and running["ansibleResult"]["ok"] > 0
    assert condition(cr, "Failure")["status"] == "False"
    assert cr["status"]["test"] == "hello world", "the playbook's k8s_status"

    # The role's Deployment, owned by the resource through the proxy.
    deploy = get(c, "deployment", "memcached-sample-memcached")
    assert deploy["spec"]["replicas"] == 1
    assert [(o["kind"], o["uid"]) for o in deploy["metadata"]["ownerReferences"]] == [("Memcached", cr["metadata"]["uid"])]
    wait_for(lambda: get(c, "deployment", "memcached-sample-memcached").get("status", {}).get("availableReplicas") == 1,
             timeout=120, message="memcached available")
    assert get(c, "configmap", "test-blacklist-watches")["data"]["arbitrary"] == "afdasdfsajsafj"
    # The Secret the role makes is watched by the `secret` role, which makes test-service.
    assert get(c, "secret", "test-secret")["metadata"]["ownerReferences"][0]["uid"] == cr["metadata"]["uid"]
    wait_for(lambda: get(c, "service", "test-service"), timeout=120, message="the secret role's Service")

    # The playbook's osdk_metric calls, at the engine's /metrics.
    metrics = c.metrics()
    for want in ["uc_sanity_counter_total 0", "uc_counter_inc_test_total 1", "uc_counter_add_test_total 2",
                 "uc_gauge_set_test 5", "uc_gauge_add_test 7", "uc_gauge_sub_test -7", "uc_summary_test_sum 2",
                 "uc_histogram_test_sum 2", 'uc_histogram_test_bucket{le="2.5"} 1']:
        assert want in metrics, want
    # The SDK's own metrics about runs, per kind.
    gvk = 'GVK="cache.example.com/v1alpha1, Kind=Memcached"'
    assert f'uc_ansible_operator_reconcile_result{{{gvk},result="succeeded"}}' in metrics, metrics
    assert f"uc_ansible_operator_reconciles_count{{{gvk}}}" in metrics

    proxy_refuses_strangers(c)

    # spec.size is the role's `size`.
    c.kubectl("patch", "memcached", "memcached-sample", "--type=merge", "-p", '{"spec":{"size":3}}')
    wait_for(lambda: get(c, "deployment", "memcached-sample-memcached")["spec"]["replicas"] == 3, timeout=120,
             message="the Deployment follows spec.size")

    # A dependent deleted by hand comes back (the proxy remembered it; its deletion runs the role).
    old = deploy["metadata"]["uid"]
    c.kubectl("delete", "deployment", "memcached-sample-memcached")
    back = wait_for(lambda: (d := get(c, "deployment", "memcached-sample-memcached")) and d["metadata"]["uid"] != old and d,
                    timeout=120, message="the Deployment put back")
    assert back["spec"]["replicas"] == 3

    # A resource's author tries to run a command as the operator through a template in the spec: strings
    # from resources are never templates (uc's markUnsafe default), so `size` is that text, the role's
    # Deployment is refused, and the run fails — Failure with the task's message, a Warning Event — while
    # the other resource is not affected.
    pwned = f"/tmp/uc-pwned-{os.getpid()}"
    bad = {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
           "metadata": {"name": "broken", "namespace": "default"},
           "spec": {"size": "{{ lookup('pipe', 'touch %s') }}" % pwned}}
    c.kubectl("apply", "-f", "-", input=json.dumps(bad))
    broken = wait_for(lambda: (m := get(c, "memcached", "broken")) and condition(m, "Failure").get("status") == "True" and m,
                      timeout=240, message="the failed run reported")
    failure = condition(broken, "Failure")
    assert failure["reason"] == "Failed" and failure["message"], failure
    assert failure["ansibleResult"]["failures"] == 1
    assert condition(broken, "Successful")["status"] == "False"
    events = wait_for(lambda: [e for e in get(c, "events", "--field-selector", "involvedObject.name=broken")["items"]
                               if e["reason"] == "TaskFailed"], timeout=30, message="a TaskFailed event")
    assert events[0]["type"] == "Warning" and "start memcached" in events[0]["message"]
    assert condition(get(c, "memcached", "memcached-sample"), "Failure")["status"] == "False", "the other resource is not affected"
    assert not os.path.exists(pwned), "a template in a resource ran as the operator"

    # Deleting runs the finalizer role (memfin deletes the ConfigMap `deleteme`), then the resource goes
    # and its Deployment is collected.
    c.kubectl("create", "configmap", "deleteme", "--from-literal=delete=me")
    c.kubectl("delete", "memcached", "memcached-sample", "--wait=false")
    wait_for(lambda: get(c, "memcached", "memcached-sample") is None, timeout=240, message="the resource finalized")
    assert get(c, "configmap", "deleteme") is None, "the finalizer role ran"
    wait_for(lambda: get(c, "deployment", "memcached-sample-memcached") is None, timeout=60, message="the Deployment collected")


def test_the_sdks_ansible_sample_packaged_by_uc_installs_through_olm_where_the_engine_allows_it(make_cluster, tmp_path):
    """`uc package` of the SDK's Ansible project, unchanged: the bundle carries its roles and playbooks.
    Running them is running the project's code on the engine's machine, outside any sandbox: an engine
    started as usual refuses to (the controller says why); one whose operator allowed unconfined hooks
    runs it."""
    if not shutil.which("ansible-runner"):
        pytest.skip("ansible-runner (PyPI) runs the roles")
    uc("package", str(PROJECT), "--version", "0.0.1", "--out", str(tmp_path / "bundle"), cwd=tmp_path)
    refusing = make_cluster()
    install_through_olm(refusing, tmp_path / "bundle", tmp_path / "catalog", "memcached-molecule-operator", "memcached-system")
    ready = wait_for(lambda: condition(get(refusing, "universalcontroller", "ansible-memcached-cache.example.com"), "Ready")
                     .get("status") == "False" and condition(get(refusing, "universalcontroller", "ansible-memcached-cache.example.com"), "Ready"),
                     timeout=60, message="the controller refused")
    assert "--exec-hooks-unconfined" in ready["message"], ready
    refusing.stop()

    with the_samples_marker():
        allowed(make_cluster, tmp_path)


def allowed(make_cluster, tmp_path):
    """The same bundle on an engine whose operator allowed unconfined hooks: the sample runs, its
    finalizer role included."""
    c = make_cluster(["--exec-hooks-unconfined"])
    try:
        install_through_olm(c, tmp_path / "bundle", tmp_path / "catalog2", "memcached-molecule-operator", "memcached-system")
        spec = get(c, "universalcontroller", "ansible-memcached-cache.example.com")["spec"]
        assert spec["hooks"]["sync"]["native"]["name"] == "ansible" and spec["finalizerName"] == "cache.example.com/finalizer"
        c.kubectl("apply", "-f", str(SAMPLE))
        wait_for(lambda: condition(get(c, "memcached", "memcached-sample"), "Successful").get("status") == "True",
                 timeout=240, message="a successful run")
        assert get(c, "deployment", "memcached-sample-memcached")["spec"]["replicas"] == 1
        c.kubectl("create", "configmap", "deleteme", "--from-literal=delete=me")
        c.kubectl("delete", "memcached", "memcached-sample", "--wait=false")
        wait_for(lambda: get(c, "memcached", "memcached-sample") is None, timeout=240, message="the resource finalized")
        assert get(c, "configmap", "deleteme") is None, "the finalizer role ran"
    finally:
        shutil.rmtree(f"/tmp/uc-ansible-{c.proc.pid}", ignore_errors=True)


def test_an_ansible_project_uc_init_scaffolds_runs(make_cluster, tmp_path):
    """`uc init --type ansible`: the SDK's layout with a role that works at once."""
    if not shutil.which("ansible-runner"):
        pytest.skip("ansible-runner (PyPI) runs the roles")
    uc("init", "greeter", "--type", "ansible", cwd=tmp_path)
    project = tmp_path / "greeter"
    assert (project / "roles" / "greeter" / "tasks" / "main.yml").is_file() and (project / "PROJECT").is_file()
    c = make_cluster(["--watches-file", str(project / "watches.yaml")])
    try:
        wait_for(lambda: c.kubectl("get", "greeters", check=False).returncode == 0, timeout=30, message="the CRD served")
        c.kubectl("apply", "-f", str(project / "config" / "samples" / "example.com_v1alpha1_greeter.yaml"))
        cr = wait_for(lambda: (g := get(c, "greeter", "greeter-sample")) and condition(g, "Successful").get("status") == "True" and g,
                      timeout=120, message="the role ran")
        assert cr["status"]["greeting"] == "hello"
        assert get(c, "configmap", "greeter-sample-greeting")["data"] == {"greeting": "hello"}
        c.kubectl("patch", "greeter", "greeter-sample", "--type=merge", "-p", '{"spec":{"greeting":"bonjour"}}')
        wait_for(lambda: get(c, "configmap", "greeter-sample-greeting")["data"]["greeting"] == "bonjour", timeout=120,
                 message="the spec's new greeting")
    finally:
        shutil.rmtree(f"/tmp/uc-ansible-{c.proc.pid}", ignore_errors=True)
