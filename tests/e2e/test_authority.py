"""Authority exactly as Kubernetes grants it, tried as an attacker with a limited service account would
try to become cluster-admin: an aggregated ClusterRole whose selector is patched to match everything, and
a CertificateSigningRequest for `system:masters` approved by its own requester."""

import base64
import json
import shutil
import subprocess

import pytest

from test_rbac import as_user


def account(cluster, name, *rules):
    """A service account in `default` holding `rules` (kubectl create clusterrole arguments) cluster-wide;
    its token."""
    cluster.kubectl("create", "serviceaccount", name)
    for i, rule in enumerate(rules):
        cluster.kubectl("create", "clusterrole", f"{name}-{i}", *rule)
        cluster.kubectl("create", "clusterrolebinding", f"{name}-{i}", f"--clusterrole={name}-{i}",
                        f"--serviceaccount=default:{name}")
    return cluster.kubectl("create", "token", name).stdout.strip()


def cluster_role(name, selector):
    return json.dumps({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
                       "aggregationRule": {"clusterRoleSelectors": [selector]}})


def test_an_aggregation_rule_takes_escalate_or_every_permission(cluster):
    token = account(cluster, "roler", ["--verb=create,get,list,patch,update", "--resource=clusterroles"],
                    ["--verb=create", "--resource=clusterrolebindings"])
    # The attack: a role that gathers nothing, bound to itself, then widened to gather everything.
    nothing = {"matchLabels": {"nothing-has-this": "true"}}
    r = as_user(cluster, "apply", "-f", "-", token=token, input=cluster_role("gatherer", nothing), check=False)
    assert r.returncode != 0 and \
        'clusterroles.rbac.authorization.k8s.io "gatherer" is forbidden: must have cluster-admin privileges to use the aggregationRule' \
        in r.stderr, r.stderr
    # Made by the admin, the account still may not change what it gathers.
    cluster.kubectl("apply", "-f", "-", input=cluster_role("gatherer", nothing))
    everything = json.dumps({"aggregationRule": {"clusterRoleSelectors": [
        {"matchExpressions": [{"key": "nothing-has-this", "operator": "DoesNotExist"}]}]}})
    r = as_user(cluster, "patch", "clusterrole", "gatherer", "--type=merge", "-p", everything, token=token, check=False)
    assert r.returncode != 0 and "must have cluster-admin privileges to use the aggregationRule" in r.stderr, r.stderr
    # Its other fields it may patch (the rule is unchanged), and `escalate` is what kube asks instead.
    as_user(cluster, "label", "clusterrole", "gatherer", "team=a", token=token)
    cluster.kubectl("create", "clusterrole", "escalator", "--verb=escalate", "--resource=clusterroles")
    cluster.kubectl("create", "clusterrolebinding", "escalator", "--clusterrole=escalator", "--serviceaccount=default:roler")
    as_user(cluster, "patch", "clusterrole", "gatherer", "--type=merge", "-p", everything, token=token)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the certificate request")
def test_a_requester_cannot_approve_its_own_admin_certificate(cluster, tmp_path):
    token = account(cluster, "csr", ["--verb=create,get,list", "--resource=certificatesigningrequests"],
                    ["--verb=update", "--resource=certificatesigningrequests/approval"])

    def request(name, org):
        key, csr = str(tmp_path / f"{name}.key"), str(tmp_path / f"{name}.csr")
        subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-keyout", key, "-subj", f"/CN={name}/O={org}", "-out", csr], check=True, capture_output=True)
        return json.dumps({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                           "metadata": {"name": name},
                           "spec": {"request": base64.b64encode(open(csr, "rb").read()).decode(),
                                    "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}})

    # No certificate for system:masters through the API server's client signer, whoever asks.
    for who in ({"token": token}, {}):
        r = (as_user(cluster, "apply", "-f", "-", input=request("root", "system:masters"), check=False, **who) if who
             else cluster.kubectl("apply", "-f", "-", input=request("root", "system:masters"), check=False))
        assert r.returncode != 0 and \
            "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed" in r.stderr, r.stderr
    # A request of its own it may make, but not approve: that takes `approve` on the signer.
    as_user(cluster, "apply", "-f", "-", input=request("mine", "ops"), token=token)
    r = as_user(cluster, "certificate", "approve", "mine", token=token, check=False)
    assert r.returncode != 0 and \
        'certificatesigningrequests.certificates.k8s.io "mine" is forbidden: user not permitted to approve requests ' \
        'with signerName "kubernetes.io/kube-apiserver-client"' in r.stderr, r.stderr
    assert "Pending" in cluster.kubectl("get", "csr", "mine").stdout
    # Granted on the signer's domain (`kubernetes.io/*`), it may.
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "approver"},
        "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["signers"], "verbs": ["approve"],
                   "resourceNames": ["kubernetes.io/*"]}]}))
    cluster.kubectl("create", "clusterrolebinding", "approver", "--clusterrole=approver", "--serviceaccount=default:csr")
    as_user(cluster, "certificate", "approve", "mine", token=token)
    assert "Approved" in cluster.kubectl("get", "csr", "mine").stdout
