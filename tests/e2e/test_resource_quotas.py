"""ResourceQuotas (core/v1) as kube serves and enforces them, driven with kubectl: a quota's status says
what its namespace uses (kept current as objects come and go), `kubectl get quota` and `describe quota`
show it, and the admission plugin refuses what would go beyond it in its words — a pod over a compute
quota or without the requests it must state, one object too many, a claim that grows too much. Tried as a
tenant too: it cannot lift its quota, and a Deployment that wants more pods than the quota allows gets
what fits, its ReplicaSet saying why the rest were refused."""

import json

import yaml

from conftest import wait_for
from test_pod_security import tenant
from test_rbac import as_user


def refused(cluster, *args, body=None):
    r = cluster.kubectl(*args, input=body, check=False)
    assert r.returncode != 0, f"{args} was accepted"
    return r.stderr


def pod(name, cpu=None, memory=None):
    container = {"name": "app", "image": "busybox", "command": ["sleep", "3600"]}
    requests = {k: v for k, v in {"cpu": cpu, "memory": memory}.items() if v}
    if requests:
        container["resources"] = {"requests": requests}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container]}}


def status(cluster, name, ns):
    return json.loads(cluster.kubectl("get", "quota", name, "-n", ns, "-o", "json").stdout).get("status", {})


def used_becomes(cluster, name, ns, used):
    return wait_for(lambda: status(cluster, name, ns).get("used") == used, timeout=30,
                    message=f"quota {name} using {used} (has {status(cluster, name, ns)})")


def test_a_compute_quota_counts_pods_and_refuses_what_goes_beyond_it(cluster):
    cluster.kubectl("create", "namespace", "quoted")
    cluster.kubectl("create", "quota", "compute", "-n", "quoted", "--hard=pods=2,requests.cpu=1,requests.memory=1Gi")
    used_becomes(cluster, "compute", "quoted", {"pods": "0", "requests.cpu": "0", "requests.memory": "0"})
    assert status(cluster, "compute", "quoted")["hard"] == {"pods": "2", "requests.cpu": "1", "requests.memory": "1Gi"}
    table = cluster.kubectl("get", "quota", "-n", "quoted").stdout.splitlines()
    assert table[0].split() == ["NAME", "AGE", "REQUEST", "LIMIT"], table
    assert "pods: 0/2, requests.cpu: 0/1, requests.memory: 0/1Gi" in table[1], table

    err = refused(cluster, "create", "-n", "quoted", "-f", "-", body=yaml.safe_dump(pod("vague")))
    assert ('pods "vague" is forbidden: failed quota: compute: must specify requests.cpu for: app; '
            'requests.memory for: app') in err, err
    cluster.kubectl("create", "-n", "quoted", "-f", "-", input=yaml.safe_dump(pod("first", "600m", "256Mi")))
    used_becomes(cluster, "compute", "quoted", {"pods": "1", "requests.cpu": "600m", "requests.memory": "256Mi"})
    described = cluster.kubectl("describe", "quota", "compute", "-n", "quoted").stdout
    assert any(line.split() == ["requests.cpu", "600m", "1"] for line in described.splitlines()), described

    err = refused(cluster, "create", "-n", "quoted", "-f", "-", body=yaml.safe_dump(pod("second", "600m", "256Mi")))
    assert ('pods "second" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, '
            'used: requests.cpu=600m, limited: requests.cpu=1') in err, err
    # What the first pod used comes back when it goes.
    cluster.kubectl("delete", "pod", "first", "-n", "quoted", "--wait=false")
    used_becomes(cluster, "compute", "quoted", {"pods": "0", "requests.cpu": "0", "requests.memory": "0"})
    cluster.kubectl("create", "-n", "quoted", "-f", "-", input=yaml.safe_dump(pod("second", "600m", "256Mi")))


def test_object_counts_and_storage_are_held_to_their_quota(cluster):
    cluster.kubectl("create", "namespace", "counted")
    cluster.kubectl("create", "quota", "objects", "-n", "counted",
                    "--hard=services=1,services.nodeports=0,requests.storage=2Gi")
    used_becomes(cluster, "objects", "counted", {"services": "0", "services.nodeports": "0", "requests.storage": "0"})
    cluster.kubectl("create", "service", "clusterip", "one", "--tcp=80:80", "-n", "counted")
    err = refused(cluster, "create", "service", "clusterip", "two", "--tcp=80:80", "-n", "counted")
    assert ('services "two" is forbidden: exceeded quota: objects, requested: services=1, used: services=1, '
            'limited: services=1') in err, err

    def claim(size):
        return yaml.safe_dump({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                               "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}})

    err = refused(cluster, "create", "-n", "counted", "-f", "-", body=claim("3Gi"))
    assert "exceeded quota: objects, requested: requests.storage=3Gi, used: requests.storage=0, limited: requests.storage=2Gi" in err, err
    cluster.kubectl("create", "-n", "counted", "-f", "-", input=claim("1Gi"))
    used_becomes(cluster, "objects", "counted", {"services": "1", "services.nodeports": "0", "requests.storage": "1Gi"})

    err = refused(cluster, "create", "quota", "bad", "-n", "counted", "--hard=pods=1500m")
    assert 'spec.hard[pods]: Invalid value: "1500m": must be an integer' in err, err


def test_a_tenant_cannot_lift_its_quota_and_its_deployment_gets_what_fits(cluster):
    token = tenant(cluster, ns="metered")
    cluster.kubectl("create", "quota", "pods", "-n", "metered", "--hard=pods=2")
    used_becomes(cluster, "pods", "metered", {"pods": "0"})
    sa = "system:serviceaccount:metered:dev"
    for args in (["delete", "quota", "pods"], ["patch", "quota", "pods", "-p", '{"spec":{"hard":{"pods":"100"}}}']):
        r = as_user(cluster, "-n", "metered", *args, token=token, check=False)
        assert r.returncode != 0 and f'User "{sa}" cannot' in r.stderr, r.stderr

    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "wide"},
              "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "wide"}},
                       "template": {"metadata": {"labels": {"app": "wide"}}, "spec": pod("x")["spec"]}}}
    as_user(cluster, "-n", "metered", "create", "-f", "-", token=token, input=yaml.safe_dump(deploy))

    def replica_failure():
        sets = json.loads(cluster.kubectl("get", "rs", "-n", "metered", "-l", "app=wide", "-o", "json").stdout)["items"]
        for rs in sets:
            for c in rs.get("status", {}).get("conditions") or []:
                if c["type"] == "ReplicaFailure":
                    return rs, c
        return None

    rs, condition = wait_for(replica_failure, timeout=60, message="the ReplicaSet's ReplicaFailure condition")
    assert condition["reason"] == "FailedCreate", condition
    assert "is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2" in condition["message"]
    used_becomes(cluster, "pods", "metered", {"pods": "2"})
    pods = json.loads(cluster.kubectl("get", "pods", "-n", "metered", "-l", "app=wide", "-o", "json").stdout)["items"]
    assert len(pods) == 2, [p["metadata"]["name"] for p in pods]
