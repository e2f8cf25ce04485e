"""OLM's own API, served by `uc up` (here with `--operators none`: the tests subscribe): uc's operators as bundles in the built-in
catalog `olm/uc-operators`, listed as PackageManifests; a Subscription → an InstallPlan → a ClusterServiceVersion that succeeds, then
an EtcdCluster made from the CSV's `alm-examples` runs; Manual approval waits for `approved: true`; an
unsatisfiable requirement is a ResolutionFailed condition naming what is missing, with nothing installed.

The tests share one cluster."""

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from conftest import Cluster, wait_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def olm():
    with tempfile.TemporaryDirectory(prefix="uc-e2e-") as d:
        c = Cluster(d, ["--operators", "none"]).start()
        try:
            wait_for(lambda: get(c, "-n", "olm", "catalogsource", "uc-operators") and
                     get(c, "-n", "olm", "catalogsource", "uc-operators").get("status", {})
                     .get("connectionState", {}).get("lastObservedState") == "READY", timeout=30,
                     message="the built-in catalog ready")
            yield c
        finally:
            assert c.stop() == 0, "uc up did not stop cleanly on Ctrl-C"


def get(c, *args):
    r = c.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def subscribe(c, name, package, namespace="operators", **spec):
    sub = {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
           "metadata": {"name": name, "namespace": namespace},
           "spec": {"name": package, "channel": "alpha", "source": "uc-operators", "sourceNamespace": "olm", **spec}}
    c.kubectl("apply", "-f", "-", input=json.dumps(sub))


def etcd_subscribed(olm):
    """The etcd package subscribed to and installed. The test that subscribes comes first, but
    pytest-xdist may hand a later test of this module to a worker of its own (its own cluster): there
    the later test subscribes itself."""
    subscribe(olm, "etcd", "etcd")
    return wait_for(lambda: (s := get(olm, "-n", "operators", "subscription", "etcd"))
                    .get("status", {}).get("state") == "AtLatestKnown" and s, timeout=60, message="the Subscription at its latest")


def condition(obj, kind):
    return next((x for x in (obj or {}).get("status", {}).get("conditions", []) if x["type"] == kind), {})


def test_package_manifests_list_what_the_catalog_offers(olm):
    table = wait_for(lambda: (r := olm.kubectl("get", "packagemanifests", "-n", "olm", check=False)).returncode == 0
                     and "etcd" in r.stdout and r.stdout, timeout=30, message="the package manifests")
    assert "zookeeper" in table and "uc's operators" in table, table
    etcd = get(olm, "-n", "olm", "packagemanifest", "etcd")["status"]
    assert (etcd["catalogSource"], etcd["defaultChannel"], etcd["packageName"]) == ("uc-operators", "alpha", "etcd")
    channel = etcd["channels"][0]
    assert channel["name"] == "alpha" and channel["currentCSV"].startswith("etcd.v")
    desc = channel["currentCSVDesc"]
    assert desc["annotations"]["capabilities"] == "Full Lifecycle" and desc["installModes"], desc.keys()
    assert any(c["kind"] == "EtcdCluster" for c in desc["customresourcedefinitions"]["owned"])


def test_a_subscription_installs_ucs_etcd_operator_and_its_example_runs(olm):
    st = etcd_subscribed(olm)["status"]
    assert st["installedCSV"] == st["currentCSV"] and st["installedCSV"].startswith("etcd.v"), st
    plan = get(olm, "-n", "operators", "installplan", st["installPlanRef"]["name"])
    assert plan["status"]["phase"] == "Complete" and plan["spec"]["approved"] is True
    kinds = [s["resource"]["kind"] for s in plan["status"]["plan"]]
    assert kinds[:3] == ["CustomResourceDefinition"] * 3 and "ClusterServiceVersion" in kinds and "UniversalController" in kinds
    # The Subscription is at its latest once its plan ran; the CSV then settles (as on OLM).
    csv = wait_for(lambda: (c := get(olm, "-n", "operators", "csv", st["installedCSV"])) and
                   c.get("status", {}).get("phase") == "Succeeded" and c, timeout=30, message="the CSV Succeeded")
    assert csv["status"]["reason"] == "InstallSucceeded"
    assert csv["metadata"]["annotations"]["capabilities"] == "Full Lifecycle"
    assert [c["phase"] for c in csv["status"]["conditions"]][-1] == "Succeeded"
    example = json.loads(csv["metadata"]["annotations"]["alm-examples"])[0]
    assert example["kind"] == "EtcdCluster"
    if shutil.which("etcd") is None:
        pytest.skip("the example's members need etcd")
    example["spec"]["size"] = 1
    olm.kubectl("apply", "-f", "-", input=json.dumps(example))
    wait_for(lambda: (e := get(olm, "etcdcluster", example["metadata"]["name"])) and
             e.get("status", {}).get("phase") == "Running" and e["status"].get("readyMembers") == 1,
             timeout=90, message="the example's etcd member running")


