"""Metacontroller's own examples, unchanged, against `uc up`: each example directory's `test.sh` (from
metacontroller/metacontroller, `tests/e2e/upstream/README.md`) run as its CI runs it, `bash test.sh v1`,
with kubectl pointed at uc. Their controllers are CompositeControllers and DecoratorControllers whose
hooks are Deployments of `python:3.11` (run with the machine's Python) and `metacontroller/nodejs-server`
(the machine's Node.js, with the image's `server.js` and `WORKDIR /node` given in the node config, as its
Dockerfile gives them). The two Jsonnet examples (`service-per-pod*`) need `metacontroller/jsonnetd`, a
program uc does not have, and are not run (docs/metacontroller.md)."""

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import Cluster

UPSTREAM = Path(__file__).resolve().parent / "upstream" / "metacontroller" / "examples"
PYTHON_HOOKS = ["clusteredparent", "configmap-list-v2", "configmappropagation", "crd-roles", "daemonjob",
                "globalconfigmap", "indexedjob", "namespace-list-v2", "secretpropagation", "update-strategy",
                "webhook-auth"]
NODE_HOOKS = ["bluegreen", "catset"]


def node_config():
    """The `metacontroller/nodejs-server` image as its Dockerfile builds it: `COPY server.js /node/`,
    `WORKDIR /node`, `ENTRYPOINT ["node", "/node/server.js"]`."""
    return {"allowlist": [{
        "images": ["metacontroller/nodejs-server"],
        "program": shutil.which("node") or "/usr/bin/node",
        "prefixArgs": ["/node/server.js"],
        "workingDir": "/node",
        "files": {"/node/server.js": str(UPSTREAM / "nodejs" / "server.js")},
    }]}


@pytest.fixture(scope="module")
def metacontroller_cluster():
    if os.geteuid() != 0 or not shutil.which("bwrap"):
        pytest.skip("the examples' hooks all listen on port 80: they need pods in network namespaces (root, bwrap)")
    with tempfile.TemporaryDirectory(prefix="uc-e2e-") as d:
        Path(d, "node.json").write_text(json.dumps(node_config()))
        c = Cluster(d, ["--operators", "none"]).start()
        try:
            # Where Metacontroller's examples put their hook servers.
            c.kubectl("create", "namespace", "metacontroller")
            yield c
        finally:
            assert c.tidy() == 0, "uc up did not stop cleanly on Ctrl-C"


def run_example(cluster, name):
    r = subprocess.run(["bash", "test.sh", "v1"], cwd=UPSTREAM / name, env=cluster.env(), capture_output=True,
                       text=True, timeout=300)
    # `set -o` prints bash's options first: the tail is what the example says.
    tail = "\n".join((r.stdout + r.stderr).splitlines()[-40:])
    assert r.returncode == 0, f"{name}/test.sh failed ({r.returncode}); it ends:\n{tail}"
    return r.stdout


@pytest.mark.parametrize("name", PYTHON_HOOKS)
def test_an_example_with_python_hooks_passes_its_own_test(metacontroller_cluster, name):
    run_example(metacontroller_cluster, name)


@pytest.mark.parametrize("name", NODE_HOOKS)
def test_an_example_with_nodejs_server_hooks_passes_its_own_test(metacontroller_cluster, name):
    if not shutil.which("node"):
        pytest.skip("no Node.js on this machine for metacontroller/nodejs-server")
    run_example(metacontroller_cluster, name)
