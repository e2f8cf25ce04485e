"""Operating uc: built-in controllers marked and kept, one turned off by a flag; JSON logs; `uc version`
and `uc doctor` as a newcomer runs them."""

import json
import os
import subprocess

from conftest import uc_binary, wait_for


def uc_object(cluster, name):
    r = cluster.kubectl("get", "uc", name, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def test_built_in_controllers_are_marked_kept_and_can_be_turned_off(make_cluster):
    c = make_cluster(["--no-node", "--in-memory", "--disable-controllers", "job", "--log-format", "json"])
    deployment = wait_for(lambda: uc_object(c, "builtin-deployment"), message="the built-in Deployment controller")
    assert deployment["metadata"]["labels"]["uc.njuics.cn/builtin"] == "true"
    assert "--disable-controllers deployment" in deployment["metadata"]["annotations"]["uc.njuics.cn/description"]
    assert uc_object(c, "builtin-job") is None, "turned off"
    # Deleted by accident: made again, a new object.
    c.kubectl("delete", "uc", "builtin-deployment")
    again = wait_for(lambda: (o := uc_object(c, "builtin-deployment")) and o["metadata"]["uid"] != deployment["metadata"]["uid"] and o,
                     timeout=20, message="the Deployment controller made again")
    assert again["metadata"]["labels"]["uc.njuics.cn/builtin"] == "true"
    # And it works: a Deployment gets its ReplicaSet.
    c.kubectl("create", "deployment", "web", "--image=nginx")
    wait_for(lambda: c.kubectl("get", "rs", "-l", "app=web", "-o", "name").stdout.strip(), timeout=30,
             message="the ReplicaSet of a Deployment")
    log = os.path.join(c.data_dir, "uc.log")
    assert c.stop() == 0
    lines = [line for line in open(log).read().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    assert all({"timestamp", "level", "target"} <= r.keys() for r in records)
    made_again = [r for r in records if "built-in controller was deleted" in r.get("message", "")]
    assert made_again and made_again[0]["controller"] == "builtin-deployment"
    assert not [r for r in records if r["level"] in ("WARN", "ERROR") and r is not made_again[0]
                and "making it again" not in r.get("message", "")], "a clean run and stop warns of nothing else"


def test_uc_version_and_doctor_as_a_newcomer_runs_them(tmp_path):
    v = subprocess.run([uc_binary(), "version", "--client"], capture_output=True, text=True, check=True).stdout
    assert v.startswith("uc 0.") and "commit " in v
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "none")}
    v = subprocess.run([uc_binary(), "version"], capture_output=True, text=True, env=env, check=True).stdout
    assert "server:" in v
    d = subprocess.run([uc_binary(), "doctor", "--data-dir", str(tmp_path / "data")], capture_output=True, text=True)
    assert d.returncode == 0, d.stdout
    # This machine runs the test suite: it has what the suite needs.
    for piece in ["kubectl", "etcd", "zookeeper", "java", "python3"]:
        assert any(line.startswith("ok") and f" {piece} " in line for line in d.stdout.splitlines()), d.stdout
    # A PATH without kubectl: said, with what it disables and how to get it.
    bare = {**os.environ, "PATH": "/nonexistent"}
    d = subprocess.run([os.path.abspath(uc_binary()), "doctor", "--data-dir", str(tmp_path / "data")],
                       capture_output=True, text=True, env=bare)
    line = next(line for line in d.stdout.splitlines() if " kubectl " in line)
    assert line.startswith("missing") and "install kubectl" in line, line
