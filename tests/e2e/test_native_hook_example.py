"""examples/native-hook: a controller written as a native Rust hook runs on uc's engine against the
embedded cluster (started without uc's own engine, so this is the only controller process)."""

import json
import os
import subprocess

from conftest import ROOT, wait_for

EXAMPLE = ROOT / "examples" / "native-hook"


def example_binary():
    path = os.environ.get("UC_BIN")
    folder = os.path.dirname(path) if path else str(ROOT / "target" / "debug")
    return os.path.join(folder, "native-hook-example")


def test_the_native_hook_example_reconciles_greetings(make_cluster):
    cluster = make_cluster(extra_args=["--no-engine"])
    proc = subprocess.Popen([example_binary()], env=cluster.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: "greetings" in cluster.kubectl("api-resources", check=False).stdout, message="the Greeting CRD")
        cluster.kubectl("apply", "-f", str(EXAMPLE / "greeting.yaml"))
        cm = wait_for(lambda: (r := cluster.kubectl("get", "cm", "hello-greeting", "-o", "json", check=False)).returncode == 0
                      and json.loads(r.stdout), message="the greeting's ConfigMap")
        assert cm["data"]["greeting"] == "hello hello"
        assert cm["metadata"]["ownerReferences"][0]["name"] == "hello"
        # The status is written after the children: once it counts the ConfigMap the hook saw it claimed.
        status = wait_for(lambda: (s := json.loads(cluster.kubectl("get", "greeting", "hello", "-o", "json").stdout).get("status", {}))
                          .get("configMaps") == 1 and s, message="the status")
        assert status == {"greetings": 2, "configMaps": 1, "observedGeneration": 1}, status
        cluster.kubectl("patch", "greeting", "hello", "--type=merge", "-p", '{"spec":{"message":"bye","times":1}}')
        wait_for(lambda: json.loads(cluster.kubectl("get", "cm", "hello-greeting", "-o", "json").stdout)["data"]["greeting"] == "bye",
                 message="the ConfigMap updated in place")
        assert proc.poll() is None, proc.stderr.read() if proc.poll() is not None else ""
    finally:
        proc.terminate()
        proc.wait(timeout=10)
