"""Built-in workload controllers (on uc's own engine) with the node agent: Deployments and ReplicaSets
behave as on a real cluster, enough for operators that wait for availability."""

import json
import os

import pytest

from conftest import ROOT, wait_for

EXAMPLE = ROOT / "examples" / "sample-controller"


def get(cluster, *args):
    r = cluster.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def test_builtin_controllers_are_listed(cluster):
    out = cluster.kubectl("get", "uc", "-l", "uc.njuics.cn/builtin=true", "-o", "name").stdout.split()
    names = sorted(o.rsplit("/", 1)[1] for o in out)
    assert names == ["builtin-cronjob", "builtin-daemonset", "builtin-deployment", "builtin-endpoints",
                     "builtin-horizontalpodautoscaler", "builtin-job", "builtin-persistentvolumeclaim",
                     "builtin-poddisruptionbudget", "builtin-replicaset", "builtin-replicationcontroller", "builtin-statefulset"]
    for n in names:
        wait_for(lambda: any(c["type"] == "Ready" and c["status"] == "True"
                             for c in (get(cluster, "uc", n) or {}).get("status", {}).get("conditions", [])), message=f"{n} ready")
    # The ReplicaSet, ReplicationController and Job controllers read their pods without spec: a watch of
    # that projection; the StatefulSet and DaemonSet controllers read whole pods, from the other.
    assert cluster.metric("uc_watches_open", resource="/v1/pods (spec: nodeName; status: phase, conditions, containerStatuses)") == 1
    assert cluster.metric("uc_watches_open", resource="/v1/pods") == 1


def test_sample_controller_reaches_available_replicas(cluster):
    cluster.kubectl("apply", "-f", str(EXAMPLE / "crd.yaml"))
    cluster.kubectl("create", "configmap", "sample-controller-hook", f"--from-file={EXAMPLE / 'sync.js'}")
    cluster.kubectl("apply", "-f", str(EXAMPLE / "controller.yaml"))
    cluster.kubectl("apply", "-f", str(EXAMPLE / "foo.yaml"))
    cluster.kubectl("patch", "foo", "example-foo", "--type=merge", "-p", '{"spec":{"replicas":2}}')
    wait_for(lambda: (get(cluster, "foo", "example-foo") or {}).get("status", {}).get("availableReplicas") == 2,
             timeout=30, message="Foo.status.availableReplicas == 2 with no manual status patching")


def test_deployment_rollout_and_cascade(cluster):
    cluster.kubectl("create", "deployment", "web", "--image=nginx:1.25", "--replicas=3")
    cluster.kubectl("rollout", "status", "deploy/web", "--timeout=30s")
    d = get(cluster, "deploy", "web")
    assert d["status"]["availableReplicas"] == 3 and d["status"]["observedGeneration"] == d["metadata"]["generation"]
    pods = get(cluster, "pods", "-l", "app=web")["items"]
    assert len(pods) == 3 and all(p["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet" for p in pods)
    cluster.kubectl("set", "image", "deploy/web", "nginx=nginx:1.26")
    cluster.kubectl("rollout", "status", "deploy/web", "--timeout=60s")
    sets = {rs["metadata"]["name"]: rs for rs in get(cluster, "rs", "-l", "app=web")["items"]}
    assert len(sets) == 2
    assert sorted(rs["spec"]["replicas"] for rs in sets.values()) == [0, 3]
    # Pods of the old ReplicaSet may still be Terminating for a moment.
    wait_for(lambda: {p["spec"]["containers"][0]["image"] for p in get(cluster, "pods", "-l", "app=web")["items"]} == {"nginx:1.26"},
             message="only pods of the new template")
    cluster.kubectl("scale", "deploy/web", "--replicas=1")
    wait_for(lambda: len(get(cluster, "pods", "-l", "app=web")["items"]) == 1, message="scaled to 1")
    cluster.kubectl("delete", "deploy", "web")
    wait_for(lambda: get(cluster, "rs", "-l", "app=web")["items"] == [] and get(cluster, "pods", "-l", "app=web")["items"] == [],
             timeout=20, message="ReplicaSets and Pods deleted with their Deployment")


def test_rollout_history_and_undo(cluster):
    cluster.kubectl("create", "deployment", "web", "--image=nginx:1.25", "--replicas=2")
    cluster.kubectl("rollout", "status", "deploy/web", "--timeout=30s")
    assert get(cluster, "deploy", "web")["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    cluster.kubectl("set", "image", "deploy/web", "nginx=nginx:1.26")
    cluster.kubectl("rollout", "status", "deploy/web", "--timeout=60s")
    history = cluster.kubectl("rollout", "history", "deploy/web").stdout
    revisions = [line.split()[0] for line in history.splitlines()[2:] if line.strip()]
    assert revisions == ["1", "2"], history
    cluster.kubectl("rollout", "undo", "deploy/web")
    d = get(cluster, "deploy", "web")
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    cluster.kubectl("rollout", "status", "deploy/web", "--timeout=60s")

    def rs_revisions():
        return {rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                for rs in get(cluster, "rs", "-l", "app=web")["items"]}
    assert wait_for(lambda: rs_revisions() == {"nginx:1.25": "3", "nginx:1.26": "2"} and rs_revisions(),
                    message="the rolled-back ReplicaSet is revision 3")


def test_replicaset_replaces_deleted_pods(cluster):
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "solo"},
          "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "solo"}},
                   "template": {"metadata": {"labels": {"app": "solo"}}, "spec": {"containers": [{"name": "c", "image": "alpine"}]}}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(rs))
    wait_for(lambda: (get(cluster, "rs", "solo") or {}).get("status", {}).get("readyReplicas") == 2, message="2 ready")
    victim = get(cluster, "pods", "-l", "app=solo")["items"][0]["metadata"]
    cluster.kubectl("delete", "pod", victim["name"])
    # The replacement may reuse the name (pod names are derived from the ReplicaSet and a slot), never the uid.
    wait_for(lambda: len([p for p in get(cluster, "pods", "-l", "app=solo")["items"] if p["metadata"]["uid"] != victim["uid"]]) == 2,
             message="a replacement pod")


