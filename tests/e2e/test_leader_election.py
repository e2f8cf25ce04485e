"""`uc run --leader-elect`: replicas share a coordination.k8s.io/v1 Lease; one reconciles, the others
stand by and take over when it dies (kill -9) or stalls (SIGSTOP past its renew deadline, then SIGCONT:
its writes must be fenced). The API server's audit log is the witness: every write an engine replica
sent must fall inside that replica's own lease term. A `uc run` without --leader-elect next to a
running engine is refused."""

import json
import os
import signal
import subprocess
import threading
import time

from conftest import engine_get, foos, free_port, install_sample_controller, uc_binary, wait_for

LEASE = 2.0
RENEW = 1.2
RETRY = 0.3
TIMING = ["--lease-duration", f"{LEASE}s", "--renew-deadline", f"{RENEW}s", "--retry-period", f"{RETRY}s"]


class Replica:
    def __init__(self, cluster, identity, log_dir, extra=()):
        self.identity = identity
        self.token = cluster.server_and_token()[1]
        self.port = free_port()
        self.log = open(os.path.join(log_dir, f"{identity}.log"), "wb")
        self.proc = subprocess.Popen(
            [uc_binary(), "run", "--kubeconfig", cluster.kubeconfig, "--no-metacontroller", "--metrics-addr",
             f"127.0.0.1:{self.port}", "--leader-election-identity", identity, *TIMING, *extra],
            stdout=self.log, stderr=self.log)

    def metrics(self):
        try:
            text = engine_get(f"http://127.0.0.1:{self.port}/metrics", self.token, timeout=2)
        except OSError:
            return None
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                series, value = line.rsplit(" ", 1)
                values[series] = float(value)
        return values

    def leading(self):
        m = self.metrics()
        return m is not None and m.get("uc_leader") == 1.0

    def writes(self):
        m = self.metrics() or {}
        return sum(v for k, v in m.items() if k.startswith("uc_client_requests_total")
                   and any(f'method="{w}"' in k for w in ("POST", "PUT", "PATCH", "DELETE")))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.log.close()


def identity_of(user_agent):
    # `uc-engine/<version> (<identity>)`
    if not user_agent.startswith("uc-engine/") or "(" not in user_agent:
        return None
    return user_agent[user_agent.index("(") + 1:user_agent.rindex(")")]


def terms_violations(audit_path):
    """Engine writes sent outside the sender's lease term: the last lease write the API server took
    before a write must be the writer's own."""
    events = [json.loads(line) for line in open(audit_path) if line.strip()]
    events.sort(key=lambda e: e["requestReceivedTimestamp"])
    holder = None
    violations, lease_writes, writes = [], 0, 0
    for e in events:
        who = identity_of(e.get("userAgent", ""))
        if who is None:
            continue
        ref = e.get("objectRef", {})
        if ref.get("resource") == "leases" and ref.get("namespace") == "kube-system":
            if e["responseStatus"]["code"] < 300:
                holder, lease_writes = who, lease_writes + 1
            continue
        if ref.get("resource") == "customresourcedefinitions":
            continue  # every replica installs uc's CRDs at start, around the fence
        writes += 1
        if who != holder:
            violations.append((e["requestReceivedTimestamp"], who, holder, e["verb"], e["requestURI"]))
    return violations, lease_writes, writes


