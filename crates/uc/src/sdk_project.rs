//! What Operator SDK projects of both types need from the cluster and their directory: the project's
//! CRDs (`config/crd/bases/`), discovery once the watched kinds are served, the SDK's default
//! concurrency.

use std::path::Path;

use anyhow::Context as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::discovery::Discovery;

/// The SDK's default `maxConcurrentReconciles`: the machine's CPUs.
pub fn cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// The CustomResourceDefinitions of `group`/`kind` in the project's `config/crd/bases/`.
/// A CRD there that does not read is an error naming its file and field.
pub fn project_crds(dir: &Path, group: &str, kind: &str) -> anyhow::Result<Vec<CustomResourceDefinition>> {
    let Ok(entries) = std::fs::read_dir(dir.join("config/crd/bases")) else { return Ok(Vec::new()) };
    let mut files: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let Some(doc) = std::fs::read_to_string(&file).ok().and_then(|t| serde_yaml_ng::from_str(&t).ok()) else {
            continue;
        };
        let crds = uc_api::crds::among(&[doc]).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        out.extend(crds.into_iter().filter(|c| c.spec.group == group && c.spec.names.kind == kind));
    }
    Ok(out)
}

/// Discovery once every watched kind is served (a CRD just installed takes a moment), or the first
/// kind that is not, after 20 s.
pub async fn served(client: &kube::Client, gvks: &[(String, String, String)]) -> anyhow::Result<Discovery> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let discovery = Discovery::new(client.clone()).run().await.context("discovering the cluster's API")?;
        let missing =
            gvks.iter().find(|(g, v, k)| discovery.resolve_gvk(&kube::api::GroupVersionKind::gvk(g, v, k)).is_none());
        match missing {
            None => return Ok(discovery),
            Some((g, v, k)) if std::time::Instant::now() > deadline => anyhow::bail!(
                "{g}/{v} {k} is not served: install its CustomResourceDefinition (config/crd/bases/ of the project is installed when it has it)"
            ),
            Some(_) => tokio::time::sleep(std::time::Duration::from_millis(250)).await,
        }
    }
}
