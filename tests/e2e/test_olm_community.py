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
                       "startingCSV": "etcdoperator.v0.9.0"}})

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

    # Uninstall: the operator, its copies and its RBAC go; the CRDs stay.
    c.kubectl("delete", "subscription", "etcd", "-n", OPERATOR_NS)
    c.kubectl("delete", "csv", "etcdoperator.v0.9.4", "-n", OPERATOR_NS)
    wait_for(lambda: get(c, "deployment", "etcd-operator", "-n", OPERATOR_NS) is None
             and get(c, "csv", "etcdoperator.v0.9.4", "-n", WATCHED_NS) is None
             and get(c, "role", "etcdoperator.v0.9.4-etcd-operator", "-n", WATCHED_NS) is None
             and get(c, "role", "etcdoperator.v0.9.4-etcd-operator", "-n", OPERATOR_NS) is None,
             timeout=60, message="the operator, its copy and its RBAC removed")
    assert get(c, "crd", "etcdclusters.etcd.database.coreos.com") is not None