def job(name, completions, parallelism, backoff, exit_code):
    return json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                       "spec": {"completions": completions, "parallelism": parallelism, "backoffLimit": backoff,
                                "template": {"metadata": {"annotations": {"uc.njuics.cn/run-seconds": "0.3", "uc.njuics.cn/exit-code": str(exit_code)}},
                                             "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "alpine"}]}}}})


def test_job_completions_and_backoff_limit(cluster):
    cluster.kubectl("apply", "-f", "-", input=job("ok", 5, 2, 6, 0))
    cluster.kubectl("apply", "-f", "-", input=job("bad", 1, 1, 2, 1))
    cluster.kubectl("wait", "--for=condition=Complete", "job/ok", "--timeout=60s")
    ok = get(cluster, "job", "ok")
    assert ok["status"]["succeeded"] == 5 and ok["status"]["active"] == 0
    pods = get(cluster, "pods", "-l", "job-name=ok")["items"]
    assert len(pods) == 5 and all(p["status"]["phase"] == "Succeeded" for p in pods)
    cluster.kubectl("wait", "--for=condition=Failed", "job/bad", "--timeout=60s")
    bad = get(cluster, "job", "bad")
    assert bad["status"]["failed"] == 3
    assert [c["reason"] for c in bad["status"]["conditions"]] == ["BackoffLimitExceeded"]


@pytest.mark.skipif(not os.path.exists("/bin/busybox"), reason="needs Debian's busybox (.ci/run installs it)")
def test_indexed_job_gives_each_pod_its_index(cluster):
    """An Indexed Job runs one pod per index, each told its index (`JOB_COMPLETION_INDEX`) and named
    for it (its hostname `<job>-<index>`), and completes when every index has succeeded."""
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "shards"},
        "spec": {"completions": 3, "parallelism": 2, "completionMode": "Indexed",
                 "template": {"spec": {"restartPolicy": "Never", "containers": [{
                     "name": "c", "image": "busybox", "command": ["sh", "-c", "echo index=$JOB_COMPLETION_INDEX host=$HOSTNAME"]}]}}}}))
    cluster.kubectl("wait", "--for=condition=Complete", "job/shards", "--timeout=90s")
    assert get(cluster, "job", "shards")["status"]["completedIndexes"] == "0-2"
    pods = get(cluster, "pods", "-l", "batch.kubernetes.io/job-name=shards")["items"]
    said = {}
    for p in pods:
        index = p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]
        assert p["metadata"]["name"].startswith(f"shards-{index}-") and p["spec"]["hostname"] == f"shards-{index}"
        said[index] = cluster.kubectl("logs", p["metadata"]["name"]).stdout.strip()
    assert said == {i: f"index={i} host=shards-{i}" for i in ("0", "1", "2")}, said


