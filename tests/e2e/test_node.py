"""The node agent: pods are bound to the embedded node and run, as real processes (allowlisted images) or simulated."""

import json
import os
import shutil

import pytest

from conftest import pod_network, wait_for
from test_rbac import as_user


def pod_status(cluster, name):
    r = cluster.kubectl("get", "pod", name, "-o", "json", check=False)
    return json.loads(r.stdout)["status"] if r.returncode == 0 else None


def test_node_is_registered_and_ready(cluster):
    out = cluster.kubectl("get", "nodes").stdout.splitlines()
    assert out[0].split()[:3] == ["NAME", "STATUS", "ROLES"]
    assert out[1].split()[:3] == ["uc-node", "Ready", "uc"]
    # The machine as a kubelet reports it: its OS image, kernel release and boot id, read here too.
    info = json.loads(cluster.kubectl("get", "node", "uc-node", "-o", "json").stdout)["status"]["nodeInfo"]
    assert info["kernelVersion"] == os.uname().release, info
    with open("/proc/sys/kernel/random/boot_id") as f:
        assert info["bootID"] == f.read().strip(), info
    pretty = [line.split("=", 1)[1].strip().strip('"') for line in open("/etc/os-release") if line.startswith("PRETTY_NAME=")]
    assert info["osImage"] == (pretty or ["Linux"])[0], info
    # Its CPUs and memory, as a kubelet counts them: allocatable memory less the 100Mi eviction threshold.
    status = json.loads(cluster.kubectl("get", "node", "uc-node", "-o", "json").stdout)["status"]
    mem_kib = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal:"))
    assert status["capacity"]["cpu"] == str(len(os.sched_getaffinity(0)) if not os.path.exists("/sys/devices/system/cpu/online")
                                            else online_cpus()), status["capacity"]
    assert status["capacity"]["memory"] == f"{mem_kib}Ki", status["capacity"]
    assert status["allocatable"]["memory"] == f"{mem_kib - 102400}Ki", status["allocatable"]


def online_cpus():
    """The number of CPUs /sys/devices/system/cpu/online lists (`0-3,6` is 5)."""
    count = 0
    for part in open("/sys/devices/system/cpu/online").read().strip().split(","):
        low, _, high = part.partition("-")
        count += int(high or low) - int(low) + 1
    return count


def test_simulated_pods_run_and_become_ready(cluster):
    cluster.kubectl("run", "web", "--image=nginx", "--annotations=uc.njuics.cn/ready-delay-seconds=1")
    pod = json.loads(cluster.kubectl("get", "pod", "web", "-o", "json").stdout)
    status = wait_for(lambda: (s := pod_status(cluster, "web")) and s.get("phase") == "Running" and s, message="Running")
    assert status["podIP"].startswith(pod_network(cluster)[0])
    assert json.loads(cluster.kubectl("get", "pod", "web", "-o", "json").stdout)["spec"]["nodeName"] == "uc-node"
    wait_for(lambda: pod_status(cluster, "web")["containerStatuses"][0]["ready"], message="Ready after its delay")
    cluster.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=10s")
    assert pod["metadata"]["uid"]


