"""Bad input gets the right Status code and a message that says what is wrong; nothing panics."""

import json
import ssl
import urllib.parse
import urllib.request

import pytest

from conftest import MANIFESTS, wait_for


def decode(data: bytes):
    try:
        return json.loads(data or b"null")
    except ValueError:
        return data.decode()


class Raw:
    def __init__(self, cluster, token=True):
        self.host, self.token = cluster.server_and_token()
        self.ctx = ssl.create_default_context()
        self.ctx.check_hostname = False
        self.ctx.verify_mode = ssl.CERT_NONE
        self.send_token = token

    def call(self, method, path, body=None, content_type="application/json", token=None):
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        req = urllib.request.Request(self.host + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        tok = token if token is not None else (self.token if self.send_token else None)
        if tok:
            req.add_header("Authorization", f"Bearer {tok}")
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=10) as r:
                return r.status, decode(r.read()), r.headers
        except urllib.error.HTTPError as e:
            return e.code, decode(e.read()), e.headers


@pytest.fixture
def raw(cluster):
    cluster.kubectl("apply", "-f", str(MANIFESTS / "foo-crd.yaml"))
    return Raw(cluster)


FOOS = "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/default/foos"


def foo(spec, **meta):
    return {"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo", "metadata": {"name": "f", **meta}, "spec": spec}


def assert_status(resp, code, reason):
    status, body, _ = resp
    assert status == code, body
    assert body["kind"] == "Status" and body["status"] == "Failure" and body["code"] == code and body["reason"] == reason, body
    return body


def test_authentication(cluster):
    r = Raw(cluster, token=False)
    assert_status(r.call("GET", "/api/v1/namespaces"), 401, "Unauthorized")
    assert_status(r.call("GET", "/api/v1/namespaces", token="wrong"), 401, "Unauthorized")
    assert r.call("GET", "/healthz")[:2] == (200, "ok"), "health endpoints are public"
    assert r.call("GET", "/version")[1]["major"] == "1"


