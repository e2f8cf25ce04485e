"""Objects every cluster has, which clients and in-cluster programs look for: the `kubernetes` Service
and its Endpoints, the namespaces, and the cluster CA in every namespace."""

import base64
import json
from urllib.parse import urlparse

import yaml

from conftest import wait_for


def kubeconfig(cluster):
    with open(cluster.kubeconfig) as f:
        return yaml.safe_load(f)


def test_the_kubernetes_service_points_at_the_api_server(cluster):
    server = kubeconfig(cluster)["clusters"][0]["cluster"]["server"]
    port = urlparse(server).port
    svc = json.loads(cluster.kubectl("get", "svc", "kubernetes", "-n", "default", "-o", "json").stdout)
    assert svc["spec"]["ports"][0]["port"] == 443 and svc["spec"]["ports"][0]["targetPort"] == port
    assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    ep = json.loads(cluster.kubectl("get", "endpoints", "kubernetes", "-n", "default", "-o", "json").stdout)
    assert ep["subsets"][0]["addresses"][0]["ip"] == "127.0.0.1" and ep["subsets"][0]["ports"][0]["port"] == port
    names = cluster.kubectl("get", "ns", "-o", "jsonpath={.items[*].metadata.name}").stdout.split()
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= set(names)


def test_every_namespace_has_the_cluster_ca(cluster):
    ca = base64.b64decode(kubeconfig(cluster)["clusters"][0]["cluster"]["certificate-authority-data"]).decode()

    def published(ns):
        r = cluster.kubectl("get", "cm", "kube-root-ca.crt", "-n", ns, "-o", "json", check=False)
        return r.returncode == 0 and json.loads(r.stdout)["data"]["ca.crt"]

    assert published("default") == ca and published("kube-system") == ca
    cluster.kubectl("create", "namespace", "team-a")
    assert wait_for(lambda: published("team-a"), message="the CA in a new namespace") == ca


def test_the_node_renews_its_lease(cluster):
    from kubernetes import client, watch

    node = cluster.kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}").stdout
    leases = client.CoordinationV1Api(cluster.api_client())
    lease = wait_for(lambda: next((l for l in leases.list_namespaced_lease("kube-node-lease").items
                                   if l.metadata.name == node), None), message="the node's lease")
    assert lease.spec.holder_identity == node and lease.spec.lease_duration_seconds == 40
    assert lease.metadata.owner_references[0].kind == "Node"
    # Renewed: watched from the lease's own version, the next change moves renewTime forward.
    for ev in watch.Watch().stream(leases.list_namespaced_lease, "kube-node-lease",
                                   resource_version=lease.metadata.resource_version, timeout_seconds=40):
        renewed = ev["object"]
        if ev["type"] == "MODIFIED" and renewed.metadata.name == node:
            assert renewed.spec.renew_time > lease.spec.renew_time
            break
    else:
        raise AssertionError("the lease was not renewed within 40 s")


def test_every_namespace_has_a_default_service_account(cluster):
    assert cluster.kubectl("get", "sa", "default", "-n", "kube-system", "-o", "name").stdout.strip() == "serviceaccount/default"
    cluster.kubectl("create", "namespace", "team-b")
    wait_for(lambda: cluster.kubectl("get", "sa", "default", "-n", "team-b", check=False).returncode == 0,
             message="the default ServiceAccount in a new namespace")


def test_kubectl_auth_whoami_and_can_i(cluster):
    who = json.loads(cluster.kubectl("auth", "whoami", "-o", "json").stdout)
    assert who["status"]["userInfo"]["username"] == "uc-admin" and "system:masters" in who["status"]["userInfo"]["groups"]
    assert cluster.kubectl("auth", "can-i", "delete", "pods", "-n", "kube-system").stdout.strip() == "yes"
    listed = cluster.kubectl("auth", "can-i", "--list").stdout
    assert "*.*" in listed, listed
    # Asked on behalf of an account without roles (test_rbac.py covers accounts with roles).
    r = cluster.kubectl("auth", "can-i", "list", "pods", "--as=system:serviceaccount:default:sa", check=False)
    assert (r.returncode, r.stdout.strip()) == (1, "no"), r.stdout + r.stderr


def test_an_event_expires_its_ttl_after_its_last_write(make_cluster):
    """kube-apiserver's `--event-ttl`: an Event is deleted that long after its last write (not its first),
    and watchers see it go. Observed on a watch from the Event's first resourceVersion; the deletion may
    come late on a slow machine, never early."""
    import time
    from kubernetes import client, watch

    ttl = 3.0
    c = make_cluster(["--event-ttl", f"{ttl:g}s"])
    core = client.CoreV1Api(c.api_client())
    body = {"metadata": {"name": "expiring"}, "involvedObject": {"kind": "Namespace", "name": "default"},
            "reason": "Testing", "message": "first", "type": "Normal", "count": 1}
    first = core.create_namespaced_event("default", body)
    time.sleep(ttl / 2)
    updated = core.patch_namespaced_event("expiring", "default", {"message": "again", "count": 2})
    written_last = time.time()
    seen = []
    stream = watch.Watch().stream(core.list_namespaced_event, "default", field_selector="metadata.name=expiring",
                                  resource_version=first.metadata.resource_version, timeout_seconds=60)
    for ev in stream:
        seen.append((ev["type"], ev["object"].metadata.resource_version, time.time()))
        if ev["type"] == "DELETED":
            break
    assert [t for t, _, _ in seen] == ["MODIFIED", "DELETED"], seen
    assert seen[0][1] == updated.metadata.resource_version, "the update is seen before the deletion"
    assert seen[1][2] >= written_last + ttl - 0.5, f"deleted {seen[1][2] - written_last:.1f} s after its last write"
    assert int(seen[1][1]) > int(updated.metadata.resource_version)
