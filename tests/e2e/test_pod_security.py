"""Pod Security admission as kube-apiserver has it, tried as a tenant who may create pods in one namespace
would try to own the machine: hostPath of /, host namespaces, privileged containers, extra capabilities."""

import json

from conftest import wait_for
from test_rbac import as_user


def tenant(cluster, ns="team"):
    """A service account that may create pods and Deployments in `ns`; its token."""
    cluster.kubectl("create", "namespace", ns)
    cluster.kubectl("-n", ns, "create", "serviceaccount", "dev")
    cluster.kubectl("-n", ns, "create", "role", "pods", "--verb=get,list,watch,create,delete",
                    "--resource=pods,deployments.apps")
    cluster.kubectl("-n", ns, "create", "rolebinding", "pods", "--role=pods", f"--serviceaccount={ns}:dev")
    return cluster.kubectl("-n", ns, "create", "token", "dev").stdout.strip()


def pod(name, spec):
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})


OWN_THE_HOST = {
    "hostNetwork": True, "hostPID": True,
    "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
    "containers": [{"name": "shell", "image": "busybox", "command": ["sh", "-c", "cat /host/etc/shadow; sleep 3600"],
                    "volumeMounts": [{"name": "root", "mountPath": "/host"}],
                    "securityContext": {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}}}],
}


def test_a_tenant_cannot_mount_the_host_or_join_its_namespaces(cluster):
    token = tenant(cluster)
    r = as_user(cluster, "-n", "team", "apply", "-f", "-", token=token, input=pod("own", OWN_THE_HOST), check=False)
    assert r.returncode != 0
    assert ('pods "own" is forbidden: violates PodSecurity "baseline:latest": '
            'non-default capabilities (container "shell" must not include "SYS_ADMIN" in securityContext.capabilities.add), '
            'host namespaces (hostNetwork, hostPID), hostPath volumes (volume "root"), '
            'privileged (container "shell" must not set securityContext.privileged=true)') in r.stderr, r.stderr
    assert cluster.kubectl("-n", "team", "get", "pod", "own", check=False).returncode != 0, "nothing was stored"
    # A plain pod is admitted, with restricted's warning (the cluster default: baseline enforced,
    # restricted warned about).
    plain = {"containers": [{"name": "app", "image": "busybox", "command": ["sleep", "3600"]}]}
    r = as_user(cluster, "-n", "team", "apply", "-f", "-", token=token, input=pod("plain", plain))
    assert 'Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false' in r.stderr, r.stderr
    # A Deployment with the same template as the refused pod is stored, with a warning.
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "own"},
              "spec": {"selector": {"matchLabels": {"app": "own"}},
                       "template": {"metadata": {"labels": {"app": "own"}}, "spec": OWN_THE_HOST}}}
    r = as_user(cluster, "-n", "team", "apply", "-f", "-", token=token, input=json.dumps(deploy))
    assert 'Warning: would violate PodSecurity "baseline:latest": non-default capabilities' in r.stderr, r.stderr


def test_namespace_labels_choose_the_level(cluster):
    cluster.kubectl("create", "namespace", "strict")
    cluster.kubectl("label", "namespace", "strict", "pod-security.kubernetes.io/enforce=restricted")
    plain = {"containers": [{"name": "app", "image": "busybox", "command": ["sleep", "3600"]}]}
    r = cluster.kubectl("-n", "strict", "apply", "-f", "-", input=pod("plain", plain), check=False)
    assert r.returncode != 0 and 'violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false' in r.stderr, r.stderr
    hardened = {"securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{"name": "app", "image": "busybox", "command": ["sleep", "3600"],
                                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}]}
    r = cluster.kubectl("-n", "strict", "apply", "-f", "-", input=pod("hardened", hardened))
    assert "Warning" not in r.stderr, r.stderr
    # A privileged namespace takes what baseline refuses; a misspelt level is refused with the label named.
    cluster.kubectl("create", "namespace", "infra")
    cluster.kubectl("label", "namespace", "infra", "pod-security.kubernetes.io/enforce=privileged",
                    "pod-security.kubernetes.io/warn=privileged")
    host = {"hostNetwork": True, "containers": [{"name": "app", "image": "busybox", "command": ["sleep", "3600"]}]}
    r = cluster.kubectl("-n", "infra", "apply", "-f", "-", input=pod("host", host))
    assert "Warning" not in r.stderr, r.stderr
    # Tightening the namespace warns about the pods already there that the new level would refuse.
    r = cluster.kubectl("label", "namespace", "infra", "--overwrite", "pod-security.kubernetes.io/enforce=baseline")
    assert 'existing pods in namespace "infra" violate the new PodSecurity enforce level "baseline:latest"' in r.stderr, r.stderr
    assert "host: host namespaces" in r.stderr, r.stderr
    assert cluster.kubectl("-n", "infra", "get", "pod", "host").returncode == 0, "the pod keeps running"
    r = cluster.kubectl("label", "namespace", "infra", "--overwrite", "pod-security.kubernetes.io/enforce=strict", check=False)
    assert r.returncode != 0 and "metadata.labels[pod-security.kubernetes.io/enforce]" in r.stderr \
        and "must be one of privileged, baseline, restricted" in r.stderr, r.stderr


