"""Each container in its sandbox, tried as a tenant with a pod would try to reach past it: hunt for uc's
admin token and CA key, read the machine's secrets, write its system directories, see other pods'
processes and files. And what a container's `securityContext` asks for is what it gets."""

import json
import shutil

import pytest

from conftest import wait_for
from test_rbac import as_user

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("busybox") is None,
                                reason="needs bubblewrap and busybox (.ci/run installs them)")


def run_pod(cluster, name, script, token=None, ns="default", security=None, pod_security=None, volumes=None, mounts=None):
    """A busybox pod running `script` once; its log when it has ended."""
    spec = {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", script]}]}
    if security:
        spec["containers"][0]["securityContext"] = security
    if pod_security:
        spec["securityContext"] = pod_security
    if volumes:
        spec["volumes"] = volumes
        spec["containers"][0]["volumeMounts"] = mounts
    body = json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec})
    if token:
        as_user(cluster, "-n", ns, "apply", "-f", "-", token=token, input=body)
    else:
        cluster.kubectl("apply", "-f", "-", input=body)
    wait_for(lambda: cluster.kubectl("-n", ns, "get", "pod", name, "-o", "jsonpath={.status.phase}").stdout
             in ("Succeeded", "Failed"), timeout=60, message=f"pod {name} ended")
    return cluster.kubectl("-n", ns, "logs", name).stdout


def test_a_pod_that_hunts_for_uc_credentials_finds_nothing(cluster):
    cluster.kubectl("create", "namespace", "team")
    cluster.kubectl("-n", "team", "create", "serviceaccount", "dev")
    cluster.kubectl("-n", "team", "create", "role", "pods", "--verb=get,list,watch,create", "--resource=pods,pods/log")
    cluster.kubectl("-n", "team", "create", "rolebinding", "pods", "--role=pods", "--serviceaccount=team:dev")
    token = cluster.kubectl("-n", "team", "create", "token", "dev").stdout.strip()
    # Another pod's process and files, to be looked for.
    cluster.kubectl("run", "neighbour", "--image=busybox", "--", "sh", "-c", "echo secret > /tmp/mine; sleep 3600")
    d = cluster.data_dir
    hunt = (
        'echo "uid=$(id -u)"; '
        'echo "procs=$(ls /proc | grep -c "^[0-9]")"; '
        'echo "found=$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" " " | grep -c "[/]uc up ")"; '
        'echo "neighbour=$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" " " | grep -c "[e]cho secret")"; '
        f'echo "token=$(cat {d}/token {d}/ca.key {d}/kubeconfig 2>/dev/null | wc -c)"; '
        f'echo "datadir=$(ls {d} 2>/dev/null | wc -l)"; '
        'echo "shadow=$(cat /etc/shadow 2>/dev/null | wc -c)"; '
        'echo "wrote=$(touch /usr/bin/pwned /etc/pwned 2>/dev/null && echo yes || echo no)"; '
        'echo "tmp=$(echo mine > /tmp/x && cat /tmp/x)"'
    )
    log = run_pod(cluster, "hunter", hunt, token=token, ns="team")
    found = dict(line.split("=", 1) for line in log.split() if "=" in line)
    assert found["uid"] != "0", log
    # Its own: the sandbox's init, the shell and what it runs now — the machine has a hundred or more.
    assert int(found["procs"]) < 10, f"the pod saw the machine's processes: {log}"
    assert found["found"] == "0" and found["neighbour"] == "0", log
    assert found["token"] == "0" and found["datadir"] == "0", f"the pod reached uc's data directory: {log}"
    assert found["shadow"] == "0", log
    assert found["wrote"] == "no", log
    assert found["tmp"] == "mine", "its own writable /tmp"


def test_the_security_context_is_what_the_container_gets(cluster):
    asked = {"runAsUser": 1000, "runAsGroup": 3000, "allowPrivilegeEscalation": False,
             "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True}
    log = run_pod(cluster, "asked", 'id -u; id -g; id -G; grep CapBnd /proc/self/status; '
                  'grep NoNewPrivs /proc/self/status; touch /tmp/x 2>/dev/null && echo tmp-writable || echo tmp-read-only; '
                  'echo data > /data/f && ls -n /data/f',
                  security=asked, pod_security={"fsGroup": 2000},
                  volumes=[{"name": "data", "emptyDir": {}}], mounts=[{"name": "data", "mountPath": "/data"}])
    lines = log.split("\n")
    assert lines[0] == "1000" and lines[1] == "3000", log
    assert "2000" in lines[2].split(), f"fsGroup is a supplementary group: {log}"
    assert "CapBnd:\t0000000000000000" in log, log
    assert "NoNewPrivs:\t1" in log, log
    assert "tmp-read-only" in log, log
    assert " 1000 " in log.split("\n")[-2] or " 1000 " in log, f"the volume is the user's to write: {log}"
    # Root when asked for (baseline allows it), with the runtime's default capabilities, not all.
    log = run_pod(cluster, "root", "id -u; grep CapBnd /proc/self/status", security={"runAsUser": 0})
    assert log.split("\n")[0] == "0", log
    bounding = int(log.split("CapBnd:")[1].split()[0], 16)
    assert bounding != 0 and not bounding & (1 << 21), f"CAP_SYS_ADMIN is not among the defaults: {log}"


def test_a_sandboxed_container_stops_gracefully(cluster):
    """SIGTERM reaches the container's command, not only the sandbox around it: its handler runs."""
    import os

    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "stop-data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Mi"}}}}))
    script = 'trap "sleep 1; echo clean > /data/f; exit 0" TERM; echo ready > /data/f; while true; do sleep 0.1; done'
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stopper"},
        "spec": {"terminationGracePeriodSeconds": 30,
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "stop-data"}}],
                 "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", script],
                                 "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}}))
    f = os.path.join(cluster.data_dir, "volumes", "default", "stop-data", "f")
    wait_for(lambda: os.path.exists(f) and open(f).read().strip() == "ready", timeout=30, message="the container ran")
    cluster.kubectl("delete", "pod", "stopper", "--timeout=60s")
    assert open(f).read().strip() == "clean", "the container's TERM handler ran before it was gone"
