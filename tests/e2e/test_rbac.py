"""RBAC, service account tokens, client certificates and impersonation, driven with kubectl and the Python client."""

import json
import os
import shutil
import subprocess

import pytest

from conftest import wait_for


def as_user(cluster, *args, token=None, cert=None, check=True, input=None):
    """kubectl with no kubeconfig: the server and CA, and one credential."""
    server, _ = cluster.server_and_token()
    creds = [f"--token={token}"] if token else [f"--client-certificate={cert[0]}", f"--client-key={cert[1]}"]
    r = subprocess.run(
        ["kubectl", "--kubeconfig=/dev/null", f"--server={server}",
         f"--certificate-authority={os.path.join(cluster.data_dir, 'ca.crt')}", *creds, *args],
        # The cluster's discovery cache, which the admin's calls filled: an identity that may not
        # impersonate is refused discovery too, and kubectl then reports only "Forbidden: unknown".
        capture_output=True, text=True, timeout=60, env=cluster.env(), input=input)
    if check and r.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def reader_in(cluster, ns="a"):
    """A service account in `ns` bound to a Role that reads pods there; returns its token."""
    for n in (ns, "other"):
        cluster.kubectl("create", "namespace", n)
    cluster.kubectl("-n", ns, "create", "serviceaccount", "sa")
    cluster.kubectl("-n", ns, "create", "role", "pod-reader", "--verb=get,list,watch", "--resource=pods")
    cluster.kubectl("-n", ns, "create", "rolebinding", "read", "--role=pod-reader", f"--serviceaccount={ns}:sa")
    return cluster.kubectl("-n", ns, "create", "token", "sa").stdout.strip()


def test_a_service_account_token_with_a_namespaced_role(cluster):
    token = reader_in(cluster)
    cluster.kubectl("-n", "a", "run", "web", "--image=busybox", "--restart=Never", "--", "sleep", "3600")
    assert "pod/web" in as_user(cluster, "get", "pods", "-n", "a", "-o", "name", token=token).stdout
    r = as_user(cluster, "get", "pods", "-n", "other", token=token, check=False)
    assert r.returncode != 0
    assert ('Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:a:sa" cannot list '
            'resource "pods" in API group "" in the namespace "other"') in r.stderr, r.stderr
    r = as_user(cluster, "delete", "pod", "web", "-n", "a", token=token, check=False)
    assert 'pods "web" is forbidden' in r.stderr and 'cannot delete resource "pods"' in r.stderr, r.stderr
    who = json.loads(as_user(cluster, "auth", "whoami", "-o", "json", token=token).stdout)["status"]["userInfo"]
    assert who["username"] == "system:serviceaccount:a:sa"
    assert {"system:serviceaccounts", "system:serviceaccounts:a", "system:authenticated"} <= set(who["groups"])

    # The admin asks on the account's behalf.
    no = cluster.kubectl("auth", "can-i", "--as=system:serviceaccount:a:sa", "list", "pods", "-n", "other", check=False)
    assert (no.returncode, no.stdout.strip()) == (1, "no")
    yes = cluster.kubectl("auth", "can-i", "--as=system:serviceaccount:a:sa", "list", "pods", "-n", "a")
    assert yes.stdout.strip() == "yes"
    listed = cluster.kubectl("auth", "can-i", "--list", "-n", "a", "--as=system:serviceaccount:a:sa").stdout
    assert any(line.split()[0] == "pods" and "[get list watch]" in line for line in listed.splitlines()), listed

    # The Python client with the token.
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    server, _ = cluster.server_and_token()
    cfg = client.Configuration()
    cfg.host, cfg.ssl_ca_cert = server, os.path.join(cluster.data_dir, "ca.crt")
    cfg.api_key = {"authorization": f"Bearer {token}"}
    core = client.CoreV1Api(client.ApiClient(cfg))
    assert [p.metadata.name for p in core.list_namespaced_pod("a").items] == ["web"]
    with pytest.raises(ApiException) as e:
        core.list_namespaced_pod("other")
    assert e.value.status == 403 and json.loads(e.value.body)["reason"] == "Forbidden"

    # A token stops working when its account is deleted.
    cluster.kubectl("-n", "a", "delete", "serviceaccount", "sa")
    r = as_user(cluster, "get", "pods", "-n", "a", token=token, check=False)
    assert r.returncode != 0 and "Unauthorized" in r.stderr, r.stderr


