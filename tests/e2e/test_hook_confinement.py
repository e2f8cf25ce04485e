"""Hooks that cannot reach past their walls, tried as their authors would try to cross them: an exec hook
written by an account that may only create UniversalControllers and ConfigMaps hunts for uc's admin token,
leaves processes behind; a JavaScript hook spins over several parents while the cluster (and `uc run` on one
worker thread) must keep answering."""

import json
import shutil
import subprocess
import time
import urllib.request

import pytest

from conftest import SAMPLE_CONTROLLER, engine_get, foos, free_port, install_sample_controller, uc_binary, wait_for
from test_rbac import as_user

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (.ci/run installs it)")


def controller_author(cluster):
    """A service account that may manage UniversalControllers and ConfigMaps, nothing else; its token."""
    cluster.kubectl("create", "namespace", "dev")
    cluster.kubectl("-n", "dev", "create", "serviceaccount", "author")
    cluster.kubectl("create", "clusterrole", "uc-author", "--verb=get,list,watch,create,update,patch,delete",
                    "--resource=universalcontrollers.universalcontroller.njuics.cn,configmaps")
    cluster.kubectl("create", "clusterrolebinding", "uc-author", "--clusterrole=uc-author", "--serviceaccount=dev:author")
    return cluster.kubectl("-n", "dev", "create", "token", "author").stdout.strip()


def exec_controller(name, script, timeout="10s"):
    """A UniversalController over ConfigMaps labelled bait=<name>, whose exec hook runs `script` in sh."""
    return json.dumps({
        "apiVersion": "universalcontroller.njuics.cn/v1alpha1", "kind": "UniversalController",
        "metadata": {"name": name},
        "spec": {"generateSelector": True,
                 "parentResource": {"apiVersion": "v1", "resource": "configmaps", "labelSelector": {"matchLabels": {"bait": name}}},
                 "childResources": [{"apiVersion": "v1", "resource": "configmaps", "updateStrategy": {"method": "InPlace"}}],
                 "hooks": {"sync": {"exec": {"command": ["sh", "-c", script], "timeout": timeout}}}},
    })


@needs_bwrap
def test_an_exec_hook_author_finds_nothing_of_uc_and_is_not_root(cluster):
    token = controller_author(cluster)
    data_dir = cluster.data_dir
    # What an attacker's hook does: who am I, which processes are there, can I read uc's credentials
    # (its data directory, named on `uc up`'s command line), can I write the system.
    hunt = (
        'cat >/dev/null; '
        'uid=$(id -u); procs=$(ls /proc | grep -c "^[0-9]"); '
        'found=$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" " " | grep -c "[/]uc up "); '
        f'secret=$(cat {data_dir}/token {data_dir}/ca.key {data_dir}/kubeconfig 2>/dev/null | wc -c); '
        'wrote=$(touch /etc/pwned 2>/dev/null && echo yes || echo no); '
        'printf \'{"children": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "loot", "namespace": "dev"}, '
        '"data": {"uid": "%s", "procs": "%s", "found": "%s", "secret": "%s", "wrote": "%s"}}]}\' '
        '"$uid" "$procs" "$found" "$secret" "$wrote"'
    )
    as_user(cluster, "apply", "-f", "-", token=token, input=exec_controller("hunter", hunt))
    as_user(cluster, "-n", "dev", "create", "configmap", "bait", token=token)
    as_user(cluster, "-n", "dev", "label", "configmap", "bait", "bait=hunter", token=token)
    loot = wait_for(lambda: json.loads(cluster.kubectl("-n", "dev", "get", "cm", "loot", "-o", "json", check=False).stdout or "null"),
                    timeout=30, message="the hook's answer")["data"]
    assert loot["uid"] != "0", f"the hook ran as root: {loot}"
    assert int(loot["procs"]) < 6, f"the hook saw the machine's processes: {loot}"
    assert loot["found"] == "0", f"the hook found uc's command line: {loot}"
    assert loot["secret"] == "0", f"the hook read uc's credentials: {loot}"
    assert loot["wrote"] == "no", f"the hook wrote the system: {loot}"


def processes(needle):
    """How many processes of this machine run exactly `needle`."""
    import os

    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().replace(b"\0", b" ").strip().decode(errors="replace") == needle:
                    count += 1
        except OSError:
            pass
    return count


@needs_bwrap
def test_what_an_exec_hook_leaves_behind_dies_at_its_timeout(cluster):
    # Each call starts a background sleep and then never answers: the timeout kills the call.
    cluster.kubectl("apply", "-f", "-", input=exec_controller("leaver", "sleep 97.125 & sleep 300", timeout="1s"))
    cluster.kubectl("create", "configmap", "bait")
    cluster.kubectl("label", "configmap", "bait", "bait=leaver")
    errors = lambda: cluster.metric("uc_hook_errors_total", controller="leaver", hook="sync")
    wait_for(lambda: errors() >= 3, timeout=60, message="three timed-out calls")
    # At most the call under way has its sleep; before, every call left one behind.
    assert processes("sleep 97.125") <= 1, "the children of timed-out calls are still running"
    cond = next(c for c in json.loads(cluster.kubectl("get", "uc", "leaver", "-o", "json").stdout)["status"]["conditions"]
                if c["type"] == "Synced")
    assert cond["status"] == "False" and "timed out" in cond["message"], cond


def test_exec_hooks_can_be_refused_by_the_engines_operator(make_cluster):
    cluster = make_cluster(["--exec-hooks", "jq"])
    cluster.kubectl("apply", "-f", "-", input=exec_controller("shell", "echo '{}'"))
    cond = wait_for(lambda: next((c for c in json.loads(cluster.kubectl("get", "uc", "shell", "-o", "json").stdout)
                                  .get("status", {}).get("conditions", []) if c["type"] == "Ready" and c["status"] == "False"), None),
                    timeout=20, message="the controller refused")
    assert "may not serve as a hook" in cond["message"] and "jq" in cond["message"], cond


