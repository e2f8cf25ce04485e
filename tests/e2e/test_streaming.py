"""exec, attach, port-forward, cp and logs against pods that run processes, with kubectl and the
Python client, and the answers a simulated pod or an SPDY-only client get."""

import json
import os
import re
import select
import socket
import subprocess
import time
import urllib.request

import pytest

from conftest import pod_network, wait_for
from test_etcd import NAME, create_cluster

needs_etcd = pytest.mark.skipif(not (os.path.exists("/usr/bin/etcd") and os.path.exists("/usr/bin/etcdctl")),
                                reason="needs Debian's etcd-server and etcd-client (.ci/run installs them)")
needs_busybox = pytest.mark.skipif(not os.path.exists("/bin/busybox"), reason="needs Debian's busybox (.ci/run installs it)")


def etcdctl_env():
    return {**os.environ, "ETCDCTL_API": "3"}


@needs_etcd
def test_kubectl_exec_port_forward_and_cp_into_etcd(cluster, tmp_path):
    create_cluster(cluster)
    pod = f"{NAME}-0000"
    r = cluster.kubectl("exec", pod, "--", "etcdctl", "--endpoints", f"http://{pod}.{NAME}:2379", "endpoint", "health",
                        check=False)
    assert r.returncode == 0, r.stderr
    assert "is healthy" in r.stdout + r.stderr, "the member's name resolves inside the container"
    r = cluster.kubectl("exec", pod, "--", "sh", "-c", "exit 3", check=False)
    assert r.returncode == 3
    assert "command terminated with exit code 3" in r.stderr
    r = cluster.kubectl("exec", "-i", pod, "--", "sh", "-c", "tr a-z A-Z; echo done >&2", input="from stdin\n")
    assert r.stdout == "FROM STDIN\n" and "done" in r.stderr, "stdin reaches the command and its end closes it"
    # The container's volumes and environment are what exec sees.
    env = cluster.kubectl("exec", pod, "--", "sh", "-c", "ls /var/etcd; echo $POD_NAME").stdout.split()
    assert env == ["data", pod]
    # kubectl cp (tar through exec) out of the container.
    cluster.kubectl("exec", pod, "--", "sh", "-c", "echo copied > /var/etcd/note.txt")
    cluster.kubectl("cp", f"{pod}:/var/etcd/note.txt", str(tmp_path / "note.txt"))
    assert (tmp_path / "note.txt").read_text() == "copied\n"
    # port-forward (SPDY inside a WebSocket, kubectl's default), then etcdctl through the local port.
    pf = cluster.kubectl_bg("port-forward", f"pod/{pod}", "0:2379")
    try:
        line = pf.stdout.readline()
        port = int(re.search(r"127\.0\.0\.1:(\d+)", line).group(1))
        for key in ["a", "b"]:
            r = subprocess.run(["etcdctl", f"--endpoints=127.0.0.1:{port}", "put", f"pf-{key}", "v"],
                               capture_output=True, text=True, env=etcdctl_env(), timeout=30)
            assert r.returncode == 0, r.stderr
        r = subprocess.run(["etcdctl", f"--endpoints=127.0.0.1:{port}", "get", "pf-", "--prefix", "--keys-only"],
                           capture_output=True, text=True, env=etcdctl_env(), timeout=30)
        assert r.stdout.split() == ["pf-a", "pf-b"]
    finally:
        pf.terminate()
        pf.wait()
    # The same with kubectl's older SPDY port-forwarding.
    env = {**cluster.env(), "PORT_FORWARD_WEBSOCKETS": "false"}
    pf = subprocess.Popen(["kubectl", "port-forward", f"pod/{pod}", "0:2379"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env)
    try:
        port = int(re.search(r"127\.0\.0\.1:(\d+)", pf.stdout.readline()).group(1))
        r = subprocess.run(["etcdctl", f"--endpoints=127.0.0.1:{port}", "get", "pf-a", "--print-value-only"],
                           capture_output=True, text=True, env=etcdctl_env(), timeout=30)
        assert r.stdout.strip() == "v", r.stderr
    finally:
        pf.terminate()
        pf.wait()


@needs_busybox
def test_python_clients_stdin_text_frames_and_the_base64_protocol(cluster):
    """The Python client writes stdin as text frames (its own e2e suite's `test_pod_apis`); clients of
    `v4.base64.channel.k8s.io` read and write every channel in base64 text."""
    import base64

    import websocket
    from kubernetes import client as k8s
    from kubernetes.stream import stream

    cluster.kubectl("run", "sh", "--image=busybox", "--restart=Never", "--", "sleep", "3600")
    cluster.kubectl("wait", "pod/sh", "--for=condition=Ready", "--timeout=60s")
    core = k8s.CoreV1Api(cluster.api_client())
    ws = stream(core.connect_post_namespaced_pod_exec, "sh", "default", command=["/bin/sh"],
                stderr=True, stdin=True, stdout=True, tty=False, _preload_content=False)
    ws.write_stdin("echo test string 1\n")
    assert ws.readline_stdout(timeout=20) == "test string 1"
    ws.write_stdin("exit 3\n")
    ws.run_forever(timeout=20)
    assert ws.returncode == 3

    server, token = cluster.server_and_token()
    url = server.replace("https://", "wss://") + \
        "/api/v1/namespaces/default/pods/sh/exec?command=cat&stdin=true&stdout=true&stderr=true"
    sock = websocket.create_connection(url, header=[f"Authorization: Bearer {token}"],
                                       subprotocols=["v4.base64.channel.k8s.io"], sslopt={"cert_reqs": 0}, timeout=20)
    assert sock.subprotocol == "v4.base64.channel.k8s.io"
    sock.send("0" + base64.b64encode(b"over base64\n").decode())
    stdout = b""
    while b"over base64\n" not in stdout:
        frame = sock.recv()
        assert isinstance(frame, str) and frame, f"base64 framing answers in text: {frame!r}"
        if frame[0] == "1":
            stdout += base64.b64decode(frame[1:])
    assert stdout == b"over base64\n"
    sock.close()


@needs_busybox
def test_exec_and_logs_at_once_when_the_pod_says_running(cluster):
    """A pod is Running once every container has started, and then exec and `logs -f` work at once
    (kube-rs's `pod_can_exec_and_write_to_stdin`, `can_get_pod_logs_and_evict` do just that)."""
    from kubernetes import client as k8s
    from kubernetes import watch
    from kubernetes.stream import stream

    core = k8s.CoreV1Api(cluster.api_client())
    core.create_namespaced_pod("default", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "quick"},
        "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "containers": [
            {"name": "count", "image": "busybox", "command": ["sh", "-c", "for i in 1 2 3; do echo kube $i; sleep 0.3; done"]}]}})
    w = watch.Watch()
    seen = []
    for ev in w.stream(core.list_namespaced_pod, "default", field_selector="metadata.name=quick", timeout_seconds=30):
        status = ev["object"].status
        seen.append((status.phase, [c.state.waiting.reason for c in status.container_statuses or [] if c.state.waiting]))
        if status.phase == "Running":
            w.stop()
            break
    assert all(not waiting for phase, waiting in seen if phase == "Running"), f"Running with a container waiting: {seen}"
    follow = core.read_namespaced_pod_log("quick", "default", follow=True, _preload_content=False)
    out = stream(core.connect_get_namespaced_pod_exec, "quick", "default", command=["sh", "-c", "echo from exec"],
                 stderr=True, stdin=False, stdout=True, tty=False)
    assert out == "from exec\n", out
    assert follow.data == b"kube 1\nkube 2\nkube 3\n"


