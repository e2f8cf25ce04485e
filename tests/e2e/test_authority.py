"""Authority exactly as Kubernetes grants it, tried as an attacker with a limited service account would
try to become cluster-admin: an aggregated ClusterRole whose selector is patched to match everything, and
a CertificateSigningRequest for `system:masters` approved by its own requester."""

import base64
import json
import shutil
import subprocess

import pytest

from conftest import http_get, wait_for
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


def test_a_node_credential_changes_only_its_own_node_and_pods(cluster, tmp_path):
    cluster.kubectl("run", "bound", "--image=busybox", "--restart=Never", "--", "sleep", "3600")
    wait_for(lambda: cluster.kubectl("get", "pod", "bound", "-o", "jsonpath={.status.phase}").stdout == "Running",
             timeout=60, message="a pod on the embedded node")
    # The embedded node acts as system:node:uc-node; a second node's certificate, from the kubelet
    # client signer, is another node's credential.
    key, csr = str(tmp_path / "rogue.key"), str(tmp_path / "rogue.csr")
    subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-subj", "/O=system:nodes/CN=system:node:rogue", "-out", csr],
                   check=True, capture_output=True)
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": "rogue"},
        "spec": {"request": base64.b64encode(open(csr, "rb").read()).decode(),
                 "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                 "usages": ["digital signature", "key encipherment", "client auth"]}}))
    cluster.kubectl("certificate", "approve", "rogue")
    issued = wait_for(lambda: cluster.kubectl("get", "csr", "rogue", "-o", "jsonpath={.status.certificate}").stdout,
                      timeout=30, message="the node's certificate")
    crt = tmp_path / "rogue.crt"
    crt.write_bytes(base64.b64decode(issued))
    rogue = (str(crt), key)

    def refused(*args):
        r = as_user(cluster, *args, cert=rogue, check=False)
        assert r.returncode != 0, (args, r.stdout)
        return r.stderr

    assert 'nodes "uc-node" is forbidden: node "rogue" is not allowed to modify node "uc-node"' in refused(
        "label", "node", "uc-node", "stolen=yes")
    status = json.dumps({"status": {"phase": "Failed"}})
    assert 'node "rogue" can only update pod status for pods with spec.nodeName set to itself' in refused(
        "patch", "pod", "bound", "--subresource=status", "--type=merge", "-p", status)
    assert 'node "rogue" can only delete pods with spec.nodeName set to itself' in refused("delete", "pod", "bound")
    assert "can only access node lease with the same name as the requesting node" in refused(
        "-n", "kube-node-lease", "annotate", "lease", "uc-node", "stolen=yes")
    # Its own Node it may register, with the kubelet's labels and no others.
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "rogue", "labels": {"kubernetes.io/hostname": "rogue"}}}
    privileged = {**node, "metadata": {**node["metadata"], "labels": {"node-role.kubernetes.io/control-plane": ""}}}
    r = as_user(cluster, "create", "-f", "-", cert=rogue, check=False, input=json.dumps(privileged))
    assert r.returncode != 0 and "is not allowed to set the following labels: node-role.kubernetes.io/control-plane" in r.stderr, r.stderr
    as_user(cluster, "create", "-f", "-", cert=rogue, input=json.dumps(node))
    assert cluster.kubectl("get", "pod", "bound", "-o", "jsonpath={.status.phase}").stdout == "Running"
    assert "stolen" not in cluster.kubectl("get", "node", "uc-node", "--show-labels").stdout


def _tls(cluster):
    import socket
    import ssl

    server, _ = cluster.server_and_token()
    host, port = server.removeprefix("https://").rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=f"{cluster.data_dir}/ca.crt")
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx.wrap_socket(socket.create_connection((host, int(port)), timeout=60), server_hostname=host)


