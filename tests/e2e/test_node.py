"""The node agent: pods are bound to the embedded node and run (simulated) through their lifecycle."""

import json

from conftest import wait_for


def pod_status(cluster, name):
    r = cluster.kubectl("get", "pod", name, "-o", "json", check=False)
    return json.loads(r.stdout)["status"] if r.returncode == 0 else None


def test_node_is_registered_and_ready(cluster):
    out = cluster.kubectl("get", "nodes").stdout.splitlines()
    assert out[0].split()[:3] == ["NAME", "STATUS", "ROLES"]
    assert out[1].split()[:3] == ["uc-node", "Ready", "uc"]


def test_simulated_pods_run_and_become_ready(cluster):
    cluster.kubectl("run", "web", "--image=nginx", "--annotations=uc.njuics.cn/ready-delay-seconds=1")
    pod = json.loads(cluster.kubectl("get", "pod", "web", "-o", "json").stdout)
    status = wait_for(lambda: (s := pod_status(cluster, "web")) and s.get("phase") == "Running" and s, message="Running")
    assert status["podIP"].startswith("127.1.")
    assert json.loads(cluster.kubectl("get", "pod", "web", "-o", "json").stdout)["spec"]["nodeName"] == "uc-node"
    wait_for(lambda: pod_status(cluster, "web")["containerStatuses"][0]["ready"], message="Ready after its delay")
    cluster.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=10s")
    assert pod["metadata"]["uid"]


def test_exit_codes_and_restart_policies(cluster):
    cluster.kubectl("run", "ok", "--image=busybox", "--restart=Never",
                    "--annotations=uc.njuics.cn/run-seconds=0.5", "--annotations=uc.njuics.cn/exit-code=0")
    cluster.kubectl("run", "bad", "--image=busybox", "--restart=Never",
                    "--annotations=uc.njuics.cn/run-seconds=0.5", "--annotations=uc.njuics.cn/exit-code=3")
    cluster.kubectl("run", "crashy", "--image=busybox", "--restart=OnFailure",
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