@needs_etcd
def test_python_client_exec_and_port_forward(cluster):
    from kubernetes import client as k8s
    from kubernetes.stream import portforward, stream

    create_cluster(cluster)
    pod = f"{NAME}-0001"
    core = k8s.CoreV1Api(cluster.api_client())
    out = stream(core.connect_get_namespaced_pod_exec, pod, "default", command=["sh", "-c", "echo $HOSTNAME"],
                 stderr=True, stdin=False, stdout=True, tty=False)
    assert out.strip() == pod
    ws = stream(core.connect_get_namespaced_pod_exec, pod, "default", command=["sh", "-c", "exit 7"],
                stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False)
    ws.run_forever(timeout=20)
    assert ws.returncode == 7
    pf = portforward(core.connect_get_namespaced_pod_portforward, pod, "default", ports="2379")
    s = pf.socket(2379)
    s.setblocking(True)
    s.sendall(b"GET /version HTTP/1.0\r\n\r\n")
    data = b""
    while b"etcdserver" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    assert b"etcdserver" in data, data


def test_simulated_pods_and_spdy_only_clients_get_clear_answers(cluster):
    cluster.kubectl("run", "sim", "--image=alpine")
    wait_for(lambda: cluster.kubectl("get", "pod", "sim", "-o", "jsonpath={.status.phase}").stdout == "Running",
             message="Running")
    r = cluster.kubectl("exec", "sim", "--", "true", check=False)
    assert r.returncode != 0 and "is simulated by uc-node" in r.stderr and "no process" in r.stderr, r.stderr
    r = cluster.kubectl("port-forward", "pod/sim", "0:80", check=False, timeout=20)
    assert r.returncode != 0 and "is simulated by uc-node" in r.stderr, r.stderr
    cluster.kubectl("run", "web", "--image=uc/http-server", "--", "--port", "8080")
    wait_for(lambda: "1/1" in cluster.kubectl("get", "pod", "web").stdout, message="web Ready")
    env = {**cluster.env(), "KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"}
    r = subprocess.run(["kubectl", "exec", "web", "--", "true"], capture_output=True, text=True, env=env, timeout=30)
    assert r.returncode != 0 and "SPDY/3.1 only" in r.stderr, r.stderr