def test_malformed_json_and_wrong_kinds(raw):
    assert_status(raw.call("POST", FOOS, b"{not json"), 400, "BadRequest")
    assert_status(raw.call("POST", FOOS, b"[1,2]"), 400, "BadRequest")
    body = assert_status(raw.call("POST", FOOS, {**foo({"deploymentName": "x"}), "kind": "Bar"}), 400, "BadRequest")
    assert "kind" in body["message"] and "Bar" in body["message"]
    body = assert_status(raw.call("POST", "/api/v1/namespaces/default/configmaps", {"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "x"}}), 400, "BadRequest")
    assert "API version" in body["message"]
    assert_status(raw.call("POST", "/api/v1/namespaces/default/configmaps", {"kind": "ConfigMap", "metadata": {"name": "x", "labels": {"a": 1}}}), 400, "BadRequest")
    assert_status(raw.call("POST", FOOS, b"<xml/>", content_type="application/xml"), 415, "UnsupportedMediaType")


def test_schema_invalid_objects_name_the_field(raw):
    body = assert_status(raw.call("POST", FOOS, foo({"replicas": "three"})), 422, "Invalid")
    fields = sorted(c["field"] for c in body["details"]["causes"])
    assert fields == ["spec.deploymentName", "spec.replicas"]
    assert "spec.replicas in body must be of type integer" in body["message"]
    body = assert_status(raw.call("POST", FOOS, foo({"deploymentName": "x", "replicas": 11})), 422, "Invalid")
    assert "spec.replicas" in body["message"] and "less than or equal to 10" in body["message"]
    body = assert_status(raw.call("POST", FOOS, foo({"deploymentName": "x"}, name="Not_A_Name")), 422, "Invalid")
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    body = assert_status(raw.call("POST", "/apis/apps/v1/namespaces/default/deployments",
                                  {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                                   "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "c"}}, "spec": {"containers": [{"name": "c"}]}}}}),
                         422, "Invalid")
    fields = sorted(c["field"] for c in body["details"]["causes"])
    assert fields == ["spec.template.metadata.labels", "spec.template.spec.containers[0].image"]


def test_unknown_fields(raw):
    body = assert_status(raw.call("POST", FOOS + "?fieldValidation=Strict", foo({"deploymentName": "x", "colour": "red"})), 400, "BadRequest")
    assert 'unknown field "spec.colour"' in body["message"]
    status, obj, headers = raw.call("POST", FOOS, foo({"deploymentName": "x", "colour": "red"}))
    assert status == 201 and "colour" not in obj["spec"], "unknown fields are pruned"
    assert 'unknown field \\"spec.colour\\"' in headers.get("Warning", "") or "spec.colour" in headers.get("Warning", "")


def test_oversized_body(raw):
    big = foo({"deploymentName": "x" * (4 * 1024 * 1024)})
    assert_status(raw.call("POST", FOOS, big), 413, "RequestEntityTooLarge")


def test_not_found_conflict_and_unsupported(raw):
    assert_status(raw.call("GET", FOOS + "/missing"), 404, "NotFound")
    assert_status(raw.call("GET", "/apis/nope.io/v1/things"), 404, "NotFound")
    assert raw.call("POST", FOOS, foo({"deploymentName": "x"}))[0] == 201
    assert_status(raw.call("POST", FOOS, foo({"deploymentName": "x"})), 409, "AlreadyExists")
    stale = foo({"deploymentName": "y"}, resourceVersion="1")
    assert_status(raw.call("PUT", FOOS + "/f", stale), 409, "Conflict")
    assert_status(raw.call("PATCH", FOOS + "/f", {"spec": {}}, content_type="application/strategic-merge-patch+json"), 415, "UnsupportedMediaType")
    body = assert_status(raw.call("PATCH", FOOS + "/f", b"apiVersion: x", content_type="application/apply-patch+yaml"), 422, "Invalid")
    assert body["details"]["causes"][0]["field"] == "fieldManager", "an apply names its field manager"
    body = assert_status(raw.call("PATCH", FOOS + "/f?fieldManager=m", b"apiVersion: x\nkind: Foo", content_type="application/apply-patch+yaml"), 422, "Invalid")
    assert body["details"]["causes"][0]["field"] == "apiVersion"
    assert_status(raw.call("PATCH", FOOS + "/f?fieldManager=m", b"[1", content_type="application/apply-patch+yaml"), 400, "BadRequest")
    assert_status(raw.call("PATCH", FOOS + "/f?fieldManager=m", b"\xa1", content_type="application/apply-patch+cbor"), 415, "UnsupportedMediaType")
    assert_status(raw.call("PATCH", FOOS + "/f", b"[{\"op\": \"test\", \"path\": \"/spec/deploymentName\", \"value\": \"z\"}]",
                           content_type="application/json-patch+json"), 422, "Invalid")
    assert_status(raw.call("GET", "/api/v1/namespaces/default/pods?labelSelector=a%20in%20b"), 400, "BadRequest")
    assert_status(raw.call("POST", "/api/v1/namespaces/nowhere/configmaps", {"metadata": {"name": "x"}}), 404, "NotFound")


def test_nothing_is_kept_that_the_store_cannot_read_back(make_cluster):
    """A deep object, or a patch that deepens one or grows it past the limit, is refused; the cluster
    starts again on its data directory with everything it accepted."""
    cluster = make_cluster()
    raw = Raw(cluster)
    # A kind that keeps whatever it is sent (a CRD preserving unknown fields): depth is the store's to limit.
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "blobs.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "blobs", "kind": "Blob"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}))
    cms = "/apis/example.com/v1/namespaces/default/blobs"
    wait_for(lambda: raw.call("GET", cms)[0] == 200, message="the Blob resource served")

    def nested(levels):
        v = "leaf"
        for _ in range(levels):
            v = {"x": v}
        return v

    def configmap(name, **fields):
        return {"apiVersion": "example.com/v1", "kind": "Blob", "metadata": {"name": name}, **fields}

    deep = assert_status(raw.call("POST", cms, configmap("deep", extra=nested(120))), 400, "BadRequest")
    assert "levels deep" in deep["message"], deep
    # Just under the limit it is kept; a JSON patch that nests it deeper is refused.
    assert raw.call("POST", cms, configmap("nest", extra=nested(90), data={}))[0] == 201
    deeper = [{"op": "replace", "path": "/extra" + "/x" * 90, "value": nested(20)}]
    body = assert_status(raw.call("PATCH", f"{cms}/nest", deeper, content_type="application/json-patch+json"), 422,
                         "Invalid")
    assert "levels deep" in body["message"], body
    # 55,000 operations are more than a JSON patch may have.
    many = [{"op": "add", "path": f"/data/k{i}", "value": "v"} for i in range(55_000)]
    body = assert_status(raw.call("PATCH", f"{cms}/nest", many, content_type="application/json-patch+json"), 413,
                         "RequestEntityTooLarge")
    assert "The allowed maximum operations in a JSON patch is 10000, got 55000" in body["message"], body
    # Copies that double an object are stopped before they outgrow what is kept.
    raw.call("PATCH", f"{cms}/nest", {"data": {"big": "x" * 200_000}}, content_type="application/merge-patch+json")
    doubling = [{"op": "copy", "from": "/data", "path": f"/extra{i}"} for i in range(40)]
    assert_status(raw.call("PATCH", f"{cms}/nest", doubling, content_type="application/json-patch+json"), 413,
                  "RequestEntityTooLarge")
    # What was accepted reads back after a restart.
    assert cluster.stop() == 0
    cluster.start()
    kept = json.loads(cluster.kubectl("get", "blob", "nest", "-o", "json").stdout)
    assert len(kept["data"]["big"]) == 200_000 and "extra0" not in kept
    assert cluster.kubectl("get", "blob", "deep", check=False).returncode != 0


def test_duplicate_fields_selectors_and_label_keys_get_kubes_answers(cluster):
    raw = Raw(cluster)
    cms = "/api/v1/namespaces/default/configmaps"
    twice = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "twice"}, "data": {"a": "1", "a": "2"}}'
    body = assert_status(raw.call("POST", cms + "?fieldValidation=Strict", twice), 400, "BadRequest")
    assert body["message"] == 'strict decoding error: duplicate field "data.a"', body
    status, obj, headers = raw.call("POST", cms, twice)
    assert status == 201 and obj["data"] == {"a": "2"} and 'duplicate field \\"data.a\\"' in headers.get("Warning", ""), headers
    for selector, words in (("a in ()", "values set can't be empty"), (",,,", "found ',', expected: identifier"),
                            ("a/b/c=x", 'key: Invalid value: "a/b/c": a qualified name must consist of')):
        body = assert_status(raw.call("GET", cms + "?labelSelector=" + urllib.parse.quote(selector)), 400, "BadRequest")
        assert words in body["message"], (selector, body)
    labelled = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "labelled", "labels": {"a/b/c": "x"}}}
    body = assert_status(raw.call("POST", cms, labelled), 422, "Invalid")
    assert 'metadata.labels: Invalid value: "a/b/c": a qualified name must consist of' in body["message"], body


def test_built_in_kinds_are_decoded_as_kube_decodes_them(cluster):
    import subprocess

    strict = cluster.kubectl("apply", "--validate=strict", "-f", "-", check=False, input=json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "typo"},
        "spec": {"replcas": 3, "selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                 "spec": {"containers": [{"name": "c", "image": "busybox", "comand": ["sleep", "9"]}]}}}}))
    assert strict.returncode != 0, strict.stdout
    assert 'unknown field "spec.replcas"' in strict.stderr and 'unknown field "spec.template.spec.containers[0].comand"' in strict.stderr, strict.stderr
    assert cluster.kubectl("get", "deployment", "typo", check=False).returncode != 0
    # Warn: stored without the unknown fields, with a warning naming them.
    warned = cluster.kubectl("create", "--validate=warn", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "typo"}, "datas": {"k": "v"}}))
    assert 'unknown field "datas"' in warned.stderr, warned.stderr
    assert "datas" not in cluster.kubectl("get", "configmap", "typo", "-o", "json").stdout
    # Wrong types are refused with the field's path, and nothing is stored that breaks reading.
    for obj, path in (
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "arr"}, "data": ["x"]}, "data: invalid type"),
        ({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "arr"}, "data": {"k": ["x"]}}, "data.k: invalid type"),
        ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "eighty"},
          "spec": {"containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": "eighty"}]}]}},
         "spec.containers[0].ports[0].containerPort: invalid type"),
    ):
        r = cluster.kubectl("create", "-f", "-", "--validate=false", check=False, input=json.dumps(obj))
        assert r.returncode != 0 and "cannot be handled as a" in r.stderr and path in r.stderr, r.stderr
    described = subprocess.run(["kubectl", "describe", "configmaps", "-n", "default"], capture_output=True, text=True,
                               env=cluster.env(), timeout=60)
    assert described.returncode == 0, described.stderr


