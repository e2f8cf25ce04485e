"""The docs as a newcomer runs them: the README's first commands, the walk-throughs of the guides in
docs/ and of the examples, and the README `uc init` writes for each hook language, each `sh` block run
as written by bash in a fresh copy of the repository's files, with the built `uc` on PATH (the README's
`cargo run --release -p uc --` is the same binary). What the harness adds is what a reader does anyway:
it waits for `uc up`'s `export KUBECONFIG=...` line before the next command, and stops what the
walk-through left running. Every doc with `sh` blocks is a walk-through here or a fragment named below
with where what it shows is tested."""

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, free_port, pod_subnet, uc_binary

# Every example's walk-through; those needing a program the machine lacks are skipped, saying which.
WALKTHROUGHS = ["README.md", "examples/sample-controller/README.md", "examples/catset/README.md",
                "examples/tfjob/README.md", "examples/native-hook/README.md", "examples/metacontroller/README.md",
                "examples/etcd/README.md", "examples/zookeeper/README.md", "examples/multicluster-zookeeper/README.md",
                "docs/apiserver.md", "docs/controllers.md", "docs/operator-lifecycle.md", "docs/metacontroller.md"]
NEEDS = {"examples/metacontroller/README.md": ["python3"], "examples/etcd/README.md": ["etcd", "etcdctl"],
         "examples/zookeeper/README.md": ["java", "busybox"], "examples/multicluster-zookeeper/README.md": ["java", "busybox"],
         "docs/operator-lifecycle.md": ["etcd", "jq"], "docs/metacontroller.md": ["python3"]}
# Docs whose sh blocks show commands for a setting no walk-through here makes, and where that is tested.
FRAGMENTS = {
    "docs/sdk-operators.md": "the Operator SDK's samples: tests/e2e/test_helm_operator.py, test_ansible_operator.py",
    "docs/multicluster.md": "its walk-through is examples/multicluster-zookeeper/README.md's",
    "docs/etcd-operator.md": "an etcd cluster and S3 credentials: tests/e2e/test_etcd.py",
    "docs/production.md": "a Kubernetes cluster to deploy uc in: tests/e2e/test_deploy.py",
    "docs/embedded-cluster.md": "a pod's exit code on a running cluster: tests/e2e/test_node.py",
    "docs/console.md": "a browser: tests/e2e/test_console.py",
}
# Lines a reader runs that the suite itself is, or has already done: building and installing the binaries
# (already built, on PATH) and installing Debian packages.
SKIP = [re.compile(r"^bash \.ci/run\b"), re.compile(r"^sudo apt-get install\b"),
        re.compile(r"^cargo install --path crates/uc\b"), re.compile(r"^cargo build --release -p uc\b")]
# `cargo run` of a workspace binary is the binary the suite built.
BINARIES = ["uc", "native-hook-example"]


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
            command = re.sub(r"^cargo run (?:--release )?-p ([\w-]+)(?: --)?", r"\1", command)
            up = re.match(r"^uc up (.*?)&?$", command)  # a foreground `uc up` is "in another terminal"
            if up and ">" in up.group(1):
                # Its output goes where the doc says; the doc waits for it to be ready by itself.
                pass
            elif up:
                # A reader waits for `export KUBECONFIG=...` before going on.
                command = (f'uc up {up.group(1)} > "$DOCS_TMP/up.out" 2> "$DOCS_TMP/up.err" & UP_PID=$!; '
                           '{ set +x; } 2>/dev/null; '
                           'for _ in $(seq 600); do grep -q "^export KUBECONFIG=" "$DOCS_TMP/up.out" && break; '
                           'kill -0 $UP_PID || { cat "$DOCS_TMP/up.err"; exit 1; }; sleep 0.1; done; set -x; '
                           'grep -q "^export KUBECONFIG=" "$DOCS_TMP/up.out"')
            elif command.endswith("&"):
                command = command[:-1].strip() + ' > "$DOCS_TMP/bg.log" 2>&1 & sleep 1'
            lines.append(command)
    return "\n".join(lines)


def test_every_doc_with_commands_is_a_walkthrough_or_a_named_fragment():
    docs = ["README.md", *(str(p.relative_to(ROOT)) for p in sorted((ROOT / "docs").glob("*.md"))),
            *(str(p.relative_to(ROOT)) for p in sorted((ROOT / "examples").glob("*/README.md")))]
    with_commands = {d for d in docs if sh_blocks((ROOT / d).read_text())}
    assert with_commands == set(WALKTHROUGHS) | set(FRAGMENTS), with_commands ^ (set(WALKTHROUGHS) | set(FRAGMENTS))
    assert not set(WALKTHROUGHS) & set(FRAGMENTS)


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
    missing = [p for p in NEEDS.get(doc, []) if shutil.which(p) is None]
    if missing:
        pytest.skip(f"{doc} needs {', '.join(missing)}")
    # Where each walk-through says to run it: its own directory, or the repository's root (the guides').
    at_root = doc.startswith("docs/") or "From the repository's root" in (ROOT / doc).read_text()
    run_walkthrough(doc, script_of(str(ROOT / doc)), repo if at_root else (repo / doc).parent, tmp_path)


@pytest.mark.parametrize("lang", ["js", "python", "exec"])
def test_the_readme_uc_init_writes_runs_as_written_with_its_edit_loop(lang, tmp_path):
    """The scaffold's README: run on `uc up`, then its edit of the hook shows in the cluster within
    seconds (a JavaScript hook reloaded from its ConfigMap, an exec hook's file followed by the engine)."""
    if lang == "exec" and shutil.which("jq") is None:
        pytest.skip("the exec scaffold's hook needs jq")
    subprocess.run([uc_binary(), "init", "demo", "--hook", lang], cwd=tmp_path, check=True, capture_output=True)
    readme = tmp_path / "demo" / "README.md"
    script = script_of(str(readme))
    assert "sed -i" in script and "{.data.edited}'=yes" in script, script
    run_walkthrough(f"uc init --hook {lang}", script, tmp_path / "demo", tmp_path)


def run_walkthrough(doc: str, commands: str, workdir: Path, tmp_path: Path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in BINARIES:
        (bin_dir / name).symlink_to(os.path.join(os.path.dirname(os.path.abspath(uc_binary())), name))
    script = "set -euxo pipefail\nPS4='+ [${SECONDS}s] '\ntrap 'jobs -p | xargs -r kill -TERM; wait' EXIT\n" + commands
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "UC_PORT": "0", "HOOK_PORT": str(free_port()),
           "UC_POD_SUBNET": str(pod_subnet()), "TMPDIR": str(tmp_path),
           "DOCS_TMP": str(tmp_path)}
    env.pop("KUBECONFIG", None)
    def up_err() -> str:
        return (tmp_path / "up.err").read_text()[-2000:] if (tmp_path / "up.err").exists() else ""

    # Its own process group: on a timeout the whole walk-through goes (`uc up`, its servers), not only
    # bash, so nothing it started holds its pod subnet or ports into the next test.
    proc = subprocess.Popen(["bash", "-c", script], cwd=workdir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, stderr = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            _, stderr = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            _, stderr = proc.communicate()
        # The trace says which command hung: each one is printed with the second it started at.
        pytest.fail(f"{doc} did not finish in 600 s; the last commands:\n{stderr[-4000:]}\n--- uc up:\n{up_err()}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever the walk-through left running
        except ProcessLookupError:
            pass
    (tmp_path / "trace").write_text(stderr)  # each command with the second it started at
    assert proc.returncode == 0, f"{doc} failed:\n{stderr[-4000:]}\n--- uc up:\n" + up_err()
