"""The CatSet example (examples/catset) driven from tests: install it, record every Pod event of a CatSet
through a watch that resumes across restarts of uc, and check a rolling update against what the
thesis promises (one pod at a time, descending ordinal, never more than one not Ready, no ordinal
created twice or skipped).

Run as a script it is the crash soak of the README: `python3 tests/e2e/catset.py --runs 20` kills uc with
SIGKILL at a random point of each of 20 rollouts, restarts it, and checks every rollout."""

import argparse
import json
import random
import sys
import tempfile
import threading
import time

from conftest import ROOT, Cluster, wait_for

EXAMPLE = ROOT / "examples" / "catset"
NAME = "nginx-backend"


def install(cluster, replicas=3, ready_delay="1"):
    """CRD, hook ConfigMap, UniversalController and the thesis's CatSet (listing 5.6)."""
    cluster.kubectl("apply", "-f", str(EXAMPLE / "crd.yaml"))
    cluster.kubectl("create", "configmap", "catset-controller-hook", f"--from-file={EXAMPLE / 'sync.js'}")
    cluster.kubectl("apply", "-f", str(EXAMPLE / "controller.yaml"))
    import yaml

    catset = yaml.safe_load((EXAMPLE / "catset.yaml").read_text())
    catset["spec"]["replicas"] = replicas
    catset["spec"]["template"]["metadata"]["annotations"]["uc.njuics.cn/ready-delay-seconds"] = ready_delay
    cluster.kubectl("apply", "-f", "-", input=json.dumps(catset))


def get(cluster, *args):
    r = cluster.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def image(pod):
    return pod["spec"]["containers"][0]["image"]


def is_ready(pod):
    if pod["metadata"].get("deletionTimestamp"):
        return False
    conds = (pod.get("status") or {}).get("conditions") or []
    return (pod.get("status") or {}).get("phase") == "Running" and any(
        c["type"] == "Ready" and c["status"] == "True" for c in conds)


def ordinal(pod):
    return int(pod["metadata"]["name"].rsplit("-", 1)[1])


def set_image(cluster, img):
    """A new template: only the image changes (the patch replaces the containers list)."""
    container = {"name": "nginx", "image": img, "ports": [{"containerPort": 80, "name": "web"}],
                 "volumeMounts": [{"name": "www", "mountPath": "/usr/share/nginx/html"}]}
    cluster.kubectl("patch", "catset", NAME, "--type=merge",
                    "-p", json.dumps({"spec": {"template": {"spec": {"containers": [container]}}}}))


def rollout_done(cluster, img, replicas):
    pods = (get(cluster, "pods", "-l", "app=nginx") or {}).get("items", [])
    cs = get(cluster, "catset", NAME) or {}
    updated = [c for c in cs.get("status", {}).get("conditions", []) if c["type"] == "Updated"]
    return (len(pods) == replicas and all(image(p) == img and is_ready(p) for p in pods)
            and cs.get("status", {}).get("readyReplicas") == replicas
            and updated and updated[0]["status"] == "True")


class PodWatch:
    """Every Pod event of the CatSet, in order, from a watch that resumes from its last resourceVersion
    when uc restarts (the durable store keeps its event log), so no event goes unseen."""

    def __init__(self, cluster, listed):
        self.cluster = cluster
        self.rv = listed["metadata"]["resourceVersion"]
        self.events = [("LISTED", p) for p in listed["items"]]  # (type, pod)
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.error = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        from kubernetes import client, watch
        from kubernetes.client.rest import ApiException

        while not self.stopped.is_set():
            try:
                api = client.CoreV1Api(self.cluster.api_client())
                w = watch.Watch()
                for ev in w.stream(api.list_namespaced_pod, "default", label_selector="app=nginx",
                                   resource_version=self.rv, timeout_seconds=5):
                    pod = ev["raw_object"]
                    with self.lock:
                        self.events.append((ev["type"], pod))
                        self.rv = pod["metadata"]["resourceVersion"]
                    if self.stopped.is_set():
                        return
            except ApiException as e:
                if e.status == 410:
                    self.error = f"watch expired at {self.rv}: events were lost"
                    return
                time.sleep(0.1)
            except Exception:  # uc is down or restarting: resume from self.rv
                time.sleep(0.1)

    def snapshot(self):
        with self.lock:
            return list(self.events)

    def stop(self):
        self.stopped.set()
        self.thread.join(timeout=10)
        assert self.error is None, self.error
        return self.snapshot()


