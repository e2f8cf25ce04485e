"""Kubernetes' network model: each pod in a network namespace of its own, with its own address and port
space on the cluster's bridge. Two pods and a Service all listening on 0.0.0.0:80 run side by side;
pods reach each other, Services, the cluster DNS and the API server (through the `kubernetes` Service,
with the credentials the ServiceAccount admission mounts) — and nothing of the machine: not its
loopback, not the world (the range is `unreachable` beyond uc's bridges), not an address the machine
already uses."""

import json
import os
import shutil
import subprocess
import urllib.request

import pytest

from conftest import free_port, uc_binary, wait_for

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None or not os.path.exists("/usr/lib/cni/bridge"),
    reason="needs root, bubblewrap and the CNI plugins (.ci/run installs them)")

SERVER = """
import http.server, os, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(os.environ["POD_NAME"].encode())
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()
"""


def web_pod(name, bind="0.0.0.0", port=80, labels=None):
    """A pod serving its name; ready once its port answers on the pod's address (a server on the pod's
    loopback gets no probe: nothing outside the pod reaches it)."""
    container = {"name": "web", "image": "python:3.11", "command": ["python", "-c", SERVER, bind, str(port)],
                 "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}
    if bind == "0.0.0.0":
        container["readinessProbe"] = {"tcpSocket": {"port": port}, "periodSeconds": 1}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {"app": "web"}},
            "spec": {"containers": [container]}}


def apply(cluster, *objects):
    cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))