def test_exit_codes_and_restart_policies(cluster):
    cluster.kubectl("run", "ok", "--image=alpine", "--restart=Never",
                    "--annotations=uc.njuics.cn/run-seconds=0.5", "--annotations=uc.njuics.cn/exit-code=0")
    cluster.kubectl("run", "bad", "--image=alpine", "--restart=Never",
                    "--annotations=uc.njuics.cn/run-seconds=0.5", "--annotations=uc.njuics.cn/exit-code=3")
    cluster.kubectl("run", "crashy", "--image=alpine", "--restart=OnFailure",
                    "--annotations=uc.njuics.cn/run-seconds=0.3", "--annotations=uc.njuics.cn/exit-code=1")
    wait_for(lambda: (pod_status(cluster, "ok") or {}).get("phase") == "Succeeded", message="Succeeded")
    bad = wait_for(lambda: (s := pod_status(cluster, "bad")) and s.get("phase") == "Failed" and s, message="Failed")
    assert bad["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    crashy = wait_for(lambda: (s := pod_status(cluster, "crashy")) and s["containerStatuses"][0]["restartCount"] >= 2 and s,
                      message="restarts", timeout=15)
    assert crashy["phase"] == "Running"
    assert crashy["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 1
    rows = {line.split()[0]: line.split()[2] for line in cluster.kubectl("get", "pods").stdout.splitlines()[1:]}
    assert (rows["ok"], rows["bad"]) == ("Completed", "Error")


def test_deleted_pods_go(cluster):
    cluster.kubectl("run", "gone", "--image=nginx")
    wait_for(lambda: (pod_status(cluster, "gone") or {}).get("phase") == "Running", message="Running")
    cluster.kubectl("delete", "pod", "gone", "--timeout=10s")
    assert pod_status(cluster, "gone") is None


HELLO = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: hello}
spec:
  replicas: 2
  selector: {matchLabels: {app: hello}}
  strategy: {rollingUpdate: {maxUnavailable: 1, maxSurge: 0}}
  template:
    metadata: {labels: {app: hello}}
    spec:
      containers:
      - name: web
        image: uc/http-server:1
        args: ["--port", "8080", "--text", "hi from $(POD_NAME)"]
        ports: [{containerPort: 8080, name: http}]
        readinessProbe: {httpGet: {path: /, port: http}, periodSeconds: 1}