def start_watch(cluster):
    # kubectl's list has no resourceVersion of its own; the API's has.
    raw = cluster.kubectl("get", "--raw", "/api/v1/namespaces/default/pods?labelSelector=app%3Dnginx").stdout
    return PodWatch(cluster, json.loads(raw))


def describe(events):
    """The events, one line each, for a failure report."""
    return "\n".join(f"  {kind:8} rv={p['metadata']['resourceVersion']:>6} {p['metadata']['name']} "
                     f"uid={p['metadata']['uid'][:8]} {image(p)} ready={is_ready(p)} "
                     f"deleting={bool(p['metadata'].get('deletionTimestamp'))}" for kind, p in events)


def check_rollout(events, old, new, replicas):
    """What one rollout from image `old` to `new` must look like, from the Pod events seen during it."""
    live = {}  # name -> pod
    uids = {}  # uid -> (ordinal, image)
    first_new = []  # ordinals in the order their new pod appeared
    worst = 0
    for kind, pod in events:
        name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
        if kind == "DELETED":
            live.pop(name, None)
        else:
            live[name] = pod
            if uid not in uids:
                uids[uid] = (ordinal(pod), image(pod))
                if image(pod) == new and kind != "LISTED":
                    first_new.append(ordinal(pod))
        if kind == "LISTED":
            continue
        not_ready = sum(1 for i in range(replicas) if not (f"{NAME}-{i}" in live and is_ready(live[f"{NAME}-{i}"])))
        worst = max(worst, not_ready)
    problems = []
    for i in range(replicas):
        created = [img for (o, img) in uids.values() if o == i]
        if created.count(new) != 1:
            problems.append(f"ordinal {i}: {created.count(new)} pods created with the new template")
        if created.count(old) > 1:
            problems.append(f"ordinal {i}: the old template was created again")
    if first_new != sorted(first_new, reverse=True) or sorted(first_new) != list(range(replicas)):
        problems.append(f"new pods appeared in ordinal order {first_new}, expected {list(range(replicas))[::-1]}")
    if worst > 1:
        problems.append(f"{worst} pods were not Ready at one time")
    final = {n: image(p) for n, p in live.items()}
    if sorted(final) != [f"{NAME}-{i}" for i in range(replicas)] or set(final.values()) != {new}:
        problems.append(f"the rollout ended with {final}")
    return problems


def soak(cluster, runs, replicas=3, max_delay=4.5, log=print, seed=None):
    """`runs` rollouts, each interrupted by a SIGKILL of uc at a random point; returns the problems."""
    rng = random.Random(seed)
    images = ["gcr.io/google_containers/nginx-slim:0.8", "nginx-slim:0.9"]
    problems = []
    for run in range(runs):
        old, new = images[run % 2], images[(run + 1) % 2]
        watch = start_watch(cluster)
        set_image(cluster, new)
        delay = rng.uniform(0.0, max_delay)
        time.sleep(delay)
        cluster.kill9()
        cluster.start()
        wait_for(lambda: rollout_done(cluster, new, replicas), timeout=60, message=f"run {run}: rollout to {new}")
        events = watch.stop()
        found = check_rollout(events, old, new, replicas)
        log(f"run {run + 1}/{runs}: killed {delay:.2f}s into the rollout to {new}: "
            f"{'ok' if not found else '; '.join(found)}")
        if found:
            log(describe(events))
        problems += [f"run {run + 1} (kill at {delay:.2f}s): {p}" for p in found]
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--seed", type=int, default=None)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="uc-soak-") as d:
        cluster = Cluster(d).start()
        try:
            install(cluster)
            wait_for(lambda: rollout_done(cluster, "gcr.io/google_containers/nginx-slim:0.8", 3), timeout=60,
                     message="the CatSet ready")
            problems = soak(cluster, args.runs, seed=args.seed)
        finally:
            if cluster.proc is not None:
                cluster.stop()
    print(f"{args.runs - len({p.split(' ')[1] for p in problems})} of {args.runs} runs correct")
    for p in problems:
        print("PROBLEM:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
