"""The official Python `kubernetes` client against `uc up`: core, apps and custom resources."""

import json
import threading
import time

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from conftest import wait_for, MANIFESTS


def configmap(name, data=None, labels=None):
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels or {}), data=data or {"k": "v"})


def deployment(name, replicas=1):
    labels = {"app": name}
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1DeploymentSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx:1")]),
            ),
        ),
    )


def test_core_crud_list_selectors_and_pagination(cluster):
    api = client.CoreV1Api(cluster.api_client())
    for i in range(7):
        api.create_namespaced_config_map("default", configmap(f"cm-{i}", labels={"parity": "even" if i % 2 == 0 else "odd"}))
    with pytest.raises(ApiException) as e:
        api.create_namespaced_config_map("default", configmap("cm-0"))
    assert e.value.status == 409 and "AlreadyExists" in e.value.body
    got = api.read_namespaced_config_map("cm-3", "default")
    assert got.data == {"k": "v"} and got.metadata.uid and got.metadata.creation_timestamp
    evens = api.list_namespaced_config_map("default", label_selector="parity=even")
    assert sorted(i.metadata.name for i in evens.items) == ["cm-0", "cm-2", "cm-4", "cm-6"]
    named = api.list_namespaced_config_map("default", field_selector="metadata.name=cm-5")
    assert [i.metadata.name for i in named.items] == ["cm-5"]
    names, token = [], None
    while True:
        page = api.list_namespaced_config_map("default", limit=3, _continue=token)
        names += [i.metadata.name for i in page.items]
        token = page.metadata._continue
        if not token:
            break
        assert page.metadata.remaining_item_count is not None
    assert names == [f"cm-{i}" for i in range(7)] + ["kube-root-ca.crt"], "every namespace has the cluster CA"
    gen = api.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(generate_name="gen-")))
    assert gen.metadata.name.startswith("gen-") and len(gen.metadata.name) == len("gen-") + 5
    api.patch_namespaced_config_map("cm-1", "default", {"data": {"x": "y"}})
    assert api.read_namespaced_config_map("cm-1", "default").data == {"k": "v", "x": "y"}
    api.delete_namespaced_config_map("cm-1", "default")
    with pytest.raises(ApiException) as e:
        api.read_namespaced_config_map("cm-1", "default")
    assert e.value.status == 404


def test_apps_and_status(cluster):
    apps = client.AppsV1Api(cluster.api_client())
    d = apps.create_namespaced_deployment("default", deployment("web", 2))
    assert d.metadata.generation == 1 and d.spec.strategy.type == "RollingUpdate"
    d = apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 3}})
    assert d.metadata.generation == 2
    d = apps.patch_namespaced_deployment_status("web", "default", {"status": {"availableReplicas": 3, "replicas": 3}})
    assert d.status.available_replicas == 3 and d.metadata.generation == 2
    scale = apps.read_namespaced_deployment_scale("web", "default")
    assert scale.spec.replicas == 3 and scale.status.selector == "app=web"
    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 1}})
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 1
    apps.delete_namespaced_deployment("web", "default")
    assert apps.list_namespaced_deployment("default").items == []


