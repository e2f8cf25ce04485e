"""deploy/ on the embedded cluster, with RBAC deciding every request: the manifests pass a server-side
dry-run; the engine's service account can do what `uc rbac` grants and nothing else; `uc run` with that
identity's token reconciles the sample-controller without one refused request; the Grafana dashboard
charts only metrics the engine exports."""

import json
import re
import subprocess
import urllib.error

import pytest
import yaml

from conftest import ROOT, engine_get, free_port, uc_binary, wait_for

DEPLOY = ROOT / "deploy"
EXAMPLE = ROOT / "examples" / "sample-controller"
SA = "system:serviceaccount:uc-system:uc"


def can(cluster, verb, resource, namespace=None, subresource=None):
    args = ["auth", "can-i", verb, resource, "--as", SA]
    if namespace:
        args += ["-n", namespace]
    if subresource:
        args += ["--subresource", subresource]
    return cluster.kubectl(*args, check=False).stdout.strip() == "yes"


def test_deploy_applies_and_its_identity_can_do_exactly_what_the_controllers_need(make_cluster, tmp_path):
    audit = tmp_path / "audit.log"
    api = make_cluster(["--no-engine", "--no-node", "--in-memory", "--audit-log-path", str(audit)])
    api.kubectl("apply", "-f", str(DEPLOY / "namespace.yaml"))
    dry = api.kubectl("apply", "--dry-run=server", "-f", str(DEPLOY))
    for kind in ["customresourcedefinition", "serviceaccount", "clusterrole", "clusterrolebinding", "deployment",
                 "service", "poddisruptionbudget"]:
        assert f"{kind}" in dry.stdout and "(server dry run)" in dry.stdout, dry.stdout
    assert api.kubectl("get", "deploy", "-n", "uc-system", "uc", check=False).returncode != 0, "a dry run writes nothing"
    api.kubectl("apply", "-f", str(DEPLOY))
    deployment = json.loads(api.kubectl("get", "deploy", "-n", "uc-system", "uc", "-o", "json").stdout)
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "uc"

    # The engine's own rules: its lease, uc's kinds, Events; nothing of anyone's workloads yet.
    assert can(api, "update", "leases.coordination.k8s.io", "uc-system")
    assert can(api, "patch", "universalcontrollers.universalcontroller.njuics.cn", subresource="status")
    assert can(api, "create", "events", "default")
    assert not can(api, "create", "deployments.apps", "default")
    assert not can(api, "get", "secrets", "default")
    assert not can(api, "delete", "universalcontrollers.universalcontroller.njuics.cn")

    # A controller's rules, from its object, bound to the same identity.
    role = subprocess.run([uc_binary(), "rbac", "--no-engine-rules", "--name", "uc-controller-sample-controller",
                           "--service-account", "uc-system/uc", str(EXAMPLE / "controller.yaml")],
                          capture_output=True, text=True, check=True).stdout
    api.kubectl("apply", "-f", "-", input=role)
    api.kubectl("apply", "-f", str(EXAMPLE / "crd.yaml"))
    assert can(api, "create", "deployments.apps", "default") and can(api, "delete", "deployments.apps", "default")
    assert can(api, "update", "foos.njuics.cn", "default", subresource="status")
    assert not can(api, "delete", "foos.njuics.cn", "default"), "a parent is the user's, not the controller's"
    assert not can(api, "create", "statefulsets.apps", "default")
    assert not can(api, "get", "secrets", "default")

    # uc run as that identity: a token for the service account, the cluster's CA.
    token = api.kubectl("create", "token", "uc", "-n", "uc-system").stdout.strip()
    kc = yaml.safe_load(open(api.kubeconfig))
    kc["users"][0]["user"] = {"token": token}
    sa_kubeconfig = tmp_path / "sa.kubeconfig"
    sa_kubeconfig.write_text(yaml.safe_dump(kc))
    api.kubectl("create", "configmap", "sample-controller-hook", f"--from-file={EXAMPLE / 'sync.js'}")
    api.kubectl("apply", "-f", str(EXAMPLE / "controller.yaml"))
    port = free_port()
    log = open(tmp_path / "uc-run.log", "wb")
    engine = subprocess.Popen([uc_binary(), "run", "--kubeconfig", str(sa_kubeconfig), "--leader-elect",
                               "--leader-election-namespace", "uc-system", "--metrics-addr", f"127.0.0.1:{port}"],
                              stdout=log, stderr=log)
    try:
        api.kubectl("apply", "-f", str(EXAMPLE / "foo.yaml"))
        wait_for(lambda: api.kubectl("get", "deploy", "example-foo", check=False).returncode == 0, timeout=30,
                 message="the Foo's Deployment, made by the service account")
        wait_for(lambda: json.loads(api.kubectl("get", "foo", "example-foo", "-o", "json").stdout).get("status") is not None,
                 timeout=30, message="the Foo's status")
        lease = json.loads(api.kubectl("get", "lease", "-n", "uc-system", "uc-engine", "-o", "json").stdout)
        assert lease["spec"]["holderIdentity"]
        # The engine asks the cluster (as its service account) whether the scraper may read /metrics:
        # Prometheus' account with the shipped uc-metrics-reader may, another account may not.
        reader = next(d for d in yaml.safe_load_all((DEPLOY / "monitoring" / "servicemonitor.yaml").read_text())
                      if d["kind"] == "ClusterRole")
        api.kubectl("apply", "-f", "-", input=json.dumps(reader))
        api.kubectl("create", "namespace", "monitoring")
        for sa in ("prometheus", "other"):
            api.kubectl("-n", "monitoring", "create", "serviceaccount", sa)
        api.kubectl("create", "clusterrolebinding", "prometheus-uc-metrics", "--clusterrole=uc-metrics-reader",
                    "--serviceaccount=monitoring:prometheus")
        scraper = api.kubectl("-n", "monitoring", "create", "token", "prometheus").stdout.strip()
        metrics = engine_get(f"http://127.0.0.1:{port}/metrics", scraper)
        other = api.kubectl("-n", "monitoring", "create", "token", "other").stdout.strip()
        with pytest.raises(urllib.error.HTTPError) as refused:
            engine_get(f"http://127.0.0.1:{port}/metrics", other)
        assert refused.value.code == 403
    finally:
        engine.terminate()
        assert engine.wait(timeout=30) == 0
        log.close()

    events = [json.loads(line) for line in open(audit) if line.strip()]
    by_sa = [e for e in events if e["user"]["username"] == SA]
    assert len(by_sa) > 5, "the engine's writes were made as the service account"
    refused = [(e["verb"], e["requestURI"]) for e in by_sa if e["responseStatus"]["code"] == 403]
    assert refused == [], refused
    run_log = (tmp_path / "uc-run.log").read_text()
    assert "forbidden" not in run_log.lower(), run_log[-3000:]

    # The dashboard charts metrics the engine exports.
    exported = set(re.findall(r"^# TYPE (\S+) ", metrics, re.M))
    dashboard = json.loads((DEPLOY / "monitoring" / "grafana-dashboard.json").read_text())
    used = {m for p in dashboard["panels"] for t in p["targets"] for m in re.findall(r"\buc_[a-z_]+", t["expr"])}
    assert len(used) >= 8
    for m in used:
        base = re.sub(r"_(bucket|total|sum|count)$", "", m)
        assert base in exported, f"the dashboard charts {m}, which uc does not export"
    monitor = next(d for d in yaml.safe_load_all((DEPLOY / "monitoring" / "servicemonitor.yaml").read_text())
                   if d["kind"] == "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["bearerTokenFile"].endswith("/serviceaccount/token"), "Prometheus' token"
    service = [d for d in yaml.safe_load_all((DEPLOY / "uc.yaml").read_text()) if d["kind"] == "Service"][0]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] in [p["name"] for p in service["spec"]["ports"]]