def test_deleting_the_subscription_and_csv_uninstalls_the_controllers_and_keeps_crds_and_objects(olm):
    ucs = lambda: {u["metadata"]["name"] for u in get(olm, "universalcontrollers")["items"]}
    etcd_subscribed(olm)
    assert {"etcd-operator", "etcd-backup-operator", "etcd-restore-operator"} <= ucs(), "installed by the plan"
    if get(olm, "etcdcluster", "example") is None:
        example = {"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdCluster",
                   "metadata": {"name": "example", "namespace": "default"}, "spec": {"size": 1}}
        olm.kubectl("apply", "-f", "-", input=json.dumps(example))
    uc = get(olm, "universalcontroller", "etcd-operator")
    assert uc["metadata"]["labels"]["olm.owner"].startswith("etcd.v")
    csv = get(olm, "-n", "operators", "subscription", "etcd")["status"]["installedCSV"]
    olm.kubectl("-n", "operators", "delete", "subscription", "etcd")
    olm.kubectl("-n", "operators", "delete", "csv", csv)
    wait_for(lambda: not ({"etcd-operator", "etcd-backup-operator", "etcd-restore-operator"} & ucs()), timeout=30,
             message="the operator's controllers removed")
    assert get(olm, "crd", "etcdclusters.etcd.database.coreos.com") is not None, "CRDs stay"
    assert get(olm, "etcdcluster", "example") is not None, "the user's objects stay"


def test_manual_approval_waits_for_the_plan_to_be_approved(olm):
    olm.kubectl("create", "namespace", "zk-ops")
    olm.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": "all", "namespace": "zk-ops"}, "spec": {}}))
    subscribe(olm, "zookeeper", "zookeeper", namespace="zk-ops", installPlanApproval="Manual")
    sub = wait_for(lambda: (s := get(olm, "-n", "zk-ops", "subscription", "zookeeper")) and
                   condition(s, "InstallPlanPending").get("reason") == "RequiresApproval" and s,
                   timeout=30, message="the plan waiting for approval")
    name = sub["status"]["installPlanRef"]["name"]
    plan = get(olm, "-n", "zk-ops", "installplan", name)
    assert plan["status"]["phase"] == "RequiresApproval" and plan["spec"]["approval"] == "Manual"
    assert get(olm, "-n", "zk-ops", "csv")["items"] == [], "nothing installed before approval"
    olm.kubectl("-n", "zk-ops", "patch", "installplan", name, "--type=merge", "-p", '{"spec":{"approved":true}}')
    wait_for(lambda: get(olm, "-n", "zk-ops", "installplan", name)["status"]["phase"] == "Complete", timeout=30,
             message="the approved plan carried out")
    wait_for(lambda: (get(olm, "-n", "zk-ops", "subscription", "zookeeper") or {}).get("status", {}).get("state")
             == "AtLatestKnown", timeout=30, message="the Subscription at its latest")
    csv = wait_for(lambda: (cs := get(olm, "-n", "zk-ops", "csv")["items"]) and
                   cs[0].get("status", {}).get("phase") == "Succeeded" and cs[0], timeout=30, message="the CSV Succeeded")
    assert csv["metadata"]["annotations"]["olm.operatorGroup"] == "all"


