//! Clients of the cluster that uc's parts use, each named by its component.

use anyhow::Context;

/// A client of the cluster that names itself `component` in its User-Agent (the API server's per-client
/// traffic metrics go by it).
pub(crate) async fn client_for(kubeconfig: Option<&std::path::Path>, component: &str) -> anyhow::Result<kube::Client> {
    let mut config = config_for(kubeconfig).await?;
    let agent = format!("{component}/{}", env!("CARGO_PKG_VERSION"));
    config.headers.push((http::header::USER_AGENT, http::HeaderValue::from_str(&agent)?));
    Ok(kube::Client::try_from(config)?)
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
