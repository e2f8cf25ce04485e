"""LimitRanges (core/v1) as kube serves them and kube's LimitRanger admission applies them, driven with
kubectl: kube's defaults and refusals of a range, `kubectl get limits` and `describe limits`, a new pod's
containers given the defaults they leave out (named in the `kubernetes.io/limit-ranger` annotation), pods
and claims outside the bounds refused in the plugin's words, and the QoS class a pod's resources make —
given at creation, shown by `kubectl describe pod`, kept by the node once the pod runs."""

import json

import yaml

from conftest import wait_for


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
