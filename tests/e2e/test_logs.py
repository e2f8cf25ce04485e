"""uc's log as a user reads it: a normal session — the README's first steps, a day of kubectl, a hook
edited, a restart — writes no WARN or ERROR line the user did not cause, one record per line, and a
clean stop says what it is doing; a user's mistake is one line of error, never a backtrace."""

import os
import re
import shutil
import subprocess
import tempfile

from conftest import ROOT, Cluster, uc_binary, wait_for

RECORD = re.compile(r"^(\x1b\[[0-9;]*m)*\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z")
LEVEL = re.compile(r"^\S+\s+(?:\x1b\[[0-9;]*m)*(TRACE|DEBUG|INFO|WARN|ERROR)\b")


def session(cluster: Cluster):
    """What a newcomer does in a first hour, each step waited for as they would wait."""
    k = cluster.kubectl
    sample = ROOT / "examples" / "sample-controller"
    k("get", "namespaces")
    k("apply", "-f", str(sample / "crd.yaml"))
    k("create", "configmap", "sample-controller-hook", f"--from-file={sample / 'sync.js'}")
    k("apply", "-f", str(sample / "controller.yaml"), "-f", str(sample / "foo.yaml"))
    k("wait", "--for=create", "deployment/example-foo", "--timeout=60s")
    k("patch", "foo", "example-foo", "--type=merge", "-p", '{"spec":{"replicas":2}}')
    k("wait", "deployment/example-foo", "--for=jsonpath={.spec.replicas}=2", "--timeout=60s")
    # The hook edited: its ConfigMap replaced.
    source = (sample / "sync.js").read_text().replace("replicas: foo.spec.replicas", "replicas: foo.spec.replicas + 1")
    assert source != (sample / "sync.js").read_text(), "the edit applies to sync.js"
    edited = k("create", "configmap", "sample-controller-hook", "--from-literal=sync.js=" + source, "-o", "yaml",
               "--dry-run=client").stdout
    k("replace", "-f", "-", input=edited)
    k("wait", "deployment/example-foo", "--for=jsonpath={.spec.replicas}=3", "--timeout=60s")
    # Workloads, a job, config, and deleting them.
    k("create", "deployment", "web", "--image=busybox", "--", "sleep", "3600")
    k("rollout", "status", "deployment/web", "--timeout=120s")
    k("scale", "deployment/web", "--replicas=2")
    k("rollout", "status", "deployment/web", "--timeout=120s")
    k("create", "job", "once", "--image=busybox", "--", "true")
    k("wait", "job/once", "--for=condition=Complete", "--timeout=120s")
    k("create", "configmap", "settings", "--from-literal=a=1")
    k("get", "all", "-A")
    k("describe", "deployment", "web")
    k("delete", "deployment", "web")
    k("delete", "job", "once")
    k("delete", "foo", "example-foo")
    k("wait", "--for=delete", "deployment/example-foo", "--timeout=60s")
    if shutil.which("etcd"):
        # One of uc's operators: an etcd cluster of three real members, then gone.
        k("apply", "-f", str(ROOT / "examples" / "etcd" / "etcd-cluster.yaml"))
        k("wait", "etcdcluster/example-etcd-cluster", "--for=jsonpath={.status.readyMembers}=3", "--timeout=120s")
        k("delete", "etcdcluster", "example-etcd-cluster")
        k("wait", "--for=delete", "pod", "-l", "etcd_cluster=example-etcd-cluster", "--timeout=60s")


