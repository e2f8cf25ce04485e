"""A community OLM package, unchanged, through OLM's API on uc: the upstream etcd package
(operator-framework/community-operators, `tests/e2e/upstream/README.md`) served from its package-manifest
folder, installed with Manual approval as a SingleNamespace operator, upgraded 0.9.0 → 0.9.2 → 0.9.4
along `replaces`, its CSV copied and its RBAC present in the namespace it watches, then uninstalled.

Its CSVs list owned CRDs' `resources` without a `name`: OLM's Go types send `""` (no omitempty) and so
does uc, or the CSV CRD refuses them."""

import json
from pathlib import Path

from conftest import wait_for

CATALOG = Path(__file__).resolve().parent / "upstream" / "community-operators"
OPERATOR_NS, WATCHED_NS = "etcd-op", "etcd-app"


def get(c, *args):
    r = c.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def apply(c, obj):
    c.kubectl("apply", "-f", "-", input=json.dumps(obj))


def approve_the_plan_for(c, csv):
    plan = wait_for(lambda: next((p for p in get(c, "installplan", "-n", OPERATOR_NS)["items"]
                                  if csv in p["spec"]["clusterServiceVersionNames"]), None),
                    timeout=60, message=f"an InstallPlan for {csv}")
    assert plan["spec"]["approval"] == "Manual" and plan["spec"]["approved"] is False
    assert get(c, "csv", csv, "-n", OPERATOR_NS) is None, "nothing installed before approval"
    c.kubectl("patch", "installplan", plan["metadata"]["name"], "-n", OPERATOR_NS, "--type=merge",
              "-p", '{"spec":{"approved":true}}')
    return wait_for(lambda: (x := get(c, "csv", csv, "-n", OPERATOR_NS)) and x.get("status", {}).get("phase") == "Succeeded"
                    and x, timeout=90, message=f"{csv} Succeeded")


def test_the_community_etcd_package_installs_upgrades_and_uninstalls_unchanged(make_cluster):
    c = make_cluster(["--operators", "none"])
    for ns in (OPERATOR_NS, WATCHED_NS):
        c.kubectl("create", "namespace", ns)
    apply(c, {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
              "metadata": {"name": "community", "namespace": OPERATOR_NS},
              "spec": {"sourceType": "grpc", "address": f"file://{CATALOG}", "displayName": "Community Operators"}})
    apply(c, {"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
              "metadata": {"name": "etcd", "namespace": OPERATOR_NS}, "spec": {"targetNamespaces": [WATCHED_NS]}})
    apply(c, {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
              "metadata": {"name": "etcd", "namespace": OPERATOR_NS},
              "spec": {"name": "etcd", "channel": "singlenamespace-alpha", "source": "community",
                       "sourceNamespace": OPERATOR_NS, "installPlanApproval": "Manual",
                       "startingCSV": "etcdoperator.v0.9.0",
                       # Seed 001 §4.2: the operator behind a proxy, set on its Subscription.
                       "config": {"env": [{"name": "HTTP_PROXY", "value": "http://proxy.example:3128"}],
                                  "resources": {"requests": {"memory": "64Mi"}}}}})

    csv = approve_the_plan_for(c, "etcdoperator.v0.9.0")
    owned = csv["spec"]["customresourcedefinitions"]["owned"]
    assert {r.get("name") for o in owned for r in o.get("resources", [])} == {""}, "unnamed resources sent as OLM sends them"
    plan = next(p for p in get(c, "installplan", "-n", OPERATOR_NS)["items"]
                if "etcdoperator.v0.9.0" in p["spec"]["clusterServiceVersionNames"])
    assert plan["status"]["phase"] == "Complete"
    assert {s["status"] for s in plan["status"]["plan"]} <= {"Created", "Present"}, plan["status"]["plan"]
    for crd in ("etcdclusters", "etcdbackups", "etcdrestores"):
        assert get(c, "crd", f"{crd}.etcd.database.coreos.com") is not None
    # Copied into the namespace it watches, with its RBAC there: the operator may act where it watches.
    copy = wait_for(lambda: get(c, "csv", "etcdoperator.v0.9.0", "-n", WATCHED_NS), timeout=30,
                    message="the CSV copied into the watched namespace")
    assert copy["metadata"]["labels"]["olm.copiedFrom"] == OPERATOR_NS and copy["status"]["reason"] == "Copied"
    wait_for(lambda: get(c, "role", "etcdoperator.v0.9.0-etcd-operator", "-n", WATCHED_NS), timeout=30,
             message="the tenant Role in the watched namespace")
    can = c.kubectl("auth", "can-i", "create", "etcdclusters.etcd.database.coreos.com", "-n", WATCHED_NS,
                    f"--as=system:serviceaccount:{OPERATOR_NS}:etcd-operator").stdout.strip()
    assert can == "yes"

    # Upgrades along `replaces`, one approved plan at a time.
    approve_the_plan_for(c, "etcdoperator.v0.9.2")
    newest = approve_the_plan_for(c, "etcdoperator.v0.9.4")
    assert newest["spec"]["replaces"] == "etcdoperator.v0.9.2"
    wait_for(lambda: get(c, "csv", "etcdoperator.v0.9.0", "-n", OPERATOR_NS) is None
             and get(c, "csv", "etcdoperator.v0.9.2", "-n", OPERATOR_NS) is None, timeout=60,
             message="the replaced CSVs removed")
    sub = wait_for(lambda: (s := get(c, "subscription", "etcd", "-n", OPERATOR_NS))
                   and s.get("status", {}).get("state") == "AtLatestKnown" and s, timeout=60, message="at the head")
    assert sub["status"]["installedCSV"] == "etcdoperator.v0.9.4"
    wait_for(lambda: get(c, "role", "etcdoperator.v0.9.4-etcd-operator", "-n", WATCHED_NS), timeout=30,
             message="the newest CSV's Role in the watched namespace")
    deployment = get(c, "deployment", "etcd-operator", "-n", OPERATOR_NS)
    assert deployment["metadata"]["labels"]["olm.owner"] == "etcdoperator.v0.9.4"
    for container in deployment["spec"]["template"]["spec"]["containers"]:
        assert {"name": "HTTP_PROXY", "value": "http://proxy.example:3128"} in container["env"], container["name"]
        assert container["resources"] == {"requests": {"memory": "64Mi"}}

    # Uninstall: the operator, its copies and its RBAC go; the CRDs stay.
    c.kubectl("delete", "subscription", "etcd", "-n", OPERATOR_NS)
    c.kubectl("delete", "csv", "etcdoperator.v0.9.4", "-n", OPERATOR_NS)
    wait_for(lambda: get(c, "deployment", "etcd-operator", "-n", OPERATOR_NS) is None
             and get(c, "csv", "etcdoperator.v0.9.4", "-n", WATCHED_NS) is None
             and get(c, "role", "etcdoperator.v0.9.4-etcd-operator", "-n", WATCHED_NS) is None
             and get(c, "role", "etcdoperator.v0.9.4-etcd-operator", "-n", OPERATOR_NS) is None,
             timeout=60, message="the operator, its copy and its RBAC removed")
    assert get(c, "crd", "etcdclusters.etcd.database.coreos.com") is not None