def test_an_unsatisfiable_requirement_is_a_resolution_failure_and_installs_nothing(olm):
    # The upstream multi-package example: foo.v0.2.0 requires package bar in <0.1.0, which no bar is.
    catalog = (ROOT / "crates" / "uc-olm" / "testdata" / "example-multi-package-index.yaml").read_text()
    olm.kubectl("create", "namespace", "cat")
    olm.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "test-catalog", "namespace": "cat"},
        "data": {"index.yaml": catalog}}))
    olm.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "test", "namespace": "cat"}, "spec": {"sourceType": "configmap", "configMap": "test-catalog"}}))
    wait_for(lambda: (get(olm, "-n", "cat", "catalogsource", "test") or {}).get("status", {})
             .get("connectionState", {}).get("lastObservedState") == "READY", timeout=30, message="the test catalog read")
    olm.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": "all", "namespace": "cat"}, "spec": {}}))
    subscribe(olm, "foo", "foo", namespace="cat", channel="beta", source="test", sourceNamespace="cat",
              startingCSV="foo.v0.2.0")
    failed = wait_for(lambda: condition(get(olm, "-n", "cat", "subscription", "foo"), "ResolutionFailed")
                      .get("status") == "True" and condition(get(olm, "-n", "cat", "subscription", "foo"), "ResolutionFailed"),
                      timeout=30, message="the resolution failure")
    assert failed["reason"] == "ConstraintsNotSatisfiable"
    assert 'package "bar"' in failed["message"] and "<0.1.0" in failed["message"] and "foo.v0.2.0" in failed["message"], failed
    assert get(olm, "-n", "cat", "installplan")["items"] == [] and get(olm, "-n", "cat", "csv")["items"] == []


def test_a_changed_catalog_config_map_is_read_again_at_once(olm):
    # The lifecycle manager watches each ConfigMap a CatalogSource names (by name, not every ConfigMap of
    # the cluster): a settled manager otherwise reads again only every 30 s, so the new package showing
    # within 20 s is the watch's doing.
    testdata = ROOT / "crates" / "uc-olm" / "testdata"
    olm.kubectl("create", "namespace", "refresh")

    def catalog(index):
        olm.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "refresh-catalog", "namespace": "refresh"},
            "data": {"index.yaml": (testdata / index).read_text()}}))

    catalog("example-foo-index.yaml")
    olm.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "refresh", "namespace": "refresh"},
        "spec": {"sourceType": "configmap", "configMap": "refresh-catalog"}}))
    wait_for(lambda: get(olm, "-n", "refresh", "packagemanifest", "foo"), timeout=30, message="the first catalog's package")
    assert get(olm, "-n", "refresh", "packagemanifest", "bar") is None, "not in the first catalog"
    # Other ConfigMaps of the namespace change nothing and wake nothing that matters.
    olm.kubectl("create", "configmap", "unrelated", "-n", "refresh", "--from-literal=a=b")
    catalog("example-multi-package-index.yaml")
    manifest = wait_for(lambda: get(olm, "-n", "refresh", "packagemanifest", "bar"), timeout=20,
                        message="the changed catalog's new package")
    assert manifest["status"]["catalogSource"] == "refresh", manifest["status"]


