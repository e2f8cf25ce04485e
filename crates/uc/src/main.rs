//! The `uc` binary: the declarative universal Kubernetes operator.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "uc", version, about = "uc: the declarative universal Kubernetes operator")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the embedded Kubernetes-compatible cluster on 127.0.0.1 and write a kubeconfig.
    Up(UpArgs),
}

#[derive(clap::Args)]
struct UpArgs {
    /// Directory for the database, credentials and kubeconfig.
    #[arg(long, default_value = ".uc")]
    data_dir: PathBuf,
    /// Port of the API server on 127.0.0.1 (0 picks a free port).
    #[arg(long, default_value_t = 6443)]
    port: u16,
    /// Keep objects in memory only (nothing survives a restart).
    #[arg(long)]
    in_memory: bool,
    /// Watch events kept for resuming watches; older resourceVersions get 410 Gone.
    #[arg(long, default_value_t = 100_000)]
    watch_cache_events: usize,
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("UC_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the runtime")?;
    match cli.command {
        Command::Up(args) => runtime.block_on(up(args)),
    }
}

async fn up(args: UpArgs) -> anyhow::Result<()> {
    let mut config = uc_apiserver::Config::new(&args.data_dir);
    config.port = args.port;
    config.durable = !args.in_memory;
    config.store.log_capacity = args.watch_cache_events.max(1);
    let server = uc_apiserver::start(config)
        .await
        .with_context(|| format!("starting the API server in {}", args.data_dir.display()))?;
    let kubeconfig = std::fs::canonicalize(&server.kubeconfig).unwrap_or(server.kubeconfig.clone());
    tracing::info!(address = %server.addr, "API server ready");
    println!("export KUBECONFIG={}", kubeconfig.display());
    wait_for_signal().await;
    tracing::info!("stopping");
    server.shutdown().await;
    Ok(())
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