def test_job_deadline_and_ttl_after_finished(cluster):
    """A Job running past `activeDeadlineSeconds` fails with DeadlineExceeded and its pod stops; a finished
    Job with `ttlSecondsAfterFinished` is deleted that long after it finished, as its own history shows."""
    from datetime import timedelta
    from kubernetes import client, watch
    slow = json.loads(job("slow", 1, 1, 6, 0))
    slow["spec"]["activeDeadlineSeconds"] = 3
    slow["spec"]["template"]["metadata"]["annotations"]["uc.njuics.cn/run-seconds"] = "600"
    cluster.kubectl("apply", "-f", "-", input=json.dumps(slow))
    cluster.kubectl("wait", "--for=condition=Failed", "job/slow", "--timeout=60s")
    failed = get(cluster, "job", "slow")
    assert [(c["reason"], c["message"]) for c in failed["status"]["conditions"]] == \
        [("DeadlineExceeded", "Job was active longer than specified deadline")]
    wait_for(lambda: get(cluster, "pods", "-l", "job-name=slow")["items"] == [], timeout=60, message="its pod stopped")
    batch = client.BatchV1Api(cluster.api_client())
    since = batch.list_namespaced_job("default").metadata.resource_version
    brief = json.loads(job("brief", 1, 1, 6, 0))
    brief["spec"]["ttlSecondsAfterFinished"] = 2
    cluster.kubectl("apply", "-f", "-", input=json.dumps(brief))
    finished, asked = None, None
    for ev in watch.Watch().stream(batch.list_namespaced_job, "default", field_selector="metadata.name=brief",
                                   resource_version=since, timeout_seconds=90):
        obj = ev["object"]
        conditions = obj.status.conditions or []
        finished = finished or next((c.last_transition_time for c in conditions if c.type == "Complete" and c.status == "True"), None)
        asked = asked or obj.metadata.deletion_timestamp
        if ev["type"] == "DELETED":
            break
    else:
        raise AssertionError("the Job was not deleted within 90 s")
    # Its deletion was asked for (the server's clock) no sooner than its TTL after it finished.
    assert finished is not None and asked is not None, (finished, asked)
    assert asked >= finished + timedelta(seconds=2), (finished, asked)


def test_cron_job_makes_its_job_at_the_scheduled_minute(cluster):
    """A CronJob scheduled every minute gets a Job at the next minute, named and stamped for that minute,
    as the Jobs' own history shows it (a watch from before the CronJob); the Job runs, and the CronJob's
    status and Events follow it."""
    from datetime import datetime, timezone
    from kubernetes import client, watch
    batch = client.BatchV1Api(cluster.api_client())
    since = batch.list_namespaced_job("default").metadata.resource_version
    template = json.loads(job("unused", 1, 1, 0, 0))["spec"]
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
        "spec": {"schedule": "* * * * *", "timeZone": "Etc/UTC", "concurrencyPolicy": "Forbid",
                 "jobTemplate": {"metadata": {"labels": {"app": "tick"}}, "spec": template}}}))
    cron = get(cluster, "cronjob", "tick")
    assert cron["spec"]["successfulJobsHistoryLimit"] == 3 and cron["spec"]["suspend"] is False, "kube's defaults"
    made = None
    for ev in watch.Watch().stream(batch.list_namespaced_job, "default", resource_version=since, timeout_seconds=150):
        owners = ev["object"].metadata.owner_references or []
        if ev["type"] == "ADDED" and any(o.kind == "CronJob" and o.name == "tick" and o.controller for o in owners):
            made = ev["object"]
            break
    assert made is not None, "no Job within two and a half minutes"
    minutes = int(made.metadata.name.removeprefix("tick-"))
    scheduled = datetime.fromtimestamp(minutes * 60, timezone.utc)
    assert made.metadata.annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"] == scheduled.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert made.metadata.creation_timestamp >= scheduled, "made at its minute, not before"
    assert made.metadata.labels["app"] == "tick"
    cluster.kubectl("wait", "--for=condition=Complete", f"job/{made.metadata.name}", "--timeout=60s")
    status = wait_for(lambda: (s := get(cluster, "cronjob", "tick")["status"]).get("lastSuccessfulTime") and s,
                      timeout=30, message="the CronJob saw its Job succeed")
    assert status["lastScheduleTime"] == scheduled.strftime("%Y-%m-%dT%H:%M:%SZ")
    events = get(cluster, "events", "--field-selector", "involvedObject.kind=CronJob,involvedObject.name=tick")["items"]
    assert any(e["reason"] == "SuccessfulCreate" and e["message"] == f"Created job {made.metadata.name}"
               and e["source"]["component"] == "cronjob-controller" for e in events), events
    # A Job made by hand from the template stays the CronJob's, as in kube, through its whole life (its
    # own history, until it completes) and goes with the CronJob.
    since = batch.list_namespaced_job("default").metadata.resource_version
    cluster.kubectl("create", "job", "by-hand", "--from=cronjob/tick")
    owners = []
    for ev in watch.Watch().stream(batch.list_namespaced_job, "default", field_selector="metadata.name=by-hand",
                                   resource_version=since, timeout_seconds=60):
        job_now = ev["object"]
        owners.append([o.name for o in job_now.metadata.owner_references or []])
        if any(c.type == "Complete" and c.status == "True" for c in job_now.status.conditions or []):
            break
    assert len(owners) > 1 and all(o == ["tick"] for o in owners), owners
    cluster.kubectl("delete", "cronjob", "tick")
    for name in (made.metadata.name, "by-hand"):
        wait_for(lambda: get(cluster, "job", name) is None, timeout=30, message=f"{name} goes with the CronJob")


