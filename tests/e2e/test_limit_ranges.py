"""LimitRanges (core/v1) as kube serves them and kube's LimitRanger admission applies them, driven with
kubectl: kube's defaults and refusals of a range, `kubectl get limits` and `describe limits`, a new pod's
containers given the defaults they leave out (named in the `kubernetes.io/limit-ranger` annotation), pods
and claims outside the bounds refused in the plugin's words, and the QoS class a pod's resources make —
given at creation, shown by `kubectl describe pod`, kept by the node once the pod runs. And the ranges
tried as a tenant who may create pods and Deployments in one namespace would try to get round them: its
own range, deleting the admin's, a pod over the bounds, a Deployment whose pods are over them (its
ReplicaSet then reports the refusal as kube-controller-manager does: a `FailedCreate` Event and a
`ReplicaFailure` condition, which the Deployment shows too)."""

import json

import yaml

from conftest import wait_for
from test_pod_security import tenant
from test_rbac import as_user


def refused(cluster, *args, body=None):
    r = cluster.kubectl(*args, input=body, check=False)
    assert r.returncode != 0, f"{args} was accepted"
    return r.stderr


def create(cluster, obj, ns="default"):
    made = cluster.kubectl("create", "-n", ns, "-f", "-", "-o", "json", input=yaml.safe_dump(obj))
    return json.loads(made.stdout)


def limit_range(name, *items):
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": name}, "spec": {"limits": list(items)}}


def pod(name, **resources):
    container = {"name": "app", "image": "busybox", "command": ["sleep", "3600"]}
    if resources:
        container["resources"] = resources
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container]}}


def test_a_ranges_defaults_reach_new_pods_and_its_bounds_refuse_them(cluster):
    cluster.kubectl("create", "namespace", "bounded")
    made = create(cluster, limit_range("cpu-mem", {"type": "Container", "max": {"cpu": "800m", "memory": "1Gi"},
                                                   "min": {"cpu": "100m"}, "defaultRequest": {"memory": "256Mi"}}),
                  ns="bounded")
    item = made["spec"]["limits"][0]
    assert item["default"] == {"cpu": "800m", "memory": "1Gi"}, "kube's defaults: the max"
    assert item["defaultRequest"] == {"cpu": "800m", "memory": "256Mi"}, "the default limit where none is given"
    table = cluster.kubectl("get", "limits", "-n", "bounded").stdout.splitlines()
    assert table[0].split() == ["NAME", "CREATED", "AT"] and table[1].split()[0] == "cpu-mem", table
    described = cluster.kubectl("describe", "limits", "cpu-mem", "-n", "bounded").stdout
    assert "Container   cpu" in described and "800m" in described, described

    plain = create(cluster, pod("plain"), ns="bounded")
    resources = plain["spec"]["containers"][0]["resources"]
    assert resources == {"limits": {"cpu": "800m", "memory": "1Gi"}, "requests": {"cpu": "800m", "memory": "256Mi"}}
    assert plain["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app")
    assert plain["status"]["qosClass"] == "Burstable"

    err = refused(cluster, "create", "-n", "bounded", "-f", "-",
                  body=yaml.safe_dump(pod("greedy", limits={"cpu": "1500m"})))
    assert 'pods "greedy" is forbidden: maximum cpu usage per Container is 800m, but limit is 1500m' in err, err
    err = refused(cluster, "create", "-n", "bounded", "-f", "-",
                  body=yaml.safe_dump(pod("tiny", requests={"cpu": "50m"})))
    assert "minimum cpu usage per Container is 100m, but request is 50m" in err, err
    # A request above the default limit the range gives: the pod's own validation refuses it.
    err = refused(cluster, "create", "-n", "bounded", "-f", "-",
                  body=yaml.safe_dump(pod("lopsided", requests={"memory": "2Gi"})))
    assert ('spec.containers[0].resources.requests[memory]: Invalid value: "2Gi": '
            "must be less than or equal to memory limit of 1Gi") in err, err
    # Another namespace has no range: nothing set.
    free = create(cluster, pod("free"))
    assert free["spec"]["containers"][0]["resources"] == {}
    assert "kubernetes.io/limit-ranger" not in free["metadata"].get("annotations", {})
    assert free["status"]["qosClass"] == "BestEffort"


