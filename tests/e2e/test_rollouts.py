"""RollingInPlace: children updated in place one at a time, in the hook's order, each only after the one
before has passed its status checks and its controller has seen its new generation."""

import json

from conftest import wait_for

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "fleets.test.njuics.cn"},
    "spec": {"group": "test.njuics.cn", "scope": "Namespaced",
             "names": {"kind": "Fleet", "plural": "fleets", "singular": "fleet", "listKind": "FleetList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {
                                   "image": {"type": "string"}, "size": {"type": "integer"}}},
                               "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]},
}

# One Deployment per member, in ascending order; the image is the revision field.
HOOK = """
function sync(req) {
  let f = req.parent, children = [];
  for (let i = 0; i < f.spec.size; i++) {
    let labels = {fleet: f.metadata.name, member: String(i)};
    children.push({apiVersion: 'apps/v1', kind: 'Deployment', metadata: {name: `${f.metadata.name}-${i}`},
      spec: {replicas: 1, selector: {matchLabels: labels},
             template: {metadata: {labels: labels}, spec: {containers: [{name: 'app', image: f.spec.image}]}}}});
  }
  return {status: {members: f.spec.size}, children: children};
}
"""

CONTROLLER = {
    "apiVersion": "universalcontroller.njuics.cn/v1alpha1", "kind": "UniversalController",
    "metadata": {"name": "fleet-controller"},
    "spec": {
        "generateSelector": True,
        "parentResource": {"apiVersion": "test.njuics.cn/v1", "resource": "fleets",
                           "revisionHistory": {"fieldPaths": ["spec.image"]}},
        "childResources": [{"apiVersion": "apps/v1", "resource": "deployments", "updateStrategy": {
            "method": "RollingInPlace",
            "statusChecks": {"conditions": [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}}}],
        "hooks": {"sync": {"javascript": {"source": HOOK}}},
    },
}


def done(d):
    """The Deployment's controller has seen its spec and finished rolling it out."""
    conds = {c["type"]: c for c in d.get("status", {}).get("conditions", [])}
    p = conds.get("Progressing", {})
    return (d.get("status", {}).get("observedGeneration", 0) >= d["metadata"]["generation"]
            and p.get("status") == "True" and p.get("reason") == "NewReplicaSetAvailable")


def test_rolling_in_place_updates_one_child_at_a_time(cluster):
    from kubernetes import client, watch

    cluster.kubectl("apply", "-f", "-", input=json.dumps(CRD))
    wait_for(lambda: cluster.kubectl("get", "fleets", check=False).returncode == 0, message="CRD served")
    cluster.kubectl("apply", "-f", "-", input=json.dumps(CONTROLLER))
    fleet = {"apiVersion": "test.njuics.cn/v1", "kind": "Fleet", "metadata": {"name": "f"},
             "spec": {"image": "app:v1", "size": 3}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(fleet))
    apps = client.AppsV1Api(cluster.api_client())

    def deployments():
        items = apps.list_namespaced_deployment("default", label_selector="", _preload_content=False)
        return {d["metadata"]["name"]: d for d in json.loads(items.data)["items"] if d["metadata"]["name"].startswith("f-")}

    wait_for(lambda: len(ds := deployments()) == 3 and all(done(d) for d in ds.values()), timeout=30,
             message="three Deployments rolled out")
    # Every version of the Deployments the server stores from the patch on (a watch from before it: none
    # missed, however fast they come), checked as the state they make.
    to_dict = client.ApiClient().sanitize_for_serialization
    before = apps.list_namespaced_deployment("default")
    state = {d["metadata"]["name"]: (d["spec"]["template"]["spec"]["containers"][0]["image"], done(d))
             for d in map(to_dict, before.items) if d["metadata"]["name"].startswith("f-")}
    cluster.kubectl("patch", "fleet", "f", "--type=merge", "-p", '{"spec":{"image":"app:v2"}}')
    order = []
    for ev in watch.Watch().stream(apps.list_namespaced_deployment, "default", resource_version=before.metadata.resource_version, timeout_seconds=90):
        d = to_dict(ev["object"])
        if not d["metadata"]["name"].startswith("f-"):
            continue
        state[d["metadata"]["name"]] = (d["spec"]["template"]["spec"]["containers"][0]["image"], done(d))
        in_flight = [n for n, (img, ok) in state.items() if img == "app:v2" and not ok]
        assert len(in_flight) <= 1, f"two children updating at once: {state}"
        for n, (img, _) in sorted(state.items()):
            if img == "app:v2" and n not in order:
                # The one before in the hook's order had finished when this one moved.
                if order:
                    assert state[order[-1]] == ("app:v2", True), f"{n} moved before {order[-1]} finished: {state}"
                order.append(n)
        if all(img == "app:v2" and ok for img, ok in state.values()):
            break
    assert all(img == "app:v2" and ok for img, ok in state.values()), state
    assert order == ["f-0", "f-1", "f-2"]
    def updated():
        status = json.loads(cluster.kubectl("get", "fleet", "f", "-o", "json").stdout)["status"]
        return [c for c in status.get("conditions", []) if c["type"] == "Updated"]

    wait_for(lambda: updated() and updated()[0]["status"] == "True", message="Updated=True")
    # A change outside revisionHistory (size) applies at once, without a new revision.
    cluster.kubectl("patch", "fleet", "f", "--type=merge", "-p", '{"spec":{"size":4}}')
    wait_for(lambda: "f-3" in deployments(), message="f-3 created")
    revs = json.loads(cluster.kubectl("get", "controllerrevisions.universalcontroller.njuics.cn", "-o", "json").stdout)["items"]
    assert len(revs) == 1 and revs[0]["parentPatch"] == {"spec": {"image": "app:v2"}}
    assert revs[0]["children"][0]["names"] == ["f-0", "f-1", "f-2", "f-3"]
