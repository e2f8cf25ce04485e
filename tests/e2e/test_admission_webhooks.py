"""Admission webhooks called on writes: a kopf operator's validating and mutating webhooks (kopf registers
them itself, as it does on any cluster), and the failure policies of a webhook that cannot be reached."""

import base64
import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import wait_for

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the webhook's certificate")

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": {"type": "object", "properties": {
                     "size": {"type": "integer"}, "color": {"type": "string"}}}}}}}]},
}

OPERATOR = textwrap.dedent("""
    import kopf

    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_):
        settings.admission.server = kopf.WebhookServer(
            addr="127.0.0.1", host="127.0.0.1", port={port},
            cafile={ca!r}, certfile={cert!r}, pkeyfile={key!r})
        settings.admission.managed = "auto.kopf.dev"

    @kopf.on.validate("example.com", "v1", "widgets")
    def size_is_even(spec, **_):
        if spec.get("size", 0) % 2:
            raise kopf.AdmissionError("size must be even", code=422)

    @kopf.on.mutate("example.com", "v1", "widgets")
    def color_defaults_to_blue(spec, patch, **_):
        if "color" not in spec:
            patch.spec["color"] = "blue"
""")


def serving_certificate(tmp_path):
    """A CA and a certificate for 127.0.0.1 that it signed."""
    ca_key, ca, key, csr, cert, ext = (str(tmp_path / n) for n in ("ca.key", "ca.crt", "s.key", "s.csr", "s.crt", "ext"))
    run = lambda *a: subprocess.run(["openssl", *a], check=True, capture_output=True)  # noqa: E731
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", ca_key,
        "-subj", "/CN=webhook-ca", "-days", "1", "-out", ca)
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n")
    run("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
        "-subj", "/CN=127.0.0.1", "-out", csr)
    run("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-days", "1", "-extfile", ext,
        "-out", cert)
    return ca, cert, key


def self_signed_ca_certificate(tmp_path):
    """One certificate for 127.0.0.1, self-signed and marked as a CA, serving for itself: what kopf's
    own certificate generation makes (certbuilder, `ca=True`) and what kube-apiserver, with Go's TLS,
    accepts when it is the caBundle."""
    key, cert = str(tmp_path / "self.key"), str(tmp_path / "self.crt")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-subj", "/CN=127.0.0.1", "-days", "1", "-out", cert,
                    "-addext", "subjectAltName=IP:127.0.0.1", "-addext", "basicConstraints=critical,CA:TRUE"],
                   check=True, capture_output=True)
    return cert, cert, key


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def widget(name, **spec):
    return json.dumps({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})


@pytest.mark.parametrize("certificate", [serving_certificate, self_signed_ca_certificate],
                         ids=["signed-by-a-ca", "self-signed-ca-as-kopf-makes"])
def test_a_kopf_operator_validates_and_mutates_through_its_webhooks(cluster, tmp_path, certificate):
    pytest.importorskip("kopf")
    cluster.kubectl("apply", "-f", "-", input=json.dumps(CRD))
    ca, cert, key = certificate(tmp_path)
    script = tmp_path / "operator.py"
    script.write_text(OPERATOR.replace("{port}", str(free_port())).replace("{ca!r}", repr(ca))
                      .replace("{cert!r}", repr(cert)).replace("{key!r}", repr(key)))
    log = open(tmp_path / "kopf.log", "w")
    kopf = subprocess.Popen([sys.executable, "-m", "kopf", "run", "--standalone", "--all-namespaces", str(script)],
                            env=cluster.env(), stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: cluster.kubectl("get", "validatingwebhookconfiguration", "auto.kopf.dev",
                                         check=False).returncode == 0,
                 timeout=60, message="kopf registers its validating webhook")
        wait_for(lambda: cluster.kubectl("get", "mutatingwebhookconfiguration", "auto.kopf.dev",
                                         check=False).returncode == 0,
                 timeout=60, message="kopf registers its mutating webhook")

        def refused():
            r = cluster.kubectl("apply", "-f", "-", input=widget("odd", size=3), check=False)
            return r.returncode != 0 and "denied the request: size must be even" in r.stderr and r.stderr

        # Until kopf's server is up, the call fails (failurePolicy Fail): wait for kopf's own answer.
        stderr = wait_for(refused, timeout=60, message="the validating webhook refuses an odd size")
        assert 'admission webhook "size-is-even.auto.kopf.dev" denied the request' in stderr, stderr
        assert cluster.kubectl("get", "widget", "odd", check=False).returncode != 0, "nothing was stored"

        cluster.kubectl("apply", "-f", "-", input=widget("even", size=2))
        got = json.loads(cluster.kubectl("get", "widget", "even", "-o", "json").stdout)
        assert got["spec"] == {"size": 2, "color": "blue"}, "the mutating webhook's patch was applied"
        # Updates go through them too.
        r = cluster.kubectl("patch", "widget", "even", "--type=merge", "-p", '{"spec":{"size":5}}', check=False)
        assert r.returncode != 0 and "size must be even" in r.stderr, r.stderr
    finally:
        kopf.terminate()
        kopf.wait(timeout=30)
        log.close()


def test_an_unreachable_webhook_refuses_or_is_ignored_by_its_failure_policy(cluster, tmp_path):
    ca, _, _ = serving_certificate(tmp_path)
    cluster.kubectl("create", "namespace", "guarded")
    cluster.kubectl("label", "namespace", "guarded", "webhooks=on")

    def configuration(policy):
        return json.dumps({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "closed"},
            "webhooks": [{
                "name": "closed.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "failurePolicy": policy, "timeoutSeconds": 5,
                "clientConfig": {"url": f"https://127.0.0.1:{free_port()}/validate",
                                 "caBundle": base64.b64encode(open(ca, "rb").read()).decode()},
                "namespaceSelector": {"matchLabels": {"webhooks": "on"}},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                           "resources": ["configmaps"]}]}]})

    cluster.kubectl("apply", "-f", "-", input=configuration("Fail"))
    r = cluster.kubectl("-n", "guarded", "create", "configmap", "a", check=False)
    assert r.returncode != 0 and 'failed calling webhook "closed.example.com"' in r.stderr, r.stderr
    cluster.kubectl("-n", "default", "create", "configmap", "a")  # outside the namespace selector
    cluster.kubectl("apply", "-f", "-", input=configuration("Ignore"))
    cluster.kubectl("-n", "guarded", "create", "configmap", "a")
    # A configuration that breaks the rules is refused with the field.
    r = cluster.kubectl("apply", "-f", "-", check=False, input=configuration("Fail").replace("https://", "http://"))
    assert r.returncode != 0 and "webhooks[0].clientConfig.url" in r.stderr, r.stderr