"""


def environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read()
    except OSError:
        return b""


def processes(pattern):
    import subprocess

    r = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    return [int(p) for p in r.stdout.split()]


def test_allowlisted_image_runs_a_real_process(cluster):
    import os
    import signal
    import threading
    import time
    import urllib.request

    cluster.kubectl("create", "deployment", "hello", "--image=uc/http-server:1", "--replicas=2", "--port=8080")
    probe = {"spec": {"template": {"spec": {"containers": [{"name": "http-server",
             "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1}}]}}}}
    cluster.kubectl("patch", "deployment", "hello", "-p", json.dumps(probe))
    cluster.kubectl("rollout", "status", "deploy/hello", "--timeout=60s")

    def live_pods():
        items = json.loads(cluster.kubectl("get", "pods", "-l", "app=hello", "-o", "json").stdout)["items"]
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]

    # Pods of the replaced ReplicaSet may still be Terminating for a moment.
    pods = wait_for(lambda: (ps := live_pods()) and len(ps) == 2 and ps, message="two live pods")
    assert all(p["status"]["containerStatuses"][0]["ready"] for p in pods)
    assert all(p["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"] == 8080 for p in pods)
    pod = pods[0]
    name, ip = pod["metadata"]["name"], pod["status"]["podIP"]
    with urllib.request.urlopen(f"http://{ip}:8080/probe-me", timeout=5) as r:
        assert r.read().decode().strip() == "hello from uc"
    logs = cluster.kubectl("logs", name).stdout
    assert "GET /probe-me" in logs and "GET / HTTP/1.0" in logs, "the probe and the request reached the real process"
    # Killing the process restarts it and bumps restartCount; its old output stays as --previous.
    pid = next(p for p in processes("uc http-server") if f"POD_NAME={name}".encode() in environ(p))
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: json.loads(cluster.kubectl("get", "pod", name, "-o", "json").stdout)["status"]["containerStatuses"][0]["restartCount"] == 1,
             message="restartCount 1")
    assert "GET /probe-me" in cluster.kubectl("logs", name, "--previous").stdout
    cluster.kubectl("rollout", "status", "deploy/hello", "--timeout=60s")
    # A new image tag rolls the pods without dropping below replicas - maxUnavailable (25% of 2 = 0): every
    # status the Deployment had from the change until the rollout finished (a watch from before the change).
    from kubernetes import client, watch
    apps = client.AppsV1Api(cluster.api_client())
    since = apps.read_namespaced_deployment("hello", "default").metadata.resource_version
    cluster.kubectl("set", "image", "deploy/hello", "http-server=uc/http-server:2")
    available = []
    for ev in watch.Watch().stream(apps.list_namespaced_deployment, "default", field_selector="metadata.name=hello",
                                   resource_version=since, timeout_seconds=90):
        d = ev["object"]
        available.append(d.status.available_replicas or 0)
        if (d.status.observed_generation == d.metadata.generation and d.status.updated_replicas == 2
                and d.status.replicas == 2 and d.status.available_replicas == 2):
            break
    assert d.spec.template.spec.containers[0].image == "uc/http-server:2" and d.status.updated_replicas == 2, \
        f"the rollout did not finish: {available}"
    assert min(available) >= 2, f"availability dropped during the rollout: {available}"
    wait_for(lambda: {p["spec"]["containers"][0]["image"] for p in live_pods()} == {"uc/http-server:2"}, message="all pods on the new image")
    cluster.kubectl("delete", "deploy", "hello")
    wait_for(lambda: [p for p in processes("uc http-server") if b"POD_NAME=hello-" in environ(p)] == [],
             message="processes stopped")


def test_image_not_on_the_allowlist_never_executes(cluster, tmp_path):
    marker = tmp_path / "executed"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sneaky"},
           "spec": {"containers": [{"name": "c", "image": "alpine", "command": ["/bin/sh", "-c", f"touch {marker}"]}]}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(pod))
    status = wait_for(lambda: (s := pod_status(cluster, "sneaky")) and s.get("phase") == "Running" and s, message="Running (simulated)")
    assert status["reason"] == "Simulated" and "allowlist" in status["message"]
    # `kubectl get` shows a running pod's own reason, as kube's printer does: a simulated pod says so.
    wait_for(lambda: cluster.kubectl("get", "pod", "sneaky", "--no-headers").stdout.split()[1:3] == ["1/1", "Simulated"],
             message="STATUS Simulated")
    assert not marker.exists()


NAMED = """
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {clusterIP: None, selector: {app: named}, ports: [{port: 8080}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  replicas: 3
  serviceName: web
  selector: {matchLabels: {app: named}}
  template:
    metadata: {labels: {app: named}}
    spec:
      containers:
      - name: web
        image: uc/http-server
        args: ["--port", "8080"]
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
"""


def test_pod_and_service_names_resolve_inside_pods(cluster):
    import urllib.request

    cluster.kubectl("apply", "-f", "-", input=NAMED)
    wait_for(lambda: json.loads(cluster.kubectl("get", "sts", "web", "-o", "json").stdout).get("status", {}).get("readyReplicas") == 3,
             timeout=40, message="3 ready")
    ips = {p["metadata"]["name"]: p["status"]["podIP"] for p in json.loads(cluster.kubectl("get", "pods", "-l", "app=named", "-o", "json").stdout)["items"]}

    def resolve(name):
        with urllib.request.urlopen(f"http://{ips['web-0']}:8080/resolve/{name}", timeout=5) as r:
            return r.read().decode().split()

    assert resolve("web-2.web.default.svc.cluster.local") == [ips["web-2"]]
    wait_for(lambda: sorted(resolve("web.default.svc")) == sorted(ips.values()), message="the Service name lists the ready pods")
    with open("/etc/hosts") as f:
        assert "web-2.web" not in f.read(), "the machine's /etc/hosts is untouched"


@pytest.mark.skipif(not os.path.exists("/bin/busybox") or os.geteuid() != 0,
                    reason="needs Debian's busybox, and root (port 53, mount namespaces)")
def test_pods_resolve_cluster_names_through_the_nodes_dns(cluster):
    """A name that appears after a process first looked resolves at once through the node's DNS server
    (hosts files alone left Go programs, such as etcd, with a copy up to five seconds old)."""
    probe = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dns-probe"},
             "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}]}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(probe))
    cluster.kubectl("wait", "pod/dns-probe", "--for=condition=Ready", "--timeout=60s")
    dns = pod_network(cluster)[1]
    conf = cluster.kubectl("exec", "dns-probe", "--", "cat", "/etc/resolv.conf").stdout
    lines = [line for line in conf.splitlines() if not line.startswith("#")]
    assert lines[0] == f"nameserver {dns}", conf
    assert "search default.svc.cluster.local svc.cluster.local cluster.local" in conf and "options ndots:5" in conf, conf
    with open("/etc/resolv.conf") as f:
        assert dns not in f.read(), "the machine's resolv.conf is untouched"

    def nslookup(name):
        return cluster.kubectl("exec", "dns-probe", "--", "nslookup", name, check=False)

    missing = nslookup("late.default.svc.cluster.local")
    assert missing.returncode != 0 and "NXDOMAIN" in missing.stdout + missing.stderr, missing
    cluster.kubectl("create", "service", "clusterip", "late", "--tcp=80:80")
    ip = json.loads(cluster.kubectl("get", "svc", "late", "-o", "json").stdout)["spec"]["clusterIP"]
    found = wait_for(lambda: (r := nslookup("late.default.svc.cluster.local")).returncode == 0 and r.stdout,
                     message="the new Service's name")
    assert f"Address: {ip}" in found, found


def test_claim_directories_outlive_pods(cluster, tmp_path):
    mount = str(tmp_path / "www")  # what the process sees; the data lives under the data dir
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "vol"},
           "spec": {"replicas": 1, "serviceName": "vol", "selector": {"matchLabels": {"app": "vol"}},
                    "template": {"metadata": {"labels": {"app": "vol"}},
                                 "spec": {"containers": [{"name": "c", "image": "uc/http-server",
                                                          "args": ["--port", "8080", "--touch", f"{mount}/started"],
                                                          "volumeMounts": [{"name": "www", "mountPath": mount}],
                                                          "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1}}]}},
                    "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(sts))
    data = f"{cluster.data_dir}/volumes/default/www-vol-0/started"

    def lines():
        try:
            return open(data).read().splitlines()
        except FileNotFoundError:
            return []

    wait_for(lambda: lines() == ["started vol-0"], timeout=30, message="the process wrote into its claim")
    uid = json.loads(cluster.kubectl("get", "pod", "vol-0", "-o", "json").stdout)["metadata"]["uid"]
    cluster.kubectl("delete", "pod", "vol-0")
    wait_for(lambda: (p := json.loads(cluster.kubectl("get", "pod", "vol-0", "-o", "json", check=False).stdout or "{}")) and p.get("metadata", {}).get("uid") != uid,
             timeout=30, message="vol-0 recreated")
    wait_for(lambda: lines() == ["started vol-0", "started vol-0"], timeout=30, message="the claim kept its data across the pod's deletion")
    assert not (tmp_path / "www" / "started").exists(), "the bind mount is private to the pod's processes"


def test_liveness_probe_restarts_a_dead_container(cluster):
    # The process listens on 8080; the liveness probe checks 9999, so it always fails.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "unlive"},
           "spec": {"containers": [{"name": "c", "image": "uc/http-server", "args": ["--port", "8080"],
                                    "livenessProbe": {"tcpSocket": {"port": 9999}, "periodSeconds": 1, "failureThreshold": 2}}]}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(pod))
    wait_for(lambda: ((pod_status(cluster, "unlive") or {}).get("containerStatuses") or [{}])[0].get("restartCount", 0) >= 1,
             timeout=30, message="restarted by the liveness probe")


ETCD = """
apiVersion: v1
kind: Pod
metadata: {name: etcd-0}
spec:
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: etcd
    image: quay.io/coreos/etcd:v3.4.23
    command: ["/usr/local/bin/etcd"]
    args: ["--name", "$(POD_NAME)", "--data-dir", "/var/lib/uc-etcd-test",
           "--listen-client-urls", "http://$(POD_IP):2379", "--advertise-client-urls", "http://$(POD_IP):2379",
           "--listen-peer-urls", "http://$(POD_IP):2380", "--initial-advertise-peer-urls", "http://$(POD_IP):2380",
           "--initial-cluster", "$(POD_NAME)=http://$(POD_IP):2380"]
    volumeMounts: [{name: data, mountPath: /var/lib/uc-etcd-test}]
    readinessProbe: {httpGet: {path: /health, port: 2379}, periodSeconds: 1}
"""


@pytest.mark.skipif(shutil.which("etcd") is None, reason="etcd (Debian etcd-server) is not installed")
def test_etcd_runs_from_the_system_package(cluster):
    import urllib.request

    cluster.kubectl("apply", "-f", "-", input=ETCD)
    cluster.kubectl("wait", "--for=condition=Ready", "pod/etcd-0", "--timeout=60s")
    ip = pod_status(cluster, "etcd-0")["podIP"]
    with urllib.request.urlopen(f"http://{ip}:2379/health", timeout=5) as r:
        assert json.loads(r.read())["health"] == "true"
    assert "etcd-0" in cluster.kubectl("logs", "etcd-0").stdout


@pytest.mark.skipif(not os.path.exists("/usr/share/zookeeper/bin/zkServer.sh"), reason="Debian zookeeper is not installed")
def test_zookeeper_runs_from_the_system_package(cluster, tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # The configuration from a ConfigMap, the data on an emptyDir: a container sees nothing of the machine's.
    cfg = f"tickTime=2000\ndataDir=/data\nclientPort={port}\nadmin.enableServer=false\n"
    cluster.kubectl("create", "configmap", "zk-conf", f"--from-literal=zoo.cfg={cfg}")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "zk-0"},
           "spec": {"volumes": [{"name": "conf", "configMap": {"name": "zk-conf"}}, {"name": "data", "emptyDir": {}}],
                    "containers": [{"name": "zk", "image": "zookeeper:3.8", "args": ["start-foreground", "/conf/zoo.cfg"],
                                    "volumeMounts": [{"name": "conf", "mountPath": "/conf"}, {"name": "data", "mountPath": "/data"}],
                                    "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 1}}]}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(pod))
    cluster.kubectl("wait", "--for=condition=Ready", "pod/zk-0", "--timeout=90s")
    ip = pod_status(cluster, "zk-0")["podIP"]
    with socket.create_connection((ip, port), timeout=5) as s:
        s.sendall(b"srvr")
        assert b"Mode: standalone" in s.recv(512)


@pytest.mark.skipif(not os.path.exists("/bin/busybox"), reason="needs Debian's busybox (.ci/run installs it)")
def test_an_images_working_directory_environment_and_user_from_the_node_config(make_cluster, tmp_path):
    """What an image's config gives (WORKDIR, ENV, USER), declared in node.json for an allowlisted image:
    a container that names none gets the image's; one that names its own keeps it."""
    data = tmp_path / "uc"
    data.mkdir()
    (data / "node.json").write_text(json.dumps({"allowlist": [{
        "images": ["example.com/app"], "program": "/bin/busybox", "runtime": True, "multiCall": True,
        "workingDir": "/tmp", "env": {"GREETING": "from-the-image", "KEPT": "image"}, "user": "1234:1234"}]}))
    cluster = make_cluster(data_dir=str(data))
    script = 'echo "$(pwd) $(id -u) $GREETING $KEPT"; sleep 3600'
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "image-config"},
           "spec": {"containers": [
               {"name": "defaults", "image": "example.com/app:1.0", "command": ["sh", "-c", script]},
               {"name": "own", "image": "example.com/app:1.0", "command": ["sh", "-c", script], "workingDir": "/",
                "env": [{"name": "GREETING", "value": "from-the-pod"}],
                "securityContext": {"runAsUser": 4321}}]}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(pod))
    cluster.kubectl("wait", "pod/image-config", "--for=condition=Ready", "--timeout=60s")
    said = lambda c: wait_for(lambda: cluster.kubectl("logs", "image-config", "-c", c).stdout.strip(),  # noqa: E731
                              timeout=20, message=f"{c} says what it runs as")
    assert said("defaults") == "/tmp 1234 from-the-image image"
    assert said("own") == "/ 4321 from-the-pod image"