def test_service_endpoints_follow_ready_pods(cluster):
    cluster.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2", "--port=8080")
    cluster.kubectl("expose", "deployment", "web", "--port=80", "--target-port=8080")
    ep = wait_for(lambda: (e := get(cluster, "endpoints", "web")) and len((e.get("subsets") or [{}])[0].get("addresses", [])) == 2 and e,
                  timeout=30, message="two ready addresses")
    pod_ips = sorted(p["status"]["podIP"] for p in get(cluster, "pods", "-l", "app=web")["items"])
    assert sorted(a["ip"] for a in ep["subsets"][0]["addresses"]) == pod_ips
    assert ep["subsets"][0]["ports"][0]["port"] == 8080
    # The same pods as an EndpointSlice, which newer clients read (kubectl's own `describe` among them).
    slices = wait_for(lambda: (l := get(cluster, "endpointslices", "-l", "kubernetes.io/service-name=web")["items"])
                      and sum(len(s.get("endpoints") or []) for s in l) == 2 and l, timeout=30, message="two endpoints in slices")
    assert len(slices) == 1 and slices[0]["addressType"] == "IPv4"
    assert slices[0]["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == "endpointslice-controller.k8s.io"
    assert slices[0]["metadata"]["ownerReferences"][0]["kind"] == "Service"
    assert sorted(e["addresses"][0] for e in slices[0]["endpoints"]) == pod_ips
    assert all(e["conditions"] == {"ready": True, "serving": True, "terminating": False} for e in slices[0]["endpoints"])
    assert slices[0]["ports"] == [{"name": "", "port": 8080, "protocol": "TCP"}]
    table = cluster.kubectl("get", "endpointslices", "-l", "kubernetes.io/service-name=web").stdout
    assert "IPv4" in table and "8080" in table, table
    cluster.kubectl("scale", "deploy/web", "--replicas=1")
    wait_for(lambda: len(get(cluster, "endpoints", "web")["subsets"][0]["addresses"]) == 1, timeout=30, message="one address")
    wait_for(lambda: [len(s.get("endpoints") or []) for s in get(cluster, "endpointslices", "-l", "kubernetes.io/service-name=web")["items"]] == [1],
             timeout=30, message="one endpoint in the slice")


STATEFULSET = {
    "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
    "spec": {"replicas": 3, "serviceName": "web", "selector": {"matchLabels": {"app": "sts"}},
             "template": {"metadata": {"labels": {"app": "sts"}, "annotations": {"uc.njuics.cn/ready-delay-seconds": "0.5"}},
                          "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}},
             "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                       "resources": {"requests": {"storage": "1Gi"}}}}]}}


def test_statefulset_ordered_start_scale_down_and_claims(cluster):
    import time

    cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                                                          "spec": {"clusterIP": "None", "selector": {"app": "sts"}, "ports": [{"port": 80}]}}))
    # Ordered start, as the pods' own history shows it (a watch from before the StatefulSet): each pod is
    # created only once the one before it is Ready.
    from kubernetes import client, watch
    core = client.CoreV1Api(cluster.api_client())
    since = core.list_namespaced_pod("default", label_selector="app=sts").metadata.resource_version
    cluster.kubectl("apply", "-f", "-", input=json.dumps(STATEFULSET))
    history = []  # (event type, pod, Ready)
    for ev in watch.Watch().stream(core.list_namespaced_pod, "default", label_selector="app=sts",
                                   resource_version=since, timeout_seconds=60):
        pod = ev["object"]
        ready = any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
        history.append((ev["type"], pod.metadata.name, ready))
        if ev["type"] == "ADDED" and pod.metadata.name == "web-2":
            break
    assert [n for t, n, _ in history if t == "ADDED"] == ["web-0", "web-1", "web-2"], history
    for n in (1, 2):
        created = next(i for i, (t, name, _) in enumerate(history) if t == "ADDED" and name == f"web-{n}")
        assert any(name == f"web-{n - 1}" and ready for _, name, ready in history[:created]), \
            f"web-{n} was created before web-{n - 1} was Ready: {history}"
    wait_for(lambda: (get(cluster, "sts", "web") or {}).get("status", {}).get("readyReplicas") == 3, timeout=30, message="3 ready")
    p0 = get(cluster, "pod", "web-0")
    assert p0["spec"]["hostname"] == "web-0" and p0["spec"]["subdomain"] == "web"
    claims = sorted(c["metadata"]["name"] for c in get(cluster, "pvc")["items"])
    assert claims == ["www-web-0", "www-web-1", "www-web-2"]
    # Bound, as a storage class binding at once binds them (`kubectl get pvc` STATUS).
    bound = wait_for(lambda: (c := get(cluster, "pvc", "www-web-0")) and c.get("status", {}).get("phase") == "Bound" and c,
                     timeout=30, message="the claim Bound")
    assert bound["status"]["accessModes"] == bound["spec"]["accessModes"]
    assert bound["status"]["capacity"]["storage"] == bound["spec"]["resources"]["requests"]["storage"]
    cluster.kubectl("scale", "sts/web", "--replicas=1")
    wait_for(lambda: [p["metadata"]["name"] for p in get(cluster, "pods", "-l", "app=sts")["items"]] == ["web-0"], timeout=30, message="scaled to 1")
    assert sorted(c["metadata"]["name"] for c in get(cluster, "pvc")["items"]) == claims, "claims are kept on scale-down"
    # Deleting a pod brings it back under the same name with the same claim.
    uid = get(cluster, "pod", "web-0")["metadata"]["uid"]
    cluster.kubectl("delete", "pod", "web-0")
    back = wait_for(lambda: (p := get(cluster, "pod", "web-0")) and p["metadata"]["uid"] != uid and p, timeout=20, message="web-0 back")
    assert back["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "www-web-0"


DAEMONSET_STATUS = ["currentNumberScheduled", "desiredNumberScheduled", "numberMisscheduled", "numberReady",
                    "numberAvailable", "numberUnavailable", "updatedNumberScheduled", "observedGeneration"]


def test_daemonset_runs_one_pod_on_the_node_and_rolls_template_changes(cluster):
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
          "spec": {"selector": {"matchLabels": {"app": "agent"}},
                   "template": {"metadata": {"labels": {"app": "agent"}},
                                "spec": {"containers": [{"name": "c", "image": "alpine:3.19"}]}}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(ds))
    st = wait_for(lambda: (s := (get(cluster, "ds", "agent") or {}).get("status") or {}) and s.get("numberReady") == 1 and s,
                  timeout=30, message="the DaemonSet's pod Ready")
    assert sorted(k for k in st if k in DAEMONSET_STATUS) == sorted(DAEMONSET_STATUS), f"every status integer: {st}"
    assert (st["desiredNumberScheduled"], st["currentNumberScheduled"], st["numberMisscheduled"], st["numberUnavailable"]) == (1, 1, 0, 0)
    pods = get(cluster, "pods", "-l", "app=agent")["items"]
    assert [p["spec"]["nodeName"] for p in pods] == ["uc-node"]
    table = cluster.kubectl("get", "ds", "agent").stdout.splitlines()
    assert table[0].split()[:6] == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE"]
    assert table[1].split()[1:6] == ["1", "1", "1", "1", "1"]
    # A new template replaces the pod; the status counts it as updated once it runs.
    old = pods[0]["metadata"]["uid"]
    cluster.kubectl("set", "image", "ds/agent", "c=alpine:3.20")
    wait_for(lambda: [p["spec"]["containers"][0]["image"] for p in get(cluster, "pods", "-l", "app=agent")["items"]
                      if p["metadata"]["uid"] != old and "deletionTimestamp" not in p["metadata"]] == ["alpine:3.20"],
             timeout=30, message="the pod replaced")
    wait_for(lambda: (get(cluster, "ds", "agent")["status"].get("updatedNumberScheduled"),
                      get(cluster, "ds", "agent")["status"].get("numberReady")) == (1, 1), timeout=30, message="updated")


def test_replication_controller_keeps_its_replicas(cluster):
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "legacy"},
          "spec": {"replicas": 2, "selector": {"app": "legacy"},
                   "template": {"metadata": {"labels": {"app": "legacy"}},
                                "spec": {"containers": [{"name": "c", "image": "alpine"}]}}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(rc))
    st = wait_for(lambda: (s := (get(cluster, "rc", "legacy") or {}).get("status") or {}) and s.get("readyReplicas") == 2 and s,
                  timeout=30, message="2 ready replicas")
    assert (st["replicas"], st["fullyLabeledReplicas"], st["availableReplicas"]) == (2, 2, 2)
    pods = get(cluster, "pods", "-l", "app=legacy")["items"]
    assert len(pods) == 2 and all(p["metadata"]["ownerReferences"][0]["kind"] == "ReplicationController" for p in pods)
    cluster.kubectl("scale", "rc/legacy", "--replicas=1")
    wait_for(lambda: len([p for p in get(cluster, "pods", "-l", "app=legacy")["items"]
                          if "deletionTimestamp" not in p["metadata"]]) == 1, timeout=30, message="scaled to 1")


PDB = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: NAME}\nspec: {selector: {matchLabels: {app: NAME}}, BUDGET}\n"


