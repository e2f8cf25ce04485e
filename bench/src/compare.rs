//! uc side by side with the controllers users would write instead (issue 6), in one run:
//!
//! 1. The thesis's Table 5-2 on the embedded cluster: 100 simulated `sleep` pods with a steady trickle of
//!    pod changes, then each scenario's controller processes; total RSS of those processes and the bytes
//!    the API server sent them (its per-client counters on `/metrics`) over a fixed window.
//! 2. Convergence of N Foo parents into Deployments + status: uc with the JavaScript hook, uc with a
//!    loopback webhook, a hand-written kube-rs controller (kube-runtime `Controller`) and the same
//!    controller written with kopf; every controller runs as its own process against the same kind of
//!    cluster (`uc up` with no engine, no node agent, no workload controllers).
//!
//! Writes its section of docs/benchmarks.md.

use crate::report::verdict;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use uc_bench::cluster;
mod convergence;
use uc_bench::report;
mod webhook;

use uc_bench::cluster::Uc;

use anyhow::{Context, Result, bail};
use clap::Parser;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::{Value, json};

#[derive(Parser)]
#[command(about = "uc next to hand-written kube-rs and kopf controllers: Table 5-2 and convergence")]
struct Args {
    /// The uc binary (`cargo build --profile dist -p uc`).
    #[arg(long, default_value = "target/dist/uc")]
    uc: PathBuf,
    /// What `uc run` runs from in Table 5-2: uc without its embedded cluster, as the image builds it
    /// (bench/all.sh: `bash deploy/build-controller.sh`, copied here).
    #[arg(long, default_value = "target/dist/uc-controller")]
    controller_uc: PathBuf,
    /// The hand-written kube-rs controllers (`cargo build --profile dist -p uc-bench`).
    #[arg(long, default_value = "target/dist/bench-controller")]
    controller: PathBuf,
    /// Python with kopf installed (`pip install kopf`).
    #[arg(long, default_value = "python3")]
    python: String,
    /// Seconds each Table 5-2 scenario is measured for.
    #[arg(long, default_value_t = 15)]
    window: u64,
    /// Parent counts to converge.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    parents: Vec<usize>,
    /// Skip the Table 5-2 part.
    #[arg(long)]
    no_table: bool,
    /// Skip the convergence part.
    #[arg(long)]
    no_convergence: bool,
    /// Run only the Table 5-2 scenarios whose name contains one of these (e.g. `uc + 4` while
    /// profiling a controller process); the verdicts, which need every scenario, are then left out.
    #[arg(long, value_delimiter = ',')]
    scenarios: Vec<String>,
    /// The controllers the convergence part runs (e.g. only `uc-js` while profiling it).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "uc-js,uc-webhook,kube-rs,kopf")]
    impls: Vec<convergence::Impl>,
    /// Parent counts of the scaling part (uc, JavaScript hook, live).
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    scale: Vec<usize>,
    /// Parents of the cores part (everything pinned to 1, 2, 4 … cores with taskset).
    #[arg(long, default_value_t = 10_000)]
    cores_parents: usize,
    /// Skip the scaling and cores part.
    #[arg(long)]
    no_scaling: bool,
    /// Give up on one convergence run after this many seconds.
    #[arg(long, default_value_t = 900)]
    timeout: u64,
    /// Where to write the report section.
    #[arg(long, default_value = "docs/benchmarks.md")]
    report: PathBuf,
}

/// A child process stopped when dropped as the kubelet stops a container: SIGTERM, then SIGKILL after
/// a grace period (a profiler wrapping `uc run`, e.g. bench/controller-order.sh's, writes its data then).
struct Proc(Child);

/// How long a stopped process has to exit before it is killed.
const GRACE: Duration = Duration::from_secs(15);