def readyz_latency(cluster):
    server, token = cluster.server_and_token()
    import ssl

    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(f"{server}/readyz", headers={"Authorization": f"Bearer {token}"})
    started = time.monotonic()
    with urllib.request.urlopen(req, timeout=5, context=ctx) as r:
        assert r.status == 200
    return time.monotonic() - started


# A controller whose JavaScript hook spins until its 60 s deadline, over ConfigMaps labelled spin=yes.
SPINNER = json.dumps({
    "apiVersion": "universalcontroller.njuics.cn/v1alpha1", "kind": "UniversalController",
    "metadata": {"name": "spinner"},
    "spec": {"generateSelector": True,
             "parentResource": {"apiVersion": "v1", "resource": "configmaps", "labelSelector": {"matchLabels": {"spin": "yes"}}},
             "hooks": {"sync": {"javascript": {"source": "function sync(r) { while (true) {} }", "timeout": "60s"}}}},
})


def spin(cluster, parents):
    """The spinner and `parents` ConfigMaps for it to spin over."""
    cluster.kubectl("apply", "-f", "-", input=SPINNER)
    for i in range(parents):
        cluster.kubectl("create", "configmap", f"spin-{i}")
        cluster.kubectl("label", "configmap", f"spin-{i}", "spin=yes")


def test_a_spinning_javascript_hook_costs_only_its_own_controller(cluster):
    spin(cluster, 3)
    # The scripts are spinning once their calls are under way (the hook's call count moves only when a
    # call ends, so the spin shows as the controller's parents in flight).
    time.sleep(1)
    # Another controller converges meanwhile, and the API server answers within a second every second.
    cluster.kubectl("apply", "-f", str(SAMPLE_CONTROLLER / "crd.yaml"))
    cluster.kubectl("create", "configmap", "sample-controller-hook", f"--from-file={SAMPLE_CONTROLLER / 'sync.js'}")
    cluster.kubectl("apply", "-f", str(SAMPLE_CONTROLLER / "controller.yaml"))
    cluster.kubectl("apply", "-f", "-", input=foos(["calm-0", "calm-1"]))
    latencies = []
    converged = False
    for _ in range(10):
        latencies.append(readyz_latency(cluster))
        converged = converged or all(
            cluster.kubectl("get", "deploy", n, check=False).returncode == 0 for n in ("calm-0", "calm-1"))
        time.sleep(1)
    assert max(latencies) < 1.0, f"/readyz latencies while the hook spins: {latencies}"
    assert converged, "the other controller's children were not made while the hook spun"
    # The spinner is still inside its 60 s calls: none of them has ended yet.
    assert cluster.metric("uc_hook_duration_seconds_count", controller="spinner", hook="sync") == 0


def test_uc_run_on_one_worker_thread_keeps_serving_while_its_hooks_spin(make_cluster):
    """`uc run --runtime-threads 1`: while two JavaScript calls spin (as many as the hook runs at once on
    two CPUs), the runtime's one worker still answers /readyz and another controller converges."""
    api = make_cluster(extra_args=["--no-engine"])
    port = free_port()
    engine = subprocess.Popen([uc_binary(), "run", "--runtime-threads", "1", "--kubeconfig", api.kubeconfig,
                               "--metrics-addr", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    admin = api.server_and_token()[1]

    def metric(series):
        for line in engine_get(f"http://127.0.0.1:{port}/metrics", admin).splitlines():
            if line.startswith(series + " "):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    def readyz():
        started = time.monotonic()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
                return r.status == 200 and time.monotonic() - started
        except OSError:  # refused, or no answer within 5 s
            return False

    try:
        wait_for(readyz, timeout=30, message="uc run's /readyz")
        wait_for(lambda: api.kubectl("get", "crd", "universalcontrollers.universalcontroller.njuics.cn",
                                     check=False).returncode == 0, timeout=30, message="uc's CRDs")
        spin(api, 2)
        wait_for(lambda: metric("uc_reconciles_in_flight") == 2, timeout=30, message="both calls spinning")
        # The other controller's Deployments, seen by a watch from before its parents exist.
        from kubernetes import client, watch
        apps = client.AppsV1Api(api.api_client())
        since = apps.list_namespaced_deployment("default").metadata.resource_version
        install_sample_controller(api, wait_for_uc_crds=False)
        api.kubectl("apply", "-f", "-", input=foos(["calm-0", "calm-1"]))
        made = set()
        for ev in watch.Watch().stream(apps.list_namespaced_deployment, "default", resource_version=since,
                                       timeout_seconds=40):
            if ev["type"] == "ADDED":
                made.add(ev["object"].metadata.name)
            if made >= {"calm-0", "calm-1"}:
                break
        assert made >= {"calm-0", "calm-1"}, f"the other controller's children while the hook spun: {made}"
        latencies = [readyz() for _ in range(5)]
        assert all(latencies) and max(latencies) < 1.0, f"/readyz while the hook spins: {latencies}"
        # All of it happened inside the spinning calls: none of them has ended.
        assert metric('uc_hook_duration_seconds_count{controller="spinner",hook="sync"}') == 0
    finally:
        engine.terminate()
        try:
            stopped = engine.wait(timeout=30)
        except subprocess.TimeoutExpired:
            engine.kill()
            engine.wait()
            raise
    assert stopped == 0, f"uc run exited with {stopped}"