def test_an_oversized_url_or_body_gets_a_status_before_the_connection_closes(cluster):
    import socket

    server, token = cluster.server_and_token()
    host, port = server.removeprefix("https://").rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=f"{cluster.data_dir}/ca.crt")
    ctx.set_alpn_protocols(["http/1.1"])

    def connect():
        return ctx.wrap_socket(socket.create_connection((host, int(port)), timeout=60), server_hostname=host)

    s = connect()
    try:
        s.sendall(f"GET /api/v1/configmaps?x={'a' * 2_000_000} HTTP/1.1\r\nHost: uc\r\n\r\n".encode())
    except (ssl.SSLError, OSError):
        pass  # closed once the 431 was written, before the rest of the line was read
    assert s.recv(200).startswith(b"HTTP/1.1 431"), "a request line past the header limit: 431, as Go's server"
    s.close()
    # 100 MB announced and sent: the server reads what it must, answers 413, then closes.
    s = connect()
    s.sendall(f"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: uc\r\nAuthorization: Bearer {token}\r\n"
              f"Content-Type: application/json\r\nContent-Length: {100 << 20}\r\n\r\n".encode())
    try:
        for _ in range(100):
            s.sendall(b"a" * (1 << 20))
    except (ssl.SSLError, OSError):
        pass  # closed once the 413 was written
    answer = s.recv(400)
    assert answer.startswith(b"HTTP/1.1 413") and b"RequestEntityTooLarge" in answer, answer


