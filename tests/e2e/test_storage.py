"""StorageClasses (storage.k8s.io/v1) as kube serves them: the default class `uc up` makes for what its
node provisions (as kind makes `standard`), kube's DefaultStorageClass admission giving it to a claim
that names no class, kube's defaults, columns and refusals, and what a class may not change."""

import json

import yaml


def get(cluster, *what):
    r = cluster.kubectl("get", *what, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


CLAIM = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: NAME}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}CLASS}
"""


def claim(cluster, name, cls=""):
    made = cluster.kubectl("create", "-f", "-", "-o", "json", input=CLAIM.replace("NAME", name).replace("CLASS", cls))
    return json.loads(made.stdout)


def test_the_default_class_is_given_to_claims_that_name_none(cluster):
    table = cluster.kubectl("get", "sc").stdout.split("\n")
    assert table[0].split() == ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"]
    assert table[1].split()[:6] == ["standard", "(default)", "uc.njuics.cn/node-directory", "Delete", "Immediate", "false"]
    assert claim(cluster, "data")["spec"]["storageClassName"] == "standard"
    # "" asks for no class; a class named is kept as named.
    assert claim(cluster, "bare", ', storageClassName: ""')["spec"]["storageClassName"] == ""
    # A newer default class is the one new claims get (kube: the newest of the defaults).
    fast = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "example.com/fast", "parameters": {"tier": "ssd"}, "allowVolumeExpansion": True}
    made = json.loads(cluster.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(fast)).stdout)
    assert (made["reclaimPolicy"], made["volumeBindingMode"]) == ("Delete", "Immediate"), "kube's defaults"
    assert claim(cluster, "quick")["spec"]["storageClassName"] == "fast"
    pvcs = {p["metadata"]["name"]: p["spec"].get("storageClassName") for p in get(cluster, "pvc")["items"]}
    assert pvcs == {"data": "standard", "bare": "", "quick": "fast"}, "a claim made earlier keeps its class"
    # What a class may not change, and what it may.
    cluster.kubectl("patch", "sc", "fast", "-p", '{"allowVolumeExpansion": false, "metadata": {"labels": {"tier": "ssd"}}}')
    r = cluster.kubectl("patch", "sc", "fast", "-p", '{"parameters": {"tier": "hdd"}, "reclaimPolicy": "Retain"}', check=False)
    assert r.returncode != 0
    assert "parameters: Forbidden: updates to parameters are forbidden." in r.stderr, r.stderr
    assert "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden." in r.stderr, r.stderr
    bad = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "bad"},
           "provisioner": "", "reclaimPolicy": "Recycle"}
    r = cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(bad), check=False)
    assert r.returncode != 0 and "provisioner: Required value" in r.stderr, r.stderr
    assert 'reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"' in r.stderr, r.stderr


def test_a_class_deleted_is_not_made_again_while_another_exists(make_cluster):
    c = make_cluster()
    c.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                                    "metadata": {"name": "mine"}, "provisioner": "example.com/mine"}))
    c.kubectl("delete", "sc", "standard")
    c.stop()
    c.start()
    names = [s["metadata"]["name"] for s in get(c, "sc")["items"]]
    assert names == ["mine"], "uc up makes `standard` only for a cluster without a class"
    assert "storageClassName" not in claim(c, "data")["spec"], "no default class: the claim names none"