def test_a_bundle_requiring_an_api_of_another_package_installs_both(olm):
    """`backup-app` (its own catalog) requires EtcdCluster, which only package etcd of uc's catalog
    provides: one plan installs both, and the dependency gets its own Subscription, as on OLM."""
    import base64

    csv = {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
           "metadata": {"name": "backup-app.v1.0.0"},
           "spec": {"version": "1.0.0", "displayName": "Backup app",
                    "installModes": [{"type": "AllNamespaces", "supported": True}],
                    "install": {"strategy": "deployment", "spec": {"deployments": []}},
                    "customresourcedefinitions": {"required": [
                        {"name": "etcdclusters.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster"}]}}}
    blobs = [{"schema": "olm.package", "name": "backup-app", "defaultChannel": "stable"},
             {"schema": "olm.channel", "package": "backup-app", "name": "stable", "entries": [{"name": "backup-app.v1.0.0"}]},
             {"schema": "olm.bundle", "package": "backup-app", "name": "backup-app.v1.0.0",
              "properties": [{"type": "olm.package", "value": {"packageName": "backup-app", "version": "1.0.0"}},
                             {"type": "olm.gvk.required",
                              "value": {"group": "etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster"}},
                             {"type": "olm.bundle.object",
                              "value": {"data": base64.b64encode(json.dumps(csv).encode()).decode()}}]}]
    olm.kubectl("create", "namespace", "apps")
    olm.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "apps-catalog", "namespace": "apps"},
        "data": {"catalog.json": "\n".join(json.dumps(b) for b in blobs)}}))
    olm.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "apps", "namespace": "apps"}, "spec": {"sourceType": "configmap", "configMap": "apps-catalog"}}))
    olm.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup", "metadata": {"name": "all", "namespace": "apps"},
        "spec": {}}))
    subscribe(olm, "backup-app", "backup-app", namespace="apps", channel="stable", source="apps", sourceNamespace="apps")
    sub = wait_for(lambda: (s := get(olm, "-n", "apps", "subscription", "backup-app")) and
                   s.get("status", {}).get("state") == "AtLatestKnown" and s, timeout=60, message="backup-app at its latest")
    plan = get(olm, "-n", "apps", "installplan", sub["status"]["installPlanRef"]["name"])
    assert plan["spec"]["clusterServiceVersionNames"] == ["backup-app.v1.0.0", f"etcd.v{csv_version(olm)}"], plan["spec"]
    steps = {(s["resource"]["kind"], s["resource"]["name"]) for s in plan["status"]["plan"]}
    assert ("Subscription", "etcd-alpha-uc-operators-olm") in steps and ("UniversalController", "etcd-operator") in steps
    for name in ("backup-app.v1.0.0", f"etcd.v{csv_version(olm)}"):
        wait_for(lambda: (get(olm, "-n", "apps", "csv", name) or {}).get("status", {}).get("phase") == "Succeeded",
                 timeout=30, message=f"{name} Succeeded")
    dep = wait_for(lambda: (d := get(olm, "-n", "apps", "subscription", "etcd-alpha-uc-operators-olm")) and
                   d.get("status", {}).get("state") == "AtLatestKnown" and d, timeout=30,
                   message="the dependency's Subscription at its latest")
    assert dep["spec"]["source"] == "uc-operators" and dep["status"]["installedCSV"] == f"etcd.v{csv_version(olm)}"
    # Uninstalled as any operator: the Subscriptions, then the CSVs.
    olm.kubectl("-n", "apps", "delete", "subscription", "--all")
    olm.kubectl("-n", "apps", "delete", "csv", "--all")
    wait_for(lambda: "etcd-operator" not in {u["metadata"]["name"] for u in get(olm, "universalcontrollers")["items"]},
             timeout=30, message="etcd's controllers removed")


def csv_version(olm):
    return get(olm, "-n", "olm", "packagemanifest", "etcd")["status"]["channels"][0]["currentCSV"].removeprefix("etcd.v")


def chain_catalog():
    """Package `chain`: 1.0.0 ← 1.5.0 (replaces) ; 1.0.0 ← 2.0.0 (replaces, skips 1.5.0) ← 3.0.0 (replaces,
    skipRange >=2.0.0 <3.0.0). From 1.0.0 the path is 2.0.0 then 3.0.0."""
    import base64

    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "chains.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Chain", "plural": "chains"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
    entries = [("1.0.0", None, [], None), ("1.5.0", "1.0.0", [], None), ("2.0.0", "1.0.0", ["1.5.0"], None),
               ("3.0.0", "2.0.0", [], ">=2.0.0 <3.0.0")]
    blobs = [{"schema": "olm.package", "name": "chain", "defaultChannel": "alpha"}]
    channel = {"schema": "olm.channel", "package": "chain", "name": "alpha", "entries": []}
    for version, replaces, skips, skip_range in entries:
        csv = {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
               "metadata": {"name": f"chain.v{version}"},
               "spec": {"version": version, "displayName": "Chain",
                        "installModes": [{"type": "AllNamespaces", "supported": True}],
                        "install": {"strategy": "deployment", "spec": {"deployments": []}},
                        "customresourcedefinitions": {"owned": [{"name": "chains.example.com", "version": "v1", "kind": "Chain"}]}}}
        if replaces:
            csv["spec"]["replaces"] = f"chain.v{replaces}"
        entry = {"name": f"chain.v{version}"}
        if replaces:
            entry["replaces"] = f"chain.v{replaces}"
        if skips:
            entry["skips"] = [f"chain.v{s}" for s in skips]
        if skip_range:
            entry["skipRange"] = skip_range
        channel["entries"].append(entry)
        objects = [{"type": "olm.bundle.object", "value": {"data": base64.b64encode(json.dumps(o).encode()).decode()}}
                   for o in (csv, crd)]
        blobs.append({"schema": "olm.bundle", "package": "chain", "name": f"chain.v{version}",
                      "properties": [{"type": "olm.package", "value": {"packageName": "chain", "version": version}},
                                     {"type": "olm.gvk", "value": {"group": "example.com", "version": "v1", "kind": "Chain"}},
                                     *objects]})
    blobs.append(channel)
    return "\n".join(json.dumps(b) for b in blobs)


