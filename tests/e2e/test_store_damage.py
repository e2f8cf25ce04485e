"""A damaged store is refused by name, never started with silently lost objects: a byte flipped in the
middle of the log, the newest segment deleted or emptied after a clean stop. `uc store check` names the
damage; `uc store repair` keeps the intact prefix, which `uc up` then starts with."""

import glob
import json
import os
import shutil
import subprocess

import pytest

from conftest import Cluster, uc_binary

FAST = ["--no-engine", "--no-node", "--no-olm", "--no-console"]


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A data directory holding 400 ConfigMaps, stopped cleanly."""
    data = str(tmp_path_factory.mktemp("stored"))
    c = Cluster(data, FAST).start()
    items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}"}, "data": {"i": str(i)}}
             for i in range(400)]
    c.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), timeout=120)
    assert c.stop() == 0
    return data


def damaged(stored, tmp_path, damage):
    data = str(tmp_path / "data")
    shutil.copytree(stored, data)
    segments = sorted(glob.glob(os.path.join(data, "store", "wal-*.log")), key=os.path.getsize)
    damage(segments[-1])  # the segment holding the ConfigMaps
    return data


def refused(data):
    r = subprocess.run([uc_binary(), "up", "--data-dir", data, "--port", "0", *FAST], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0 and "export KUBECONFIG" not in r.stdout, r.stdout + r.stderr
    return r.stderr


def store(*args):
    return subprocess.run([uc_binary(), "store", *args], capture_output=True, text=True, timeout=60)


def configmaps(data):
    c = Cluster(data, FAST).start()
    try:
        names = json.loads(c.kubectl("get", "configmaps", "-o", "json").stdout)["items"]
        return {n["metadata"]["name"] for n in names if n["metadata"]["name"].startswith("cm-")}
    finally:
        c.stop()


def flip_middle(path):
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        # The records end before the zeros written ahead: flip a byte a third of the way into them.
        data = f.read()
        end = len(data.rstrip(b"\0"))
        f.seek(end // 3)
        f.write(bytes([data[end // 3] ^ 0xFF]))
    assert os.path.getsize(path) == size


@pytest.mark.parametrize("damage,words", [
    (flip_middle, "a damaged record, with an intact one at byte"),
    (os.remove, ".log is missing"),
    (lambda p: open(p, "r+b").truncate(0), "stopped cleanly at revision"),
])
def test_damage_is_refused_by_name_and_repair_keeps_the_intact_prefix(stored, tmp_path, damage, words):
    data = damaged(stored, tmp_path, damage)
    why = refused(data)
    assert "the store is damaged" in why and words in why and "uc store repair" in why, why
    check = store("check", data)
    assert check.returncode == 1 and words in check.stderr, check.stderr
    repaired = store("repair", data)
    assert repaired.returncode == 0 and "kept revisions through" in repaired.stdout, repaired.stdout + repaired.stderr
    assert store("check", data).returncode == 0
    kept = configmaps(data)
    if damage is flip_middle:
        assert 0 < len(kept) < 400, len(kept)
        # The intact prefix: every ConfigMap written before the damaged record, none after it.
        assert kept == {f"cm-{i}" for i in range(len(kept))}, sorted(kept)[:5]
    else:
        assert kept == set(), "the records were gone; what is left starts"


def test_an_intact_store_checks_clean_and_starts_with_everything(stored, tmp_path):
    data = str(tmp_path / "data")
    shutil.copytree(stored, data)
    check = store("check", data)
    assert check.returncode == 0 and check.stdout.startswith("intact: revisions through"), check.stdout + check.stderr
    assert len(configmaps(data)) == 400


def test_a_snapshot_of_a_running_cluster_restores_as_a_new_data_directory(stored, tmp_path):
    running = str(tmp_path / "running")
    shutil.copytree(stored, running)
    c = Cluster(running, FAST).start()
    try:
        c.kubectl("create", "configmap", "made-while-running")
        saved = store_cmd_snapshot("save", str(tmp_path / "snap.db"), "--data-dir", running)
        assert saved.returncode == 0 and "saved" in saved.stdout, saved.stdout + saved.stderr
    finally:
        c.stop()
    restored = str(tmp_path / "restored")
    r = store_cmd_snapshot("restore", str(tmp_path / "snap.db"), restored)
    assert r.returncode == 0 and "restored" in r.stdout, r.stdout + r.stderr
    assert len(configmaps(restored)) == 400
    # A damaged snapshot is refused by name.
    again = str(tmp_path / "again")
    assert store_cmd_snapshot("restore", str(tmp_path / "snap.db"), again).returncode == 0
    snapshot = os.path.join(again, "store", "snapshot")
    with open(snapshot, "r+b") as f:
        f.seek(os.path.getsize(snapshot) // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert "the snapshot is damaged" in refused(again)


def store_cmd_snapshot(*args):
    return subprocess.run([uc_binary(), "snapshot", *args], capture_output=True, text=True, timeout=60)
