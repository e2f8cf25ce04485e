//! Memory of a long-running `uc up` (issue 12): does it stay bounded under churn?
//!
//! 1. Pod churn, everything on: a Deployment of N simulated pods is created, made available and
//!    deleted, cycle after cycle. Per cycle: the peak RSS while the pods come up (`VmHWM`, reset at the
//!    start of the cycle), and the RSS once they are gone and the history retention window has passed.
//! 2. ConfigMaps against the API server alone (`--no-engine --no-node`): the RSS that N objects of
//!    1.5 KB add (MB per 1,000 objects) right after they are made and 3 s later (held: the store's
//!    trees of its last writes gone, jemalloc's freed pages handed back), and what is left after they
//!    are deleted.
//!
//! Each binary given with `--variant label=path` (e.g. uc built with another allocator) runs the same
//! churn for `--variant-cycles` cycles, so that allocators are compared in one run. Writes its section of
//! docs/benchmarks.md.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;
use uc_bench::cluster::{self, Uc};
use uc_bench::report;

#[derive(Parser)]
#[command(about = "RSS of uc up across cycles of pod and ConfigMap churn")]
struct Args {
    /// The uc binary (`cargo build --profile dist -p uc`).
    #[arg(long, default_value = "target/dist/uc")]
    uc: PathBuf,
    /// Other builds to compare over fewer cycles, as `label=path`.
    #[arg(long)]
    variant: Vec<String>,
    /// Pod churn cycles of the main binary.
    #[arg(long, default_value_t = 20)]
    cycles: usize,
    /// Pod churn cycles of each variant, and of the main binary with uc's default settings.
    #[arg(long, default_value_t = 3)]
    variant_cycles: usize,
    /// Pods per cycle.
    #[arg(long, default_value_t = 1000)]
    pods: i32,
    /// `uc up --history-seconds`: how long history is kept (the RSS after a cycle is read once it passed).
    #[arg(long, default_value_t = 20)]
    history_seconds: u64,
    /// `uc up --event-ttl` in seconds (default: as long as the history): the Events a cycle's pods leave
    /// expire before the RSS after it is read. uc's default keeps them an hour, as kube-apiserver does,
    /// so twenty cycles would otherwise measure 40,000 Events. Builds without the flag run without it.
    #[arg(long)]
    event_ttl_seconds: Option<u64>,
    /// ConfigMaps created per cycle against the API server alone (0 skips that part).
    #[arg(long, default_value_t = 10_000)]
    configmaps: usize,
    /// ConfigMap cycles.
    #[arg(long, default_value_t = 3)]
    configmap_cycles: usize,
    /// Give up on one wait after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// Where to write the report section.
    #[arg(long, default_value = "docs/benchmarks.md")]
    report: PathBuf,
}

const MB: f64 = 1024.0 * 1024.0;

fn mb(bytes: u64) -> f64 {
    bytes as f64 / MB
}

/// One pod churn cycle's figures.
struct Cycle {
    available_after: Duration,
    peak: u64,
    after: u64,
    after_anon: u64,
    history_events: u64,
}

/// A series of pod churn cycles against one binary.
struct Churn {
    label: String,
    idle: u64,
    idle_anon: u64,
    cycles: Vec<Cycle>,
}

/// The settings of `uc up` a series runs with.
#[derive(Clone, Copy, PartialEq)]
enum Settings {
    /// History kept `--history-seconds`, Events as long (the measure of the targets).
    Short,
    /// uc's own defaults: history 300 s, Events an hour (reported beside the targets).
    Defaults,
}