def chain_namespace(olm, ns):
    olm.kubectl("create", "namespace", ns)
    olm.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "chain-catalog", "namespace": ns},
        "data": {"catalog.json": chain_catalog()}}))
    olm.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "chain", "namespace": ns}, "spec": {"sourceType": "configmap", "configMap": "chain-catalog"}}))
    olm.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup", "metadata": {"name": "all", "namespace": ns},
        "spec": {}}))


def test_automatic_upgrades_walk_the_channel_to_its_head(olm):
    chain_namespace(olm, "chain-auto")
    subscribe(olm, "chain", "chain", namespace="chain-auto", source="chain", sourceNamespace="chain-auto",
              startingCSV="chain.v1.0.0")
    sub = wait_for(lambda: (s := get(olm, "-n", "chain-auto", "subscription", "chain")) and
                   s.get("status", {}).get("state") == "AtLatestKnown" and s, timeout=90, message="the head reached")
    assert sub["status"]["installedCSV"] == "chain.v3.0.0"
    plans = get(olm, "-n", "chain-auto", "installplan")["items"]
    walked = sorted(p["spec"]["clusterServiceVersionNames"][0] for p in plans)
    assert walked == ["chain.v1.0.0", "chain.v2.0.0", "chain.v3.0.0"], "1.5.0 skipped, one plan per step"
    assert all(p["status"]["phase"] == "Complete" for p in plans)
    wait_for(lambda: [c["metadata"]["name"] for c in get(olm, "-n", "chain-auto", "csv")["items"]] == ["chain.v3.0.0"],
             timeout=30, message="replaced CSVs deleted once the new one succeeded")


def test_a_catalog_served_over_http(olm):
    import http.server
    import threading

    body = chain_catalog().encode()

    class Catalog(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/catalog.json" else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            if self.path == "/catalog.json":
                self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Catalog)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        olm.kubectl("create", "namespace", "web")
        olm.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource", "metadata": {"name": "web", "namespace": "web"},
            "spec": {"sourceType": "grpc", "address": f"http://127.0.0.1:{server.server_port}/catalog.json"}}))
        olm.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup", "metadata": {"name": "all", "namespace": "web"},
            "spec": {}}))
        manifest = wait_for(lambda: get(olm, "-n", "web", "packagemanifest", "chain"), timeout=30,
                            message="the HTTP catalog's package listed")
        assert manifest["status"]["catalogSource"] == "web" and manifest["status"]["channels"][0]["currentCSV"] == "chain.v3.0.0"
        subscribe(olm, "chain", "chain", namespace="web", source="web", sourceNamespace="web", startingCSV="chain.v2.0.0")
        sub = wait_for(lambda: (s := get(olm, "-n", "web", "subscription", "chain")) and
                       s.get("status", {}).get("state") == "AtLatestKnown" and s, timeout=60, message="the head reached")
        assert sub["status"]["installedCSV"] == "chain.v3.0.0"
    finally:
        server.shutdown()


