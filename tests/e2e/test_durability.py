"""Every acknowledged write survives kill -9 of `uc up`; revisions continue; watchers recover."""

import json
import re
import threading
import time

import pytest
import urllib3
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from conftest import Cluster


def test_acknowledged_writes_survive_kill9(make_cluster):
    c = make_cluster()
    api = client.CoreV1Api(c.api_client())
    start_rv = api.list_namespaced_config_map("default").metadata.resource_version
    acked = {}  # name -> resourceVersion, only for writes the server acknowledged
    lock = threading.Lock()
    stop = threading.Event()

    def writer(w):
        mine = client.CoreV1Api(c.api_client())
        i = 0
        while not stop.is_set():
            name = f"w{w}-{i}"
            try:
                obj = mine.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data={"i": str(i)}))
            except Exception:
                return  # the server is gone
            with lock:
                acked[name] = int(obj.metadata.resource_version)
            i += 1

    watched = []
    watch_ended = []  # how the watch ended: None (the stream closed) or the error it raised

    def watcher():
        try:
            for ev in watch.Watch().stream(api.list_namespaced_config_map, "default", resource_version=start_rv, timeout_seconds=30):
                watched.append((ev["object"].metadata.name, int(ev["object"].metadata.resource_version)))
            watch_ended.append(None)
        except Exception as e:  # noqa: BLE001 - recorded and checked below
            watch_ended.append(e)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    wt = threading.Thread(target=watcher)
    wt.start()
    for t in threads:
        t.start()
    time.sleep(3)
    c.kill9()
    stop.set()
    for t in threads:
        t.join(timeout=30)
    wt.join(timeout=30)
    assert len(acked) > 100, f"only {len(acked)} writes were acknowledged under load"
    # The watch saw the writes as they came, in revision order, and ended with the server: the stream
    # closing, or the connection failing — not an error of its own.
    assert watched, "the watch saw none of the writes before the kill"
    assert [rv for _, rv in watched] == sorted(rv for _, rv in watched), "watch events out of revision order"
    assert len(watch_ended) == 1, "the watch did not end when the server was killed"
    ended = watch_ended[0]
    assert ended is None or isinstance(ended, (urllib3.exceptions.HTTPError, ConnectionError, OSError)), repr(ended)

    c2 = Cluster(c.data_dir).start()
    try:
        api2 = client.CoreV1Api(c2.api_client())
        lst = api2.list_namespaced_config_map("default")
        present = {i.metadata.name: int(i.metadata.resource_version) for i in lst.items}
        missing = [n for n in acked if n not in present]
        assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {missing[:5]}"
        for name, rv in acked.items():
            assert present[name] == rv, f"{name} came back with a different resourceVersion"
        # The revision sequence continues after the restart.
        top = max(acked.values())
        assert int(lst.metadata.resource_version) >= top
        new = api2.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="after-restart")))
        assert int(new.metadata.resource_version) > int(lst.metadata.resource_version)
        # A watcher reconnecting from where it stopped gets the rest or a 410, never a silent gap.
        last = watched[-1][1] if watched else int(start_rv)
        seen = {n for n, _ in watched}
        try:
            for ev in watch.Watch().stream(api2.list_namespaced_config_map, "default", resource_version=str(last), timeout_seconds=30):
                seen.add(ev["object"].metadata.name)
                if set(acked) <= seen:
                    break
            assert set(acked) <= seen, f"the resumed watcher missed {len(set(acked) - seen)} acknowledged writes"
        except ApiException as e:
            # A 410 is the explicit signal to relist; it must be true: the log now starts after `last`.
            assert e.status == 410, e
            m = re.search(r"too old resource version: (\d+) \((\d+)\)", str(e))
            assert m and int(m.group(1)) == last and int(m.group(2)) > last, str(e)
    finally:
        assert c2.stop() == 0


def test_restart_keeps_every_object_and_crd(make_cluster, tmp_path):
    from conftest import MANIFESTS

    c = make_cluster(data_dir=str(tmp_path))
    c.kubectl("apply", "-f", str(MANIFESTS / "foo-crd.yaml"))
    c.kubectl("apply", "-f", str(MANIFESTS / "foo.yaml"))
    before = c.kubectl("get", "foo", "example-foo", "-o", "jsonpath={.metadata.uid}/{.metadata.resourceVersion}").stdout
    fields = lambda cl: json.loads(cl.kubectl("get", "foo", "example-foo", "-o", "json", "--show-managed-fields").stdout)[
        "metadata"]["managedFields"]
    managed = fields(c)
    assert isinstance(managed[0]["fieldsV1"], dict) and "f:spec" in managed[0]["fieldsV1"], managed
    assert c.stop() == 0
    c2 = Cluster(str(tmp_path)).start()
    try:
        after = c2.kubectl("get", "foo", "example-foo", "-o", "jsonpath={.metadata.uid}/{.metadata.resourceVersion}").stdout
        assert after == before
        assert fields(c2) == managed, "the managed fields read back from the log as they were written"
    finally:
        assert c2.stop() == 0


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_signals_stop_cleanly(make_cluster, sig):
    import signal

    c = make_cluster()
    assert c.stop(getattr(signal, sig)) == 0