def helm(*args, check=True):
    return subprocess.run(["helm", *args], capture_output=True, text=True, check=check)


def test_the_helm_chart_renders_objects_the_api_server_accepts_with_the_usual_values(make_cluster, tmp_path):
    chart = str(DEPLOY / "helm" / "uc")
    lint = helm("lint", chart, "--strict")
    assert "0 chart(s) failed" in lint.stdout, lint.stdout + lint.stderr
    api = make_cluster(["--no-engine", "--no-node", "--in-memory"])
    api.kubectl("create", "namespace", "ops")
    api.kubectl("apply", "-f", str(DEPLOY / "crds.yaml"))
    default = helm("template", "uc", chart, "-n", "ops").stdout
    dry = api.kubectl("apply", "--dry-run=server", "-f", "-", input=default)
    # SA, ClusterRole, binding, Service, Deployment, PDB, and the metrics reader's ClusterRole.
    assert dry.stdout.count("(server dry run)") == 7, dry.stdout
    objects = [d for d in yaml.safe_load_all(default) if d]
    deployment = next(d for d in objects if d["kind"] == "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--leader-elect" in args and deployment["spec"]["replicas"] == 2
    role = next(d for d in objects if d["kind"] == "ClusterRole" and "metrics-reader" not in d["metadata"]["name"])
    generated = yaml.safe_load(subprocess.run([uc_binary(), "rbac", "--rules-only"], capture_output=True, text=True,
                                              check=True).stdout)
    assert role["rules"] == generated, "the chart's engine rules are uc rbac's"
    # Every flag the chart passes is one uc run takes.
    help_text = subprocess.run([uc_binary(), "run", "--help"], capture_output=True, text=True, check=True).stdout
    for a in args[1:]:
        flag = a.split("=", 1)[0]
        assert re.search(rf"{re.escape(flag)}[ \n<]", help_text), f"uc run has no {flag}"

    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({
        "replicaCount": 3, "image": {"repository": "registry.example/uc", "tag": "dev"},
        "watchNamespaces": ["a", "b"], "metacontroller": False, "qps": 50, "burst": 80,
        "resources": {"limits": {"memory": "1Gi"}},
        "rbac": {"extraRules": [{"apiGroups": ["njuics.cn"], "resources": ["foos"], "verbs": ["get", "list", "watch"]}]},
        "metrics": {"serviceMonitor": {"enabled": True}},
    }))
    custom = [d for d in yaml.safe_load_all(helm("template", "uc", chart, "-n", "ops", "-f", str(values)).stdout) if d]
    deployment = next(d for d in custom if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert deployment["spec"]["replicas"] == 3 and container["image"] == "registry.example/uc:dev"
    assert {"--watch-namespaces=a,b", "--no-metacontroller", "--qps=50", "--burst=80"} <= set(container["args"])
    assert container["resources"]["limits"]["memory"] == "1Gi"
    rules = next(d for d in custom if d["kind"] == "ClusterRole")["rules"]
    assert {"apiGroups": ["njuics.cn"], "resources": ["foos"], "verbs": ["get", "list", "watch"]} in rules
    assert not any("metacontroller.k8s.io" in r["apiGroups"] for r in rules)
    assert any(d["kind"] == "ServiceMonitor" for d in custom)
    accepted = api.kubectl("apply", "--dry-run=server", "-f", "-", check=False,
                           input=yaml.safe_dump_all([d for d in custom if d["kind"] != "ServiceMonitor"]))
    assert accepted.returncode == 0, accepted.stderr

    # Two replicas without a lease would both write: the chart refuses to render them.
    refused = helm("template", "uc", chart, "--set", "leaderElection.enabled=false", check=False)
    assert refused.returncode != 0 and "leaderElection.enabled" in refused.stderr


def test_the_dockerfile_passes_hadolint():
    """The image cannot be built here (no container runtime); hadolint checks the Dockerfile, and
    crates/uc/tests/deploy.rs that it builds and copies the binary `cargo build` makes."""
    r = subprocess.run(["hadolint", "--failure-threshold", "info", str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