def test_evictions_honour_disruption_budgets_and_drain(cluster):
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    # Two pods no controller replaces, and a budget that allows no disruption.
    for name in ("db-0", "db-1"):
        cluster.kubectl("run", name, "--image=nginx:1.25", "--labels=app=db")
    cluster.kubectl("wait", "--for=condition=Ready", "pod", "db-0", "db-1", "--timeout=30s")
    cluster.kubectl("apply", "-f", "-", input=PDB.replace("NAME", "db").replace("BUDGET", "minAvailable: 2"))
    status = wait_for(lambda: (s := get(cluster, "pdb", "db").get("status", {})).get("currentHealthy") == 2 and s,
                      message="the budget counted")
    assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (2, 2, 0)
    api = client.CoreV1Api(cluster.api_client())

    def evict(name):
        api.create_namespaced_pod_eviction(name, "default", client.V1Eviction(metadata=client.V1ObjectMeta(name=name)))

    with pytest.raises(ApiException) as refused:
        evict("db-0")
    assert refused.value.status == 429 and "disruption budget" in refused.value.body
    # One disruption allowed: the first eviction takes it, the second is refused (whether or not the first
    # pod is gone yet: one must stay).
    cluster.kubectl("apply", "-f", "-", input=PDB.replace("NAME", "db").replace("BUDGET", "minAvailable: 1"))
    wait_for(lambda: get(cluster, "pdb", "db").get("status", {}).get("disruptionsAllowed") == 1, message="one allowed")
    evict("db-0")
    with pytest.raises(ApiException) as second:
        evict("db-1")
    assert second.value.status == 429
    wait_for(lambda: get(cluster, "pod", "db-0") is None, message="the evicted pod gone")
    # kubectl drain evicts the node's pods through the same subresource.
    cluster.kubectl("delete", "pdb", "db")
    node = cluster.kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}").stdout
    out = cluster.kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=60s")
    assert "evicting pod default/db-1" in out.stderr + out.stdout and "drained" in out.stdout, out.stdout + out.stderr
    cluster.kubectl("uncordon", node)