def test_the_cluster_default_is_the_operators_choice(make_cluster):
    cluster = make_cluster(["--pod-security-default", "enforce=restricted"])
    plain = {"containers": [{"name": "app", "image": "busybox", "command": ["sleep", "3600"]}]}
    r = cluster.kubectl("apply", "-f", "-", input=pod("plain", plain), check=False)
    assert r.returncode != 0 and 'violates PodSecurity "restricted:latest"' in r.stderr, r.stderr
    # uc's own system namespace stays privileged.
    r = cluster.kubectl("-n", "kube-system", "apply", "-f", "-", input=pod("plain", plain))
    assert r.returncode == 0


def test_the_audit_level_is_recorded_in_the_audit_log(make_cluster, tmp_path):
    audit = tmp_path / "audit.log"
    cluster = make_cluster(["--audit-log-path", str(audit)])
    cluster.kubectl("create", "namespace", "watched")
    cluster.kubectl("label", "namespace", "watched", "pod-security.kubernetes.io/audit=restricted")
    plain = {"containers": [{"name": "app", "image": "busybox", "command": ["sleep", "3600"]}]}
    cluster.kubectl("-n", "watched", "apply", "-f", "-", input=pod("plain", plain))
    r = cluster.kubectl("-n", "watched", "apply", "-f", "-", input=pod("host", OWN_THE_HOST), check=False)
    assert r.returncode != 0

    def pod_creates():
        events = [json.loads(line) for line in open(audit) if line.strip()]
        found = {e["responseStatus"]["code"]: e.get("annotations", {}) for e in events
                 if e["verb"] == "create" and (e.get("objectRef") or {}).get("resource") == "pods"
                 and e["objectRef"].get("namespace") == "watched"
                 and not e["objectRef"].get("subresource")}  # not the scheduler's pods/binding
        return found if {201, 403} <= set(found) else None

    creates = wait_for(pod_creates, message="both pods' audit events")
    noted = creates[201]
    assert noted["pod-security.kubernetes.io/enforce-policy"] == "baseline:latest", noted
    assert noted["pod-security.kubernetes.io/audit-violations"].startswith(
        'would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false'), noted
    assert "host namespaces" in creates[403]["pod-security.kubernetes.io/audit-violations"], creates[403]


def test_pod_templates_are_stored_checked_and_warned_about_never_refused_for_their_level(cluster):
    """v1 PodTemplates: stored with a pod spec's defaults, refused with field paths when their pod spec is
    invalid, warned about (not refused) when their pod would violate the namespace's level, and listed with
    kube's columns."""
    template = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "own"},
                "template": {"metadata": {"labels": {"app": "own"}}, "spec": OWN_THE_HOST}}
    r = cluster.kubectl("apply", "-f", "-", input=json.dumps(template))
    assert 'Warning: would violate PodSecurity "baseline:latest": non-default capabilities' in r.stderr, r.stderr
    stored = json.loads(cluster.kubectl("get", "podtemplate", "own", "-o", "json").stdout)
    assert stored["template"]["spec"]["restartPolicy"] == "Always", "a pod spec's defaults"
    table = cluster.kubectl("get", "podtemplates").stdout.splitlines()
    assert table[0].split() == ["NAME", "CONTAINERS", "IMAGES", "POD", "LABELS"], table
    assert table[1].split() == ["own", "shell", "busybox", "app=own"], table
    bad = dict(template, metadata={"name": "bad"})
    bad["template"] = {"spec": {"containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 70000}]}]}}
    r = cluster.kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
    assert r.returncode != 0 and "template.spec.containers[0].ports[0].containerPort" in r.stderr, r.stderr
