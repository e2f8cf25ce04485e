"""The docs as a newcomer runs them: the README's first commands and the walk-throughs of the examples
that need nothing but uc, each `sh` block run as written by bash in a fresh copy of the repository's
files, with the built `uc` on PATH (the README's `cargo run --release -p uc --` is the same binary, built
in release). What the harness adds is what a reader does anyway: it waits for `uc up`'s `export
KUBECONFIG=...` line before the next command, and stops what the walk-through left running."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, free_port, uc_binary

# The walk-throughs run here; etcd, ZooKeeper, Metacontroller, the multi-cluster and native-hook examples
# are the same commands their own end-to-end tests drive (test_etcd, test_zookeeper, ...).
WALKTHROUGHS = ["README.md", "examples/sample-controller/README.md", "examples/catset/README.md",
                "examples/tfjob/README.md"]
# Lines a reader runs that the suite itself is, or has already done.
SKIP = [re.compile(r"^bash \.ci/run\b"), re.compile(r"^sudo apt-get install\b"),
        re.compile(r"^cargo install --path crates/uc$")]  # the same binary, already built and on PATH


def sh_blocks(markdown: str):
    return re.findall(r"^```sh\n(.*?)^```", markdown, re.S | re.M)


def script_of(doc: str) -> str:
    """The doc's sh blocks as one bash script, `uc up ... &` waiting for the export line."""
    lines = []
    blocks = sh_blocks(Path(doc).read_text())
    if Path(doc).name == "README.md" and Path(doc).parent == ROOT:
        blocks = blocks[:3]  # the first commands and installing; the soaks further down are tests of their own
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            command = line.split("  #", 1)[0].strip()
            if not command or command.startswith("#") or any(p.search(command) for p in SKIP):
                continue
            command = command.replace("cargo run --release -p uc -- ", "uc ")
            up = re.match(r"^uc up (.*?)&?$", command)  # a foreground `uc up` is "in another terminal"
            if up:
                # A reader waits for `export KUBECONFIG=...` before going on.
                command = (f'uc up {up.group(1)} > "$DOCS_TMP/up.out" 2> "$DOCS_TMP/up.err" & UP_PID=$!; '
                           'for _ in $(seq 600); do grep -q "^export KUBECONFIG=" "$DOCS_TMP/up.out" && break; '
                           'kill -0 $UP_PID || { cat "$DOCS_TMP/up.err"; exit 1; }; sleep 0.1; done; '
                           'grep -q "^export KUBECONFIG=" "$DOCS_TMP/up.out"')
            elif command.endswith("&"):
                command = command[:-1].strip() + ' > "$DOCS_TMP/bg.log" 2>&1 & sleep 1'
            lines.append(command)
    return "\n".join(lines)


def test_every_walkthrough_block_is_bash():
    """The harness parses what it runs; a doc whose blocks it cannot split is a failure, not a skip."""
    for doc in WALKTHROUGHS:
        text = script_of(str(ROOT / doc))
        assert "kubectl" in text, doc
        r = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True)
        assert r.returncode == 0, f"{doc}: {r.stderr}"


@pytest.mark.parametrize("doc", WALKTHROUGHS)
def test_walkthrough_runs_as_written(doc, tmp_path):
    # A fresh copy of the repository's files (the walk-through writes .uc/ where it runs).
    repo = tmp_path / "repo"
    repo.mkdir()
    for item in ["README.md", "examples"]:
        src = ROOT / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, repo / item)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "uc").symlink_to(os.path.abspath(uc_binary()))
    # Where each walk-through says to run it: its own directory, or the repository's root.
    workdir = repo if "From the repository's root" in (ROOT / doc).read_text() else (repo / doc).parent
    script = "set -euxo pipefail\ntrap 'jobs -p | xargs -r kill -TERM; wait' EXIT\n" + script_of(str(ROOT / doc))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "UC_PORT": "0", "HOOK_PORT": str(free_port()),
           "DOCS_TMP": str(tmp_path)}
    env.pop("KUBECONFIG", None)
    r = subprocess.run(["bash", "-c", script], cwd=workdir, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{doc} failed:\n{r.stderr[-4000:]}\n--- uc up:\n" + \
        ((tmp_path / "up.err").read_text()[-2000:] if (tmp_path / "up.err").exists() else "")
