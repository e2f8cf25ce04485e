"""What a pod's processes get from the API: configMap, secret, downwardAPI and projected volumes
(updated when their sources change), subPath mounts, environment from ConfigMaps, Secrets and the
downward API; and a Python webhook hook deployed the usual way (a python:3.11 Deployment with its
source in a ConfigMap, behind a Service) that a UniversalController calls by its in-cluster name."""

import json
import os
import subprocess
import shutil

import pytest

from conftest import pod_network, wait_for

needs_busybox = pytest.mark.skipif(not os.path.exists("/bin/busybox"), reason="needs Debian's busybox (.ci/run installs it)")

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "reader", "labels": {"app": "reader", "tier": "web"}, "annotations": {"note": "hi"}},
    "spec": {
        "containers": [{
            "name": "c", "image": "busybox", "command": ["sleep", "3600"],
            "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "CFG_"}],
            "env": [
                {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
                {"name": "MY_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "MEM_MB", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                {"name": "GREETING", "value": "$(MY_NAME) says $(CFG_mode)"},
            ],
            "resources": {"limits": {"memory": "64Mi"}},
            "volumeMounts": [
                {"name": "settings", "mountPath": "/etc/settings"},
                {"name": "creds", "mountPath": "/etc/creds", "readOnly": True},
                {"name": "podinfo", "mountPath": "/etc/podinfo"},
                {"name": "all", "mountPath": "/var/run/all"},
                {"name": "settings", "mountPath": "/etc/mode.txt", "subPath": "mode"},
                {"name": "scratch", "mountPath": "/work/sub", "subPath": "nested/dir"},
            ],
        }],
        "volumes": [
            {"name": "settings", "configMap": {"name": "settings"}},
            {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 0o400}},
            {"name": "podinfo", "downwardAPI": {"items": [
                {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}},
            {"name": "all", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
                {"configMap": {"name": "settings", "items": [{"key": "mode", "path": "config/mode"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}}]}},
            {"name": "scratch", "emptyDir": {}},
        ],
    },
}


def exec_(cluster, *cmd):
    return cluster.kubectl("exec", "reader", "--", *cmd).stdout


@needs_busybox
def test_volumes_and_environment_from_the_api(cluster):
    cluster.kubectl("create", "configmap", "settings", "--from-literal=mode=fast", "--from-literal=level=3")
    cluster.kubectl("apply", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, "stringData": {"password": "s3cr3t"}}))
    cluster.kubectl("apply", "-f", "-", input=json.dumps(POD))
    wait_for(lambda: "1/1" in cluster.kubectl("get", "pod", "reader").stdout, timeout=30, message="reader Ready")
    env = dict(line.split("=", 1) for line in exec_(cluster, "env").splitlines() if "=" in line)
    assert env["CFG_mode"] == "fast" and env["CFG_level"] == "3"
    assert env["PASSWORD"] == "s3cr3t"
    assert env["MY_NAME"] == "reader" and env["MY_IP"].startswith(pod_network(cluster)[0])
    assert env["MEM_MB"] == "64"
    assert env["GREETING"] == "reader says fast"
    assert exec_(cluster, "cat", "/etc/settings/mode") == "fast"
    assert exec_(cluster, "cat", "/etc/creds/password") == "s3cr3t"
    assert exec_(cluster, "stat", "-L", "-c", "%a", "/etc/creds/password").strip() == "400"
    assert exec_(cluster, "cat", "/etc/podinfo/labels") == 'app="reader"\ntier="web"'
    assert exec_(cluster, "cat", "/var/run/all/config/mode") == "fast"
    assert exec_(cluster, "cat", "/var/run/all/namespace") == "default"
    token = exec_(cluster, "cat", "/var/run/all/token").strip()
    # The projected token is the pod's service account's, bound to the pod.
    server, _ = cluster.server_and_token()
    who = subprocess.run(["kubectl", "--kubeconfig=/dev/null", f"--server={server}", f"--token={token}",
                          f"--certificate-authority={os.path.join(cluster.data_dir, 'ca.crt')}",
                          "auth", "whoami", "-o", "json"], capture_output=True, text=True, timeout=60)
    info = json.loads(who.stdout)["status"]["userInfo"]
    assert info["username"] == "system:serviceaccount:default:default", who.stderr
    assert info["extra"]["authentication.kubernetes.io/pod-name"] == ["reader"]
    assert exec_(cluster, "cat", "/etc/mode.txt") == "fast", "subPath of a configMap volume"
    exec_(cluster, "sh", "-c", "echo kept > /work/sub/f")
    assert exec_(cluster, "cat", "/work/sub/f") == "kept\n"
    r = cluster.kubectl("exec", "reader", "--", "sh", "-c", "echo x > /etc/creds/new", check=False)
    assert r.returncode != 0, "a readOnly mount refuses writes"
    # Sources change: mounted files follow (subPath mounts keep what they had, as in Kubernetes).
    cluster.kubectl("patch", "configmap", "settings", "--type=merge", "-p", '{"data":{"mode":"slow"}}')
    wait_for(lambda: exec_(cluster, "cat", "/etc/settings/mode") == "slow", timeout=30, message="the file updated")
    wait_for(lambda: exec_(cluster, "cat", "/var/run/all/config/mode") == "slow", timeout=30, message="projected too")
    assert exec_(cluster, "cat", "/etc/mode.txt") == "fast"
    cluster.kubectl("label", "pod", "reader", "tier=db", "--overwrite")
    wait_for(lambda: exec_(cluster, "cat", "/etc/podinfo/labels") == 'app="reader"\ntier="db"', timeout=30,
             message="downward API labels follow the pod")