def test_fields_go_always_writes_are_there_for_typed_clients(cluster):
    """kube writes a status's non-omitempty fields even at zero; the Python client's models require them
    (its own e2e tests `test_create_daemonset` and `test_replication_controller_apis`)."""
    apps, core = client.AppsV1Api(cluster.api_client()), client.CoreV1Api(cluster.api_client())
    labels = {"app": "zero"}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "example.com/never"}]}}
    ds = apps.create_namespaced_daemon_set("default", {"apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "zero"}, "spec": {"selector": {"matchLabels": labels}, "template": template}})
    assert (ds.status.current_number_scheduled, ds.status.desired_number_scheduled,
            ds.status.number_misscheduled, ds.status.number_ready) == (0, 0, 0, 0)
    assert apps.read_namespaced_daemon_set_status("zero", "default").status.number_ready is not None
    rc = core.create_namespaced_replication_controller("default", {"apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": "zero"}, "spec": {"replicas": 0, "selector": labels, "template": template}})
    assert rc.status.replicas == 0
    # A status written without them gets them too.
    raw = json.loads(cluster.kubectl("patch", "rc", "zero", "--subresource=status", "--type=json",
                                     "-p", '[{"op": "remove", "path": "/status/replicas"}]', "-o", "json").stdout)
    assert raw["status"]["replicas"] == 0


def test_what_kube_rs_cluster_tests_read(cluster):
    """TokenReview audiences as asked, componentstatuses, objects written kind-first (kube-rs's
    `create_token_request`, `event_recorder_attaches_events_without_namespace`, `fetch_fails`)."""
    core = client.CoreV1Api(cluster.api_client())
    auth = client.AuthenticationV1Api(cluster.api_client())
    core.create_namespaced_service_account("default", {"metadata": {"name": "fakesa"}})
    token = core.create_namespaced_service_account_token("fakesa", "default", {"spec": {"audiences": ["api"]}}).status.token
    review = auth.create_token_review({"spec": {"token": token, "audiences": ["api", "other"]}}).status
    assert (review.authenticated, review.audiences) == (True, ["api"])
    assert review.user.username == "system:serviceaccount:default:fakesa"
    review = auth.create_token_review({"spec": {"token": token}}).status
    assert not review.authenticated, "not for the API server's own audience"

    names = [c.metadata.name for c in core.list_component_status().items]
    assert names == ["controller-manager", "scheduler", "etcd-0"]
    assert core.read_component_status("scheduler").conditions[0].type == "Healthy"
    assert cluster.kubectl("delete", "componentstatus", "scheduler", check=False).returncode != 0

    raw = cluster.kubectl("get", "--raw", "/api/v1/namespaces/default/services/kubernetes").stdout
    assert raw.startswith('{"kind":"Service","apiVersion":"v1","metadata":{'), raw[:80]
    listed = cluster.kubectl("get", "--raw", "/api/v1/namespaces/default/configmaps").stdout
    assert listed.startswith('{"kind":"ConfigMapList","apiVersion":"v1","metadata":{'), listed[:80]
    assert '"items":[{"kind":"ConfigMap","apiVersion":"v1","metadata":' in listed


def test_custom_objects(cluster):
    cluster.kubectl("apply", "-f", str(MANIFESTS / "foo-crd.yaml"))
    co = client.CustomObjectsApi(cluster.api_client())
    g, v, p = "samplecontroller.k8s.io", "v1alpha1", "foos"
    body = {"apiVersion": f"{g}/{v}", "kind": "Foo", "metadata": {"name": "a"}, "spec": {"deploymentName": "a"}}
    created = co.create_namespaced_custom_object(g, v, "default", p, body)
    assert created["spec"]["replicas"] == 1, "schema default applied"
    assert "status" not in created
    co.patch_namespaced_custom_object_status(g, v, "default", p, "a", {"status": {"availableReplicas": 2}})
    got = co.get_namespaced_custom_object(g, v, "default", p, "a")
    assert got["status"] == {"availableReplicas": 2} and got["metadata"]["generation"] == 1
    co.patch_namespaced_custom_object(g, v, "default", p, "a", {"spec": {"replicas": 3}})
    got = co.get_namespaced_custom_object(g, v, "default", p, "a")
    assert got["metadata"]["generation"] == 2 and got["status"] == {"availableReplicas": 2}
    lst = co.list_namespaced_custom_object(g, v, "default", p)
    assert [i["metadata"]["name"] for i in lst["items"]] == ["a"]
    co.delete_namespaced_custom_object(g, v, "default", p, "a")
    assert co.list_cluster_custom_object(g, v, p)["items"] == []


def test_watch_and_resume_from_resource_version(cluster):
    api = client.CoreV1Api(cluster.api_client())
    api.create_namespaced_config_map("default", configmap("w-0"))
    rv = api.list_namespaced_config_map("default").metadata.resource_version
    api.create_namespaced_config_map("default", configmap("w-1"))
    api.patch_namespaced_config_map("w-1", "default", {"data": {"k": "changed"}})
    api.delete_namespaced_config_map("w-0", "default")
    seen = []
    for ev in watch.Watch().stream(api.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=3):
        seen.append((ev["type"], ev["object"].metadata.name))
        if len(seen) == 3:
            break
    assert seen == [("ADDED", "w-1"), ("MODIFIED", "w-1"), ("DELETED", "w-0")]

    # A live watch sees writes made while it runs, with label selectors applied. It watches from a
    # list's resourceVersion, so a write made before its connection opens is delivered all the same.
    got = []
    w = watch.Watch()
    since = api.list_namespaced_config_map("default", label_selector="team=a").metadata.resource_version

    def consume():
        for ev in w.stream(api.list_namespaced_config_map, "default", label_selector="team=a",
                           resource_version=since, timeout_seconds=10):
            got.append((ev["type"], ev["object"].metadata.name))
            if len(got) == 2:
                w.stop()

    t = threading.Thread(target=consume)
    t.start()
    api.create_namespaced_config_map("default", configmap("sel-b", labels={"team": "b"}))
    api.create_namespaced_config_map("default", configmap("sel-a", labels={"team": "a"}))
    api.patch_namespaced_config_map("sel-b", "default", {"metadata": {"labels": {"team": "a"}}})
    t.join(timeout=15)
    assert got == [("ADDED", "sel-a"), ("ADDED", "sel-b")]


def test_410_after_compaction_and_relist(make_cluster):
    c = make_cluster(extra_args=["--watch-cache-events", "20"])
    api = client.CoreV1Api(c.api_client())
    api.create_namespaced_config_map("default", configmap("old"))
    old_rv = api.read_namespaced_config_map("old", "default").metadata.resource_version
    for i in range(30):
        api.create_namespaced_config_map("default", configmap(f"fill-{i}"))
    with pytest.raises(ApiException) as e:
        for _ in watch.Watch().stream(api.list_namespaced_config_map, "default", resource_version=old_rv, timeout_seconds=3):
            pass
    assert e.value.status == 410
    # A continue token from before the compaction expires too.
    page = api.list_namespaced_config_map("default", limit=2)
    for i in range(30):
        api.patch_namespaced_config_map(f"fill-{i}", "default", {"data": {"n": str(i)}})
    with pytest.raises(ApiException) as e:
        api.list_namespaced_config_map("default", limit=2, _continue=page.metadata._continue)
    assert e.value.status == 410
    # The standard recovery: relist, then watch from the list's resourceVersion.
    lst = api.list_namespaced_config_map("default")
    assert len([i for i in lst.items if i.metadata.name != "kube-root-ca.crt"]) == 31
    api.create_namespaced_config_map("default", configmap("after"))
    for ev in watch.Watch().stream(api.list_namespaced_config_map, "default", resource_version=lst.metadata.resource_version, timeout_seconds=3):
        assert (ev["type"], ev["object"].metadata.name) == ("ADDED", "after")
        break
    else:
        pytest.fail("no event after relist")


def history(c):
    """The API server's history gauges from /metrics."""
    text = c.kubectl("get", "--raw", "/metrics").stdout
    return {line.split()[0]: int(line.split()[1]) for line in text.splitlines()
            if line.startswith("apiserver_watch_history_") or line.startswith("apiserver_revision")}


def test_history_older_than_the_retention_window_is_compacted(make_cluster):
    c = make_cluster(extra_args=["--history-seconds", "2"])
    api = client.CoreV1Api(c.api_client())
    api.create_namespaced_config_map("default", configmap("early"))
    early_rv = api.read_namespaced_config_map("early", "default").metadata.resource_version
    h = history(c)
    assert h["apiserver_watch_history_events"] >= 1 and h["apiserver_watch_history_bytes"] > 0
    # Idle: the history ages out on its own, and /metrics shows it.
    h = wait_for(lambda: (m := history(c)) and m["apiserver_watch_history_events"] == 0 and m, timeout=20,
                 message="the history compacted")
    assert h["apiserver_watch_history_bytes"] == 0
    assert h["apiserver_watch_history_oldest_revision"] == h["apiserver_revision"] >= int(early_rv)
    with pytest.raises(ApiException) as e:
        for _ in watch.Watch().stream(api.list_namespaced_config_map, "default", resource_version=str(int(early_rv) - 1),
                                      timeout_seconds=3):
            pass
    assert e.value.status == 410, "a watcher older than the window gets 410"
    lst = api.list_namespaced_config_map("default")
    api.create_namespaced_config_map("default", configmap("later"))
    for ev in watch.Watch().stream(api.list_namespaced_config_map, "default", resource_version=lst.metadata.resource_version,
                                   timeout_seconds=3):
        assert (ev["type"], ev["object"].metadata.name) == ("ADDED", "later"), "a relist recovers"
        break
    else:
        pytest.fail("no event after relist")


def test_graceful_pod_deletion(make_cluster):
    # Without a node agent nobody stops the containers: a bound pod waits in Terminating, as on kube.
    c = make_cluster(extra_args=["--no-node"])
    api = client.CoreV1Api(c.api_client())
    pod = client.V1Pod(metadata=client.V1ObjectMeta(name="p"),
                       spec=client.V1PodSpec(node_name="elsewhere", containers=[client.V1Container(name="c", image="nginx")]))
    api.create_namespaced_pod("default", pod)
    api.delete_namespaced_pod("p", "default")
    p = api.read_namespaced_pod("p", "default")
    assert p.metadata.deletion_timestamp is not None and p.metadata.deletion_grace_period_seconds == 30
    # Status writes during termination do not delete it early.
    api.patch_namespaced_pod_status("p", "default", {"status": {"phase": "Running"}})
    assert api.read_namespaced_pod("p", "default").status.phase == "Running"
    api.delete_namespaced_pod("p", "default", grace_period_seconds=0)
    with pytest.raises(ApiException) as e:
        api.read_namespaced_pod("p", "default")
    assert e.value.status == 404
    # Unbound pods go at once.
    api.create_namespaced_pod("default", client.V1Pod(metadata=client.V1ObjectMeta(name="q"),
                                                       spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")])))
    api.delete_namespaced_pod("q", "default")
    with pytest.raises(ApiException):
        api.read_namespaced_pod("q", "default")


def test_deletes_answer_what_kube_answers_for_the_kind(cluster):
    # A Service's and a ServiceAccount's DELETE return the object (the client types the answer as one);
    # a ConfigMap's returns a Status.
    api = client.CoreV1Api(cluster.api_client())
    svc = client.V1Service(metadata=client.V1ObjectMeta(name="gone"),
                           spec=client.V1ServiceSpec(ports=[client.V1ServicePort(port=80)]))
    api.create_namespaced_service("default", svc)
    deleted = api.delete_namespaced_service("gone", "default")
    assert isinstance(deleted, client.V1Service) and deleted.metadata.name == "gone" and deleted.spec.ports[0].port == 80
    api.create_namespaced_service_account("default", client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="sa")))
    assert api.delete_namespaced_service_account("sa", "default").metadata.name == "sa"
    api.create_namespaced_config_map("default", configmap("cm"))
    status = api.delete_namespaced_config_map("cm", "default")  # typed `object` by the client: a dict
    assert status["kind"] == "Status" and status["status"] == "Success" and status["details"]["name"] == "cm"
