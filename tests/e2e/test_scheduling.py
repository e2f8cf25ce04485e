"""PriorityClasses (scheduling.k8s.io/v1) as kube serves them: the two system classes kube-apiserver makes
(never deleted), kube's columns, defaults and refusals, and kube's Priority admission — a pod's priority
and preemption policy from the class it names (a Deployment's pods too), the one global default for pods
that name none, a missing class refused, and a pod replaced without its priority keeping it."""

import json

import yaml

from conftest import wait_for


def get(cluster, *what):
    return json.loads(cluster.kubectl("get", *what, "-o", "json").stdout)


def refused(cluster, *args, body=None):
    r = cluster.kubectl(*args, input=body, check=False)
    assert r.returncode != 0, f"{args} was accepted"
    return r.stderr


def pc(name, value, **extra):
    return yaml.safe_dump({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                           "metadata": {"name": name}, "value": value, **extra})


POD = """
apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec: {containers: [{name: c, image: busybox, command: [sleep, "3600"]}]CLASS}
"""


def pod(cluster, name, cls=""):
    made = cluster.kubectl("create", "-f", "-", "-o", "json", input=POD.replace("NAME", name).replace("CLASS", cls))
    return json.loads(made.stdout)["spec"]


def test_system_classes_stay_and_pods_get_their_class_priority(cluster):
    table = cluster.kubectl("get", "pc").stdout.split("\n")
    assert table[0].split() == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    rows = {line.split()[0]: line.split() for line in table[1:] if line.strip()}
    assert rows["system-node-critical"][1:3] == ["2000001000", "false"]
    assert rows["system-cluster-critical"][1:3] == ["2000000000", "false"]
    assert rows["system-node-critical"][-1] == "PreemptLowerPriority"
    err = refused(cluster, "delete", "pc", "system-node-critical")
    assert ('priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: '
            "this is a system priority class and cannot be deleted") in err, err
    err = refused(cluster, "create", "-f", "-", body=pc("system-mine", 5))
    assert "priority class names with 'system-' prefix are reserved for system use only" in err, err
    err = refused(cluster, "create", "-f", "-", body=pc("huge", 1_000_000_001))
    assert "value: Forbidden: maximum allowed value of a user defined priority is 1000000000" in err, err

    made = json.loads(cluster.kubectl("create", "-f", "-", "-o", "json",
                                      input=pc("high", 1000, preemptionPolicy="Never")).stdout)
    assert made["metadata"]["generation"] == 1
    plain = json.loads(cluster.kubectl("create", "-f", "-", "-o", "json", input=pc("plain", 10)).stdout)
    assert plain["preemptionPolicy"] == "PreemptLowerPriority", "kube's default"
    err = refused(cluster, "patch", "pc", "high", "-p", '{"value": 2000}')
    assert "value: Forbidden: may not be changed in an update." in err, err
    cluster.kubectl("patch", "pc", "high", "-p", '{"description": "for what matters"}')

    # Pods: the class named, no class (priority 0), a class that does not exist, a priority of their own.
    assert (lambda s: (s["priority"], s["preemptionPolicy"]))(pod(cluster, "important", ", priorityClassName: high")) \
        == (1000, "Never")
    bare = pod(cluster, "bare")
    assert (bare["priority"], bare["preemptionPolicy"], bare.get("priorityClassName")) == (0, "PreemptLowerPriority", None)
    err = refused(cluster, "create", "-f", "-", body=POD.replace("NAME", "lost").replace("CLASS", ", priorityClassName: gone"))
    assert 'pods "lost" is forbidden: no PriorityClass with name gone was found' in err, err
    err = refused(cluster, "create", "-f", "-", body=POD.replace("NAME", "own").replace("CLASS", ", priority: 7"))
    assert "the integer value of priority (7) must not be provided in pod spec" in err, err

    # A pod replaced without its priority keeps it (the plugin restores it; the spec may not change).
    stored = get(cluster, "pod", "important")
    del stored["spec"]["priority"]
    stored["metadata"].setdefault("labels", {})["replaced"] = "yes"
    cluster.kubectl("replace", "-f", "-", input=json.dumps(stored))
    after = get(cluster, "pod", "important")
    assert (after["spec"]["priority"], after["metadata"]["labels"]["replaced"]) == (1000, "yes")

    # A workload's pods name their class in the template, as charts do.
    cluster.kubectl("create", "deployment", "web", "--image=nginx:1.25", "--replicas=2")
    cluster.kubectl("patch", "deploy", "web", "-p", '{"spec": {"template": {"spec": {"priorityClassName": "high"}}}}')
    wait_for(lambda: sorted(p["spec"].get("priority") for p in get(cluster, "pods", "-l", "app=web")["items"]
                            if "deletionTimestamp" not in p["metadata"]) == [1000, 1000],
             timeout=60, message="the Deployment's pods at their class's priority")


def test_one_global_default_gives_its_priority_to_pods_that_name_none(cluster):
    cluster.kubectl("create", "-f", "-", input=pc("low", -10, globalDefault=True, description="batch"))
    err = refused(cluster, "create", "-f", "-", body=pc("other", 5, globalDefault=True))
    assert ('priorityclasses.scheduling.k8s.io "other" is forbidden: '
            "PriorityClass low is already marked as default. Only one default can exist") in err, err
    cluster.kubectl("create", "-f", "-", input=pc("other", 5))
    err = refused(cluster, "patch", "pc", "other", "-p", '{"globalDefault": true}')
    assert "PriorityClass low is already marked as default" in err, err
    spec = pod(cluster, "defaulted")
    assert (spec["priorityClassName"], spec["priority"]) == ("low", -10)
    # With the default gone, a new pod is back at 0, and the pod made earlier keeps what it was given.
    cluster.kubectl("delete", "pc", "low")
    assert pod(cluster, "later")["priority"] == 0
    assert get(cluster, "pod", "defaulted")["spec"]["priority"] == -10