def test_token_requests_and_reviews(cluster):
    from kubernetes import client

    api = cluster.api_client()
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": "t"}})
    wait_for(lambda: any(s.metadata.name == "default" for s in core.list_namespaced_service_account("t").items),
             message="the default ServiceAccount")
    tr = core.create_namespaced_service_account_token("default", "t", {"spec": {"expirationSeconds": 7200}})
    assert tr.status.token and tr.spec.expiration_seconds == 7200 and tr.status.expiration_timestamp
    auth = client.AuthenticationV1Api(api)
    review = auth.create_token_review({"spec": {"token": tr.status.token}})
    assert review.status.authenticated and review.status.user.username == "system:serviceaccount:t:default"
    assert auth.create_token_review({"spec": {"token": tr.status.token + "x"}}).status.authenticated is False
    # Too short a lifetime, or a binding to a pod that does not exist, is refused.
    r = cluster.kubectl("create", "token", "default", "-n", "t", "--duration=1m", check=False)
    assert r.returncode != 0 and "spec.expirationSeconds" in r.stderr, r.stderr
    r = cluster.kubectl("create", "token", "default", "-n", "t", "--bound-object-kind=Pod",
                        "--bound-object-name=nope", check=False)
    assert r.returncode != 0 and 'pods "nope" not found' in r.stderr, r.stderr
    # A SubjectAccessReview about someone else, as webhooks ask.
    sar = client.AuthorizationV1Api(api).create_subject_access_review({"spec": {
        "user": "system:serviceaccount:t:default",
        "groups": ["system:serviceaccounts", "system:authenticated"],
        "resourceAttributes": {"verb": "get", "resource": "secrets", "namespace": "t"}}})
    assert sar.status.allowed is False


def test_default_cluster_roles_and_aggregation(cluster):
    names = cluster.kubectl("get", "clusterroles", "-o", "name").stdout.split()
    for want in ("cluster-admin", "admin", "edit", "view"):
        assert f"clusterrole.rbac.authorization.k8s.io/{want}" in names
    binding = json.loads(cluster.kubectl("get", "clusterrolebinding", "cluster-admin", "-o", "json").stdout)
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}]

    # A CRD author extends view (and so edit and admin) with a labelled ClusterRole.
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "widgets-view", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]}]}))

    def has_widgets(role):
        rules = json.loads(cluster.kubectl("get", "clusterrole", role, "-o", "json").stdout).get("rules") or []
        return any("widgets" in (r.get("resources") or []) for r in rules)

    for role in ("view", "edit", "admin"):
        wait_for(lambda: has_widgets(role), message=f"{role} aggregates widgets-view")
    cluster.kubectl("delete", "clusterrole", "widgets-view")
    wait_for(lambda: not has_widgets("view"), message="view drops the deleted role's rules")

    # A namespace admin, by binding the aggregated role.
    token = reader_in(cluster, "team")
    cluster.kubectl("-n", "team", "create", "rolebinding", "sa-admin", "--clusterrole=admin", "--serviceaccount=team:sa")
    as_user(cluster, "-n", "team", "create", "configmap", "made-by-sa", token=token)
    as_user(cluster, "-n", "team", "create", "role", "r", "--verb=get", "--resource=pods", token=token)
    as_user(cluster, "-n", "team", "create", "rolebinding", "viewers", "--clusterrole=view", "--group=qa", token=token)
    r = as_user(cluster, "-n", "other", "create", "configmap", "x", token=token, check=False)
    assert r.returncode != 0 and "forbidden" in r.stderr
    # It cannot grant what it does not hold: no escalation through a role or a binding.
    r = as_user(cluster, "-n", "team", "create", "role", "nodes", "--verb=get", "--resource=nodes", token=token,
                check=False)
    assert r.returncode != 0 and "attempting to grant RBAC permissions not currently held" in r.stderr, r.stderr
    r = as_user(cluster, "-n", "team", "create", "rolebinding", "root", "--clusterrole=cluster-admin", "--group=qa",
                token=token, check=False)
    assert r.returncode != 0 and "attempting to grant RBAC permissions not currently held" in r.stderr, r.stderr