def get(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def in_pod(cluster, pod, code):
    """What a Python snippet prints inside a pod's container."""
    return cluster.kubectl("exec", pod, "--", "python", "-c", code).stdout.strip()


def cidr_of(cluster):
    subnet = open(f"{cluster.data_dir}/pod-subnet").read().strip()
    return f"10.{subnet}.0.0/16", f"uc-br-10-{subnet}"


def test_two_pods_and_a_service_on_port_80_each_answer_on_their_own_address(cluster):
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
               "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
    apply(cluster, web_pod("web-a"), web_pod("web-b"), service)
    cluster.kubectl("wait", "pod", "web-a", "web-b", "--for=condition=Ready", "--timeout=60s")
    pods = json.loads(cluster.kubectl("get", "pods", "-o", "json").stdout)["items"]
    ips = {p["metadata"]["name"]: p["status"]["podIP"] for p in pods}
    cidr, bridge = cidr_of(cluster)
    prefix = cidr.removesuffix("0.0/16")
    assert all(ip.startswith(prefix) for ip in ips.values()) and len(set(ips.values())) == 2, ips
    # From the machine, each on its own address; through the Service, both.
    for name, ip in ips.items():
        assert get(f"http://{ip}/") == name
    cluster_ip = cluster.kubectl("get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}").stdout
    assert cluster_ip.startswith(prefix)
    assert {get(f"http://{cluster_ip}/") for _ in range(6)} == {"web-a", "web-b"}
    # From a pod: the other by address, the Service by its DNS name.
    fetch = "import urllib.request as u, sys; print(u.urlopen(sys.argv[1], timeout=5).read().decode())"
    assert cluster.kubectl("exec", "web-a", "--", "python", "-c", fetch, f"http://{ips['web-b']}/").stdout.strip() == "web-b"
    seen = {cluster.kubectl("exec", "web-a", "--", "python", "-c", fetch, "http://web.default.svc.cluster.local/").stdout.strip()
            for _ in range(6)}
    assert seen == {"web-a", "web-b"}, "a pod reaches itself through its Service too"
    # Each pod in a network namespace of its own, none the machine's.
    host = os.readlink("/proc/self/ns/net")
    namespaces = {in_pod(cluster, p, "import os; print(os.readlink('/proc/self/ns/net'))") for p in ips}
    assert len(namespaces) == 2 and host not in namespaces, namespaces
    addrs = "import socket, fcntl, struct; s = socket.socket(); print(socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, struct.pack('256s', b'eth0'))[20:24]))"
    assert in_pod(cluster, "web-a", addrs) == ips["web-a"], "eth0 holds the pod's address"


def test_a_pod_reaches_the_api_server_through_the_kubernetes_service_with_its_mounted_credentials(cluster):
    cluster.kubectl("create", "serviceaccount", "reader")
    cluster.kubectl("create", "role", "pods", "--verb=list", "--resource=pods")
    cluster.kubectl("create", "rolebinding", "reader", "--role=pods", "--serviceaccount=default:reader")
    pod = web_pod("client")
    pod["spec"]["serviceAccountName"] = "reader"
    apply(cluster, pod)
    cluster.kubectl("wait", "pod", "client", "--for=condition=Ready", "--timeout=60s")
    spec = json.loads(cluster.kubectl("get", "pod", "client", "-o", "json").stdout)["spec"]
    mounts = spec["containers"][0]["volumeMounts"]
    assert [m["mountPath"] for m in mounts] == ["/var/run/secrets/kubernetes.io/serviceaccount"], mounts
    # The Python client as a pod uses it: in-cluster configuration, nothing else.
    code = """
import os
from kubernetes import client, config
config.load_incluster_config()
print(os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"])
print(" ".join(sorted(p.metadata.name for p in client.CoreV1Api().list_namespaced_pod("default").items)))
try:
    client.CoreV1Api().list_namespaced_secret("default")
except client.ApiException as e:
    print(e.status)
"""
    out = in_pod(cluster, "client", code).splitlines()
    kubernetes_ip = cluster.kubectl("get", "svc", "kubernetes", "-o", "jsonpath={.spec.clusterIP}").stdout
    assert out == [f"{kubernetes_ip} 443", "client", "403"], out


def test_a_pod_cannot_reach_the_machine_loopback_nor_leave_the_machine(cluster):
    apply(cluster, web_pod("tenant"))
    cluster.kubectl("wait", "pod", "tenant", "--for=condition=Ready", "--timeout=60s")
    api_port = int(cluster.server_and_token()[0].rsplit(":", 1)[1])
    kubelet_port = json.loads(cluster.kubectl("get", "node", "-o", "json").stdout)["items"][0]["status"][
        "daemonEndpoints"]["kubeletEndpoint"]["Port"]
    probe = """
import socket, sys
for port in sys.argv[1:]:
    try:
        socket.create_connection(("127.0.0.1", int(port)), timeout=2).close(); print(port, "open")
    except OSError as e:
        print(port, "closed")
"""
    out = cluster.kubectl("exec", "tenant", "--", "python", "-c", probe, str(api_port), str(kubelet_port)).stdout
    assert out.split() == [str(api_port), "closed", str(kubelet_port), "closed"], out
    # The machine would not forward a pod's packet for the world (asked of the routing table, nothing sent).
    ip = cluster.kubectl("get", "pod", "tenant", "-o", "jsonpath={.status.podIP}").stdout
    cidr, bridge = cidr_of(cluster)
    r = subprocess.run(["ip", "route", "get", "203.0.113.7", "from", ip, "iif", bridge], capture_output=True, text=True)
    assert r.returncode != 0 and "unreachable" in r.stderr.lower(), (r.stdout, r.stderr)
    routes = subprocess.run(["ip", "route", "show", cidr], capture_output=True, text=True).stdout
    assert "unreachable" in routes and bridge in routes, routes


def test_port_forward_reaches_a_pod_loopback_that_the_machine_cannot(cluster):
    apply(cluster, web_pod("private", bind="127.0.0.1", port=8080))
    cluster.kubectl("wait", "pod", "private", "--for=condition=Ready", "--timeout=60s")
    listening = "import socket; socket.create_connection(('127.0.0.1', 8080), timeout=2).close(); print('up')"
    wait_for(lambda: cluster.kubectl("exec", "private", "--", "python", "-c", listening, check=False).stdout.strip() == "up",
             timeout=30, message="the server listening on the pod's loopback")
    ip = cluster.kubectl("get", "pod", "private", "-o", "jsonpath={.status.podIP}").stdout
    with pytest.raises(OSError):
        get(f"http://{ip}:8080/")
    fwd = subprocess.Popen(["kubectl", "port-forward", "pod/private", ":8080"], env=cluster.env(), stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
    try:
        line = fwd.stdout.readline()
        local = int(line.split("127.0.0.1:")[1].split()[0])
        assert get(f"http://127.0.0.1:{local}/") == "private"
    finally:
        fwd.kill()


def test_the_network_goes_at_a_clean_stop_and_survives_a_kill(make_cluster):
    c = make_cluster()
    apply(c, web_pod("survivor"))
    c.kubectl("wait", "pod", "survivor", "--for=condition=Ready", "--timeout=60s")
    uid = c.kubectl("get", "pod", "survivor", "-o", "jsonpath={.metadata.uid}").stdout
    ip = c.kubectl("get", "pod", "survivor", "-o", "jsonpath={.status.podIP}").stdout
    cidr, bridge = cidr_of(c)
    c.kill9()
    assert os.path.exists(f"/run/netns/uc-{uid}") and get(f"http://{ip}/") == "survivor", "the pod outlives uc"
    c.start()
    wait_for(lambda: c.kubectl("get", "pod", "survivor", "-o", "jsonpath={.status.containerStatuses[0].ready}").stdout
             == "true", timeout=60, message="the pod re-adopted")
    assert c.kubectl("get", "pod", "survivor", "-o", "jsonpath={.status.containerStatuses[0].restartCount}").stdout == "0"
    assert get(f"http://{ip}/") == "survivor"
    assert c.stop() == 0
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    rules = subprocess.run(["ip", "rule"], capture_output=True, text=True).stdout
    routes = subprocess.run(["ip", "route", "show", "table", "all"], capture_output=True, text=True).stdout
    assert bridge not in links and bridge not in rules and cidr.removesuffix("/16") not in routes, (links, rules)
    assert not os.path.exists(f"/run/netns/uc-{uid}")
    c.proc = None


def test_a_range_the_machine_uses_or_another_uc_holds_is_refused(make_cluster, tmp_path):
    taken = subprocess.run(["ip", "-j", "-4", "addr"], capture_output=True, text=True).stdout
    outside = next(a["local"] for link in json.loads(taken) for a in link["addr_info"] if link["ifname"] != "lo")
    a, b = outside.split(".")[:2]
    r = subprocess.run([uc_binary(), "up", "--data-dir", str(tmp_path / "clash"), "--port", "0", "--operators", "none",
                        "--pod-cidr", f"{a}.{b}.0.0/16"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and f"the pod range {a}.{b}.0.0/16 overlaps" in r.stderr, r.stderr[-2000:]
    first = make_cluster()
    cidr, _ = cidr_of(first)
    r = subprocess.run([uc_binary(), "up", "--data-dir", str(tmp_path / "twin"), "--port", "0", "--operators", "none",
                        "--pod-cidr", cidr], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "another uc on this machine uses the pod range" in r.stderr, r.stderr[-2000:]


def test_a_host_port_reaches_the_pod_on_the_node_address(cluster):
    cluster.kubectl("create", "namespace", "infra")
    cluster.kubectl("label", "namespace", "infra", "pod-security.kubernetes.io/enforce=privileged")
    port = free_port()
    pod = web_pod("edge")
    pod["metadata"]["namespace"] = "infra"
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": port}]
    apply(cluster, pod)
    cluster.kubectl("-n", "infra", "wait", "pod", "edge", "--for=condition=Ready", "--timeout=60s")
    assert wait_for(lambda: _try(f"http://127.0.0.1:{port}/"), timeout=10, message="the hostPort") == "edge"


def _try(url):
    try:
        return get(url)
    except OSError:
        return None


def test_a_node_port_reaches_the_service_pods_on_the_node_address(cluster):
    apply(cluster, web_pod("np-a", labels={"app": "np"}))
    cluster.kubectl("wait", "pod", "np-a", "--for=condition=Ready", "--timeout=60s")
    cluster.kubectl("expose", "pod", "np-a", "--name=np", "--type=NodePort", "--port=8080", "--target-port=80")
    port = json.loads(cluster.kubectl("get", "svc", "np", "-o", "json").stdout)["spec"]["ports"][0]["nodePort"]
    assert 30000 <= port <= 32767
    assert wait_for(lambda: _try(f"http://127.0.0.1:{port}/"), timeout=10, message="the node port") == "np-a"
    # Taken is taken; an update keeps it; ClusterIP gives it up.
    clash = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "clash"},
             "spec": {"type": "NodePort", "selector": {"app": "np"}, "ports": [{"port": 80, "nodePort": port}]}}
    r = cluster.kubectl("apply", "-f", "-", input=json.dumps(clash), check=False)
    assert r.returncode != 0 and f"spec.ports[0].nodePort: Invalid value: {port}: provided port is already allocated" in r.stderr
    cluster.kubectl("label", "svc", "np", "touched=yes")
    assert json.loads(cluster.kubectl("get", "svc", "np", "-o", "json").stdout)["spec"]["ports"][0]["nodePort"] == port
    cluster.kubectl("patch", "svc", "np", "--type=merge", "-p", '{"spec":{"type":"ClusterIP"}}')
    assert "nodePort" not in json.loads(cluster.kubectl("get", "svc", "np", "-o", "json").stdout)["spec"]["ports"][0]
    assert wait_for(lambda: _try(f"http://127.0.0.1:{port}/") is None, timeout=10, message="the node port closed")
