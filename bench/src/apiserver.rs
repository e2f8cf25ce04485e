//! API server benchmark: creates/s with concurrent clients (in memory and durable) and watch fan-out,
//! measured against the real `uc up` binary over HTTPS with kube-rs clients. Writes its figures to a
//! markdown report (docs/benchmarks.md by default).

use crate::report::verdict;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use uc_bench::report;

use anyhow::{Context, Result, bail};
use clap::Parser;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

#[derive(Parser)]
#[command(about = "Benchmarks the uc API server: creates/s and watch fan-out")]
struct Args {
    /// The uc binary (build it with `cargo build --profile dist -p uc`).
    #[arg(long, default_value = "target/dist/uc")]
    uc: PathBuf,
    /// Concurrent clients creating objects.
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// Seconds each create run lasts.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Watchers for the fan-out run.
    #[arg(long, default_value_t = 100)]
    watchers: usize,
    /// Objects written during the fan-out run.
    #[arg(long, default_value_t = 1000)]
    fanout_writes: usize,
    /// Where to write the report section.
    #[arg(long, default_value = "docs/benchmarks.md")]
    report: PathBuf,
}

struct Uc {
    child: Child,
    kubeconfig: String,
    _dir: tempfile::TempDir,
}

impl Uc {
    fn start(bin: &PathBuf, in_memory: bool) -> Result<Uc> {
        let dir = tempfile::tempdir()?;
        let mut cmd = Command::new(bin);
        cmd.args(["up", "--port", "0", "--data-dir"]).arg(dir.path()).stdout(Stdio::piped()).stderr(Stdio::null());
        if in_memory {
            cmd.arg("--in-memory");
        }
        let mut child = cmd.spawn().with_context(|| format!("starting {}", bin.display()))?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().context("stdout")?).read_line(&mut line)?;
        let Some(kubeconfig) = line.trim().strip_prefix("export KUBECONFIG=") else {
            bail!("uc up printed {line:?}");
        };
        Ok(Uc { child, kubeconfig: kubeconfig.to_string(), _dir: dir })
    }

    async fn client(&self) -> Result<Client> {
        let kc = Kubeconfig::read_from(&self.kubeconfig)?;
        let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
        Ok(Client::try_from(config)?)
    }
}

impl Drop for Uc {
    fn drop(&mut self) {
        uc_bench::cluster::stop(&mut self.child);
    }
}

fn configmap(name: String) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name);
    c.data = Some(BTreeMap::from([("key".to_string(), "value".to_string())]));
    c
}

/// Creates/s with `clients` concurrent clients for `seconds`.
async fn creates(args: &Args, in_memory: bool) -> Result<f64> {
    let uc = Uc::start(&args.uc, in_memory)?;
    let done = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let mut tasks = Vec::new();
    let started = Instant::now();
    for c in 0..args.clients {
        let api: Api<ConfigMap> = Api::namespaced(uc.client().await?, "default");
        let done = done.clone();
        tasks.push(tokio::spawn(async move {
            let mut i = 0usize;
            while Instant::now() < deadline {
                api.create(&PostParams::default(), &configmap(format!("c{c}-{i}"))).await?;
                done.fetch_add(1, Ordering::Relaxed);
                i += 1;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64())
}

/// Time for `watchers` watches to each receive `writes` events.
async fn fanout(args: &Args) -> Result<(Duration, f64, bool)> {
    let uc = Uc::start(&args.uc, false)?;
    let client = uc.client().await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let received = Arc::new(AtomicUsize::new(0));
    let writers = 8;
    let per = args.fanout_writes / writers;
    let mut watchers = Vec::new();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(args.watchers);
    for _ in 0..args.watchers {
        // One connection per watcher, as separate controller processes would have.
        let api: Api<ConfigMap> = Api::namespaced(uc.client().await?, "default");
        let received = received.clone();
        let ready = ready_tx.clone();
        let want = per * writers;
        watchers.push(tokio::spawn(async move {
            let stream = api.watch(&WatchParams::default().timeout(290), "0").await?;
            let _ = ready.send(()).await;
            let mut stream = std::pin::pin!(stream);
            let mut n = 0;
            while let Some(ev) = stream.next().await {
                if let WatchEvent::Added(_) = ev? {
                    n += 1;
                    received.fetch_add(1, Ordering::Relaxed);
                    if n == want {
                        break;
                    }
                }
            }
            anyhow::Ok(())
        }));
    }
    for _ in 0..args.watchers {
        ready_rx.recv().await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let api = api.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..per {
                api.create(&PostParams::default(), &configmap(format!("f{w}-{i}"))).await?;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    for w in watchers {
        w.await??;
    }
    let elapsed = started.elapsed();
    let delivered = received.load(Ordering::Relaxed);
    let complete = delivered == args.watchers * per * writers;
    Ok((elapsed, delivered as f64 / elapsed.as_secs_f64(), complete))
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let memory = creates(&args, true).await?;
    println!("creates/s, in memory, {} clients: {memory:.0}", args.clients);
    let durable = creates(&args, false).await?;
    println!("creates/s, durable, {} clients: {durable:.0}", args.clients);
    let (elapsed, rate, complete) = fanout(&args).await?;
    println!(
        "fan-out: {} writes to {} watchers in {:.2?} ({rate:.0} events/s delivered)",
        args.fanout_writes, args.watchers, elapsed
    );
    let ratio = durable / memory;
    let section = format!(
        "## API server (`cargo run --profile dist -p uc-bench --bin apiserver-bench`)\n\n\
         Measured {date} on this machine ({cores} cores), one run, kube-rs clients over HTTPS against the `dist` build of `uc up`;\n\
         the clients run on the same cores as the server.\n\n\
         | measure | figure | target | verdict |\n| --- | --- | --- | --- |\n\
         | creates/s, in memory, {c} clients | {memory:.0} | ≥ 10,000 | {v1} |\n\
         | creates/s, durable (fsync per group commit), {c} clients | {durable:.0} | ≥ 0.6 × in memory | {v2} (ratio {ratio:.2}) |\n\
         | watch fan-out: {w} writes to {n} watchers | {secs:.2} s, {rate:.0} events/s delivered | every watcher gets every event | {v3} |\n\n",
        date = report::today(),
        cores = report::cores(),
        c = args.clients,
        v1 = verdict(memory >= 10_000.0),
        v2 = verdict(ratio >= 0.6),
        w = args.fanout_writes,
        n = args.watchers,
        secs = elapsed.as_secs_f64(),
        v3 = verdict(complete),
    );
    report::write_section(&args.report, "apiserver-bench", &section)?;
    println!("report written to {}", args.report.display());
    Ok(())
}
