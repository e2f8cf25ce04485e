//! uc's web console (`uc up`, `uc run --console`): OperatorHub over OLM's API, installed operators with
//! forms generated from their CRDs' schemas, each instance's parent → children tree live over watches,
//! the controllers with their hook metrics, and the cluster. A page application (`assets/`, plain
//! JavaScript modules, no build step, nothing fetched from elsewhere) over the Kubernetes API, which the
//! server (`server.rs`) passes through with the user's own token (`session.rs`); the engine's hook
//! metrics summarised (`metrics.rs`).

pub mod assets;
pub mod guard;
pub mod metrics;
pub mod server;
pub mod session;
pub mod watch;
pub mod wire;

use std::net::SocketAddr;
use std::sync::Arc;

/// What the console serves.
pub struct Options {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The cluster (its address and CA; its credentials are not used: each user brings a token).
    pub cluster: kube::Config,
    /// The engine's metrics endpoint, when the engine runs in this process.
    pub engine_metrics: Option<SocketAddr>,
}

/// A running console; stops when dropped.
pub struct Console {
    /// Where it listens.
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Console {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts the console.
pub async fn start(options: Options) -> anyhow::Result<Console> {
    let listener = tokio::net::TcpListener::bind(options.addr).await?;
    let addr = listener.local_addr()?;
    let state = Arc::new(server::State {
        sessions: session::Sessions::new(options.cluster),
        engine_metrics: options.engine_metrics,
    });
    Ok(Console { addr, task: tokio::spawn(server::serve(listener, state)) })
}