impl Drop for Proc {
    fn drop(&mut self) {
        let terminated = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        let deadline = Instant::now() + GRACE;
        while terminated && Instant::now() < deadline {
            if !matches!(self.0.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proc {
    /// Starts `cmd` with its output discarded.
    fn quiet(cmd: &mut Command) -> Result<Proc> {
        let name = cmd.get_program().to_string_lossy().into_owned();
        Ok(Proc(cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().with_context(|| format!("starting {name}"))?))
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// A `/proc/<pid>/status` figure in bytes: `VmRSS` (resident) or `RssAnon` (its private part:
    /// heap and stacks, without the mapped code of the binary and libraries).
    fn status_bytes(&self, field: &str) -> u64 {
        cluster::status_bytes(self.pid(), field)
    }

    /// The CPU time the process has used, in seconds.
    fn cpu_seconds(&self) -> f64 {
        cluster::cpu_seconds(self.pid())
    }
}

fn start_uc(bin: &Path, extra: &[&str], cpus: Option<&str>) -> Result<Uc> {
    let mut flags = vec!["--no-engine", "--in-memory"];
    flags.extend_from_slice(extra);
    cluster::start_pinned(bin, &flags, cpus)
}

/// `uc run`'s arguments against `kubeconfig`. One lease identity for every run: the next engine takes
/// the last one's lease back at once.
fn uc_run_args(kubeconfig: &str) -> [&str; 7] {
    ["run", "--kubeconfig", kubeconfig, "--metrics-addr", "127.0.0.1:0", "--leader-election-identity", "bench"]
}

/// `program`, or `taskset -c <cpus> program` (the same process: taskset execs it).
fn pinned(program: &std::ffi::OsStr, cpus: Option<&str>) -> Command {
    match cpus {
        Some(cpus) => {
            let mut c = Command::new("taskset");
            c.args([std::ffi::OsStr::new("-c"), std::ffi::OsStr::new(cpus), program]);
            c
        }
        None => Command::new(program),
    }
}

async fn client(kubeconfig: &str) -> Result<Client> {
    let kc = Kubeconfig::read_from(kubeconfig)?;
    let mut config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
    config.headers.push((http::header::USER_AGENT, http::HeaderValue::from_static("bench-harness")));
    Ok(Client::try_from(config)?)
}

fn ar(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn dynamic(v: Value) -> Result<DynamicObject> {
    Ok(serde_json::from_value(v)?)
}

fn yaml_file(path: &str) -> Result<Value> {
    let text = std::fs::read_to_string(path).with_context(|| path.to_string())?;
    Ok(serde_yaml_ng::from_str(&text)?)
}

/// Creates an object of any kind (the API resource named by apiVersion/kind/plural).
async fn create(c: &Client, r: &ApiResource, ns: Option<&str>, obj: Value) -> Result<()> {
    let api: Api<DynamicObject> = match ns {
        Some(ns) => Api::namespaced_with(c.clone(), ns, r),
        None => Api::all_with(c.clone(), r),
    };
    match api.create(&PostParams::default(), &dynamic(obj)?).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

fn crd_resource() -> ApiResource {
    ar("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions")
}

fn uc_resource() -> ApiResource {
    ar("universalcontroller.njuics.cn", "v1alpha1", "UniversalController", "universalcontrollers")
}

/// A CRD of a parent type with nothing in it (the donothing-operator's).
fn empty_crd(plural: &str, kind: &str) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": format!("{plural}.bench.njuics.cn")},
           "spec": {"group": "bench.njuics.cn", "scope": "Namespaced",
                    "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List")},
                    "versions": [{"name": "v1", "served": true, "storage": true,
                                  "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
}

/// The donothing-operator as a UniversalController: watches Pods and PVCs, wants nothing.
fn donothing_uc(name: &str, plural: &str) -> Value {
    json!({"apiVersion": "universalcontroller.njuics.cn/v1alpha1", "kind": "UniversalController",
           "metadata": {"name": name},
           "spec": {"generateSelector": true,
                    "parentResource": {"apiVersion": "bench.njuics.cn/v1", "resource": plural},
                    "childResources": [{"apiVersion": "v1", "resource": "pods"}, {"apiVersion": "v1", "resource": "persistentvolumeclaims"}],
                    "hooks": {"sync": {"javascript": {"source": "function sync(r) { return {children: []}; }"}}}}})
}

/// Per-client bytes sent, from the API server's `/metrics`.
async fn client_bytes(c: &Client) -> Result<BTreeMap<String, u64>> {
    let text = c.request_text(http::Request::get("/metrics").body(Vec::new())?).await?;
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_client_response_bytes_total{client=\"") else { continue };
        let Some((name, value)) = rest.split_once("\"} ") else { continue };
        out.insert(name.to_string(), value.trim().parse().unwrap_or(0));
    }
    Ok(out)
}

/// Table 5-2's cluster: CRDs, hooks, 100 `sleep` pods.
async fn prepare_table_cluster(c: &Client) -> Result<()> {
    let crds = crd_resource();
    for path in ["examples/tfjob/crd.yaml", "examples/catset/crd.yaml"] {
        create(c, &crds, None, yaml_file(path)?).await?;
    }
    create(c, &crds, None, empty_crd("donothings", "DoNothing")).await?;
    create(c, &crds, None, empty_crd("donothingbs", "DoNothingB")).await?;
    for crd in [uc_api::crds::universal_controller_crd(), uc_api::crds::controller_revision_crd()] {
        create(c, &crds, None, uc_api::meta::json_of(&crd)).await?;
    }
    let cms = ar("", "v1", "ConfigMap", "configmaps");
    for (name, path) in [
        ("tensorflowjob-controller-hook", "examples/tfjob/sync.js"),
        ("catset-controller-hook", "examples/catset/sync.js"),
    ] {
        let source = std::fs::read_to_string(path)?;
        create(
            c,
            &cms,
            Some("default"),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name}, "data": {"sync.js": source}}),
        )
        .await?;
    }
    let pods = ar("", "v1", "Pod", "pods");
    for i in 0..100 {
        create(
            c,
            &pods,
            Some("default"),
            json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("sleep-{i}"), "labels": {"app": "sleep"}},
            "spec": {"containers": [{"name": "sleep", "image": "alpine", "command": ["sleep", "3600"]}]}}),
        )
        .await?;
    }
    let api: Api<DynamicObject> = Api::namespaced_with(c.clone(), "default", &pods);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let running = api
            .list(&ListParams::default().labels("app=sleep"))
            .await?
            .items
            .iter()
            .filter(|p| p.data.pointer("/status/phase").and_then(Value::as_str) == Some("Running"))
            .count();
        if running == 100 {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("only {running} of 100 sleep pods Running");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What runs in one scenario.
enum Member {
    /// `uc run` with these UniversalControllers (name, object).
    Uc(Vec<Value>),
    /// A hand-written kube-rs controller (`bench-controller <kind>`), named for the metrics.
    KubeRs(&'static str, &'static str),
}

struct Measured {
    rss: u64,
    anon: u64,
    /// Bytes sent while the controllers started.
    startup: u64,
    /// Bytes sent in the measured window after that.
    bytes: u64,
}

/// Seconds the controllers get to start before the measured window.
const STARTUP_SECS: u64 = 5;

/// Scenarios run so far: each one's pod changes are told apart from the previous ones'.
static SCENARIOS_RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

async fn run_scenario(
    args: &Args,
    controller_uc: &Path,
    uc: &Uc,
    c: &Client,
    members: Vec<Member>,
) -> Result<Measured> {
    let mut procs = Vec::new();
    let mut clients = Vec::new();
    let mut ucs = Vec::new();
    let before = client_bytes(c).await?;
    for m in members {
        match m {
            Member::Uc(objects) => {
                for o in &objects {
                    create(c, &uc_resource(), None, o.clone()).await?;
                    ucs.push(o["metadata"]["name"].as_str().unwrap_or_default().to_string());
                }
                procs.push(Proc::quiet(Command::new(controller_uc).args(uc_run_args(&uc.kubeconfig)))?);
                clients.push(format!("uc-engine/{} (bench)", env!("CARGO_PKG_VERSION")));
            }
            Member::KubeRs(kind, name) => {
                procs.push(Proc::quiet(Command::new(&args.controller).args([
                    kind,
                    "--kubeconfig",
                    &uc.kubeconfig,
                    "--name",
                    name,
                ]))?);
                clients.push(name.to_string());
            }
        }
    }
    // A steady trickle of pod changes, 5 per second, the same for every scenario: first while the
    // controllers start (their initial lists and setup), then for the measured window.
    let pods: Api<DynamicObject> = Api::namespaced_with(c.clone(), "default", &ar("", "v1", "Pod", "pods"));
    let sent = |from: &BTreeMap<String, u64>, to: &BTreeMap<String, u64>| -> u64 {
        clients.iter().map(|n| to.get(n).copied().unwrap_or(0) - from.get(n).copied().unwrap_or(0)).sum()
    };
    // Every patch writes a value no earlier patch wrote (the scenarios share the pods): a repeated
    // value would be a no-op that changes nothing and sends no watch event.
    let run = SCENARIOS_RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut tick = 0u64;
    let mut started = None;
    let start_end = Instant::now() + Duration::from_secs(STARTUP_SECS);
    let end = start_end + Duration::from_secs(args.window);
    while Instant::now() < end {
        if started.is_none() && Instant::now() >= start_end {
            started = Some(client_bytes(c).await?);
        }
        let patch = json!({"metadata": {"annotations": {"bench/tick": format!("{run}-{tick}")}}});
        pods.patch(&format!("sleep-{}", tick % 100), &PatchParams::default(), &Patch::Merge(&patch)).await?;
        tick += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let rss = procs.iter().map(|p| p.status_bytes("VmRSS")).sum();
    let anon = procs.iter().map(|p| p.status_bytes("RssAnon")).sum();
    let after = client_bytes(c).await?;
    let started = started.unwrap_or_else(|| before.clone());
    let (startup, bytes) = (sent(&before, &started), sent(&started, &after));
    drop(procs);
    let api: Api<DynamicObject> = Api::all_with(c.clone(), &uc_resource());
    for name in ucs {
        let _ = api.delete(&name, &Default::default()).await;
    }
    Ok(Measured { rss, anon, startup, bytes })
}

fn uc_controller(path: &str) -> Result<Value> {
    yaml_file(path)
}

/// Table 5-2's scenarios: the controllers each runs, as uc's or as separate kube-rs processes.
fn scenarios() -> Result<Vec<(&'static str, Vec<Member>)>> {
    let tf = || uc_controller("examples/tfjob/controller.yaml");
    let cat = || uc_controller("examples/catset/controller.yaml");
    let dn = || donothing_uc("donothing-controller", "donothings");
    let dn_b = || donothing_uc("donothing-b-controller", "donothingbs");
    Ok(vec![
        ("1. nothing", vec![]),
        ("2. uc alone", vec![Member::Uc(vec![])]),
        ("3. standalone tf-operator", vec![Member::KubeRs("tfjob", "kube-rs-tfjob")]),
        ("4. uc + tfjob", vec![Member::Uc(vec![tf()?])]),
        (
            "5. donothing + tf-operator (standalone)",
            vec![Member::KubeRs("donothing", "kube-rs-donothing"), Member::KubeRs("tfjob", "kube-rs-tfjob")],
        ),
        ("6. uc + tfjob + catset", vec![Member::Uc(vec![tf()?, cat()?])]),
        (
            "7. two donothing + tf-operator (standalone)",
            vec![
                Member::KubeRs("donothing", "kube-rs-donothing"),
                Member::KubeRs("donothing", "kube-rs-donothing-2"),
                Member::KubeRs("tfjob", "kube-rs-tfjob"),
            ],
        ),
        ("8. uc + tfjob + catset + donothing", vec![Member::Uc(vec![tf()?, cat()?, dn()])]),
        ("uc + 4 controllers watching Pods", vec![Member::Uc(vec![tf()?, cat()?, dn(), dn_b()])]),
        (
            "4 separate kube-rs controllers watching Pods",
            vec![
                Member::KubeRs("tfjob", "kube-rs-tfjob"),
                Member::KubeRs("catset", "kube-rs-catset"),
                Member::KubeRs("donothing", "kube-rs-donothing"),
                Member::KubeRs("donothing", "kube-rs-donothing-2"),
            ],
        ),
    ])
}

/// Table 5-2 with its targets, verdicts and the account of where the memory goes.
fn report(args: &Args, rows: &str, results: &BTreeMap<&str, Measured>, code_mb: f64) -> String {
    let uc4 = &results["uc + 4 controllers watching Pods"];
    let kube4 = &results["4 separate kube-rs controllers watching Pods"];
    let uc1 = &results["4. uc + tfjob"];
    let alone = &results["2. uc alone"];
    let rss_ratio = uc4.rss as f64 / kube4.rss as f64;
    let bytes_ratio = uc4.bytes as f64 / uc1.bytes as f64;
    let total_ratio = (uc4.bytes + uc4.startup) as f64 / (uc1.bytes + uc1.startup) as f64;
    format!(
        "### Table 5-2: memory and API-server traffic\n\n\
         100 simulated `sleep` pods, 5 pod changes per second throughout. Each scenario's controller processes\n\
         start ({startup} s: initial lists, discovery, registration), then run for the measured window of {w} s.\n\
         RSS is the sum over the scenario's controller processes at the end (`VmRSS`; \"private\" is `RssAnon`:\n\
         heap and stacks, without mapped code); bytes are what the API server sent those processes, from its\n\
         per-client counters (`/metrics`). `uc run` runs from its own copy of uc built as the image is\n\
         (`bash deploy/build-controller.sh`): without the embedded cluster (no API server or node agent), in the\n\
         `controller` profile (fat LTO, one codegen unit, `opt-level = \"s\"`), the functions a controller runs\n\
         linked together, jemalloc without thread caches — as a controller deployed on its own would.\n\n\
         | scenario | RSS | of which private | bytes sent at startup | bytes sent in the window |\n\
         | --- | --- | --- | --- | --- |\n{rows}\n\
         | target | measured | verdict |\n| --- | --- | --- |\n\
         | uc running 4 controllers: RSS ≤ 12 MB | {uc4rss:.1} MB | {v1} |\n\
         | ... and ≤ 0.5 × four separate kube-rs controllers | {rss_ratio:.2} × ({kube4rss:.1} MB) | {v2} |\n\
         | bytes sent with 4 controllers watching Pods ≤ 1.05 × with 1 (window) | {bytes_ratio:.3} × | {v3} |\n\
         | ... including startup | {total_ratio:.3} × | {v4} |\n\n\
         Where the memory goes: `uc run` alone is {alone_rss:.1} MB resident, of which {alone_anon:.1} MB private; the rest\n\
         is code and read-only data mapped in from the binary ({code_mb:.1} MB on disk, glibc linked in). Four\n\
         controllers add {added_anon:.1} MB private (caches of the 100 pods, one QuickJS runtime per hook) and {added_file:.1} MB of\n\
         further code. The build was chosen by this table (4 controllers; one run each, 2026-11-25): the `dist`\n\
         profile's settings 27.5 MB; the `controller` profile 22.1–23.0 MB (code 30.8 → 17.2 MB); with the functions\n\
         `uc run` executes linked together (deploy/controller.order, recorded with callgrind by\n\
         bench/controller-order.sh: 3.1 MB of the 12.7 MB of code) 14.6–15.3 MB, because the kernel maps a file in\n\
         64 KB blocks around each page touched (code resident 10.8 → 3.5 MB); jemalloc without thread caches\n\
         12.1 MB (thread caches capped at 4 KB objects: 13.8 MB). Later the same day, with a larger engine and its\n\
         link order out of date, that build was 13.2 MB; glibc linked in (a static PIE: the few dozen libc\n\
         functions uc calls laid out with the rest, instead of libc, libm and the loader mapped, 2.2 MB) made it\n\
         12.0 MB, and the link order remade (4,490 functions, libc's among them) 10.8–10.9 MB (two runs each).\n\
         Without thread caches a reconcile costs more\n\
         CPU: the same build converged 10,000 parents (backlog) in 3.1–4.0 s against 1.9–2.2 s with them, so a\n\
         controller with much to do sets `_RJEM_MALLOC_CONF=tcache:true` (docs/production.md). The startup bytes\n\
         a controller costs are its registration: discovery (shared and cached), its UniversalController object\n\
         and status, the ConfigMap holding its hook, the initial lists of types no other controller watches.\n\n",
        code_mb = code_mb,
        alone_rss = alone.rss as f64 / 1e6,
        alone_anon = alone.anon as f64 / 1e6,
        added_anon = uc4.anon.saturating_sub(alone.anon) as f64 / 1e6,
        added_file = (uc4.rss - uc4.anon).saturating_sub(alone.rss - alone.anon) as f64 / 1e6,
        startup = STARTUP_SECS,
        total_ratio = total_ratio,
        v4 = verdict(total_ratio <= 1.05),
        w = args.window,
        uc4rss = uc4.rss as f64 / 1e6,
        kube4rss = kube4.rss as f64 / 1e6,
        v1 = verdict(uc4.rss <= 12_000_000),
        v2 = verdict(rss_ratio <= 0.5),
        v3 = verdict(bytes_ratio <= 1.05),
    )
}

async fn table(args: &Args) -> Result<String> {
    let uc = start_uc(&args.uc, &["--no-workload-controllers"], None)?;
    let c = client(&uc.kubeconfig).await?;
    prepare_table_cluster(&c).await?;
    // `uc run` from its own copy of the binary, as a controller deployed on its own would be: mapped from
    // the file `uc up` runs from, it would also map code pages the API server brought into the page cache.
    let copy = tempfile::tempdir()?;
    let controller_uc = copy.path().join("uc");
    std::fs::copy(&args.controller_uc, &controller_uc)
        .with_context(|| format!("copying {} (bash bench/all.sh builds it)", args.controller_uc.display()))?;
    let code_mb = std::fs::metadata(&controller_uc)?.len() as f64 / 1e6;
    let scenarios = scenarios()?;
    let mut rows = String::new();
    let mut results = BTreeMap::new();
    let chosen = |name: &str| args.scenarios.is_empty() || args.scenarios.iter().any(|s| name.contains(s.as_str()));
    for (name, members) in scenarios {
        if !chosen(name) {
            continue;
        }
        let m = run_scenario(args, &controller_uc, &uc, &c, members).await?;
        println!(
            "{name}: RSS {:.1} MB (private {:.1} MB), {:.1} KB sent at startup, {:.1} KB in the window",
            m.rss as f64 / 1e6,
            m.anon as f64 / 1e6,
            m.startup as f64 / 1e3,
            m.bytes as f64 / 1e3
        );
        rows.push_str(&format!(
            "| {name} | {:.1} MB | {:.1} MB | {:.1} KB | {:.1} KB |\n",
            m.rss as f64 / 1e6,
            m.anon as f64 / 1e6,
            m.startup as f64 / 1e3,
            m.bytes as f64 / 1e3
        ));
        results.insert(name, m);
    }
    if !args.scenarios.is_empty() {
        return Ok(format!(
            "### Table 5-2 (scenarios {:?} only)\n\n| scenario | RSS | of which private | bytes sent at startup | bytes sent in the window |\n| --- | --- | --- | --- | --- |\n{rows}\n",
            args.scenarios
        ));
    }
    Ok(report(args, &rows, &results, code_mb))
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let mut section = format!(
        "## uc next to hand-written controllers (`cargo build --profile dist -p uc -p uc-bench && cargo run --profile dist -p uc-bench --bin compare-bench`)\n\n\
         Measured {}, one run on this machine ({} cores); every process shares the cores.\n\n",
        report::today(),
        report::cores(),
    );
    if !args.no_table {
        section.push_str(&table(&args).await?);
    }
    if !args.no_convergence {
        section.push_str(&convergence::convergence(&args).await?);
    }
    if !args.no_scaling {
        section.push_str(&convergence::scaling(&args).await?);
    }
    report::write_section(&args.report, "compare-bench", &section)?;
    println!("report written to {}", args.report.display());
    Ok(())
}