def test_a_slow_client_is_cut_off_and_a_short_body_answered(make_cluster):
    import time

    cluster = make_cluster(["--request-timeout", "2s"])
    _, token = cluster.server_and_token()
    # A body shorter than its Content-Length: 400 once the request timeout has passed, not silence.
    s = _tls(cluster)
    s.sendall(f"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: uc\r\nAuthorization: Bearer {token}\r\n"
              "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"kind\":".encode())
    answer = s.recv(65536).decode(errors="replace")
    assert answer.startswith("HTTP/1.1 400") and "did not arrive within 2s" in answer, answer
    s.close()
    # Headers trickled a byte at a time are cut off (kube-apiserver's ReadHeaderTimeout, 32 s).
    s = _tls(cluster)
    started = time.monotonic()
    s.sendall(b"GET /readyz HTTP/1.1\r\n")
    closed = None
    while closed is None and time.monotonic() - started < 60:
        try:
            s.sendall(b"X")
            s.settimeout(3)
            closed = s.recv(65536) == b""
        except TimeoutError:
            continue
        except OSError:
            closed = True
    assert closed and 30 <= time.monotonic() - started < 60, time.monotonic() - started
    # Parameters kube refuses are refused.
    for query in ("watch=1&timeoutSeconds=-1", "watch=1&timeoutSeconds=abc", "limit=abc"):
        r = cluster.kubectl("get", "--raw", f"/api/v1/configmaps?{query}", check=False)
        assert r.returncode != 0 and "must be a non-negative integer" in r.stderr, (query, r.stderr)
    r = cluster.kubectl("get", "--raw", "/api/v1/configmaps?resourceVersion=abc", check=False)
    assert 'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax' in r.stderr, r.stderr
    r = cluster.kubectl("get", "--raw", "/api/v1/configmaps?resourceVersionMatch=Exact", check=False)
    assert "resourceVersionMatch is forbidden unless resourceVersion is provided" in r.stderr, r.stderr


def test_connections_past_the_cap_are_closed_and_the_server_serves_again(make_cluster):
    import ssl

    cluster = make_cluster(["--max-connections", "20", "--no-engine", "--no-node", "--no-olm"])
    held, refused = [], None
    for _ in range(40):
        try:
            held.append(_tls(cluster))
        except (ssl.SSLError, OSError) as e:
            refused = e
            break
    try:
        assert refused is not None and 10 <= len(held) <= 20, (len(held), refused)
    finally:
        for s in held:
            s.close()
    wait_for(lambda: cluster.kubectl("get", "namespaces", check=False).returncode == 0, timeout=30,
             message="served again once the connections closed")


def test_one_accounts_flood_is_answered_429_and_stalls_no_one_else(cluster):
    import ssl
    import time

    flood = account(cluster, "flood", ["--verb=create,list", "--resource=configmaps"])
    calm = account(cluster, "calm", ["--verb=list", "--resource=configmaps"])
    # 160 creates whose bodies never come: each holds the account's seat until its request timeout.
    held = []
    for _ in range(160):
        s = _tls(cluster)
        s.sendall(f"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: uc\r\nAuthorization: Bearer {flood}\r\n"
                  "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{".encode())
        s.setblocking(False)
        held.append(s)
    try:
        # The account's share (kube's APF): 100 served, 50 wait in its queue for a while, the rest are
        # refused at once; then the queued ones are refused too. The served ones are still reading.
        answers = {}
        deadline = time.monotonic() + 40
        while len(answers) < 60 and time.monotonic() < deadline:
            time.sleep(0.5)
            for s in held:
                if s not in answers:
                    try:  # TLS 1.3 session tickets make a socket readable with no answer in it
                        answers[s] = s.recv(65536).decode(errors="replace")
                    except ssl.SSLWantReadError:
                        pass
        assert len(answers) == 60, len(answers)
        for answer in answers.values():
            head, _, body = answer.partition("\r\n\r\n")
            assert head.startswith("HTTP/1.1 429") and "retry-after: 1" in head.lower(), answer
            assert '"reason":"TooManyRequests"' in body and "please try again later" in body, body
        # Another account, and the admin, are served while the flood holds its share.
        assert "kube-root-ca.crt" in as_user(cluster, "get", "configmaps", token=calm).stdout
        cluster.kubectl("create", "configmap", "admin-meanwhile")
    finally:
        for s in held:
            s.close()
    # Its seats come back as its requests end.
    wait_for(lambda: as_user(cluster, "create", "configmap", "flood-after", token=flood, check=False).returncode == 0,
             timeout=60, message="the flooding account served again")


