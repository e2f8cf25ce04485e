//! Engine benchmark: hook call overhead (in-process JavaScript vs a loopback webhook) and convergence
//! time of N Foo parents into Deployments with the sample-controller, against the `dist` build of `uc up`.
//! Writes its figures to docs/benchmarks.md.

use crate::report::verdict;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use uc_bench::cluster;
use uc_bench::foos;
use uc_bench::report;
mod webhook;

use uc_bench::cluster::Uc;
use webhook::start_webhook;

use anyhow::{Context, Result, bail};
use clap::Parser;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};
use uc_engine::hooks::HookKind;
use uc_engine::hooks::javascript::{JsHook, JsLimits};
use uc_engine::hooks::webhook::WebhookHook;

#[derive(Parser)]
#[command(about = "Benchmarks the uc engine: hook overhead and convergence")]
struct Args {
    /// The uc binary (build it with `cargo build --profile dist -p uc`).
    #[arg(long, default_value = "target/dist/uc")]
    uc: PathBuf,
    /// Hook calls measured per hook kind.
    #[arg(long, default_value_t = 20_000)]
    calls: usize,
    /// Parent counts to converge.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    parents: Vec<usize>,
    /// Where to write the report section.
    #[arg(long, default_value = "docs/benchmarks.md")]
    report: PathBuf,
}

/// The Foo hook (the thesis's listing 5.2 computing the status as the other controllers do: see the file).
const SAMPLE_JS: &str = include_str!("../foo-sync.js");

