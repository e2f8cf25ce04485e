"""Fixtures that run the real `uc` binary and point real clients (kubectl, the Python client) at it."""

import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import urllib3

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = Path(__file__).resolve().parent / "manifests"

urllib3.disable_warnings()


def http_get(url: str, token=None, timeout: float = 10):
    """A plain GET, with a bearer token when given: (status, body), errors included."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def engine_get(url: str, token: str, timeout: float = 5) -> str:
    """A GET of the engine's guarded endpoint (`/metrics`, `/debug/*`) with a bearer token."""
    import urllib.request

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=timeout) as r:
        return r.read().decode()


def uc_binary() -> str:
    path = os.environ.get("UC_BIN") or str(ROOT / "target" / "debug" / "uc")
    if not Path(path).exists():
        raise RuntimeError(f"{path} does not exist: run `cargo build` first (or set UC_BIN)")
    return path


_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
_subnets_handed_out = 0


# 100..=109 are the multi-cluster walk-through's own (`--pod-subnet 10$i`, examples/multicluster-zookeeper).
_SUBNETS = [n for n in range(1, 251) if not 100 <= n <= 109]


def pod_subnet() -> int:
    """A pod subnet (the second octet of 127.N.0.0/16) no other cluster of this test run has at the same
    time: test workers running side by side (pytest-xdist) take turns through the list, each its own."""
    global _subnets_handed_out
    n = _subnets_handed_out * _WORKERS + _WORKER
    _subnets_handed_out += 1
    return _SUBNETS[n % len(_SUBNETS)]


def pod_network(cluster):
    """The cluster's pod address prefix and DNS server: `10.N.` and the bridge's address when pods have
    network namespaces of their own (root, the sandbox, the CNI plugins), else `127.N.` on loopback."""
    subnet = open(os.path.join(cluster.data_dir, "pod-subnet")).read().strip()
    if os.path.exists(f"/sys/class/net/uc-br-10-{subnet}"):
        return f"10.{subnet}.", f"10.{subnet}.0.1"
    return f"127.{subnet}.", f"127.{subnet}.239.255"