def test_one_replica_reconciles_and_a_standby_takes_over_kills_and_stalls(make_cluster, tmp_path):
    audit = tmp_path / "audit.log"
    api = make_cluster(["--no-engine", "--no-node", "--in-memory", "--audit-log-path", str(audit)])
    counter = iter(range(1000))
    replicas = [Replica(api, f"r{next(counter)}", tmp_path, ["--leader-elect"]) for _ in range(2)]
    stop = threading.Event()
    try:
        install_sample_controller(api)
        api.kubectl("apply", "-f", "-", input=foos([f"foo-{i}" for i in range(5)]))
        wait_for(lambda: len(json.loads(api.kubectl("get", "deploy", "-o", "json").stdout)["items"]) == 5,
                 timeout=30, message="5 Deployments")

        # Parents keep changing, so that the leader keeps writing.
        client = api.api_client()
        from kubernetes import client as k8s

        custom = k8s.CustomObjectsApi(client)

        def churn():
            n = 0
            while not stop.is_set():
                n += 1
                try:
                    custom.patch_namespaced_custom_object("njuics.cn", "v1alpha1", "default", "foos", f"foo-{n % 5}",
                                                          {"spec": {"replicas": n % 7 + 1}})
                except Exception:
                    pass
                time.sleep(0.05)

        churner = threading.Thread(target=churn, daemon=True)
        churner.start()

        takeovers = []
        for round_ in range(20):
            leader = wait_for(lambda: [r for r in replicas if r.leading()], timeout=15,
                              message=f"a leader (round {round_})")
            assert len(leader) == 1, f"two leaders: {[r.identity for r in leader]}"
            leader = leader[0]
            standby = [r for r in replicas if r is not leader]
            # The leader writes; a standby that never led has written nothing.
            before = leader.writes()
            wait_for(lambda: leader.writes() > before, timeout=10, message="the leader writing")
            for s in standby:
                if s.metrics() and s.metrics().get("uc_leader_acquisitions_total", 0) == 0:
                    assert s.writes() == 0, f"standby {s.identity} wrote"
            stall = round_ % 4 == 3
            t0 = time.time()
            if stall:
                leader.proc.send_signal(signal.SIGSTOP)
            else:
                leader.proc.kill()
                leader.proc.wait()
            wait_for(lambda: [r for r in standby if r.leading()], timeout=LEASE * 5, interval=0.05,
                           message=f"a standby taking over (round {round_})")
            takeovers.append(time.time() - t0)
            if stall:
                # Woken long after its renew deadline, the old leader finds its lease gone: it stops.
                time.sleep(0.5)
                leader.proc.send_signal(signal.SIGCONT)
                wait_for(lambda: leader.metrics() is not None and not leader.leading(), timeout=10,
                         message="the stalled leader standing down")
            else:
                replicas.remove(leader)
                leader.log.close()
                replicas.append(Replica(api, f"r{next(counter)}", tmp_path, ["--leader-elect"]))
        stop.set()
        churner.join()
        # Takeover: the lease duration after the last renewal (the standby watches the lease and tries
        # again the moment it would expire), measured from the kill; the margin is for polling the
        # replicas' metrics on a busy machine.
        assert max(takeovers) <= LEASE + 1.0, takeovers

        violations, lease_writes, writes = terms_violations(audit)
        assert lease_writes > 20 and writes > 100, (lease_writes, writes)
        assert violations == [], violations[:10]

        # A clean stop releases the lease: the standby takes over well before the lease would expire.
        leader = wait_for(lambda: [r for r in replicas if r.leading()], timeout=15, message="a leader")[0]
        for r in replicas:
            if r is not leader and r.proc.poll() is None:
                wait_for(lambda r=r: r.metrics() is not None, timeout=10, message="standby metrics")
        t0 = time.time()
        leader.proc.terminate()
        assert leader.proc.wait(timeout=20) == 0
        wait_for(lambda: any(r.leading() for r in replicas if r is not leader), timeout=LEASE * 3, interval=0.05,
                 message="a standby after a clean stop")
        released = time.time() - t0
        lease = json.loads(api.kubectl("get", "lease", "-n", "kube-system", "uc-engine", "-o", "json").stdout)
        assert lease["spec"]["holderIdentity"] != leader.identity
        assert lease["spec"]["leaseTransitions"] >= 20
        print(f"takeover after kill/stall: max {max(takeovers):.2f} s; after a clean stop {released:.2f} s")
    finally:
        stop.set()
        for r in replicas:
            r.stop()


def test_uc_run_without_leader_election_is_refused_next_to_a_running_engine(make_cluster):
    api = make_cluster(["--no-node", "--in-memory", "--no-olm", "--operators", "none"])
    r = subprocess.run([uc_binary(), "run", "--kubeconfig", api.kubeconfig, "--metrics-addr", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "holds the lease kube-system/uc-engine" in r.stderr and "--leader-elect" in r.stderr, r.stderr
    assert "uc-up@" in r.stderr, "names the engine that holds it"