def test_manual_upgrades_stop_at_each_plan_until_approved(olm):
    chain_namespace(olm, "chain-manual")
    subscribe(olm, "chain", "chain", namespace="chain-manual", source="chain", sourceNamespace="chain-manual",
              startingCSV="chain.v1.0.0", installPlanApproval="Manual")
    for csv in ["chain.v1.0.0", "chain.v2.0.0", "chain.v3.0.0"]:
        sub = wait_for(lambda: (s := get(olm, "-n", "chain-manual", "subscription", "chain")) and
                       condition(s, "InstallPlanPending").get("reason") == "RequiresApproval" and
                       s["status"]["currentCSV"] == csv and s, timeout=60, message=f"the plan of {csv} waiting")
        name = sub["status"]["installPlanRef"]["name"]
        assert get(olm, "-n", "chain-manual", "installplan", name)["spec"]["clusterServiceVersionNames"] == [csv]
        olm.kubectl("-n", "chain-manual", "patch", "installplan", name, "--type=merge", "-p", '{"spec":{"approved":true}}')
    sub = wait_for(lambda: (s := get(olm, "-n", "chain-manual", "subscription", "chain")) and
                   s["status"].get("state") == "AtLatestKnown" and s, timeout=60, message="the head reached")
    assert sub["status"]["installedCSV"] == "chain.v3.0.0"


def test_an_initialized_operator_is_packaged_catalogued_subscribed_and_runs(olm, tmp_path):
    import subprocess
    from conftest import uc_binary

    run = lambda *a, cwd=tmp_path: subprocess.run([uc_binary(), *a], cwd=cwd, capture_output=True, text=True)
    assert run("init", "greeter", "--hook", "js").returncode == 0
    r = run("package", "greeter", "--version", "1.0.0")
    assert r.returncode == 0 and "bundle written" in r.stdout, r.stdout + r.stderr
    r = run("catalog", "add", "greeter/bundle", "catalog")
    assert r.returncode == 0 and "greeter.v1.0.0 on channel alpha" in r.stdout, r.stdout + r.stderr
    olm.kubectl("create", "namespace", "mine")
    olm.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource", "metadata": {"name": "mine", "namespace": "mine"},
        "spec": {"sourceType": "grpc", "address": f"file://{tmp_path / 'catalog'}"}}))
    olm.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup", "metadata": {"name": "all", "namespace": "mine"},
        "spec": {}}))
    subscribe(olm, "greeter", "greeter", namespace="mine", source="mine", sourceNamespace="mine")
    wait_for(lambda: (get(olm, "-n", "mine", "csv", "greeter.v1.0.0") or {}).get("status", {}).get("phase") == "Succeeded",
             timeout=60, message="the packaged operator installed")
    wait_for(lambda: get(olm, "crd", "greeters.example.com") is not None, message="its CRD")
    olm.kubectl("apply", "-f", str(tmp_path / "greeter" / "example.yaml"))
    cm = wait_for(lambda: get(olm, "configmap", "example-greeting"), timeout=30, message="its hook at work")
    assert cm["data"]["greeting"] == "hello"
    # Least privilege: the bundle's CSV declares what its controller needs (`uc package` computes it), OLM
    # grants that to the CSV's account, and the controller acts as that account.
    spec = get(olm, "universalcontroller", "greeter")["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccountNamespace"]) == ("greeter-controller", "mine"), spec
    assert olm.kubectl("auth", "can-i", "create", "configmaps", "--as=system:serviceaccount:mine:greeter-controller",
                       check=False).stdout.strip() == "yes"
    assert olm.kubectl("auth", "can-i", "create", "clusterrolebindings",
                       "--as=system:serviceaccount:mine:greeter-controller", check=False).stdout.strip() == "no"