def test_bindings_are_validated(cluster):
    cluster.kubectl("create", "namespace", "v")
    r = cluster.kubectl("apply", "-f", "-", check=False, input=json.dumps({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "bad"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "x"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa"}]}))
    assert r.returncode != 0 and "roleRef.kind" in r.stderr and "subjects[0].namespace" in r.stderr, r.stderr
    cluster.kubectl("-n", "v", "create", "rolebinding", "b", "--clusterrole=view", "--user=jane")
    r = cluster.kubectl("-n", "v", "patch", "rolebinding", "b", "--type=merge", "-p",
                        '{"roleRef":{"name":"edit"}}', check=False)
    assert r.returncode != 0 and "cannot change roleRef" in r.stderr, r.stderr


def client_certificate(cluster, tmp_path, cn, org):
    """A client certificate (X.509 v3, as kubeadm issues) signed by the cluster CA."""
    key, csr, crt, ext = (str(tmp_path / n) for n in ("c.key", "c.csr", "c.crt", "ext.cnf"))
    with open(ext, "w") as f:
        f.write("extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n")
    subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-subj", f"/CN={cn}/O={org}", "-out", csr], check=True, capture_output=True)
    subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", os.path.join(cluster.data_dir, "ca.crt"),
                    "-CAkey", os.path.join(cluster.data_dir, "ca.key"), "-CAcreateserial", "-days", "1",
                    "-extfile", ext, "-out", crt], check=True, capture_output=True)
    return crt, key


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the client certificate")
def test_client_certificates_name_the_user_and_groups(cluster, tmp_path):
    cert = client_certificate(cluster, tmp_path, "jane", "dev")
    who = json.loads(as_user(cluster, "auth", "whoami", "-o", "json", cert=cert).stdout)["status"]["userInfo"]
    assert who["username"] == "jane" and "dev" in who["groups"]
    r = as_user(cluster, "get", "pods", "-A", cert=cert, check=False)
    assert r.returncode != 0 and 'User "jane" cannot list resource "pods"' in r.stderr, r.stderr
    cluster.kubectl("create", "clusterrolebinding", "dev-view", "--clusterrole=view", "--group=dev")
    as_user(cluster, "get", "pods", "-A", cert=cert)
    r = as_user(cluster, "get", "secrets", "-A", cert=cert, check=False)
    assert r.returncode != 0 and "forbidden" in r.stderr


def test_impersonation_is_for_those_allowed_to_impersonate(cluster):
    cluster.kubectl("create", "clusterrolebinding", "dev-view", "--clusterrole=view", "--group=dev")
    cluster.kubectl("get", "pods", "-A", "--as=jane", "--as-group=dev")
    r = cluster.kubectl("get", "secrets", "-A", "--as=jane", "--as-group=dev", check=False)
    assert r.returncode != 0 and 'User "jane" cannot list resource "secrets"' in r.stderr, r.stderr
    who = json.loads(cluster.kubectl("auth", "whoami", "-o", "json", "--as=jane", "--as-group=dev").stdout)
    assert who["status"]["userInfo"]["username"] == "jane"
    # A service account may not act as someone else unless granted `impersonate`.
    token = reader_in(cluster)
    r = as_user(cluster, "get", "pods", "-n", "a", "--as=jane", token=token, check=False)
    assert r.returncode != 0 and 'cannot impersonate resource "users"' in r.stderr, r.stderr


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the certificate request")
def test_certificate_signing_requests_are_approved_and_signed_by_the_cluster_ca(cluster, tmp_path):
    import base64

    key, csr = str(tmp_path / "bob.key"), str(tmp_path / "bob.csr")
    subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-subj", "/CN=bob/O=ops", "-out", csr], check=True, capture_output=True)
    request = base64.b64encode(open(csr, "rb").read()).decode()

    def submit(name):
        cluster.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": {"request": request, "signerName": "kubernetes.io/kube-apiserver-client",
                     "expirationSeconds": 3600, "usages": ["client auth"],
                     "username": "someone-else"}}))

    submit("bob")
    got = json.loads(cluster.kubectl("get", "csr", "bob", "-o", "json").stdout)
    assert got["spec"]["username"] == "uc-admin", "the requester is who asked, not what the client wrote"
    assert "Pending" in cluster.kubectl("get", "csr", "bob").stdout
    cluster.kubectl("certificate", "approve", "bob")
    cert_b64 = wait_for(lambda: json.loads(cluster.kubectl("get", "csr", "bob", "-o", "json").stdout)
                        .get("status", {}).get("certificate"), message="the signer issues the certificate")
    assert "Approved,Issued" in cluster.kubectl("get", "csr", "bob").stdout
    crt = tmp_path / "bob.crt"
    crt.write_bytes(base64.b64decode(cert_b64))
    who = json.loads(as_user(cluster, "auth", "whoami", "-o", "json", cert=(str(crt), key)).stdout)["status"]
    assert who["userInfo"]["username"] == "bob" and "ops" in who["userInfo"]["groups"]

    submit("denied")
    cluster.kubectl("certificate", "deny", "denied")
    conditions = json.loads(cluster.kubectl("get", "csr", "denied", "-o", "json").stdout)["status"]["conditions"]
    assert [c["type"] for c in conditions] == ["Denied"]
    r = cluster.kubectl("certificate", "approve", "denied", check=False)
    assert r.returncode != 0 and "already Denied" in r.stderr, r.stderr
    # Past kubectl's own check, the server refuses both conditions at once.
    both = json.loads(cluster.kubectl("get", "csr", "denied", "-o", "json").stdout)
    both["status"]["conditions"].append({"type": "Approved", "status": "True", "reason": "Forced"})
    r = cluster.kubectl("replace", "--raw", "/apis/certificates.k8s.io/v1/certificatesigningrequests/denied/approval",
                        "-f", "-", input=json.dumps(both), check=False)
    assert r.returncode != 0 and "mutually exclusive" in r.stderr, r.stderr
    assert "certificate" not in json.loads(cluster.kubectl("get", "csr", "denied", "-o", "json").stdout)["status"]
