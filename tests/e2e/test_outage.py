"""`uc run` through a 30 s API server outage under 1,000 parents: it keeps running, says so on /readyz,
and afterwards converges — parents changed, added and deleted meanwhile — with no child created twice
and none deleted that it should have kept (the API server's audit log is the witness)."""

import json
import signal
import subprocess
import time
import urllib.error
import urllib.request

from conftest import engine_get, foos, free_port, install_sample_controller, uc_binary, wait_for
PARENTS = 1000
OUTAGE = 30


def readyz(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return None, str(e)


def deployments(api):
    items = json.loads(api.kubectl("get", "deploy", "-o", "json", timeout=120).stdout)["items"]
    return {d["metadata"]["name"]: d for d in items}


def test_a_30_second_outage_under_1000_parents_converges_without_duplicates_or_wrong_deletes(make_cluster, tmp_path):
    audit = tmp_path / "audit.log"
    api = make_cluster(["--no-engine", "--no-node", "--audit-log-path", str(audit)])
    port = free_port()
    log = open(tmp_path / "uc-run.log", "wb")
    engine = subprocess.Popen([uc_binary(), "run", "--kubeconfig", api.kubeconfig, "--metrics-addr", f"127.0.0.1:{port}",
                               "--no-metacontroller"], stdout=log, stderr=log)
    try:
        install_sample_controller(api)
        names = [f"foo-{i:04d}" for i in range(PARENTS)]
        api.kubectl("apply", "-f", "-", input=foos(names, 1), timeout=300)
        wait_for(lambda: len(deployments(api)) == PARENTS, timeout=180, interval=1, message=f"{PARENTS} Deployments")
        before = {n: d["metadata"]["uid"] for n, d in deployments(api).items()}
        assert readyz(port)[0] == 200

        api.stop()
        t0 = time.time()
        wait_for(lambda: readyz(port)[0] == 503, timeout=15, interval=0.2, message="/readyz saying the API server is gone")
        assert "not reachable" in readyz(port)[1]
        time.sleep(max(0.0, OUTAGE - (time.time() - t0)))
        assert engine.poll() is None, "uc run kept running through the outage"
        api.start()

        # Meanwhile-on-return changes: 100 parents scaled, 100 deleted, 100 added.
        changed, deleted = names[:100], names[100:200]
        added = [f"bar-{i:03d}" for i in range(100)]
        api.kubectl("apply", "-f", "-", input=foos(changed, 3), timeout=120)
        api.kubectl("delete", "foo", *deleted, "--wait=false", timeout=120)
        api.kubectl("apply", "-f", "-", input=foos(added, 2), timeout=120)

        def converged():
            d = deployments(api)
            return (set(d) == set(names[:100] + names[200:] + added)
                    and all(d[n]["spec"]["replicas"] == 3 for n in changed)
                    and all(d[n]["spec"]["replicas"] == 2 for n in added))

        wait_for(converged, timeout=240, interval=2, message="convergence after the outage")
        wait_for(lambda: readyz(port)[0] == 200, timeout=30, message="/readyz ready again")
        after = deployments(api)
        for n in names[:100] + names[200:]:
            assert after[n]["metadata"]["uid"] == before[n], f"{n} was replaced"
        metrics = engine_get(f"http://127.0.0.1:{port}/metrics", api.server_and_token()[1])
        restarts = sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                       if line.startswith("uc_watches_started_total"))
        assert restarts > 3, "the watches were started again after the outage"
    finally:
        engine.send_signal(signal.SIGTERM)
        assert engine.wait(timeout=30) == 0
        log.close()

    events = [json.loads(line) for line in open(audit) if line.strip()]
    engine_writes = [e for e in events if e.get("userAgent", "").startswith("uc-engine/")
                     and e.get("objectRef", {}).get("resource") == "deployments"]
    deletes = [e["requestURI"] for e in engine_writes if e["verb"] in ("delete", "deletecollection")]
    assert deletes == [], f"the engine deleted children: {deletes[:5]}"
    creates = {}
    for e in engine_writes:
        if e["responseStatus"]["code"] == 201:
            name = e["objectRef"].get("name")
            creates[name] = creates.get(name, 0) + 1
    assert creates and all(c == 1 for c in creates.values()), {n: c for n, c in creates.items() if c > 1}
    assert len(creates) == PARENTS + len(added), len(creates)