def test_an_operator_group_with_a_target_namespace_scopes_the_installed_operator(olm):
    if shutil.which("etcd") is None:
        pytest.skip("the members need etcd")
    for ns in ["team-ops", "team-a", "team-b"]:
        olm.kubectl("create", "namespace", ns)
    olm.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup", "metadata": {"name": "team", "namespace": "team-ops"},
        "spec": {"targetNamespaces": ["team-a"]}}))
    subscribe(olm, "etcd", "etcd", namespace="team-ops")
    csv = wait_for(lambda: (s := get(olm, "-n", "team-ops", "subscription", "etcd")) and
                   s.get("status", {}).get("state") == "AtLatestKnown" and s["status"]["installedCSV"], timeout=60,
                   message="etcd installed for team-a")
    wait_for(lambda: (get(olm, "-n", "team-ops", "csv", csv) or {}).get("metadata", {}).get("annotations", {})
             .get("olm.targetNamespaces") == "team-a", message="the CSV annotated with its group's namespaces")
    wait_for(lambda: get(olm, "universalcontroller", "etcd-operator")["metadata"].get("annotations", {})
             .get("olm.targetNamespaces") == "team-a", message="the controller scoped to team-a")
    # As on OLM, the CSV shows in the namespace it serves: a copy, with the original's phase.
    copy = wait_for(lambda: (c := get(olm, "-n", "team-a", "csv", csv)) and
                    c.get("status", {}).get("phase") == "Succeeded" and c, message="the CSV copied into team-a")
    assert copy["metadata"]["labels"]["olm.copiedFrom"] == "team-ops" and copy["status"]["reason"] == "Copied"
    assert get(olm, "-n", "team-b", "csv", csv) is None, "not into a namespace it does not serve"
    for ns in ["team-a", "team-b"]:
        olm.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdCluster",
            "metadata": {"name": "mine", "namespace": ns}, "spec": {"size": 1, "version": "3.4.30"}}))
    wait_for(lambda: (get(olm, "-n", "team-a", "etcdcluster", "mine") or {}).get("status", {}).get("readyMembers") == 1,
             timeout=90, message="team-a's cluster running")
    # The controller counts its parents: team-a's only (not team-b's, nor the earlier example in default).
    wait_for(lambda: get(olm, "universalcontroller", "etcd-operator").get("status", {}).get("parents") == 1,
             message="one parent in scope")
    assert "status" not in get(olm, "-n", "team-b", "etcdcluster", "mine"), "team-b's cluster is not this operator's"
    assert get(olm, "-n", "team-b", "pods", "-l", "etcd_cluster=mine")["items"] == []


MEMCACHED_CSV = """
apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: memcached-operator.v0.0.1
  annotations:
    capabilities: Basic Install
    alm-examples: '[{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": "example"}, "spec": {"size": 3}}]'
spec:
  displayName: Memcached Operator
  description: A third-party operator in the package-manifest layout.
  version: 0.0.1
  maturity: alpha
  provider: {name: Example}
  installModes:
  - {type: OwnNamespace, supported: true}
  - {type: SingleNamespace, supported: true}
  - {type: MultiNamespace, supported: false}
  - {type: AllNamespaces, supported: true}
  customresourcedefinitions:
    owned:
    - {name: memcacheds.cache.example.com, version: v1alpha1, kind: Memcached, displayName: Memcached}
  install:
    strategy: deployment
    spec:
      permissions:
      - serviceAccountName: memcached-operator
        rules:
        - {apiGroups: [""], resources: [pods, services, configmaps], verbs: ["*"]}
        - {apiGroups: [apps], resources: [deployments], verbs: ["*"]}
      clusterPermissions:
      - serviceAccountName: memcached-operator
        rules:
        - {apiGroups: [cache.example.com], resources: [memcacheds, memcacheds/status], verbs: ["*"]}
      deployments:
      - name: memcached-operator
        spec:
          replicas: 1
          selector: {matchLabels: {name: memcached-operator}}
          template:
            metadata: {labels: {name: memcached-operator}}
            spec:
              serviceAccountName: memcached-operator
              containers:
              - name: memcached-operator
                image: quay.io/example/memcached-operator:v0.0.1
                command: [memcached-operator]
"""

MEMCACHED_CRD = """
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata:
  name: memcacheds.cache.example.com
spec:
  group: cache.example.com
  names: {kind: Memcached, listKind: MemcachedList, plural: memcacheds, singular: memcached}
  scope: Namespaced
  version: v1alpha1
  subresources: {status: {}}
  validation:
    openAPIV3Schema:
      type: object
      properties:
        spec:
          type: object
          properties:
            size: {type: integer}
"""