def test_a_pod_naming_another_scheduler_waits_for_its_binding(cluster):
    """A pod whose `schedulerName` is not uc's waits until that scheduler binds it through `pods/binding`
    (the Python client's `create_namespaced_pod_binding`, as client-go's `Bind`), then runs; a binding
    naming another uid, and a second binding, are refused."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    def pod(name, scheduler=None):
        spec = {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}]}
        if scheduler:
            spec["schedulerName"] = scheduler
        return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})

    def get(name):
        return json.loads(cluster.kubectl("get", "pod", name, "-o", "json").stdout)

    cluster.kubectl("apply", "-f", "-", input=pod("custom", "my-scheduler"))
    # The node handles pods in the order it sees them: once a pod made after it is bound, the node has
    # seen this one and left it alone.
    cluster.kubectl("apply", "-f", "-", input=pod("ordinary"))
    wait_for(lambda: get("ordinary")["spec"].get("nodeName"), timeout=30, message="the ordinary pod bound")
    assert "nodeName" not in get("custom")["spec"], "left for its scheduler"
    node = json.loads(cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"][0]["metadata"]["name"]
    core = client.CoreV1Api(cluster.api_client())
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "custom"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
    # A binding that names another pod's uid (the pod it saw, since deleted and made again) binds nothing.
    stale = dict(binding, metadata={"name": "custom", "uid": "00000000-0000-4000-8000-000000000000"})
    try:
        core.create_namespaced_pod_binding("custom", "default", stale, _preload_content=False)
        raise AssertionError("a binding for another uid was accepted")
    except ApiException as e:
        uid = get("custom")["metadata"]["uid"]
        assert e.status == 409 and (f"Precondition failed: UID in precondition: {stale['metadata']['uid']}, "
                                    f"UID in object meta: {uid}") in e.body, e.body
    assert "nodeName" not in get("custom")["spec"], "a refused binding binds nothing"
    core.create_namespaced_pod_binding("custom", "default", binding, _preload_content=False)
    running = wait_for(lambda: (p := get("custom"))["status"].get("phase") == "Running" and p, timeout=60,
                       message="the bound pod running")
    assert running["spec"]["nodeName"] == node
    try:
        core.create_namespaced_pod_binding("custom", "default", binding, _preload_content=False)
        raise AssertionError("a second binding was accepted")
    except ApiException as e:
        assert e.status == 409 and f'pod custom is already assigned to node \\"{node}\\"' in e.body, e.body
    # The older `POST namespaces/<ns>/bindings` names the pod in the Binding's own name. A tenant who may
    # make pods may not bind them; the scheduler's account may.
    cluster.kubectl("apply", "-f", "-", input=pod("legacy", "my-scheduler"))
    cluster.kubectl("create", "serviceaccount", "dev")
    cluster.kubectl("create", "role", "pods", "--verb=get,list,create", "--resource=pods")
    cluster.kubectl("create", "rolebinding", "pods", "--role=pods", "--serviceaccount=default:dev")
    token = cluster.kubectl("create", "token", "dev").stdout.strip()
    legacy = dict(binding, metadata={"name": "legacy"})
    r = as_user(cluster, "create", "-f", "-", token=token, input=json.dumps(legacy), check=False)
    assert r.returncode != 0 and ('bindings is forbidden: User "system:serviceaccount:default:dev" cannot create '
                                  'resource "bindings" in API group "" in the namespace "default"') in r.stderr, r.stderr
    assert "nodeName" not in get("legacy")["spec"], "a refused binding binds nothing"
    core.create_namespaced_binding("default", legacy, _preload_content=False)
    wait_for(lambda: get("legacy")["status"].get("phase") == "Running", timeout=60, message="the pod bound by name")
    assert get("legacy")["spec"]["nodeName"] == node
    verbs = cluster.kubectl("api-resources", "--api-group=", "-o", "wide").stdout
    assert any(l.split() == ["bindings", "v1", "true", "Binding", "create"] for l in verbs.splitlines()), verbs