/// Resets the process's peak RSS (`VmHWM`) to its current RSS.
fn reset_peak(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

async fn wait_for<F, Fut>(what: &str, timeout: Duration, mut done: F) -> Result<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool>>,
{
    let start = Instant::now();
    while !done().await? {
        if start.elapsed() > timeout {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Ok(start.elapsed())
}

async fn metric(client: &Client, name: &str) -> Result<u64> {
    let req = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(req).await?;
    let value = text
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .with_context(|| format!("{name} is not on /metrics"))?;
    Ok(value.trim().parse::<f64>()? as u64)
}

fn deployment(replicas: i32) -> Result<Deployment> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "churn"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "churn"}},
            "template": {
                "metadata": {"labels": {"app": "churn"}},
                "spec": {"containers": [{"name": "main", "image": "alpine", "command": ["sleep", "infinity"]}]},
            },
        },
    }))?)
}

/// The Events' TTL the pod cycles run with.
fn event_ttl(args: &Args) -> u64 {
    args.event_ttl_seconds.unwrap_or(args.history_seconds)
}

/// Whether `uc up` of this build takes `flag` (an older build compared as a variant may not).
fn takes_flag(bin: &Path, flag: &str) -> bool {
    std::process::Command::new(bin)
        .args(["up", "--help"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(flag))
}

async fn pod_churn(args: &Args, label: &str, bin: &Path, cycles: usize, settings: Settings) -> Result<Churn> {
    let history = args.history_seconds.to_string();
    let ttl = format!("{}s", event_ttl(args));
    let mut flags = Vec::new();
    if settings == Settings::Short {
        flags.extend(["--history-seconds", &history]);
        if takes_flag(bin, "--event-ttl") {
            flags.extend(["--event-ttl", &ttl]);
        }
    }
    let uc = cluster::start(bin, &flags)?;
    let client = uc.client().await?;
    let pid = uc.pid();
    let timeout = Duration::from_secs(args.timeout);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    wait_for("the node", timeout, || async { Ok(pods.list(&ListParams::default()).await.is_ok()) }).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let idle = cluster::status_bytes(pid, "VmRSS");
    let idle_anon = cluster::status_bytes(pid, "RssAnon");
    let mut out = Churn { label: label.to_string(), idle, idle_anon, cycles: Vec::new() };
    for n in 1..=cycles {
        reset_peak(pid);
        deployments.create(&PostParams::default(), &deployment(args.pods)?).await?;
        let available_after = wait_for("the pods to be available", timeout, || async {
            let d = deployments.get("churn").await?;
            Ok(d.status.and_then(|s| s.available_replicas) == Some(args.pods))
        })
        .await?;
        let peak = cluster::status_bytes(pid, "VmHWM");
        deployments.delete("churn", &DeleteParams::default()).await?;
        wait_for("the pods to be gone", timeout, || async {
            Ok(pods.list(&ListParams::default().limit(1)).await?.items.is_empty()
                && deployments.get_opt("churn").await?.is_none())
        })
        .await?;
        // History written during the cycle ages out (the compactor looks every second).
        tokio::time::sleep(Duration::from_secs(args.history_seconds + 5)).await;
        let cycle = Cycle {
            available_after,
            peak,
            after: cluster::status_bytes(pid, "VmRSS"),
            after_anon: cluster::status_bytes(pid, "RssAnon"),
            history_events: metric(&client, "apiserver_watch_history_events").await?,
        };
        println!(
            "{label} cycle {n}: available after {:.1} s, peak {:.1} MB, after {:.1} MB ({:.1} MB anonymous), \
             history {} events",
            cycle.available_after.as_secs_f64(),
            mb(cycle.peak),
            mb(cycle.after),
            mb(cycle.after_anon),
            cycle.history_events
        );
        out.cycles.push(cycle);
    }
    Ok(out)
}

/// RSS of the API server alone around creating and deleting ConfigMaps.
struct ConfigMapCycle {
    /// Right after the last create.
    full: u64,
    /// [`SETTLE`] later, still holding them.
    settled: u64,
    after: u64,
}

/// How long after the last create the held RSS is read again.
const SETTLE: Duration = Duration::from_secs(3);

fn configmap(i: usize) -> ConfigMap {
    let mut data = std::collections::BTreeMap::new();
    data.insert("payload".to_string(), format!("{i:08}").repeat(190));
    ConfigMap {
        metadata: kube::api::ObjectMeta { name: Some(format!("cm-{i}")), ..Default::default() },
        data: Some(data),
        ..Default::default()
    }
}

async fn configmap_churn(args: &Args, uc: &Uc) -> Result<(u64, Vec<ConfigMapCycle>)> {
    let client = uc.client().await?;
    let pid = uc.pid();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let timeout = Duration::from_secs(args.timeout);
    wait_for("the API server", timeout, || async { Ok(cms.list(&ListParams::default()).await.is_ok()) }).await?;
    let idle = cluster::status_bytes(pid, "VmRSS");
    let mut cycles = Vec::new();
    for n in 1..=args.configmap_cycles {
        futures::stream::iter(0..args.configmaps)
            .map(|i| {
                let cms = cms.clone();
                async move { cms.create(&PostParams::default(), &configmap(i)).await }
            })
            .buffer_unordered(32)
            .try_collect::<Vec<_>>()
            .await?;
        let full = cluster::status_bytes(pid, "VmRSS");
        // Held, not just made: the store's hot window lets the trees of the last writes go after 2 s, and
        // jemalloc hands back freed pages after 1 s.
        tokio::time::sleep(SETTLE).await;
        let settled = cluster::status_bytes(pid, "VmRSS");
        futures::stream::iter(0..args.configmaps)
            .map(|i| {
                let cms = cms.clone();
                async move { cms.delete(&format!("cm-{i}"), &DeleteParams::default()).await.map(|_| ()) }
            })
            .buffer_unordered(32)
            .try_collect::<Vec<_>>()
            .await?;
        tokio::time::sleep(Duration::from_secs(args.history_seconds + 5)).await;
        let after = cluster::status_bytes(pid, "VmRSS");
        println!(
            "configmaps cycle {n}: {:.1} MB with {} objects ({:.1} MB {} s later), {:.1} MB after",
            mb(full),
            args.configmaps,
            mb(settled),
            SETTLE.as_secs(),
            mb(after)
        );
        cycles.push(ConfigMapCycle { full, settled, after });
    }
    Ok((idle, cycles))
}

fn churn_table(churn: &Churn) -> String {
    let mut s = String::from("| cycle | available after | peak RSS | RSS after | of it anonymous | history events |\n");
    s.push_str("| --- | --- | --- | --- | --- | --- |\n");
    s.push_str(&format!("| idle | | | {:.1} MB | {:.1} MB | |\n", mb(churn.idle), mb(churn.idle_anon)));
    for (i, c) in churn.cycles.iter().enumerate() {
        s.push_str(&format!(
            "| {} | {:.1} s | {:.1} MB | {:.1} MB | {:.1} MB | {} |\n",
            i + 1,
            c.available_after.as_secs_f64(),
            mb(c.peak),
            mb(c.after),
            mb(c.after_anon),
            c.history_events
        ));
    }
    s
}

/// The label of the series with uc's default settings.
const DEFAULTS: &str = "uc with its default settings";

/// The series run with uc's default settings: beside the targets, which are set with history kept 20 s.
fn defaults_section(churn: &Churn, pods: i32) -> String {
    let peak = churn.cycles.iter().map(|c| c.peak).max().unwrap_or(0);
    format!(
        "### {DEFAULTS}\n\n`uc up` without `--history-seconds` or `--event-ttl`: history kept 300 s and Events an \
         hour, as kube-apiserver keeps them, so \"after\" still holds the cycles' history and Events.\n\n{}\n\
         Peak {:.1} MB with {pods} pods with the default settings (reported beside the target, which is set with \
         history kept 20 s).\n\n",
        churn_table(churn),
        mb(peak)
    )
}

/// The verdict on a series: growth of the RSS after a cycle relative to the first, and the peak.
fn verdict(churn: &Churn, pods: i32) -> String {
    let (Some(first), Some(last)) = (churn.cycles.first(), churn.cycles.last()) else { return String::new() };
    let worst_after = churn.cycles.iter().map(|c| c.after).max().unwrap_or(0);
    let peak = churn.cycles.iter().map(|c| c.peak).max().unwrap_or(0);
    let growth = (worst_after as f64 / first.after as f64 - 1.0) * 100.0;
    format!(
        "{}: RSS after the last cycle {:.1} MB, at most {:.1} MB after any cycle: {:+.0}% on the first cycle's \
         {:.1} MB (target: within 20%). Peak {:.1} MB with {pods} pods: {:.0} KB per pod everything included \
         (target: 100 MB, 100 KB per pod{}).\n",
        churn.label,
        mb(last.after),
        mb(worst_after),
        growth,
        mb(first.after),
        mb(peak),
        peak as f64 / 1024.0 / pods as f64,
        if mb(peak) > 100.0 { format!("; missed by {:.0} MB", mb(peak) - 100.0) } else { String::new() },
    )
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let mut section = String::from(
        "## Memory under churn (`cargo build --profile dist -p uc -p uc-bench && target/dist/memory-bench`)\n\n",
    );
    let main = pod_churn(&args, "uc", &args.uc, args.cycles, Settings::Short).await?;
    let mut series = vec![main];
    for v in &args.variant {
        let (label, path) = v.split_once('=').with_context(|| format!("--variant {v:?}: expected label=path"))?;
        series.push(pod_churn(&args, label, &PathBuf::from(path), args.variant_cycles, Settings::Short).await?);
    }
    let defaults = if args.variant_cycles > 0 {
        Some(pod_churn(&args, DEFAULTS, &args.uc, args.variant_cycles, Settings::Defaults).await?)
    } else {
        None
    };
    section.push_str(&format!(
        "Measured {} on this machine ({} cores), one run. \
         `uc up` with everything on (API server, engine, workload controllers, node agent) and \
         `--history-seconds {} --event-ttl {}s` (the Events a cycle's pods leave expire with its history; uc's \
         default keeps them an hour, as kube-apiserver does); per cycle a Deployment of {} simulated pods is \
         created, made available and deleted. Peak is `VmHWM` from the cycle's start until every pod is \
         available; \"after\" is `VmRSS` once the pods are gone and the retention window has passed.\n\n",
        report::today(),
        report::cores(),
        args.history_seconds,
        event_ttl(&args),
        args.pods
    ));
    for churn in &series {
        section.push_str(&format!("### {}\n\n", churn.label));
        section.push_str(&churn_table(churn));
        section.push('\n');
        section.push_str(&verdict(churn, args.pods));
        section.push('\n');
    }
    if let Some(churn) = &defaults {
        section.push_str(&defaults_section(churn, args.pods));
    }
    if args.configmaps > 0 {
        let uc = cluster::start(
            &args.uc,
            &["--no-engine", "--no-node", "--history-seconds", &args.history_seconds.to_string()],
        )?;
        let (idle, cycles) = configmap_churn(&args, &uc).await?;
        section.push_str(&format!(
            "### {} ConfigMaps of 1.5 KB, API server alone (`--no-engine --no-node`)\n\n\
             | cycle | RSS with them, just made | and {} s later | MB per 1,000 objects (just made · later) | RSS after deleting them |\n\
             | --- | --- | --- | --- | --- |\n\
             | idle | {:.1} MB | | | |\n",
            args.configmaps,
            SETTLE.as_secs(),
            mb(idle)
        ));
        for (i, c) in cycles.iter().enumerate() {
            let per_thousand = |rss: u64| mb(rss.saturating_sub(idle)) * 1000.0 / args.configmaps as f64;
            section.push_str(&format!(
                "| {} | {:.1} MB | {:.1} MB | {:.1} · {:.1} | {:.1} MB |\n",
                i + 1,
                mb(c.full),
                mb(c.settled),
                per_thousand(c.full),
                per_thousand(c.settled),
                mb(c.after)
            ));
        }
        section.push('\n');
    }
    report::write_section(&args.report, "memory-bench", &section)?;
    println!("{section}");
    Ok(())
}