def test_the_console_refuses_forged_requests_and_unauthorised_metrics(cluster):
    import http.cookiejar
    import urllib.error
    import urllib.request

    console = "http://" + open(f"{cluster.data_dir}/console-address").read().strip()
    _, admin = cluster.server_and_token()
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    browser.open(urllib.request.Request(f"{console}/login", data=f"token={admin}".encode(), method="POST"))
    assert any(c.name == "uc-console-token" for c in jar)

    def post(name, content_type="text/plain", **headers):
        # A form or a no-cors fetch of another page can send text/plain without asking the console first.
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}).encode()
        req = urllib.request.Request(f"{console}/api/v1/namespaces/default/configmaps", data=body, method="POST",
                                     headers={"Content-Type": content_type, **headers})
        try:
            with browser.open(req) as r:
                return r.status, r.headers, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read().decode()

    own = console.removeprefix("http://")
    # Another site's page, and another port of this machine (same site, other origin), with the cookie.
    code, headers, body = post("forged", Origin="http://evil.example")
    assert code == 403 and "http://evil.example" in body, body
    code, _, body = post("neighbour", Origin="http://127.0.0.1:1", **{"Sec-Fetch-Site": "same-site"})
    assert code == 403, body
    code, _, body = post("no-header", Origin=f"http://{own}")
    assert code == 403 and "x-csrf-token" in body, body
    code, _, body = post("guessed", Origin=f"http://{own}", **{"X-CSRF-Token": "AAAA"})
    assert code == 403, body
    assert cluster.kubectl("get", "cm", "forged", "neighbour", "no-header", "guessed", check=False).returncode != 0
    # The console's own page.
    csrf = next(c.value for c in jar if c.name == "uc-console-csrf")
    code, headers, body = post("mine", "application/json", Origin=f"http://{own}", **{"X-CSRF-Token": csrf,
                                                                    "Sec-Fetch-Site": "same-origin"})
    assert code == 201, body
    assert headers["X-Frame-Options"] == "DENY" and headers["X-Content-Type-Options"] == "nosniff"
    assert "script-src 'self'" in headers["Content-Security-Policy"] and "frame-ancestors 'none'" in headers[
        "Content-Security-Policy"]
    # The engine's metrics are for those who may get /metrics.
    cluster.kubectl("create", "serviceaccount", "viewer")
    cluster.kubectl("create", "clusterrolebinding", "viewer", "--clusterrole=view", "--serviceaccount=default:viewer")
    viewer = cluster.kubectl("create", "token", "viewer").stdout.strip()
    for token, want in ((viewer, 403), (admin, 200)):
        code = http_get(f"{console}/console/hooks", token)[0]
        assert code == want, (token == admin, code)

    # The engine's own endpoint asks the cluster who the caller is and answers in kube's words; its
    # health stays open, as kube's does.
    engine = "http://" + open(f"{cluster.data_dir}/metrics-address").read().strip()

    def engine_get(path, token=None):
        return http_get(engine + path, token)

    assert engine_get("/healthz")[0] == 200
    assert engine_get("/metrics")[0] == 401
    assert engine_get("/metrics", "not-a-token")[0] == 401
    code, body = engine_get("/metrics", viewer)
    assert code == 403 and json.loads(body)["message"] == \
        'forbidden: User "system:serviceaccount:default:viewer" cannot get path "/metrics"', body
    code, body = engine_get("/debug/hooks", viewer)
    assert code == 403 and 'cannot get path \\"/debug/hooks\\"' in body, body
    # kube's system:monitoring role reads metrics, not the recorded hook calls.
    cluster.kubectl("create", "clusterrolebinding", "viewer-monitoring", "--clusterrole=system:monitoring",
                    "--serviceaccount=default:viewer")
    wait_for(lambda: engine_get("/metrics", viewer)[0] == 200, timeout=30, message="metrics for system:monitoring")
    assert "uc_" in engine_get("/metrics", viewer)[1]
    assert engine_get("/debug/hooks", viewer)[0] == 403
    assert engine_get("/debug/hooks", admin)[0] == 200