def test_a_normal_session_logs_no_warning_the_user_did_not_cause():
    with tempfile.TemporaryDirectory(prefix="uc-e2e-logs-") as d:
        cluster = Cluster(d).start()
        try:
            session(cluster)
            assert cluster.stop() == 0
            cluster.start()  # the same command again, on the same data directory
            cluster.kubectl("get", "foos,deployments,configmaps")
            wait_for(lambda: cluster.kubectl("get", "uc", "sample-controller", "-o",
                                             "jsonpath={.status.conditions[?(@.type=='Ready')].status}").stdout == "True",
                     timeout=60, message="the controller ready again after the restart")
        finally:
            code = cluster.stop()
        assert code == 0
        log = open(os.path.join(d, "uc.log"), errors="replace").read().splitlines()
    loose = [line for line in log if not RECORD.match(line)]
    assert not loose, f"{len(loose)} lines are no record of their own (a value with a line break?):\n" + "\n".join(loose[:20])
    loud = [line for line in log if (m := LEVEL.match(line)) and m.group(1) in ("WARN", "ERROR")]
    assert not loud, f"{len(loud)} WARN/ERROR lines in a normal session:\n" + "\n".join(loud[:40])
    assert not [line for line in log if "Status {" in line or "ErrorResponse {" in line], "no Rust debug dumps"
    # A clean stop says what it waits for.
    stop = [line for line in log if "stopping the" in line or line.endswith("stopped")]
    assert len(stop) >= 2 * 4, stop


def test_a_users_mistake_is_one_line_without_a_backtrace(tmp_path):
    env = {**os.environ, "RUST_BACKTRACE": "1"}
    for argv, words in (([uc_binary(), "init", "Bad_Name"], "not a valid name"),
                        ([uc_binary(), "hook", "show", "x", "--data-dir", str(tmp_path)], "is `uc up` running there?"),
                        ([uc_binary(), "snapshot", "restore", str(tmp_path / "none.db"), str(tmp_path / "new")], "none.db")):
        r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 1 and len(lines) == 1 and lines[0].startswith("Error: ") and words in lines[0], (argv, r.stderr)


def test_a_controller_outlives_a_restart_of_its_api_server_quietly(tmp_path):
    """`uc run` against a `uc up --no-engine` that is stopped and started again with the same command
    (`--port 0`: the data directory keeps its port, so the controller's kubeconfig stays right) after
    its history moved on: the controller's watches resume or relist, it converges again, and says
    nothing louder than INFO about what was routine."""
    import signal
    import time

    (tmp_path / "cluster").mkdir()
    cluster = Cluster(str(tmp_path / "cluster"), ["--no-engine", "--history-seconds", "2"]).start()
    log = open(tmp_path / "run.log", "wb")
    run = subprocess.Popen([uc_binary(), "run", "--kubeconfig", cluster.kubeconfig, "--metrics-addr", "127.0.0.1:0"],
                           stderr=log)
    try:
        k = cluster.kubectl
        sample = ROOT / "examples" / "sample-controller"
        k("apply", "-f", str(sample / "crd.yaml"))
        k("create", "configmap", "sample-controller-hook", f"--from-file={sample / 'sync.js'}")
        k("apply", "-f", str(sample / "controller.yaml"), "-f", str(sample / "foo.yaml"))
        wait_for(lambda: k("get", "deployment", "example-foo", check=False).returncode == 0, timeout=60,
                 message="the controller running")
        for i in range(20):
            k("create", "configmap", f"churn-{i}")
        time.sleep(3)  # the history kept (2 s) moves past every watch's version
        assert cluster.stop() == 0
        cluster.start()
        k("patch", "foo", "example-foo", "--type=merge", "-p", '{"spec":{"replicas":3}}')
        wait_for(lambda: k("get", "deployment", "example-foo", "-o", "jsonpath={.spec.replicas}").stdout == "3",
                 timeout=60, message="the controller converging after the restart")
    finally:
        run.send_signal(signal.SIGTERM)
        run.wait(timeout=60)
        log.close()
        cluster.stop()
    lines = (tmp_path / "run.log").read_text(errors="replace").splitlines()
    assert [line for line in lines if not RECORD.match(line)] == [], "one record per line"
    loud = [line for line in lines if (m := LEVEL.match(line)) and m.group(1) in ("WARN", "ERROR")]
    assert not loud, "\n".join(loud[:30])
