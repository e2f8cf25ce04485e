//! etcd readiness (issue 21): how long an `EtcdCluster` of 3 members takes from `kubectl apply` to Ready
//! (`status.phase` Running with `status.readyMembers` 3), real etcd members on the embedded node, and how
//! long a scale-up from 3 to 5 takes after that. Runs each cluster `--runs` times against one `uc up`
//! (`--no-olm`: the etcd operator's CRD and controller are installed before it prints its export line).
//!
//! Needs `etcd` on PATH (Debian's etcd-server). Writes its section of docs/benchmarks.md.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams};
use serde_json::json;
use uc_bench::{cluster, report};

#[derive(Parser)]
#[command(about = "EtcdCluster readiness: size 3 from apply to Ready, and a scale-up to 5")]
struct Args {
    /// The uc binary (`cargo build --profile dist -p uc`).
    #[arg(long, default_value = "target/dist/uc")]
    uc: PathBuf,
    /// Clusters created, one after another.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Give up on one wait after this many seconds.
    #[arg(long, default_value_t = 180)]
    timeout: u64,
    /// Where to write the report section.
    #[arg(long, default_value = "docs/benchmarks.md")]
    report: PathBuf,
}

/// The goal of issue 21 for a 3-member cluster.
const GOAL: Duration = Duration::from_secs(8);

fn etcd_clusters(client: &Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("etcd.database.coreos.com", "v1beta2", "EtcdCluster");
    Api::default_namespaced_with(client.clone(), &ApiResource::from_gvk_with_plural(&gvk, "etcdclusters"))
}

/// Polls `done` every 20 ms until it holds; the time it took.
async fn until<F, Fut>(what: &str, timeout: Duration, mut done: F) -> Result<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool>>,
{
    let start = Instant::now();
    while start.elapsed() < timeout {
        if done().await? {
            return Ok(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    bail!("{what}: not within {timeout:?}")
}

/// Whether the cluster is Running with `size` ready members.
async fn ready(api: &Api<DynamicObject>, name: &str, size: i64) -> Result<bool> {
    let Some(obj) = api.get_opt(name).await? else { return Ok(false) };
    let status = &obj.data["status"];
    Ok(status["phase"] == "Running" && status["readyMembers"].as_i64() == Some(size))
}

/// One cluster: created, Ready at 3, scaled to 5, deleted (its pods gone). (to Ready, 3 → 5).
async fn run(client: &Client, name: &str, timeout: Duration) -> Result<(Duration, Duration)> {
    let api = etcd_clusters(client);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdCluster",
        "metadata": {"name": name}, "spec": {"size": 3, "version": "3.2.13"}
    }))?;
    let start = Instant::now();
    api.create(&Default::default(), &obj).await.context("creating the EtcdCluster")?;
    until("3 members ready", timeout, || ready(&api, name, 3)).await?;
    let created = start.elapsed();
    let scaled = Instant::now();
    api.patch(name, &PatchParams::default(), &Patch::Merge(json!({"spec": {"size": 5}}))).await?;
    until("5 members ready", timeout, || ready(&api, name, 5)).await?;
    let scaled = scaled.elapsed();
    api.delete(name, &DeleteParams::default()).await?;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let selector = format!("etcd_cluster={name}");
    until("its pods gone", timeout, || {
        let pods = pods.clone();
        let lp = ListParams::default().labels(&selector);
        async move { Ok(pods.list(&lp).await?.items.is_empty()) }
    })
    .await?;
    Ok((created, scaled))
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let uc = cluster::start(&args.uc, &["--no-olm", "--no-console"])?;
    let client = uc.client().await?;
    let timeout = Duration::from_secs(args.timeout);
    let api = etcd_clusters(&client);
    until("the EtcdCluster CRD served", timeout, || {
        let api = api.clone();
        async move { Ok(api.list(&ListParams::default().limit(1)).await.is_ok()) }
    })
    .await?;
    let mut rows = String::new();
    let (mut readies, mut scales) = (Vec::new(), Vec::new());
    for i in 1..=args.runs {
        let (ready, scaled) = run(&client, &format!("bench-etcd-{i}"), timeout).await?;
        println!("run {i}: size 3 Ready in {}, 3 → 5 in {}", secs(ready), secs(scaled));
        rows.push_str(&format!("| {i} | {} | {} |\n", secs(ready), secs(scaled)));
        readies.push(ready);
        scales.push(scaled);
    }
    let worst = *readies.iter().max().expect("one run at least");
    let verdict = if worst <= GOAL {
        format!("met: the slowest of {} runs took {}", args.runs, secs(worst))
    } else {
        format!("NOT met: the slowest of {} runs took {}, {} over", args.runs, secs(worst), secs(worst - GOAL))
    };
    let section = format!(
        "## etcd readiness (etcd-bench)\n\n\
         Measured {} on {} cores: `uc up --no-olm` (`dist` build), real etcd members (the machine's etcd) on the\n\
         embedded node; an `EtcdCluster` of size 3 from its create to `phase: Running` with 3 ready members, then\n\
         `spec.size: 5` to 5 ready members (each join waits for etcd's own 5 s health interval before the next:\n\
         `--strict-reconfig-check`).\n\n\
         | run | size 3 Ready | 3 → 5 |\n| --- | --- | --- |\n{rows}\n\
         Median: size 3 Ready in **{}**, 3 → 5 in {}. Goal ≤ 8 s for size 3: {verdict}.\n\n",
        report::today(),
        report::cores(),
        secs(median(readies)),
        secs(median(scales)),
    );
    report::write_section(&args.report, "etcd-bench", &section)?;
    println!("report written to {}", args.report.display());
    Ok(())
}