class Cluster:
    """One `uc up` process with its data directory."""

    def __init__(self, data_dir: str, extra_args=(), port: int = 0):
        self.data_dir = data_dir
        self.extra_args = list(extra_args)
        self.port = port
        self.proc = None
        self.kubeconfig = None
        self.log = None
        self.killed = False

    def start(self, timeout: float = 30.0):
        self.killed = False
        self.log = open(os.path.join(self.data_dir, "uc.log"), "ab")
        subnet = []
        if "--pod-subnet" not in self.extra_args and not os.path.exists(os.path.join(self.data_dir, "pod-subnet")):
            subnet = ["--pod-subnet", str(pod_subnet())]
        self.proc = subprocess.Popen(
            [uc_binary(), "up", "--data-dir", self.data_dir, "--port", str(self.port), *subnet, *self.extra_args],
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        deadline = time.time() + timeout
        line = self.proc.stdout.readline()
        if not line.startswith("export KUBECONFIG="):
            self.log.flush()
            # The log's last lines, without a backtrace's frames (an error's words come before them).
            lines = [l for l in open(self.log.name, errors="replace").read().splitlines()
                     if not re.match(r"^\s+(\d+:|at )", l)]
            tail = "\n".join(lines[-40:])
            raise RuntimeError(f"uc up printed {line!r} instead of the export line; its log ends:\n{tail}")
        self.kubeconfig = line.strip().split("=", 1)[1]
        # A restart runs the same command (`--port 0` included): `uc up` keeps the data directory's port.
        while time.time() < deadline:
            if self.kubectl("get", "--raw", "/readyz", check=False).returncode == 0:
                return self
            time.sleep(0.1)
        raise RuntimeError("uc up did not become ready")

    def stop(self, sig=signal.SIGINT, timeout: float = 45.0) -> int:
        if self.proc is None:
            return 0
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=timeout)
        finally:
            self.proc = None
            self.log.close()
        return code

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self.proc = None
        self.killed = True
        self.log.close()

    def tidy(self):
        """Stops the cluster; one killed and not started again is started and stopped cleanly, so that
        what outlives `kill -9` by design (pods, their network namespaces, the bridge) is gone."""
        if self.proc is None and self.killed:
            self.start()
        if self.proc is not None:
            return self.stop()
        return 0

    def metrics(self) -> str:
        import urllib.request

        addr = open(os.path.join(self.data_dir, "metrics-address")).read().strip()
        return engine_get(f"http://{addr}/metrics", self.server_and_token()[1])

    def metric(self, name: str, **labels) -> float:
        """The value of one sample of the engine's metrics (0 when absent)."""
        want = {k: str(v) for k, v in labels.items()}
        for line in self.metrics().splitlines():
            if line.startswith("#") or " " not in line:
                continue
            series, value = line.rsplit(" ", 1)
            sname, _, rest = series.partition("{")
            # Label values may hold commas (an informer's projection names several fields).
            got = {k: v.replace('\\"', '"') for k, v in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', rest)}
            if sname == name and got == want:
                return float(value)
        return 0.0

    def env(self):
        # kubectl's discovery cache is keyed by host:port; clusters of earlier tests that had this port
        # must not answer for this one, so each cluster has its own.
        return {**os.environ, "KUBECONFIG": self.kubeconfig, "KUBECACHEDIR": os.path.join(self.data_dir, "kubectl-cache")}

    def kubectl(self, *args, input=None, check=True, timeout=60):
        r = subprocess.run(["kubectl", *args], input=input, capture_output=True, text=True, env=self.env(), timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        return r

    def kubectl_bg(self, *args):
        return subprocess.Popen(["kubectl", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env())

    def api_client(self):
        from kubernetes import client, config

        cfg = client.Configuration()
        config.load_kube_config(config_file=self.kubeconfig, client_configuration=cfg)
        return client.ApiClient(cfg)

    def server_and_token(self):
        import yaml

        with open(self.kubeconfig) as f:
            kc = yaml.safe_load(f)
        return kc["clusters"][0]["cluster"]["server"], kc["users"][0]["user"]["token"]


# The test modules that run uc's etcd and ZooKeeper operators (or test how uc up installs them); elsewhere clusters start with
# `--operators none`, skipping their install (OLM's API and catalog are served all the same).
USES_UCS_OPERATORS = {"test_etcd", "test_zookeeper", "test_crash_safety", "test_multicluster", "test_olm", "test_streaming"}


def operators_args(request, extra_args=()):
    if request.module.__name__ in USES_UCS_OPERATORS or "--operators" in extra_args:
        return []
    return ["--operators", "none"]


@pytest.fixture
def cluster(request):
    with tempfile.TemporaryDirectory(prefix="uc-e2e-") as d:
        c = Cluster(d, operators_args(request)).start()
        try:
            yield c
        finally:
            assert c.tidy() == 0, "uc up did not stop cleanly on Ctrl-C"


@pytest.fixture
def make_cluster(request):
    """Clusters with custom arguments; stopped at the end of the test."""
    made = []
    dirs = []

    def make(extra_args=(), data_dir=None):
        if data_dir is None:
            t = tempfile.TemporaryDirectory(prefix="uc-e2e-")
            dirs.append(t)
            data_dir = t.name
        c = Cluster(data_dir, [*extra_args, *operators_args(request, extra_args)]).start()
        made.append(c)
        return c

    yield make
    for c in made:
        c.tidy()
    for t in dirs:
        t.cleanup()


def wait_for(predicate, timeout=20.0, interval=0.1, message="condition"):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {message} (last value {last!r})")


def ask_zookeeper(ip, word):
    """A ZooKeeper server's answer to a four-letter word ("" when it does not answer)."""
    try:
        with socket.create_connection((ip, 2181), timeout=2) as s:
            s.sendall(word.encode())
            out = b""
            while chunk := s.recv(65536):
                out += chunk
            return out.decode()
    except OSError:
        return ""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SAMPLE_CONTROLLER = ROOT / "examples" / "sample-controller"


def install_sample_controller(cluster, wait_for_uc_crds=True):
    """The sample-controller example (its CRD, the hook's ConfigMap, the UniversalController) on a cluster
    whose uc CRDs an engine installs (`uc run` against `uc up --no-engine`)."""
    if wait_for_uc_crds:
        wait_for(lambda: cluster.kubectl("get", "crd", "universalcontrollers.universalcontroller.njuics.cn",
                                         check=False).returncode == 0, timeout=30, message="uc's CRDs")
    cluster.kubectl("apply", "-f", str(SAMPLE_CONTROLLER / "crd.yaml"))
    cluster.kubectl("create", "configmap", "sample-controller-hook", f"--from-file={SAMPLE_CONTROLLER / 'sync.js'}")
    cluster.kubectl("apply", "-f", str(SAMPLE_CONTROLLER / "controller.yaml"))


def foos(names, replicas=1):
    """Foo objects (the sample-controller's parents) as one YAML stream."""
    return "".join(f"---\napiVersion: njuics.cn/v1alpha1\nkind: Foo\nmetadata: {{name: {n}}}\n"
                   f"spec: {{deploymentName: {n}, replicas: {replicas}}}\n" for n in names)


# CI must not pass by not running tests: `.ci/run` installs every package the tests need and sets
# UC_FAIL_ON_SKIP=1, so a test that skips there (a package missing, an install that failed) fails the
# session, with the skipped tests and their reasons listed. On a machine without them, run pytest
# without the variable to skip them instead.
_skipped = []


def _note_skip(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _skipped.append((report.nodeid, reason))


def pytest_runtest_logreport(report):
    _note_skip(report)


def pytest_collectreport(report):  # a module that skips as a whole (allow_module_level)
    _note_skip(report)


def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput") or not _skipped:
        return
    if os.environ.get("UC_FAIL_ON_SKIP") == "1":
        lines = [f"  {nodeid}: {reason}" for nodeid, reason in _skipped]
        print(f"\n{len(_skipped)} test(s) skipped where UC_FAIL_ON_SKIP=1 requires every test to run:\n"
              + "\n".join(lines))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
