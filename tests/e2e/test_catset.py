"""The thesis's CatSet (examples/catset): a StatefulSet rebuilt as a UniversalController with a JavaScript
hook, and its rolling updates driven by ControllerRevisions."""

import json
import os
import time

import catset
from catset import NAME, get, image, install, is_ready, ordinal, rollout_done, set_image, start_watch
from conftest import wait_for

OLD = "gcr.io/google_containers/nginx-slim:0.8"


def pods(cluster):
    return {p["metadata"]["name"]: p for p in (get(cluster, "pods", "-l", "app=nginx") or {}).get("items", [])}


def status(cluster):
    return (get(cluster, "catset", NAME) or {}).get("status", {})


def ready_order_ok(events):
    """Each pod appeared only once every lower ordinal was Running and Ready."""
    live, problems = {}, []
    for kind, pod in events:
        name = pod["metadata"]["name"]
        if kind == "ADDED":
            for lower in range(ordinal(pod)):
                p = live.get(f"{NAME}-{lower}")
                if p is None or not is_ready(p):
                    problems.append(f"{name} was created while {NAME}-{lower} was not Running and Ready")
        if kind == "DELETED":
            live.pop(name, None)
        else:
            live[name] = pod
    return problems


def first_deleting(events):
    """Pod names in the order their deletion started."""
    order = []
    for kind, pod in events:
        if (pod["metadata"].get("deletionTimestamp") or kind == "DELETED") and pod["metadata"]["name"] not in order:
            order.append(pod["metadata"]["name"])
    return order