def test_a_third_party_package_manifest_bundle_with_v1beta1_crds_and_a_deployment_installs(olm, tmp_path):
    pkg = tmp_path / "catalog" / "memcached"
    (pkg / "0.0.1").mkdir(parents=True)
    (pkg / "memcached.package.yaml").write_text(
        "packageName: memcached-operator\nchannels:\n- name: alpha\n  currentCSV: memcached-operator.v0.0.1\ndefaultChannel: alpha\n")
    (pkg / "0.0.1" / "memcached-operator.v0.0.1.clusterserviceversion.yaml").write_text(MEMCACHED_CSV)
    (pkg / "0.0.1" / "cache_v1alpha1_memcached_crd.yaml").write_text(MEMCACHED_CRD)
    olm.kubectl("create", "namespace", "memcached")
    olm.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "third-party", "namespace": "memcached"},
        "spec": {"sourceType": "grpc", "address": f"file://{tmp_path / 'catalog'}", "displayName": "Third party"}}))
    olm.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup", "metadata": {"name": "own", "namespace": "memcached"},
        "spec": {"targetNamespaces": ["memcached"]}}))
    subscribe(olm, "memcached", "memcached-operator", namespace="memcached", source="third-party", sourceNamespace="memcached")
    csv = wait_for(lambda: (c := get(olm, "-n", "memcached", "csv", "memcached-operator.v0.0.1")) and
                   c.get("status", {}).get("phase") == "Succeeded" and c, timeout=90, message="the CSV Succeeded")
    assert csv["status"]["reason"] == "InstallSucceeded"
    phases = [c["phase"] for c in csv["status"]["conditions"]]
    assert phases[0] == "InstallReady" and "Installing" in phases and phases[-1] == "Succeeded", phases
    # Its v1beta1 CRD is served (and readable as v1), its RBAC made, its Deployment running.
    assert get(olm, "customresourcedefinitions.v1beta1.apiextensions.k8s.io", "memcacheds.cache.example.com") is not None
    olm.kubectl("get", "memcacheds", "-n", "memcached")
    role = get(olm, "-n", "memcached", "role", "memcached-operator.v0.0.1-memcached-operator")
    assert role["rules"][0]["resources"] == ["pods", "services", "configmaps"]
    binding = get(olm, "clusterrolebinding", "memcached-operator.v0.0.1-memcached-operator-memcached")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "memcached-operator", "namespace": "memcached"}]
    deployment = get(olm, "-n", "memcached", "deployment", "memcached-operator")
    assert deployment["metadata"]["labels"]["olm.owner"] == "memcached-operator.v0.0.1"
    assert deployment["spec"]["template"]["metadata"]["annotations"]["olm.targetNamespaces"] == "memcached"
    assert deployment["status"]["availableReplicas"] == 1
    can = olm.kubectl("auth", "can-i", "create", "pods", "-n", "memcached",
                      "--as=system:serviceaccount:memcached:memcached-operator").stdout.strip()
    assert can == "yes", "the operator's service account got its permissions"
    manifest = get(olm, "-n", "memcached", "packagemanifest", "memcached-operator")["status"]
    assert manifest["catalogSourceDisplayName"] == "Third party" and manifest["channels"][0]["currentCSV"] == "memcached-operator.v0.0.1"


def test_uc_up_installs_its_operators_by_subscription_once(make_cluster):
    """A default `uc up`: etcd and ZooKeeper installed as a user would (Subscriptions in `operators`), their
    kinds served as soon as uc says it is ready; uninstalled, they stay uninstalled across a restart."""
    c = make_cluster()
    subs = {s["metadata"]["name"]: s for s in get(c, "-n", "operators", "subscription")["items"]}
    assert set(subs) == {"etcd", "zookeeper"} and all(s["spec"]["source"] == "uc-operators" for s in subs.values())
    csvs = {x["metadata"]["name"]: x["status"]["phase"] for x in get(c, "-n", "operators", "csv")["items"]}
    assert sorted(csvs.values()) == ["Succeeded", "Succeeded"], csvs
    for kind in ("etcdclusters", "zookeeperclusters"):
        assert c.kubectl("get", kind, check=False).returncode == 0, f"{kind} served once uc is ready"
    c.kubectl("-n", "operators", "delete", "subscription", "zookeeper")
    c.kubectl("-n", "operators", "delete", "csv", next(n for n in csvs if n.startswith("zookeeper.")))
    wait_for(lambda: get(c, "universalcontroller", "zookeeper-operator") is None, timeout=30,
             message="the ZooKeeper operator uninstalled")
    assert c.stop() == 0
    c.start()
    assert [s["metadata"]["name"] for s in get(c, "-n", "operators", "subscription")["items"]] == ["etcd"]
    assert get(c, "universalcontroller", "zookeeper-operator") is None, "not installed again by a restart"
    assert get(c, "crd", "zookeeperclusters.zookeeper.pravega.io") is not None, "its CRD stays"
