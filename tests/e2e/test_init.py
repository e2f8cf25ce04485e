"""`uc init` scaffolds an operator that runs as its README says, and `uc hook test` checks its hook
against the recorded request offline — failing, with a diff, when the expected answer differs."""

import json
import shutil
import subprocess

import pytest

from conftest import uc_binary, wait_for


def test_an_initialized_operator_runs_and_its_hook_test_passes_then_fails_on_a_difference(cluster, tmp_path):
    r = subprocess.run([uc_binary(), "init", "demo", "--hook", "js"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    demo = tmp_path / "demo"
    test = subprocess.run([uc_binary(), "hook", "test", "."], cwd=demo, capture_output=True, text=True)
    assert test.returncode == 0 and "ok   example" in test.stdout, test.stdout + test.stderr
    expected = demo / "tests" / "example" / "expected.json"
    answer = json.loads(expected.read_text())
    answer["status"]["greeting"] = "bonjour"
    expected.write_text(json.dumps(answer))
    test = subprocess.run([uc_binary(), "hook", "test", "."], cwd=demo, capture_output=True, text=True)
    assert test.returncode == 1 and "FAIL example" in test.stdout, test.stdout
    assert '-     "greeting": "bonjour"' in test.stdout and '+     "greeting": "hello"' in test.stdout, test.stdout
    # The README's commands, on the embedded cluster.
    cluster.kubectl("apply", "-f", str(demo / "crd.yaml"))
    cluster.kubectl("create", "configmap", "demo-hook", f"--from-file={demo / 'sync.js'}")
    cluster.kubectl("apply", "-f", str(demo / "controller.yaml"), "-f", str(demo / "example.yaml"))
    cm = wait_for(lambda: (r := cluster.kubectl("get", "configmap", "example-greeting", "-o", "json", check=False)).returncode == 0
                  and json.loads(r.stdout), timeout=30, message="the ConfigMap the hook asks for")
    assert cm["data"] == {"greeting": "hello", "replicas": "2"}
    wait_for(lambda: json.loads(cluster.kubectl("get", "demos", "example", "-o", "json").stdout).get("status", {}).get("configMapReady"),
             timeout=30, message="the status the hook computes")
    # A bad name is refused, nothing written.
    r = subprocess.run([uc_binary(), "init", "Bad_Name"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode != 0 and "not a valid name" in r.stderr and not (tmp_path / "Bad_Name").exists()


def test_recorded_hook_calls_are_shown_and_become_test_cases(cluster, tmp_path):
    subprocess.run([uc_binary(), "init", "demo", "--hook", "js"], cwd=tmp_path, check=True, capture_output=True)
    demo = tmp_path / "demo"
    cluster.kubectl("apply", "-f", str(demo / "crd.yaml"))
    cluster.kubectl("create", "configmap", "demo-hook", f"--from-file={demo / 'sync.js'}")
    cluster.kubectl("apply", "-f", str(demo / "controller.yaml"), "-f", str(demo / "example.yaml"))
    wait_for(lambda: cluster.kubectl("get", "configmap", "example-greeting", check=False).returncode == 0,
             timeout=30, message="the controller running")
    show = [uc_binary(), "hook", "show", "demo", "--data-dir", cluster.data_dir]
    r = subprocess.run(show, capture_output=True, text=True)
    assert r.returncode != 0 and "record-hooks" in r.stderr, "not recording until annotated: " + r.stdout + r.stderr
    cluster.kubectl("annotate", "universalcontroller", "demo", "universalcontroller.njuics.cn/record-hooks=3")
    for greeting in ["hi", "hey", "howdy", "hello there"]:
        cluster.kubectl("patch", "demos", "example", "--type=merge", "-p", json.dumps({"spec": {"greeting": greeting}}))
        wait_for(lambda: json.loads(cluster.kubectl("get", "configmap", "example-greeting", "-o", "json").stdout)
                 ["data"]["greeting"] == greeting, timeout=30, message=f"the greeting {greeting!r}")
    out = wait_for(lambda: (r := subprocess.run(show, capture_output=True, text=True)).returncode == 0
                   and "hello there" in r.stdout + subprocess.run(show + ["--full"], capture_output=True, text=True).stdout
                   and r.stdout, message="the last call recorded")
    lines = out.strip().splitlines()
    assert len(lines) == 3, f"the last 3 calls only: {out}"
    assert all(" sync default/example " in l and "1 children (ConfigMap), status" in l for l in lines), out
    fixtures = tmp_path / "recorded"
    (fixtures / "tests").mkdir(parents=True)
    for f in ["controller.yaml", "sync.js"]:
        (fixtures / f).write_text((demo / f).read_text())
    r = subprocess.run([uc_binary(), "hook", "record", "demo", str(fixtures), "--data-dir", cluster.data_dir],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "3 case(s)" in r.stdout, r.stdout + r.stderr
    test = subprocess.run([uc_binary(), "hook", "test", str(fixtures)], capture_output=True, text=True)
    assert test.returncode == 0 and "3 case(s), 0 failed" in test.stdout, test.stdout + test.stderr


@pytest.mark.parametrize("lang,source", [("python", "sync.py"), ("exec", "sync.sh"), ("rust", "src/main.rs")])
def test_every_hook_language_scaffolds_a_hook_that_passes_its_test(tmp_path, lang, source):
    tool = {"python": "python3", "exec": "jq", "rust": "cargo"}[lang]
    if shutil.which(tool) is None:
        pytest.skip(f"needs {tool}")
    r = subprocess.run([uc_binary(), "init", "demo", "--hook", lang], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    demo = tmp_path / "demo"
    assert (demo / source).is_file()
    if lang == "rust":
        # serde_json is in cargo's cache already (uc uses it): no network needed.
        build = subprocess.run(["cargo", "build", "--release", "--offline", "-q"], cwd=demo, capture_output=True, text=True)
        assert build.returncode == 0, build.stderr
    test = subprocess.run([uc_binary(), "hook", "test", "."], cwd=demo, capture_output=True, text=True)
    assert test.returncode == 0 and "ok   example" in test.stdout, test.stdout + test.stderr
    expected = demo / "tests" / "example" / "expected.json"
    answer = json.loads(expected.read_text())
    answer["children"][0]["data"]["replicas"] = "3"
    expected.write_text(json.dumps(answer))
    test = subprocess.run([uc_binary(), "hook", "test", "."], cwd=demo, capture_output=True, text=True)
    assert test.returncode == 1 and '-         "replicas": "3"' in test.stdout, test.stdout