def cron_job(schedule, **spec):
    template = {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
            "spec": {"schedule": schedule, "jobTemplate": template, **spec}}


def test_kubes_validation_rules_for_names_ports_probes_and_resources(cluster):
    """Each of these is refused by kube-apiserver with these words; none is stored."""
    def pod(name="p", **container):
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                "spec": {"containers": [{"name": "c", "image": "busybox", **container}]}}

    cases = (
        ({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1web"}, "spec": {"ports": [{"port": 80}]}},
         'metadata.name: Invalid value: "1web": a DNS-1035 label must consist of lower case alphanumeric characters'),
        ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}},
         'metadata.name: Invalid value: "a.b": a lowercase RFC 1123 label must consist of'),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Upper_Case"}},
         'metadata.name: Invalid value: "Upper_Case": a lowercase RFC 1123 subdomain must consist of'),
        ({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "a/b"}, "rules": []},
         "metadata.name: Invalid value: \"a/b\": may not contain '/'"),
        (pod(ports=[{"containerPort": 80, "name": "metrics-endpoint-http"}]),
         'spec.containers[0].ports[0].name: Invalid value: "metrics-endpoint-http": must be no more than 15 characters'),
        (pod(ports=[{"containerPort": 80, "name": "http"}, {"containerPort": 81, "name": "http"}]),
         'spec.containers[0].ports[1].name: Duplicate value: "http"'),
        (pod(livenessProbe={"periodSeconds": 5}),
         "spec.containers[0].livenessProbe: Required value: must specify a handler type"),
        (pod(readinessProbe={"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}}),
         "spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type"),
        (pod(resources={"limits": {"cpu": "500m"}, "requests": {"cpu": "1"}}),
         'spec.containers[0].resources.requests[cpu]: Invalid value: "1": must be less than or equal to cpu limit of 500m'),
        (pod(resources={"limits": {"cpuu": "1"}}),
         'spec.containers[0].resources.limits[cpuu]: Invalid value: "cpuu": must be a standard resource for containers'),
        (pod(resources={"requests": {"memory": "lots"}}),
         "spec.containers[0].resources.requests[memory]: quantities must match the regular expression"),
        # A Job's selector is generated: a template label naming another job, or a selector of the
        # client's own without `manualSelector`, is refused (kube's job strategy).
        ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"},
          "spec": {"template": {"metadata": {"labels": {"job-name": "other"}},
                                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}},
         "spec.template.metadata.labels[job-name]: Invalid value: \"other\": must be 'pi'"),
        ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "mine"},
          "spec": {"selector": {"matchLabels": {"app": "mine"}},
                   "template": {"metadata": {"labels": {"app": "mine"}},
                                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}},
         "`selector` not auto-generated"),
        # An Indexed Job needs its completions (the indexes run from 0 to completions − 1).
        ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "idx"},
          "spec": {"completionMode": "Indexed", "parallelism": 2,
                   "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}},
         "spec.completions: Required value: when completion mode is Indexed"),
        # A CronJob's schedule is read as robfig/cron reads it, its zone from the IANA database.
        (cron_job("61 * * * *"), 'spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61'),
        (cron_job("TZ=UTC @daily"), "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"),
        (cron_job("@daily", timeZone="Mars/Olympus"), 'spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus'),
        (cron_job("@daily", concurrencyPolicy="Sometimes"), 'spec.concurrencyPolicy: Unsupported value: "Sometimes"'),
    )
    for obj, words in cases:
        r = cluster.kubectl("create", "-f", "-", check=False, input=json.dumps(obj))
        assert r.returncode != 0 and words in r.stderr, (obj, r.stderr)
        name = obj["metadata"]["name"]
        got = cluster.kubectl("get", obj["kind"].lower(), name, "--ignore-not-found", "-o", "name", check=False)
        assert got.stdout.strip() == "", f"{obj['kind']} {name} was stored"
    # What kube accepts still goes in: names it allows, a generateName ending in '-', named ports a probe uses.
    ok = pod(name="web.v1", ports=[{"containerPort": 80, "name": "http"}],
             livenessProbe={"httpGet": {"path": "/", "port": "http"}},
             resources={"limits": {"cpu": "1", "memory": "64Mi"}, "requests": {"cpu": "500m", "memory": 1e6}})
    cluster.kubectl("create", "-f", "-", input=json.dumps(ok))
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "system:x:y"}, "rules": []}
    cluster.kubectl("create", "-f", "-", input=json.dumps(role))
    made = cluster.kubectl("create", "-o", "name", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}}))
    assert made.stdout.startswith("configmap/gen-"), made.stdout