def test_ranges_are_refused_with_kubes_field_paths(cluster):
    err = refused(cluster, "create", "-f", "-", body=yaml.safe_dump(
        limit_range("upside-down", {"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}})))
    assert "spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than max value 1" in err, err
    err = refused(cluster, "create", "-f", "-", body=yaml.safe_dump(
        limit_range("pod-defaults", {"type": "Pod", "default": {"cpu": "1"}})))
    assert "spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'" in err, err
    err = refused(cluster, "create", "-f", "-", body=yaml.safe_dump(limit_range("odd", {"type": "Box"})))
    assert "must be a standard limit type or fully qualified" in err, err
    assert "upside-down" not in cluster.kubectl("get", "limits").stdout


def test_a_claim_is_held_to_its_namespaces_storage_bounds(cluster):
    create(cluster, limit_range("storage", {"type": "PersistentVolumeClaim", "max": {"storage": "2Gi"},
                                            "min": {"storage": "1Gi"}}))

    def claim(name, size):
        return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}}

    err = refused(cluster, "create", "-f", "-", body=yaml.safe_dump(claim("big", "5Gi")))
    assert ('persistentvolumeclaims "big" is forbidden: maximum storage usage per PersistentVolumeClaim '
            "is 2Gi, but request is 5Gi") in err, err
    made = create(cluster, claim("fits", "1Gi"))
    assert made["spec"]["resources"]["requests"]["storage"] == "1Gi"


def test_a_pods_qos_class_is_given_at_creation_and_kept_while_it_runs(cluster):
    both = {"cpu": "100m", "memory": "64Mi"}
    guaranteed = create(cluster, pod("steady", limits=both))
    assert guaranteed["spec"]["containers"][0]["resources"]["requests"] == both, "kube's default: requests = limits"
    assert guaranteed["status"]["qosClass"] == "Guaranteed"
    burstable = create(cluster, pod("bursty", requests={"cpu": "100m"}))
    assert burstable["status"]["qosClass"] == "Burstable"

    def running():
        p = json.loads(cluster.kubectl("get", "pod", "steady", "-o", "json").stdout)
        return p if p["status"].get("phase") == "Running" else None

    assert wait_for(running, timeout=60, message="steady running")["status"]["qosClass"] == "Guaranteed"
    assert "QoS Class:                   Guaranteed" in cluster.kubectl("describe", "pod", "steady").stdout


def test_a_tenant_cannot_get_round_its_namespaces_ranges(cluster):
    token = tenant(cluster, ns="capped")
    create(cluster, limit_range("cap", {"type": "Container", "max": {"cpu": "500m"}}), ns="capped")

    def as_tenant(*args, body=None):
        r = as_user(cluster, "-n", "capped", *args, token=token, input=body, check=False)
        assert r.returncode != 0, f"the tenant could {args}"
        return r.stderr

    sa = "system:serviceaccount:capped:dev"
    err = as_tenant("delete", "limits", "cap")
    assert f'User "{sa}" cannot delete resource "limitranges" in API group "" in the namespace "capped"' in err, err
    loose = limit_range("loose", {"type": "Container", "max": {"cpu": "64"}})
    err = as_tenant("create", "-f", "-", body=yaml.safe_dump(loose))
    assert f'User "{sa}" cannot create resource "limitranges"' in err, err
    err = as_tenant("create", "-f", "-", body=yaml.safe_dump(pod("greedy", limits={"cpu": "2"})))
    assert 'pods "greedy" is forbidden: maximum cpu usage per Container is 500m, but limit is 2' in err, err

    # The template of a Deployment is not a pod: it is stored, and its ReplicaSet's pods are refused.
    template = pod("x", limits={"cpu": "2"})
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "greedy"},
              "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "greedy"}},
                       "template": {"metadata": {"labels": {"app": "greedy"}}, "spec": template["spec"]}}}
    as_user(cluster, "-n", "capped", "create", "-f", "-", token=token, input=yaml.safe_dump(deploy))

    def failed_create():
        events = json.loads(cluster.kubectl("get", "events", "-n", "capped", "-o", "json").stdout)["items"]
        return next((e for e in events if e["reason"] == "FailedCreate"
                     and e["involvedObject"]["kind"] == "ReplicaSet"), None)

    event = wait_for(failed_create, timeout=60, message="the ReplicaSet's FailedCreate event")
    assert event["type"] == "Warning" and event["source"]["component"] == "replicaset-controller", event
    assert event["message"].startswith('Error creating: pods "greedy-'), event
    assert event["message"].endswith("is forbidden: maximum cpu usage per Container is 500m, but limit is 2"), event
    rs = event["involvedObject"]["name"]
    assert "FailedCreate" in cluster.kubectl("describe", "rs", rs, "-n", "capped").stdout

    def failure(kind, name):
        def read():
            o = json.loads(cluster.kubectl("get", kind, name, "-n", "capped", "-o", "json").stdout)
            return next((c for c in o.get("status", {}).get("conditions") or [] if c["type"] == "ReplicaFailure"), None)
        return read

    condition = wait_for(failure("rs", rs), timeout=60, message="the ReplicaSet's ReplicaFailure condition")
    assert condition["status"] == "True" and condition["reason"] == "FailedCreate", condition
    assert condition["message"] == event["message"].removeprefix("Error creating: "), condition
    copied = wait_for(failure("deployment", "greedy"), timeout=60, message="the Deployment's ReplicaFailure")
    assert (copied["reason"], copied["message"]) == ("FailedCreate", condition["message"]), copied
    described = cluster.kubectl("describe", "deployment", "greedy", "-n", "capped").stdout
    assert any(line.split()[:3] == ["ReplicaFailure", "True", "FailedCreate"] for line in described.splitlines()), described
    pods = json.loads(cluster.kubectl("get", "pods", "-n", "capped", "-l", "app=greedy", "-o", "json").stdout)
    assert pods["items"] == [], "no pod of the Deployment was stored"

    # Within bounds, the rollout goes on; once the refused ReplicaSet's later sync (scaled to 0) is
    # seen, every Event of its failed one has been written: kube's words only, no engine ApplyError.
    fits = {"spec": {"template": {"spec": {"containers": [dict(template["spec"]["containers"][0],
                                                               resources={"limits": {"cpu": "400m"}})]}}}}
    cluster.kubectl("-n", "capped", "patch", "deployment", "greedy", "--type=merge", "-p", json.dumps(fits))

    def scaled_down():
        old = json.loads(cluster.kubectl("get", "rs", rs, "-n", "capped", "-o", "json").stdout)
        status = old.get("status", {})
        return (old["spec"]["replicas"] == 0 and status.get("observedGeneration") == old["metadata"]["generation"]
                and status.get("replicas", 0) == 0)

    wait_for(scaled_down, timeout=60, message="the refused ReplicaSet scaled down")
    wait_for(lambda: json.loads(cluster.kubectl("get", "pods", "-n", "capped", "-l", "app=greedy", "-o",
                                                "json").stdout)["items"], timeout=60, message="a pod within bounds")
    assert failure("rs", rs)() is None, "cleared once the ReplicaSet's sync succeeds"
    wait_for(lambda: failure("deployment", "greedy")() is None, timeout=60, message="the Deployment's cleared")
    events = json.loads(cluster.kubectl("get", "events", "-n", "capped", "-o", "json").stdout)["items"]
    assert [e["reason"] for e in events if e["involvedObject"]["name"] == rs and e["type"] == "Warning"] == [
        "FailedCreate"], "kube's words only, not a second Event in the engine's"
