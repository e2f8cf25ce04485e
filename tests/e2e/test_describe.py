"""`kubectl describe` reads as on a kubeadm cluster: the same fields, filled in (probe timings, the
pod's priority and tolerations, a claim's status), and the Events kubelet, the scheduler and
kube-controller-manager record, with their reasons and sources.

The expected fields and reasons are those `kubectl describe` (1.33) prints on a kubeadm cluster for
the same objects; values that differ by nature (addresses, container runtime ids, ages) are not
compared."""

import os
import re

import pytest

from conftest import wait_for

pytestmark = pytest.mark.skipif(not os.path.exists("/bin/busybox"), reason="needs Debian's busybox (.ci/run installs it)")

POD_FIELDS = ["Name", "Namespace", "Priority", "Service Account", "Node", "Start Time", "Labels", "Annotations",
              "Status", "IP", "IPs", "Containers", "Conditions", "Volumes", "QoS Class", "Node-Selectors",
              "Tolerations", "Events"]
CONTAINER_FIELDS = ["Container ID", "Image", "Image ID", "Port", "Host Port", "Command", "State", "Last State",
                    "Ready", "Restart Count", "Liveness", "Environment", "Mounts"]
POD_CONDITIONS = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
DEPLOYMENT_FIELDS = ["Name", "Namespace", "CreationTimestamp", "Labels", "Annotations", "Selector", "Replicas",
                     "StrategyType", "MinReadySeconds", "RollingUpdateStrategy", "Pod Template", "Conditions",
                     "OldReplicaSets", "NewReplicaSet", "Events"]


def top_fields(text, indent=""):
    """The `Field:` labels at one indentation."""
    return [m.group(1) for m in re.finditer(rf"^{indent}([A-Z][A-Za-z -]+):", text, re.M)]


def events(text):
    """(reason, from) of each row of the Events table."""
    table = text.split("Events:", 1)[1]
    return [(m.group(2), m.group(3)) for m in re.finditer(r"^  (Normal|Warning)\s+(\S+)\s+.+?\s{2,}(\S+)\s{2,}", table, re.M)]


def test_describe_pod_and_deployment_as_on_kubeadm(cluster):
    cluster.kubectl("apply", "-f", "-", input="""
apiVersion: v1
kind: Pod
metadata: {name: shaky}
spec:
  containers:
  - name: app
    image: busybox
    command: [sleep, "3600"]
    ports: [{containerPort: 8080}]
    livenessProbe: {exec: {command: ["false"]}, periodSeconds: 1, failureThreshold: 1}
""")
    wanted = {"Scheduled", "Pulled", "Created", "Started", "Unhealthy", "Killing", "BackOff"}
    repeated = r"Unhealthy\s+\S+ \(x\d+ over \S+\)\s+kubelet\s+Liveness probe failed"
    text = wait_for(lambda: (t := cluster.kubectl("describe", "pod", "shaky").stdout)
                    and wanted <= {r for r, _ in events(t)} and re.search(repeated, t) and t,
                    timeout=60, message="a restarting pod's Events, repeats counted")
    assert top_fields(text) == POD_FIELDS, text
    assert [f for f in top_fields(text, "    ") if f in CONTAINER_FIELDS] == CONTAINER_FIELDS, text
    assert re.search(r"Liveness:\s+exec \[false\] delay=0s timeout=1s period=1s #success=1 #failure=1", text), text
    assert re.search(r"^Priority:\s+0$", text, re.M), text
    assert "node.kubernetes.io/not-ready:NoExecute op=Exists for 300s" in text
    conditions = text.split("Conditions:", 1)[1].split("Volumes:", 1)[0]
    assert [line.split()[0] for line in conditions.strip().splitlines()[1:]] == POD_CONDITIONS, conditions
    sources = dict(events(text))
    assert sources["Scheduled"] == "default-scheduler" and sources["Started"] == "kubelet", sources
    assert re.search(r"Back-off restarting failed container app in pod shaky_default\(", text), text
    # Repeats are counted on one Event (above), as client-go's recorder aggregates them.
    assert len(re.findall(r"Liveness probe failed", text)) == 1, text

    cluster.kubectl("create", "deployment", "web", "--image=busybox", "--replicas=2", "--", "sleep", "3600")
    cluster.kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    cluster.kubectl("scale", "deployment/web", "--replicas=1")
    text = wait_for(lambda: (t := cluster.kubectl("describe", "deployment", "web").stdout) and "Scaled down" in t and t,
                    timeout=30, message="the scale-down Event")
    assert top_fields(text) == DEPLOYMENT_FIELDS, text
    assert re.search(r"ScalingReplicaSet\s+\S+\s+deployment-controller\s+Scaled up replica set web-\w+ from 0 to 2", text), text
    assert re.search(r"Scaled down replica set web-\w+ from 2 to 1", text), text
    rs = cluster.kubectl("describe", "rs", "-l", "app=web").stdout
    assert re.search(r"SuccessfulCreate\s+\S+\s+replicaset-controller\s+Created pod: web-", rs), rs
    assert re.search(r"SuccessfulDelete\s+\S+\s+replicaset-controller\s+Deleted pod: web-", rs), rs

    cluster.kubectl("apply", "-f", "-", input="""
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
""")
    # Bound (no PersistentVolume objects are made: kubectl shows Capacity and Access Modes only for a
    # claim naming its volume, so those stay blank).
    wait_for(lambda: re.search(r"^Status:\s+Bound$", cluster.kubectl("describe", "pvc", "data").stdout, re.M),
             timeout=30, message="the claim Bound")
