"""The thesis's tensorflowjob controller (examples/tfjob): kubeflow TFJob semantics as a JavaScript hook,
with simulated pods whose exit codes are set by annotation."""

import json

import yaml

from conftest import ROOT, wait_for

EXAMPLE = ROOT / "examples" / "tfjob"
JOB = "dist-mnist"


def get(cluster, *args):
    r = cluster.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def install(cluster, worker_annotations=None, worker_replicas=2, success_policy=None):
    cluster.kubectl("apply", "-f", str(EXAMPLE / "crd.yaml"))
    cluster.kubectl("create", "configmap", "tensorflowjob-controller-hook", f"--from-file={EXAMPLE / 'sync.js'}")
    cluster.kubectl("apply", "-f", str(EXAMPLE / "controller.yaml"))
    job = yaml.safe_load((EXAMPLE / "tfjob.yaml").read_text())
    worker = job["spec"]["tfReplicaSpecs"]["Worker"]
    worker["replicas"] = worker_replicas
    if worker_annotations is not None:
        worker["template"]["metadata"]["annotations"] = worker_annotations
    if success_policy is not None:
        job["spec"]["successPolicy"] = success_policy
    # The resource version the job was created at: watches replay its whole history from there.
    return cluster.kubectl("create", "-f", "-", "-o", "jsonpath={.metadata.resourceVersion}", input=json.dumps(job)).stdout


def first_condition_seen(cluster, since, type_, timeout):
    """The first True `type_` condition in the job's history from resource version `since`. Conditions such as
    Restarting last only until the pod runs again, so polling can miss them; a watch sees every write."""
    from kubernetes import client, watch

    co = client.CustomObjectsApi(cluster.api_client())
    w = watch.Watch()
    for ev in w.stream(co.list_namespaced_custom_object, "mlhub.njuics.cn", "v1alpha1", "default", "tensorflowjobs",
                       resource_version=since, timeout_seconds=timeout):
        for c in ev["object"].get("status", {}).get("conditions", []):
            if c["type"] == type_ and c["status"] == "True":
                w.stop()
                return c
    raise AssertionError(f"no {type_} condition within {timeout} s")


def conditions(cluster):
    job = get(cluster, "tfjob", JOB) or {}
    return {c["type"]: c for c in job.get("status", {}).get("conditions", [])}


def is_true(cluster, type_):
    c = conditions(cluster).get(type_)
    return c is not None and c["status"] == "True"


def pods(cluster):
    return {p["metadata"]["name"]: p for p in get(cluster, "pods", "-l", f"job-name={JOB}")["items"]}


def test_tfjob_pods_services_tf_config_and_success(cluster):
    # Every worker must succeed: by default worker 0's success ends the job, and cleanPodPolicy Running would
    # then delete worker 1 if it were still running, which depends on the machine's speed.
    install(cluster, success_policy="AllWorkers")
    names = [f"{JOB}-ps-0", f"{JOB}-worker-0", f"{JOB}-worker-1"]
    wait_for(lambda: sorted(pods(cluster)) == names, message="one pod per replica")
    services = {s["metadata"]["name"]: s for s in get(cluster, "svc", "-l", f"job-name={JOB}")["items"]}
    assert sorted(services) == names
    assert all(s["spec"]["clusterIP"] == "None" and s["spec"]["ports"][0]["port"] == 2222 for s in services.values())
    cluster_spec = {"ps": [f"{JOB}-ps-0.default.svc:2222"],
                    "worker": [f"{JOB}-worker-0.default.svc:2222", f"{JOB}-worker-1.default.svc:2222"]}
    for name, pod in pods(cluster).items():
        env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
        tf_config = json.loads(env["TF_CONFIG"])
        _, rtype, index = name.rsplit("-", 2)
        assert tf_config == {"cluster": cluster_spec, "task": {"type": rtype, "index": int(index)}, "environment": "cloud"}
        assert pod["spec"]["restartPolicy"] == "Never", "ExitCode and Never both leave restarts to the operator"
        assert pod["metadata"]["labels"]["replica-type"] == rtype
    wait_for(lambda: is_true(cluster, "Running"), message="Running")
    assert is_true(cluster, "Created")
    # Workers run 3 s and exit 0: the job succeeds once both have; the parameter server is cleaned up
    # (cleanPodPolicy Running).
    wait_for(lambda: is_true(cluster, "Succeeded"), timeout=30, message="Succeeded")
    status = get(cluster, "tfjob", JOB)["status"]
    assert status["replicaStatuses"]["Worker"] == {"active": 0, "succeeded": 2, "failed": 0}
    assert conditions(cluster)["Running"]["status"] == "False"
    assert status["completionTime"] >= status["startTime"]
    wait_for(lambda: sorted(pods(cluster)) == [f"{JOB}-worker-0", f"{JOB}-worker-1"], message="PS cleaned up")
    assert cluster.kubectl("get", "tfjob", JOB).stdout.split("\n")[1].split()[1] == "Succeeded", "State column"


def test_tfjob_retryable_exit_code_restarts_the_worker(cluster):
    # Killed by SIGKILL (137): under restartPolicy ExitCode the worker is created again.
    created = install(cluster, {"uc.njuics.cn/run-seconds": "1", "uc.njuics.cn/exit-code": "137"}, worker_replicas=1)
    first = wait_for(lambda: pods(cluster).get(f"{JOB}-worker-0"), message="worker")["metadata"]["uid"]
    restarting = first_condition_seen(cluster, created, "Restarting", timeout=20)
    assert restarting["reason"] == "TFJobRestarting" and "Worker 0 (exit code 137)" in restarting["message"]
    wait_for(lambda: (p := pods(cluster).get(f"{JOB}-worker-0")) and p["metadata"]["uid"] != first,
             timeout=20, message="the worker created again")
    assert not is_true(cluster, "Failed")
    # The next attempt succeeds (a new template: pods are re-created): the job completes.
    cluster.kubectl("patch", "tfjob", JOB, "--type=json", "-p", json.dumps([
        {"op": "replace", "path": "/spec/tfReplicaSpecs/Worker/template/metadata/annotations/uc.njuics.cn~1exit-code",
         "value": "0"}]))
    wait_for(lambda: is_true(cluster, "Succeeded"), timeout=30, message="Succeeded after the restart")
    assert conditions(cluster)["Restarting"]["status"] == "False"


def test_tfjob_permanent_exit_code_fails_the_job(cluster):
    # One worker: with two, the first to fail ends the job and cleanPodPolicy Running rightly deletes the
    # other if it is still running then, so which pods stay would depend on the machine's speed.
    install(cluster, {"uc.njuics.cn/run-seconds": "1", "uc.njuics.cn/exit-code": "1"}, worker_replicas=1)
    wait_for(lambda: is_true(cluster, "Failed"), timeout=20, message="Failed")
    failed = conditions(cluster)["Failed"]
    assert failed["reason"] == "TFJobFailed" and "1 Worker replica(s) failed" in failed["message"]
    # Nothing is restarted; the failed worker stays for its logs, the parameter server is cleaned up.
    wait_for(lambda: f"{JOB}-ps-0" not in pods(cluster), message="PS cleaned up")
    workers = pods(cluster)
    assert sorted(workers) == [f"{JOB}-worker-0"]
    assert workers[f"{JOB}-worker-0"]["status"]["phase"] == "Failed"
    assert get(cluster, "tfjob", JOB)["status"]["replicaStatuses"]["Worker"] == {"active": 0, "succeeded": 0, "failed": 1}
    assert not is_true(cluster, "Succeeded")