@needs_busybox
def test_a_missing_source_keeps_the_pod_creating_until_it_exists(cluster):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "waiter"},
           "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"],
                                    "volumeMounts": [{"name": "v", "mountPath": "/cfg"}]}],
                    "volumes": [{"name": "v", "configMap": {"name": "later"}}]}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(pod))

    def waiting():
        st = json.loads(cluster.kubectl("get", "pod", "waiter", "-o", "json").stdout).get("status", {})
        w = ((st.get("containerStatuses") or [{}])[0].get("state") or {}).get("waiting") or {}
        return st.get("phase") == "Pending" and 'configmap "later" not found' in w.get("message", "") and w

    w = wait_for(waiting, timeout=30, message="waiting for its ConfigMap")
    assert w["reason"] == "ContainerCreating"
    cluster.kubectl("create", "configmap", "later", "--from-literal=k=v")
    wait_for(lambda: "1/1" in cluster.kubectl("get", "pod", "waiter").stdout, timeout=30, message="running once it exists")
    assert cluster.kubectl("exec", "waiter", "--", "cat", "/cfg/k").stdout == "v"


SERVER = '''
import json, os
from http.server import BaseHTTPRequestHandler, HTTPServer

VERSION = "1"

class Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        parent = request["parent"]
        child = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": parent["metadata"]["name"] + "-greeting"},
                 "data": {"greeting": "hello " + parent["spec"]["who"], "served-by": os.environ["HOSTNAME"]}}
        body = json.dumps({"status": {"greeted": True}, "children": [child]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

HTTPServer(("", 8000), Hook).serve_forever()
'''

HOOK_DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "greeter", "namespace": "hooks"},
    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "greeter"}},
             "template": {"metadata": {"labels": {"app": "greeter"}},
                          "spec": {"containers": [{"name": "hook", "image": "python:3.11", "command": ["python", "/app/server.py"],
                                                   "ports": [{"containerPort": 8000, "name": "http"}],
                                                   "readinessProbe": {"tcpSocket": {"port": 8000}, "periodSeconds": 1},
                                                   "volumeMounts": [{"name": "src", "mountPath": "/app"}]}],
                                   "volumes": [{"name": "src", "configMap": {"name": "greeter-src"}}]}}},
}

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "greetings.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"kind": "Greeting", "plural": "greetings", "singular": "greeting"},
             "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {"who": {"type": "string"}}},
                               "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]},
}

CONTROLLER = {
    "apiVersion": "universalcontroller.njuics.cn/v1alpha1", "kind": "UniversalController", "metadata": {"name": "greeter"},
    "spec": {"parentResource": {"apiVersion": "example.com/v1", "resource": "greetings"},
             "childResources": [{"apiVersion": "v1", "resource": "configmaps", "updateStrategy": {"method": "InPlace"}}],
             "generateSelector": True,
             "hooks": {"sync": {"webhook": {"url": "http://greeter.hooks/sync"}}}},
}


@pytest.mark.skipif(shutil.which("python3") is None, reason="needs python3")
def test_a_python_hook_deployed_as_a_pod_serves_a_controller_by_its_service_name(cluster):
    cluster.kubectl("create", "namespace", "hooks")
    cluster.kubectl("-n", "hooks", "create", "configmap", "greeter-src", f"--from-literal=server.py={SERVER}")
    cluster.kubectl("apply", "-f", "-", input=json.dumps(HOOK_DEPLOYMENT))
    cluster.kubectl("-n", "hooks", "expose", "deployment", "greeter", "--port=80", "--target-port=8000")
    cluster.kubectl("rollout", "status", "-n", "hooks", "deployment/greeter", "--timeout=60s")
    cluster.kubectl("apply", "-f", "-", input=json.dumps(CRD))
    wait_for(lambda: cluster.kubectl("get", "greetings", check=False).returncode == 0, message="the CRD served")
    cluster.kubectl("apply", "-f", "-", input=json.dumps(CONTROLLER))
    cluster.kubectl("apply", "-f", "-", input=json.dumps(
        {"apiVersion": "example.com/v1", "kind": "Greeting", "metadata": {"name": "world"}, "spec": {"who": "world"}}))

    def child():
        r = cluster.kubectl("get", "configmap", "world-greeting", "-o", "json", check=False)
        return r.returncode == 0 and json.loads(r.stdout)["data"]

    data = wait_for(child, timeout=60, message="the hook's child")
    assert data["greeting"] == "hello world" and data["served-by"].startswith("greeter-")
    pod = json.loads(cluster.kubectl("-n", "hooks", "get", "pods", "-l", "app=greeter", "-o", "json").stdout)["items"][0]
    name = pod["metadata"]["name"]
    assert pod["status"]["containerStatuses"][0]["image"] == "python:3.11"
    # Editing the ConfigMap updates the mounted source.
    edited = SERVER.replace('VERSION = "1"', 'VERSION = "2"')
    patch = json.dumps({"data": {"server.py": edited}})
    cluster.kubectl("-n", "hooks", "patch", "configmap", "greeter-src", "--type=merge", "-p", patch)
    wait_for(lambda: 'VERSION = "2"' in cluster.kubectl("-n", "hooks", "exec", name, "--", "cat", "/app/server.py").stdout,
             timeout=30, message="the mounted file updated")