@needs_busybox
def test_logs_follow_ends_with_the_container_and_take_kubectls_options(cluster):
    # A second between lines: kubectl sends --since-time with second precision.
    script = "for i in 1 2 3 4 5; do echo line $i; sleep 1.1; done; echo to-stderr >&2"
    cluster.kubectl("run", "talker", "--image=busybox", "--restart=Never", "--", "sh", "-c", script)
    started = time.time()
    r = cluster.kubectl("logs", "-f", "talker", timeout=60, check=False)
    # -f may start before the container does: retry until it streams.
    deadline = time.time() + 30
    while "waiting to start" in r.stderr and time.time() < deadline:
        time.sleep(0.2)
        r = cluster.kubectl("logs", "-f", "talker", timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"line {i}" for i in range(1, 6)] + ["to-stderr"], "ends when the container exits"
    assert time.time() - started < 50
    wait_for(lambda: "Completed" in cluster.kubectl("get", "pod", "talker").stdout, message="Completed")
    stamped = cluster.kubectl("logs", "talker", "--timestamps").stdout.splitlines()
    assert len(stamped) == 6 and all(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z line|\S+Z to-stderr", s) for s in stamped), stamped
    third = stamped[2].split()[0]
    since = cluster.kubectl("logs", "talker", f"--since-time={third}").stdout.splitlines()
    assert since == ["line 3", "line 4", "line 5", "to-stderr"]
    assert cluster.kubectl("logs", "talker", "--limit-bytes=9").stdout == "line 1\nli"
    assert cluster.kubectl("logs", "talker", "--tail=2").stdout.splitlines() == ["line 5", "to-stderr"]
    # --previous: the log of the run before a restart.
    cluster.kubectl("run", "again", "--image=busybox", "--restart=Always", "--", "sh", "-c", "echo run; sleep 0.5; exit 1")
    wait_for(lambda: (json.loads(cluster.kubectl("get", "pod", "again", "-o", "json").stdout)["status"]
                      .get("containerStatuses") or [{}])[0].get("restartCount", 0) >= 1, message="a restart")
    assert cluster.kubectl("logs", "again", "--previous").stdout == "run\n"


@needs_busybox
def test_attach_streams_the_containers_output(cluster):
    cluster.kubectl("run", "ticker", "--image=busybox", "--", "sh", "-c", "i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done")
    wait_for(lambda: "1/1" in cluster.kubectl("get", "pod", "ticker").stdout, message="ticker Ready")
    p = cluster.kubectl_bg("attach", "ticker")
    lines = []
    try:
        deadline = time.time() + 30
        while len(lines) < 3 and time.time() < deadline:
            ready, _, _ = select.select([p.stdout], [], [], 1)
            if ready:
                line = p.stdout.readline()
                if not line:
                    break
                lines.append(line)
    finally:
        p.terminate()
        p.wait()
    assert len(lines) == 3, f"attach streamed: {lines}; {p.stderr.read()}"
    numbers = [int(line.split()[1]) for line in lines]
    assert numbers == sorted(numbers) and numbers[0] > 1, f"output from now on: {lines}"


def test_service_cluster_ips_reach_their_pods(cluster):
    cluster.kubectl("create", "deployment", "hello", "--image=uc/http-server", "--port=8080", "--",
                    "/uc/http-server", "--port", "8080", "--text", "through the cluster IP")
    cluster.kubectl("expose", "deployment", "hello", "--port=80", "--target-port=8080")
    svc = json.loads(cluster.kubectl("get", "svc", "hello", "-o", "json").stdout)
    ip = svc["spec"]["clusterIP"]
    prefix = re.escape(pod_network(cluster)[0])
    assert re.match(prefix + r"(24\d|25[0-5])\.\d+$", ip) and svc["spec"]["clusterIPs"] == [ip], ip

    def answer():
        try:
            with urllib.request.urlopen(f"http://{ip}:80/", timeout=3) as r:
                return r.read().decode()
        except OSError:
            return None

    assert wait_for(answer, timeout=30, message="the Service answers").strip() == "through the cluster IP"
    r = cluster.kubectl("patch", "svc", "hello", "--type=merge", "-p", '{"spec":{"clusterIP":"127.0.0.9"}}', check=False)
    assert r.returncode != 0 and "spec.clusterIP" in r.stderr and "immutable" in r.stderr
    with socket.create_connection((ip, 80), timeout=5):
        pass


@needs_busybox
def test_kubectl_debug_adds_an_ephemeral_container_to_a_running_pod(cluster):
    cluster.kubectl("run", "app", "--image=busybox", "--restart=Never", "--", "sleep", "3600")
    wait_for(lambda: "Running" in cluster.kubectl("get", "pod", "app").stdout, timeout=30, message="app running")
    cluster.kubectl("debug", "app", "--image=busybox", "--container=debugger", "--target=app", "--",
                    "sh", "-c", "echo debugging $HOSTNAME; sleep 3599")

    def running():
        pod = json.loads(cluster.kubectl("get", "pod", "app", "-o", "json").stdout)
        statuses = pod["status"].get("ephemeralContainerStatuses") or []
        return any(s["name"] == "debugger" and "running" in s["state"] for s in statuses) and pod

    pod = wait_for(running, timeout=30, message="the debugger runs")
    assert [c["name"] for c in pod["spec"]["ephemeralContainers"]] == ["debugger"]
    assert pod["status"]["containerStatuses"][0]["ready"], "the pod's own container goes on"
    wait_for(lambda: "debugging app" in cluster.kubectl("logs", "app", "-c", "debugger").stdout, timeout=30,
             message="the debugger's log")
    assert cluster.kubectl("exec", "app", "-c", "debugger", "--", "echo", "inside").stdout.strip() == "inside"
    # --target: the debugger shares the target's processes (its PID namespace), as a runtime does.
    seen = cluster.kubectl("exec", "app", "-c", "debugger", "--", "sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '").stdout
    assert "sleep 3600" in seen and "sleep 3599" in seen, seen
    # Ephemeral containers are added, never changed.
    pod["spec"]["ephemeralContainers"][0]["image"] = "other"
    r = cluster.kubectl("replace", "--raw", "/api/v1/namespaces/default/pods/app/ephemeralcontainers", "-f", "-",
                        input=json.dumps(pod), check=False)
    assert r.returncode != 0 and "may not be changed" in r.stderr, r.stderr
