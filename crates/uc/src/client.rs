//! Clients of the cluster that uc's parts use, each named by its component.

use anyhow::Context;

/// A client of the cluster that names itself `component` in its User-Agent (the API server's per-client
/// traffic metrics go by it).
pub(crate) async fn client_for(kubeconfig: Option<&std::path::Path>, component: &str) -> anyhow::Result<kube::Client> {
    let config = named(config_for(kubeconfig).await?, component, None)?;
    Ok(kube::Client::try_from(config)?)
}

/// A client of the API server `uc up` runs, for a part of `uc up` in the same process (the node agent):
/// every request over one HTTP/2 connection, as the kubelet talks to kube-apiserver, so that a burst of
/// pod status writes does not open (and then hold) a connection per write.
#[cfg(feature = "cluster")]
pub(crate) async fn local_client_for(kubeconfig: &std::path::Path, component: &str) -> anyhow::Result<kube::Client> {
    let config = named(config_for(Some(kubeconfig)).await?, component, None)?;
    Ok(uc_engine::clients::multiplexed_client(&config)?)
}

/// A client of an engine replica: `component/<version> (identity)` in its User-Agent, so that the API
/// server's metrics and audit log tell replicas apart.
pub(crate) async fn replica_client_for(
    kubeconfig: Option<&std::path::Path>,
    component: &str,
    identity: &str,
) -> anyhow::Result<kube::Client> {
    let config = named(config_for(kubeconfig).await?, component, Some(identity))?;
    Ok(kube::Client::try_from(config)?)
}

/// The engine's client: a replica's, its requests passing `guard` (the leader fence, the rate limit,
/// the request counters).
pub(crate) async fn guarded_client_for(
    kubeconfig: Option<&std::path::Path>,
    component: &str,
    identity: &str,
    guard: &std::sync::Arc<uc_engine::guard::Guard>,
) -> anyhow::Result<kube::Client> {
    let config = named(config_for(kubeconfig).await?, component, Some(identity))?;
    Ok(guard.client(config)?)
}

fn named(mut config: kube::Config, component: &str, identity: Option<&str>) -> anyhow::Result<kube::Config> {
    let version = env!("CARGO_PKG_VERSION");
    let agent = match identity {
        Some(id) => format!("{component}/{version} ({id})"),
        None => format!("{component}/{version}"),
    };
    config.headers.push((http::header::USER_AGENT, http::HeaderValue::from_str(&agent)?));
    Ok(config)
}

/// The cluster a kubeconfig names (default: $KUBECONFIG, ~/.kube/config, or in-cluster config).
pub(crate) async fn config_for(kubeconfig: Option<&std::path::Path>) -> anyhow::Result<kube::Config> {
    Ok(match kubeconfig {
        Some(path) => {
            let kc =
                kube::config::Kubeconfig::read_from(path).with_context(|| format!("reading {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default()).await?
        }
        None => kube::Config::infer().await?,
    })
}
