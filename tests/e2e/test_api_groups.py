"""API groups real clients and manifests use: events.k8s.io/v1 (the core Events seen another way),
apiregistration.k8s.io APIServices, and apiextensions.k8s.io/v1beta1 CRDs from older operator bundles."""

import json

from conftest import wait_for


def test_events_k8s_io_shows_the_core_events(cluster):
    from kubernetes import client

    api = cluster.api_client()
    core = client.CoreV1Api(api)
    events = client.EventsV1Api(api)
    core.create_namespaced_event("default", {
        "metadata": {"name": "core-made"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Pulled", "message": "image pulled", "type": "Normal", "count": 2,
        "reportingComponent": "kubelet", "reportingInstance": "uc-node"})
    seen = events.read_namespaced_event("core-made", "default")
    assert (seen.regarding.name, seen.note, seen.deprecated_count, seen.reporting_controller) == \
        ("p", "image pulled", 2, "kubelet")
    events.create_namespaced_event("default", {
        "metadata": {"name": "new-made"}, "eventTime": "2026-11-23T10:00:00.000000Z", "action": "Scaling",
        "reason": "Scaled", "note": "scaled to 3", "type": "Normal", "regarding": {"kind": "Deployment", "name": "web"},
        "reportingController": "example.com/scaler", "reportingInstance": "scaler-1"})
    old_style = core.read_namespaced_event("new-made", "default")
    assert (old_style.involved_object.name, old_style.message, old_style.reporting_component) == \
        ("web", "scaled to 3", "example.com/scaler")
    names = {e.metadata.name for e in events.list_namespaced_event("default").items}
    assert {"core-made", "new-made"} <= names
    # kubectl reads both ways too.
    got = json.loads(cluster.kubectl("get", "events.v1.events.k8s.io", "new-made", "-o", "json").stdout)
    assert got["apiVersion"] == "events.k8s.io/v1" and got["note"] == "scaled to 3"
    cluster.kubectl("delete", "events.v1.events.k8s.io", "core-made")
    assert cluster.kubectl("get", "event", "core-made", check=False).returncode != 0, "one object, deleted once"


def test_the_served_groups_are_listed_as_local_apiservices(cluster):
    names = cluster.kubectl("get", "apiservices", "-o", "name").stdout.split()
    for want in ("v1.", "v1.apps", "v1.rbac.authorization.k8s.io", "v1.events.k8s.io"):
        assert f"apiservice.apiregistration.k8s.io/{want}" in names, names
    table = cluster.kubectl("get", "apiservice", "v1.apps").stdout
    assert "Local" in table and "True" in table, table
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "gadgets", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}}))
    wait_for(lambda: cluster.kubectl("get", "apiservice", "v1.example.com", check=False).returncode == 0,
             message="the CRD's group is listed")
    cluster.kubectl("delete", "crd", "gadgets.example.com")
    wait_for(lambda: cluster.kubectl("get", "apiservice", "v1.example.com", check=False).returncode != 0,
             message="and unlisted when the CRD is gone")


V1BETA1_CRD = """
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata:
  name: memcacheds.cache.example.com
spec:
  group: cache.example.com
  version: v1alpha1
  scope: Namespaced
  names: {plural: memcacheds, singular: memcached, kind: Memcached}
  subresources: {status: {}}
  additionalPrinterColumns:
  - {name: Size, type: integer, JSONPath: .spec.size}
  validation:
    openAPIV3Schema:
      properties:
        spec:
          properties:
            size: {type: integer, minimum: 1}
"""


def test_a_v1beta1_crd_from_an_older_bundle_installs(cluster):
    r = cluster.kubectl("apply", "-f", "-", input=V1BETA1_CRD)
    assert "v1beta1 CustomResourceDefinition is deprecated" in r.stderr, r.stderr
    v1 = json.loads(cluster.kubectl("get", "crd", "memcacheds.cache.example.com", "-o", "json").stdout)
    version = v1["spec"]["versions"][0]
    assert v1["apiVersion"] == "apiextensions.k8s.io/v1" and version["name"] == "v1alpha1"
    assert version["additionalPrinterColumns"][0]["jsonPath"] == ".spec.size"
    wait_for(lambda: cluster.kubectl("get", "memcacheds", check=False).returncode == 0, message="the CRD is served")
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "m"},
        "spec": {"size": 3, "extra": "kept"}}))
    got = json.loads(cluster.kubectl("get", "memcached", "m", "-o", "json").stdout)
    assert got["spec"] == {"size": 3, "extra": "kept"}, "v1beta1's preserveUnknownFields keeps unknown fields"
    assert "SIZE" in cluster.kubectl("get", "memcacheds").stdout
    r = cluster.kubectl("apply", "-f", "-", check=False, input=json.dumps({
        "apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "bad"},
        "spec": {"size": 0}}))
    assert r.returncode != 0 and "spec.size" in r.stderr, "the schema still validates"
    # Applying the same file again goes through the v1beta1 view of the stored CRD.
    again = V1BETA1_CRD.replace("minimum: 1", "minimum: 2")
    cluster.kubectl("apply", "-f", "-", input=again)
    v1 = json.loads(cluster.kubectl("get", "crd", "memcacheds.cache.example.com", "-o", "json").stdout)
    size = v1["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"]
    assert size["minimum"] == 2
    beta = json.loads(cluster.kubectl("get", "customresourcedefinitions.v1beta1.apiextensions.k8s.io", "memcacheds.cache.example.com",
                                      "-o", "json").stdout)
    assert beta["apiVersion"] == "apiextensions.k8s.io/v1beta1" and beta["spec"]["version"] == "v1alpha1"


def test_kubectl_explain_and_client_side_validation_read_the_openapi_documents(cluster):
    image = cluster.kubectl("explain", "pod.spec.containers.image").stdout
    assert "Container image name" in image, image
    assert "FIELD: strategy <DeploymentStrategy>" in cluster.kubectl("explain", "deployment.spec.strategy").stdout
    assert "The parent type, child types and hooks" in cluster.kubectl("explain", "uc.spec").stdout
    # kubectl validates a `kind: List` on the client, from /openapi/v2 in protobuf.
    items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "listed"}, "data": {"k": "v"}}]
    listed = {"apiVersion": "v1", "kind": "List", "items": items}
    assert "configmap/listed created" in cluster.kubectl("apply", "-f", "-", input=json.dumps(listed)).stdout
    listed["items"].append({"apiVersion": "example.com/v1", "kind": "Nope", "metadata": {"name": "b"}})
    r = cluster.kubectl("apply", "-f", "-", input=json.dumps(listed), check=False)
    assert r.returncode != 0 and 'no matches for kind "Nope" in version "example.com/v1"' in r.stderr, r.stderr
    assert "openapi" not in r.stderr, r.stderr
