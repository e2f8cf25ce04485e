"""Watch details (bookmarks, initial events, timeouts, Table watches) and multi-version CRDs."""

import http.client
import json
import ssl
import time
from urllib.parse import urlparse

MULTI_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Cluster
  versions:
  - name: v1beta1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer}}}}}}
"""


def stream(cluster, path, accept="application/json"):
    host, token = cluster.server_and_token()
    u = urlparse(host)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=20)
    conn.request("GET", path, headers={"Authorization": f"Bearer {token}", "Accept": accept})
    resp = conn.getresponse()
    assert resp.status == 200, resp.read()
    return conn, resp


def events(resp, n):
    out = []
    while len(out) < n:
        line = resp.readline()
        if not line:
            break
        out.append(json.loads(line))
    return out


def test_send_initial_events_ends_with_a_bookmark(cluster):
    # Secrets: a namespace starts with none (its ConfigMaps include the cluster CA).
    for i in range(3):
        cluster.kubectl("create", "secret", "generic", f"c{i}")
    conn, resp = stream(cluster, "/api/v1/namespaces/default/secrets?watch=true&sendInitialEvents=true"
                                 "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
    evs = events(resp, 4)
    assert [e["type"] for e in evs] == ["ADDED", "ADDED", "ADDED", "BOOKMARK"]
    assert evs[3]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    cluster.kubectl("create", "secret", "generic", "later")
    (ev,) = events(resp, 1)
    assert ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "later"
    conn.close()


def test_watch_timeout_closes_the_stream(cluster):
    conn, resp = stream(cluster, "/api/v1/namespaces/default/secrets?watch=true&timeoutSeconds=1")
    start = time.time()
    assert resp.read() == b""  # no objects, and the server ends the stream
    assert 0.8 < time.time() - start < 5
    conn.close()


def test_table_watch_for_kubectl(cluster):
    cluster.kubectl("create", "configmap", "t1")
    rv = cluster.kubectl("get", "cm", "t1", "-o", "jsonpath={.metadata.resourceVersion}").stdout
    conn, resp = stream(cluster, f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}",
                        accept="application/json;as=Table;v=v1;g=meta.k8s.io")
    cluster.kubectl("label", "cm", "t1", "x=y")
    (ev,) = events(resp, 1)
    assert ev["type"] == "MODIFIED" and ev["object"]["kind"] == "Table"
    assert ev["object"]["rows"][0]["cells"][0] == "t1"
    assert [c["name"] for c in ev["object"]["columnDefinitions"]] == ["Name", "Data", "Age"]
    conn.close()


def test_metadata_watch_sends_partial_object_metadata(cluster):
    # As garbage collectors and metadata informers watch: the events carry the objects' metadata only.
    cluster.kubectl("create", "configmap", "m1", "--from-literal=secretish=value")
    rv = cluster.kubectl("get", "cm", "m1", "-o", "jsonpath={.metadata.resourceVersion}").stdout
    conn, resp = stream(cluster, f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}",
                        accept="application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
    cluster.kubectl("label", "cm", "m1", "x=y")
    cluster.kubectl("delete", "cm", "m1")
    evs = events(resp, 2)
    assert [e["type"] for e in evs] == ["MODIFIED", "DELETED"]
    for ev in evs:
        obj = ev["object"]
        assert set(obj) == {"kind", "apiVersion", "metadata"}, obj
        assert (obj["kind"], obj["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
        assert obj["metadata"]["name"] == "m1" and obj["metadata"]["labels"] == {"x": "y"}
        assert obj["metadata"]["managedFields"], "the metadata is sent whole"
    assert int(evs[1]["object"]["metadata"]["resourceVersion"]) > int(evs[0]["object"]["metadata"]["resourceVersion"])
    conn.close()


def test_multi_version_crd_converts_api_version(cluster):
    cluster.kubectl("apply", "-f", "-", input=MULTI_CRD)
    cluster.kubectl("apply", "-f", "-", input='{"apiVersion":"example.com/v1beta1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":3}}')
    v1 = json.loads(cluster.kubectl("get", "widgets.v1.example.com", "w", "-o", "json").stdout)
    beta = json.loads(cluster.kubectl("get", "widgets.v1beta1.example.com", "w", "-o", "json").stdout)
    assert v1["apiVersion"] == "example.com/v1" and beta["apiVersion"] == "example.com/v1beta1"
    assert v1["spec"] == beta["spec"] == {"size": 3}
    assert v1["metadata"]["uid"] == beta["metadata"]["uid"]
    # The preferred (highest) version is served by default.
    assert json.loads(cluster.kubectl("get", "widgets", "w", "-o", "json").stdout)["apiVersion"] == "example.com/v1"
    crd = json.loads(cluster.kubectl("get", "crd", "widgets.example.com", "-o", "json").stdout)
    assert crd["status"]["storedVersions"] == ["v1"]
    # Each version validates with its own schema.
    r = cluster.kubectl("apply", "-f", "-", input='{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"bad"},"spec":{"size":"big"}}', check=False)
    assert r.returncode != 0 and "spec.size" in r.stderr


def test_a_quiet_watch_gets_bookmarks_while_other_resources_keep_the_store_busy(cluster):
    """kube-apiserver's bookmarks keep a quiet watch's resourceVersion recent, so a client resuming
    after a reconnect is not answered 410 when history moves on. Writes elsewhere must not hold them
    back: a ConfigMap of another namespace changes every 0.2 s while a watch of Secrets in an empty one
    waits."""
    import threading

    cluster.kubectl("create", "namespace", "quiet")
    cluster.kubectl("create", "configmap", "busy")
    start_rv = int(cluster.kubectl("get", "cm", "busy", "-o", "jsonpath={.metadata.resourceVersion}").stdout)
    stop = threading.Event()

    def write():
        i = 0
        while not stop.is_set():
            cluster.kubectl("patch", "cm", "busy", "--type=merge", "-p", json.dumps({"data": {"i": str(i)}}), check=False)
            i += 1
            time.sleep(0.2)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        host, token = cluster.server_and_token()
        u = urlparse(host)
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=60)
        conn.request("GET", f"/api/v1/namespaces/quiet/secrets?watch=true&allowWatchBookmarks=true"
                            f"&resourceVersion={start_rv}", headers={"Authorization": f"Bearer {token}"})
        resp = conn.getresponse()
        assert resp.status == 200
        # The first line the watch sends: its namespace has nothing, so only a bookmark can come.
        (ev,) = events(resp, 1)
        assert ev["type"] == "BOOKMARK", ev
        assert int(ev["object"]["metadata"]["resourceVersion"]) > start_rv, "the bookmark carries the store's newer version"
        conn.close()
    finally:
        stop.set()
        writer.join(timeout=30)