def test_updates_are_refused_where_kube_refuses_them(cluster):
    """What kube-apiserver's strategies refuse to change after creation, refused with their words; what
    they let change goes in."""
    cluster.kubectl("run", "steady", "--image=nginx:1", "--restart=Never")
    r = cluster.kubectl("patch", "pod", "steady", "--type=merge", "-p", '{"spec":{"activeDeadlineSeconds":null,"restartPolicy":"OnFailure"}}', check=False)
    assert r.returncode != 0 and "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`" in r.stderr, r.stderr
    cluster.kubectl("set", "image", "pod/steady", "steady=nginx:2")
    cluster.kubectl("label", "pod", "steady", "tier=web")
    pod = json.loads(cluster.kubectl("get", "pod", "steady", "-o", "json").stdout)
    assert pod["spec"]["containers"][0]["image"] == "nginx:2" and pod["spec"]["restartPolicy"] == "Never"
    cluster.kubectl("apply", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "frozen"}, "immutable": True, "data": {"a": "1"}}))
    r = cluster.kubectl("patch", "configmap", "frozen", "--type=merge", "-p", '{"data":{"a":"2"}}', check=False)
    assert r.returncode != 0 and "data: Forbidden: field is immutable when `immutable` is set" in r.stderr, r.stderr
    cluster.kubectl("create", "deployment", "sel", "--image=nginx:1")
    r = cluster.kubectl("patch", "deployment", "sel", "--type=merge",
                        "-p", '{"spec":{"selector":{"matchLabels":{"app":"other"}},"template":{"metadata":{"labels":{"app":"other"}}}}}', check=False)
    assert r.returncode != 0 and "spec.selector: Invalid value" in r.stderr and "field is immutable" in r.stderr, r.stderr
    cluster.kubectl("create", "job", "once", "--image=busybox:1", "--", "true")
    r = cluster.kubectl("set", "image", "job/once", "once=busybox:2", check=False)
    assert r.returncode != 0 and "spec.template: Invalid value" in r.stderr and "field is immutable" in r.stderr, r.stderr
    assert json.loads(cluster.kubectl("get", "configmap", "frozen", "-o", "json").stdout)["data"] == {"a": "1"}, "nothing kept"