def test_catset_ordered_start_scale_and_delete(cluster):
    watch = start_watch(cluster)
    install(cluster)
    wait_for(lambda: status(cluster).get("readyReplicas") == 3, timeout=30, message="readyReplicas 3")
    assert sorted(pods(cluster)) == [f"{NAME}-{i}" for i in range(3)]
    assert ready_order_ok(watch.snapshot()) == []
    claims = sorted(p["metadata"]["name"] for p in get(cluster, "pvc")["items"])
    assert claims == [f"www-{NAME}-{i}" for i in range(3)]
    pod0 = pods(cluster)[f"{NAME}-0"]
    assert pod0["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == f"www-{NAME}-0"
    assert pod0["spec"]["hostname"] == f"{NAME}-0" and pod0["spec"]["subdomain"] == NAME
    assert pod0["metadata"]["ownerReferences"][0]["kind"] == "CatSet"
    # The thesis's revision object: the parent's spec.template and the pods that belong to it.
    revs = get(cluster, "controllerrevisions.universalcontroller.njuics.cn")["items"]
    assert len(revs) == 1 and revs[0]["metadata"]["name"].startswith("catsets.mlhub.njuics.cn-")
    assert list(revs[0]["parentPatch"]["spec"]) == ["template"]
    assert revs[0]["children"] == [{"apiGroup": "", "kind": "Pod", "names": [f"{NAME}-{i}" for i in range(3)]}]

    cluster.kubectl("patch", "catset", NAME, "--type=merge", "-p", '{"spec":{"replicas":4}}')
    wait_for(lambda: status(cluster).get("readyReplicas") == 4, timeout=30, message="readyReplicas 4")
    assert ready_order_ok(watch.snapshot()) == []
    mark = len(watch.snapshot())
    cluster.kubectl("scale", "catset", NAME, "--replicas=2")  # through the scale subresource
    wait_for(lambda: sorted(pods(cluster)) == [f"{NAME}-0", f"{NAME}-1"] and status(cluster).get("replicas") == 2,
             timeout=30, message="scaled down to 2")
    assert first_deleting(watch.snapshot()[mark:]) == [f"{NAME}-3", f"{NAME}-2"], "highest ordinal first"
    claims = sorted(p["metadata"]["name"] for p in get(cluster, "pvc")["items"])
    assert claims == [f"www-{NAME}-{i}" for i in range(4)], "claims are retained after scale-down"

    # Deleting the CatSet runs the finalize hook: scale to zero, highest first, then the CatSet goes.
    mark = len(watch.snapshot())
    cluster.kubectl("delete", "catset", NAME, "--wait=false")
    wait_for(lambda: get(cluster, "catset", NAME) is None, timeout=30, message="the CatSet gone")
    assert first_deleting(watch.snapshot()[mark:]) == [f"{NAME}-1", f"{NAME}-0"]
    assert pods(cluster) == {} or all(p["metadata"].get("deletionTimestamp") for p in pods(cluster).values())
    wait_for(lambda: get(cluster, "pvc")["items"] == [], timeout=30, message="claims deleted with the CatSet")
    wait_for(lambda: get(cluster, "controllerrevisions.universalcontroller.njuics.cn")["items"] == [],
             message="revisions deleted with the CatSet")
    watch.stop()


def test_catset_rolling_update_one_at_a_time(cluster):
    install(cluster)
    wait_for(lambda: rollout_done(cluster, OLD, 3), timeout=30, message="CatSet ready")
    watch = start_watch(cluster)
    set_image(cluster, "nginx-slim:0.9")
    wait_for(lambda: rollout_done(cluster, "nginx-slim:0.9", 3), timeout=60, message="rollout done")
    assert catset.check_rollout(watch.stop(), OLD, "nginx-slim:0.9", 3) == []
    revs = get(cluster, "controllerrevisions.universalcontroller.njuics.cn")["items"]
    assert len(revs) == 1, "the emptied old revision is garbage-collected"
    assert revs[0]["parentPatch"]["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx-slim:0.9"
    updated = [c for c in status(cluster)["conditions"] if c["type"] == "Updated"][0]
    assert updated["reason"] == "RolloutComplete" and "3 of 3" in updated["message"]
    moves = [e["message"] for e in get(cluster, "events", "--field-selector", "reason=RollingUpdate")["items"]]
    assert len(moves) == 3 and all(m.startswith("Pod ") for m in moves)
    # Fields outside revisionHistory apply at once and do not roll: replicas is one.
    cluster.kubectl("patch", "catset", NAME, "--type=merge", "-p", '{"spec":{"replicas":1}}')
    wait_for(lambda: sorted(pods(cluster)) == [f"{NAME}-0"], timeout=30, message="scaled to 1")
    assert len(get(cluster, "controllerrevisions.universalcontroller.njuics.cn")["items"]) == 1


def test_catset_pod_deleted_mid_rollout_returns_at_its_old_revision(cluster):
    install(cluster, ready_delay="1")
    wait_for(lambda: rollout_done(cluster, OLD, 3), timeout=30, message="CatSet ready")
    # The new template is slow to become Ready, so the rollout is still at pod 2 when pod 0 goes.
    cs = get(cluster, "catset", NAME)
    template = cs["spec"]["template"]
    template["metadata"]["annotations"]["uc.njuics.cn/ready-delay-seconds"] = "4"
    template["spec"]["containers"][0]["image"] = "nginx-slim:0.9"
    cluster.kubectl("patch", "catset", NAME, "--type=merge", "-p", json.dumps({"spec": {"template": template}}))
    wait_for(lambda: image(pods(cluster).get(f"{NAME}-2", {"spec": {"containers": [{"image": ""}]}})) == "nginx-slim:0.9",
             timeout=20, message="pod 2 moved to the new template")
    old_uid = pods(cluster)[f"{NAME}-0"]["metadata"]["uid"]
    assert image(pods(cluster)[f"{NAME}-0"]) == OLD
    cluster.kubectl("delete", "pod", f"{NAME}-0", "--wait=false")
    back = wait_for(lambda: (p := pods(cluster).get(f"{NAME}-0")) and p["metadata"]["uid"] != old_uid and p,
                    timeout=20, message="pod 0 recreated")
    assert image(back) == OLD, "a pod not yet moved comes back at its old revision"
    cond = [c for c in status(cluster)["conditions"] if c["type"] == "Updated"][0]
    assert cond["status"] == "False" and cond["reason"] == "RollingUpdate"
    wait_for(lambda: rollout_done(cluster, "nginx-slim:0.9", 3), timeout=60, message="rollout done")


def test_catset_rollout_survives_sigkill(make_cluster):
    """The crash soak of the README (`python3 tests/e2e/catset.py --runs 20`), with fewer runs."""
    cluster = make_cluster()
    install(cluster)
    wait_for(lambda: rollout_done(cluster, OLD, 3), timeout=30, message="CatSet ready")
    runs = int(os.environ.get("UC_SOAK_RUNS", "3"))
    problems = catset.soak(cluster, runs, seed=int(time.time()), log=print)
    assert problems == []