def registry_config_map(name, namespace):
    """The same package in OLM's older configmap-registry layout: `packages`, `clusterServiceVersions`,
    `customResourceDefinitions`, each a YAML list (the singlenamespace bundles)."""
    import yaml

    pkg = CATALOG / "etcd"
    csvs, crds = [], {}
    for version in ("0.9.0", "0.9.2", "0.9.4"):
        for f in sorted((pkg / version).iterdir()):
            doc = yaml.safe_load(f.read_text())
            if doc["kind"] == "ClusterServiceVersion":
                csvs.append(doc)
            else:
                crds[doc["metadata"]["name"]] = doc
    package = yaml.safe_load((pkg / "etcd.package.yaml").read_text())
    package["channels"] = [c for c in package["channels"] if c["name"] == "singlenamespace-alpha"]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"packages": yaml.safe_dump([package]), "clusterServiceVersions": yaml.safe_dump(csvs),
                     "customResourceDefinitions": yaml.safe_dump(list(crds.values()))}}


def test_a_configmap_registry_catalog_a_failed_plan_and_catalog_health_by_namespace(make_cluster):
    c = make_cluster(["--operators", "none"])
    for ns in ("registry", "elsewhere"):
        c.kubectl("create", "namespace", ns)
    apply(c, registry_config_map("etcd-registry", "registry"))
    apply(c, {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
              "metadata": {"name": "registry", "namespace": "registry"},
              "spec": {"sourceType": "configmap", "configMap": "etcd-registry"}})
    manifest = wait_for(lambda: get(c, "packagemanifest", "etcd", "-n", "registry"), timeout=30,
                        message="the package of the configmap registry listed")
    assert manifest["status"]["channels"][0]["currentCSV"] == "etcdoperator.v0.9.4"
    # A broken catalog in another namespace is no concern of this namespace's Subscription.
    apply(c, {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
              "metadata": {"name": "broken", "namespace": "elsewhere"},
              "spec": {"sourceType": "configmap", "configMap": "missing"}})
    # A CRD already here storing a version the bundle's CRD does not serve: the plan must fail there.
    apply(c, {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
              "metadata": {"name": "etcdclusters.etcd.database.coreos.com"},
              "spec": {"group": "etcd.database.coreos.com", "scope": "Namespaced",
                       "names": {"kind": "EtcdCluster", "plural": "etcdclusters", "listKind": "EtcdClusterList"},
                       "versions": [{"name": "v1beta2", "served": True, "storage": True,
                                     "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
                                    {"name": "v9", "served": True, "storage": False,
                                     "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}})
    c.kubectl("patch", "crd", "etcdclusters.etcd.database.coreos.com", "--subresource=status", "--type=merge",
              "-p", '{"status":{"storedVersions":["v1beta2","v9"]}}')
    apply(c, {"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
              "metadata": {"name": "own", "namespace": "registry"}, "spec": {"targetNamespaces": ["registry"]}})
    apply(c, {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
              "metadata": {"name": "etcd", "namespace": "registry"},
              "spec": {"name": "etcd", "channel": "singlenamespace-alpha", "source": "registry",
                       "sourceNamespace": "registry"}})
    sub = wait_for(lambda: (s := get(c, "subscription", "etcd", "-n", "registry"))
                   and s.get("status", {}).get("state") == "UpgradeFailed" and s, timeout=60, message="UpgradeFailed")
    failed = {x["type"]: x for x in sub["status"]["conditions"]}
    assert failed["InstallPlanFailed"]["status"] == "True" and "v9" in failed["InstallPlanFailed"]["message"]
    assert failed["CatalogSourcesUnhealthy"]["status"] == "False", "the broken catalog is in another namespace"
    plan = get(c, "installplan", sub["status"]["installPlanRef"]["name"], "-n", "registry")
    steps = [(s["resource"]["name"], s["status"]) for s in plan["status"]["plan"]]
    assert steps[0] == ("etcdbackups.etcd.database.coreos.com", "Created"), steps
    assert steps[1] == ("etcdclusters.etcd.database.coreos.com", "Unknown"), "the step that failed"
    assert all(status == "Unknown" for _, status in steps[2:]), steps
    assert get(c, "csv", "etcdoperator.v0.9.4", "-n", "registry") is None, "nothing after the failed step"


def test_an_operator_group_service_account_scopes_what_an_install_may_do(make_cluster):
    """Seed 001 §8.2–8.3: an OperatorGroup naming a service account; the install runs with that account's
    permissions, and what it may not do fails the plan with the API server's words."""
    c = make_cluster(["--operators", "none"])
    c.kubectl("create", "namespace", "scoped")
    c.kubectl("create", "serviceaccount", "installer", "-n", "scoped")
    apply(c, {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
              "metadata": {"name": "community", "namespace": "scoped"},
              "spec": {"sourceType": "grpc", "address": f"file://{CATALOG}"}})
    apply(c, {"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
              "metadata": {"name": "scoped", "namespace": "scoped"},
              "spec": {"targetNamespaces": ["scoped"], "serviceAccountName": "installer"}})
    apply(c, {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
              "metadata": {"name": "etcd", "namespace": "scoped"},
              "spec": {"name": "etcd", "channel": "singlenamespace-alpha", "source": "community",
                       "sourceNamespace": "scoped"}})
    sub = wait_for(lambda: (s := get(c, "subscription", "etcd", "-n", "scoped"))
                   and s.get("status", {}).get("state") == "UpgradeFailed" and s, timeout=60,
                   message="the unprivileged install failed")
    plan = get(c, "installplan", sub["status"]["installPlanRef"]["name"], "-n", "scoped")
    assert plan["status"]["attenuatedServiceAccountRef"]["name"] == "installer"
    message = plan["status"]["message"]
    assert "forbidden" in message and "system:serviceaccount:scoped:installer" in message, message
    assert get(c, "crd", "etcdclusters.etcd.database.coreos.com") is None, "nothing the account may not create"
    # Given the rights, a new plan (the failed one deleted, as on OLM) installs.
    c.kubectl("create", "clusterrolebinding", "installer-admin", "--clusterrole=cluster-admin",
              "--serviceaccount=scoped:installer")
    c.kubectl("delete", "installplan", plan["metadata"]["name"], "-n", "scoped")
    wait_for(lambda: (x := get(c, "csv", "etcdoperator.v0.9.4", "-n", "scoped"))
             and x.get("status", {}).get("phase") == "Succeeded", timeout=90, message="installed with the account's rights")