fn sample_request(i: usize) -> Value {
    json!({
        "controller": {"metadata": {"name": "sample-controller"}},
        "parent": {"apiVersion": "njuics.cn/v1alpha1", "kind": "Foo",
                   "metadata": {"name": format!("foo-{i}"), "namespace": "default", "uid": "u"},
                   "spec": {"deploymentName": format!("foo-{i}"), "replicas": 1}},
        "children": {"Deployment.apps/v1": {}},
        "related": {},
        "finalizing": false
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn hook_overhead(calls: usize) -> Result<(Vec<Duration>, Vec<Duration>)> {
    let js = JsHook::new(SAMPLE_JS.to_string(), JsLimits::default()).map_err(|e| anyhow::anyhow!("{e}"))?;
    let addr = start_webhook().await?;
    let spec = uc_api::controller::Webhook { url: Some(format!("http://{addr}/")), ..Default::default() };
    let web = WebhookHook::new(&spec, uc_engine::names::Resolver::system(), Default::default())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    // On a task of the runtime's workers, as the engine calls its hooks.
    tokio::spawn(async move {
        let mut js_times = Vec::with_capacity(calls);
        let mut web_times = Vec::with_capacity(calls);
        for i in 0..calls {
            let req = sample_request(i);
            let owned = req.clone();
            let t = Instant::now();
            js.call(HookKind::Sync, owned).await.map_err(|e| anyhow::anyhow!("{e}"))?;
            js_times.push(t.elapsed());
            let t = Instant::now();
            web.call(&req).await.map_err(|e| anyhow::anyhow!("{e}"))?;
            web_times.push(t.elapsed());
        }
        js_times.sort();
        web_times.sort();
        Ok((js_times, web_times))
    })
    .await?
}

fn start_uc(bin: &Path) -> Result<Uc> {
    // Only the controller under test works: no workload controllers, no node agent.
    cluster::start(bin, &["--no-workload-controllers", "--no-node"])
}

fn yaml_to_dynamic(path: &str) -> Result<DynamicObject> {
    let text = std::fs::read_to_string(path).with_context(|| path.to_string())?;
    let v: Value = serde_yaml_ng::from_str(&text)?;
    Ok(serde_json::from_value(v)?)
}

/// Seconds until `n` Foos each have their Deployment and their status written.
async fn converge(args: &Args, n: usize, webhook: Option<std::net::SocketAddr>) -> Result<Duration> {
    let uc = start_uc(&args.uc)?;
    let c = uc.client().await?;
    let crd_ar = ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    );
    Api::<DynamicObject>::all_with(c.clone(), &crd_ar)
        .create(&PostParams::default(), &yaml_to_dynamic("examples/sample-controller/crd.yaml")?)
        .await?;
    let uc_ar = ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("universalcontroller.njuics.cn", "v1alpha1", "UniversalController"),
        "universalcontrollers",
    );
    let hook = match webhook {
        Some(addr) => json!({"webhook": {"url": format!("http://{addr}/")}}),
        None => json!({"javascript": {"source": SAMPLE_JS}}),
    };
    let controller: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "universalcontroller.njuics.cn/v1alpha1", "kind": "UniversalController", "metadata": {"name": "sample-controller"},
        "spec": {"generateSelector": true, "parentResource": {"apiVersion": "njuics.cn/v1alpha1", "resource": "foos"},
                 "childResources": [{"apiVersion": "apps/v1", "resource": "deployments", "updateStrategy": {"method": "InPlace"}}],
                 "hooks": {"sync": hook}}}))?;
    let foo_ar =
        ApiResource::from_gvk_with_plural(&kube::api::GroupVersionKind::gvk("njuics.cn", "v1alpha1", "Foo"), "foos");
    let foos: Api<DynamicObject> = Api::namespaced_with(c.clone(), "default", &foo_ar);
    // Wait until the Foo resource is served before registering the controller.
    for _ in 0..100 {
        if foos.list(&ListParams::default().limit(1)).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Api::<DynamicObject>::all_with(c.clone(), &uc_ar).create(&PostParams::default(), &controller).await?;
    let progress = foos::Progress::start(&c, &foos).await?;
    let started = Instant::now();
    foos::create(&foos, n, 8).await?;
    let deadline = started + Duration::from_secs(600);
    loop {
        let (done_foos, deps) = progress.counts();
        if done_foos == n && deps == n {
            return Ok(started.elapsed());
        }
        if Instant::now() > deadline {
            bail!("not converged after 600 s: {done_foos}/{n} statuses, {deps}/{n} deployments");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let (js, web) = hook_overhead(args.calls).await?;
    let (js50, js99, web50, web99) =
        (percentile(&js, 0.5), percentile(&js, 0.99), percentile(&web, 0.5), percentile(&web, 0.99));
    println!(
        "hook overhead: javascript p50 {} p99 {}; webhook p50 {} p99 {}",
        us(js50),
        us(js99),
        us(web50),
        us(web99)
    );
    let mut rows = String::new();
    let webhook = start_webhook().await?;
    for &n in &args.parents {
        let t_js = converge(&args, n, None).await?;
        println!(
            "{n} parents, javascript hook: {:.2} s ({:.0} parents/s)",
            t_js.as_secs_f64(),
            n as f64 / t_js.as_secs_f64()
        );
        let t_web = converge(&args, n, Some(webhook)).await?;
        println!(
            "{n} parents, loopback webhook: {:.2} s ({:.0} parents/s)",
            t_web.as_secs_f64(),
            n as f64 / t_web.as_secs_f64()
        );
        let target =
            if n >= 10_000 { format!("≤ 30 s ({})", verdict(t_js.as_secs_f64() <= 30.0)) } else { "—".into() };
        rows.push_str(&format!(
            "| {n} Foos → Deployments + status | {:.2} s ({:.0}/s) | {:.2} s ({:.0}/s) | {target} |\n",
            t_js.as_secs_f64(),
            n as f64 / t_js.as_secs_f64(),
            t_web.as_secs_f64(),
            n as f64 / t_web.as_secs_f64()
        ));
    }
    let section = format!(
        "## Engine (`cargo run --profile dist -p uc-bench --bin engine-bench`)\n\n\
         Measured {date}, one run on this machine ({cores} cores); the benchmark's clients share the cores with `uc up`.\n\n\
         Hook call overhead, sample-controller request, {calls} calls each (in-process call from the engine's hook interface):\n\n\
         | hook | p50 | p99 | target (p50) | verdict |\n| --- | --- | --- | --- | --- |\n\
         | JavaScript in-process (QuickJS) | {js50} | {js99} | ≤ 50 µs | {v1} |\n\
         | loopback webhook (HTTP/1.1, keep-alive) | {web50} | {web99} | ≤ 500 µs | {v2} |\n\n\
         Convergence: parents created by 8 concurrent clients; time until every Foo has its Deployment and a status\n\
         with a current `observedGeneration` (`uc up --no-workload-controllers --no-node`: only the controller under test works):\n\n\
         | run | JavaScript hook | loopback webhook | target | \n| --- | --- | --- | --- |\n{rows}\n",
        date = report::today(),
        cores = report::cores(),
        calls = args.calls,
        js50 = us(js50),
        js99 = us(js99),
        web50 = us(web50),
        web99 = us(web99),
        v1 = verdict(js50 <= Duration::from_micros(50)),
        v2 = verdict(web50 <= Duration::from_micros(500)),
    );
    report::write_section(&args.report, "engine-bench", &section)?;
    println!("report written to {}", args.report.display());
    Ok(())
}