def js_controller(name, tenant, children_js, **spec):
    """A UniversalController over Namespaces labelled `tenant=<tenant>` (one label key: controllers of one
    parent type must select disjoint parents), whose JavaScript sync hook returns `children_js`."""
    return json.dumps({
        "apiVersion": "universalcontroller.njuics.cn/v1alpha1", "kind": "UniversalController", "metadata": {"name": name},
        "spec": {"generateSelector": True, "parentResource": {"apiVersion": "v1", "resource": "namespaces",
                                    "labelSelector": {"matchLabels": {"tenant": tenant}}},
                 "childResources": [{"apiVersion": "v1", "resource": "configmaps"},
                                    {"apiVersion": "rbac.authorization.k8s.io/v1", "resource": "clusterrolebindings"}],
                 "hooks": {"sync": {"javascript": {"source": f"function sync(r) {{ return {{children: {children_js}}}; }}"}}},
                 **spec}})


def test_a_controller_can_do_no_more_than_its_service_account(make_cluster):
    from test_engine import uc_condition
    from test_hook_confinement import controller_author

    cluster = make_cluster(["--default-service-account", "tenants/restricted"])
    token = controller_author(cluster)
    for ns in ("tenants", "team-a", "team-b"):
        cluster.kubectl("create", "namespace", ns)
    cluster.kubectl("-n", "tenants", "create", "serviceaccount", "restricted")
    cluster.kubectl("-n", "team-a", "create", "serviceaccount", "a-bot")
    cluster.kubectl("-n", "team-a", "create", "rolebinding", "a-bot", "--clusterrole=edit", "--serviceaccount=team-a:a-bot")

    def synced_false(name):
        return wait_for(lambda: (c := uc_condition(cluster, name, "Synced")).get("status") == "False" and c, timeout=30,
                        message=f"{name}: Synced=False")["message"]

    # The confused deputy: an author who may only create controllers and ConfigMaps asks the engine for a
    # ClusterRoleBinding to cluster-admin. In multi-tenant mode the controller acts as the default account.
    grab = ("[{apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: {name: 'grab'}, "
            "roleRef: {apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin'}, "
            "subjects: [{kind: 'ServiceAccount', name: 'author', namespace: 'dev'}]}]")
    as_user(cluster, "apply", "-f", "-", token=token, input=js_controller("grab", "grab", grab))
    cluster.kubectl("label", "namespace", "dev", "tenant=grab")
    message = synced_false("grab")
    # Server-side apply is a patch: kube's words for it.
    assert 'User "system:serviceaccount:tenants:restricted" cannot patch resource "clusterrolebindings"' in message, message
    assert cluster.kubectl("get", "clusterrolebinding", "grab", check=False).returncode != 0

    def tenant(name, ns, account, children, own_child, other_ns):
        """A tenant's controller acting as its account: its child in its namespace, refused in the other's."""
        cluster.kubectl("apply", "-f", "-", input=js_controller(name, name, children, serviceAccountName=account,
                                                                serviceAccountNamespace=ns))
        cluster.kubectl("label", "namespace", ns, f"tenant={name}")
        wait_for(lambda: cluster.kubectl("-n", ns, "get", "cm", own_child, check=False).returncode == 0, timeout=30,
                 message=f"{name}'s child in its namespace")
        message = synced_false(name)
        assert f"system:serviceaccount:{ns}:{account}" in message and other_ns in message, message

    # Tenant A's controller names its own account: its namespace yes, tenant B's no.
    tenant("tenant-a", "team-a", "a-bot", "[{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'from-a', namespace: 'team-a'}}, "
           "{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'from-a', namespace: 'team-b'}}]", "from-a", "team-b")
    assert cluster.kubectl("-n", "team-b", "get", "cm", "from-a", check=False).returncode != 0
    # And tenant B's, the other way round: neither touches the other's objects.
    cluster.kubectl("-n", "team-b", "create", "serviceaccount", "b-bot")
    cluster.kubectl("-n", "team-b", "create", "rolebinding", "b-bot", "--clusterrole=edit", "--serviceaccount=team-b:b-bot")
    tenant("tenant-b", "team-b", "b-bot", "[{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'from-b', namespace: 'team-b'}}, "
           "{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'from-a', namespace: 'team-a'}, data: {overwritten: 'yes'}}]",
           "from-b", "team-a")
    assert "overwritten" not in cluster.kubectl("-n", "team-a", "get", "cm", "from-a", "-o", "json").stdout

    # A webhook's credentials are read as the account too: tenant B's Secret is not tenant A's.
    cluster.kubectl("-n", "team-b", "create", "secret", "generic", "b-token", "--from-literal=token=s3cr3t")
    steal = json.loads(js_controller("steal", "steal", "[]", serviceAccountName="a-bot", serviceAccountNamespace="team-a"))
    steal["spec"]["hooks"]["sync"] = {"webhook": {"url": "http://127.0.0.1:9/sync", "authorization": {
        "secretRef": {"name": "b-token", "namespace": "team-b", "key": "token"}}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(steal))
    ready = wait_for(lambda: (c := uc_condition(cluster, "steal", "Ready")).get("status") == "False" and c, timeout=30,
                     message="steal: Ready=False")
    assert "b-token" in ready["message"] and "forbidden" in ready["message"], ready

    # Related objects (read from the engine's caches) are the account's to read too: tenant B's Secret
    # is refused in kube's words, tenant A's own is seen.
    cluster.kubectl("-n", "team-a", "create", "secret", "generic", "a-token", "--from-literal=token=mine")
    sync = ("function sync(r) { var seen = Object.keys(r.related['Secret.v1'] || {}).join(','); return {children: "
            "[{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'peeked', namespace: 'team-a'}, data: {seen: seen}}]}; }")

    def peek(namespace, secret):
        c = json.loads(js_controller("peek", "peek", "[]", serviceAccountName="a-bot", serviceAccountNamespace="team-a"))
        c["spec"]["hooks"] = {"sync": {"javascript": {"source": sync}}, "customize": {"javascript": {"source": (
            "function customize(r) { return {relatedResources: [{apiVersion: 'v1', resource: 'secrets', "
            f"namespace: '{namespace}', names: ['{secret}']}}]}}; }}")}}}
        return json.dumps(c)

    cluster.kubectl("apply", "-f", "-", input=peek("team-b", "b-token"))
    cluster.kubectl("label", "namespace", "tenants", "tenant=peek")
    message = synced_false("peek")
    assert ('secrets "b-token" is forbidden: User "system:serviceaccount:team-a:a-bot" cannot get resource "secrets" '
            'in API group "" in the namespace "team-b"') in message, message
    assert cluster.kubectl("-n", "team-a", "get", "cm", "peeked", check=False).returncode != 0
    cluster.kubectl("apply", "-f", "-", input=peek("team-a", "a-token"))
    wait_for(lambda: cluster.kubectl("-n", "team-a", "get", "cm", "peeked", "-o", "jsonpath={.data.seen}",
                                     check=False).stdout == "team-a/a-token", timeout=30, message="tenant A's own Secret seen")


def test_a_rogue_node_address_gets_no_credential(cluster):
    import socket
    import threading

    token = account(cluster, "nodes", ["--verb=get,list,create,patch", "--resource=nodes,nodes/status"])
    cluster.kubectl("run", "chatty", "--image=busybox", "--restart=Never", "--", "sh", "-c", "echo hello; sleep 3600")
    wait_for(lambda: "hello" in cluster.kubectl("logs", "chatty", check=False).stdout, timeout=60, message="the log")
    # The attacker's listener, and the node's endpoint pointed at it.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    received = []

    def capture():
        conn, _ = listener.accept()
        conn.settimeout(5)
        data = b""
        try:
            while chunk := conn.recv(65536):
                data += chunk
        except OSError:
            pass
        received.append(data)
        conn.close()

    threading.Thread(target=capture, daemon=True).start()
    port = listener.getsockname()[1]
    patch = json.dumps({"status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}})
    as_user(cluster, "patch", "node", "uc-node", "--subresource=status", "--type=merge", "-p", patch, token=token)
    r = cluster.kubectl("logs", "chatty", check=False)
    assert r.returncode != 0 and "hello" not in r.stdout, (r.stdout, r.stderr)
    wait_for(lambda: received, timeout=20, message="the API server's connection to the rogue address")
    assert received[0][:1] == b"\x16", "a TLS handshake, nothing in the clear"
    assert b"Bearer" not in received[0] and b"uthorization" not in received[0]
