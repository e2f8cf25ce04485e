//! Operator lifecycle with OLM's own API (`operators.coreos.com`): OLM's CRDs (`crds.rs`), and the
//! decisions, as pure functions: file-based catalogs (`fbc.rs`), bundles and package manifests on disk
//! read into them (`bundle.rs`), the ClusterServiceVersion parts OLM acts on (`csv.rs`), versions and
//! ranges (`versions.rs`), channel upgrade graphs (`graph.rs`), dependency resolution (`resolve.rs`),
//! InstallPlan steps and a CSV's Deployments (`plan.rs`), OperatorGroups (`group.rs`) and a CSV's phase
//! (`phase.rs`). At the edges, the lifecycle manager (`controller.rs`): CatalogSources read
//! (`sources.rs`) and published as PackageManifests (`packages.rs`), Subscriptions (`subscriptions.rs`), InstallPlans (`installplans.rs`) and CSVs
//! (`csvs.rs`) moved on and copied into the namespaces they serve (`copies.rs`), whenever a watched object changed (`triggers.rs`).

pub mod api;
pub mod bundle;
pub mod config;
pub mod configmap_registry;
pub mod context;
pub mod controller;
pub mod copies;
pub mod crds;
pub mod csv;
pub mod csvs;
pub mod error;
pub mod fbc;
pub mod go_zero;
pub mod graph;
pub mod group;
pub mod installplan;
pub mod installplans;
pub mod packages;
pub mod phase;
pub mod plan;
pub mod resolve;
pub mod sources;
pub mod subscribe;
pub mod subscription;
pub mod subscriptions;
pub mod triggers;
pub mod versions;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use uc_api::meta::json_of;

pub use context::GLOBAL_CATALOG_NAMESPACE;
/// The namespace of operators that serve every namespace, with its OperatorGroup, as OLM's.
pub const GLOBAL_OPERATORS_NAMESPACE: &str = "operators";

/// The running lifecycle manager; stops when dropped.
pub struct Lifecycle {
    task: tokio::task::JoinHandle<()>,
    _triggers: triggers::Triggers,
}

impl Drop for Lifecycle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Installs OLM's CRDs, the `olm` and `operators` namespaces (with the `global-operators`
/// OperatorGroup), a CatalogSource for each built-in catalog, and starts the lifecycle manager.
pub async fn start(
    client: kube::Client,
    resolver: uc_engine::names::Resolver,
    builtin: BTreeMap<String, Arc<sources::Builtin>>,
) -> anyhow::Result<Lifecycle> {
    for crd in crds::crds().into_iter().chain([packages::crd()]) {
        uc_engine::manager::install_crd(&client, crd).await?;
    }
    let kinds = uc_engine::dynamic::Kinds::default();
    let meta = |namespace: Option<&str>, name: &str| ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(str::to_string),
        ..Default::default()
    };
    let namespace = |name: &str| json_of(&Namespace { metadata: meta(None, name), ..Default::default() });
    let global = group::OperatorGroup {
        api_version: context::V1.into(),
        kind: "OperatorGroup".into(),
        metadata: meta(Some(GLOBAL_OPERATORS_NAMESPACE), "global-operators"),
        ..Default::default()
    };
    let mut objects =
        vec![namespace(GLOBAL_CATALOG_NAMESPACE), namespace(GLOBAL_OPERATORS_NAMESPACE), json_of(&global)];
    for name in builtin.keys() {
        let spec = sources::CatalogSourceSpec {
            source_type: "grpc".into(),
            address: format!("builtin://{name}"),
            display_name: "uc's operators".into(),
            publisher: "uc".into(),
            ..Default::default()
        };
        let source = sources::CatalogSource {
            api_version: context::V1ALPHA1.into(),
            kind: "CatalogSource".into(),
            metadata: meta(Some(GLOBAL_CATALOG_NAMESPACE), name),
            spec,
            status: None,
        };
        objects.push(json_of(&source));
    }
    // The CRDs were just installed: their kinds may take a moment to be served.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    for o in &objects {
        loop {
            match uc_engine::dynamic::apply(&client, &kinds, o, context::MANAGER).await {
                Ok(_) => break,
                Err(e) if std::time::Instant::now() < deadline => {
                    tracing::debug!(error = %e, "waiting for OLM's kinds");
                    kinds.forget();
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                Err(e) => anyhow::bail!("creating OLM's objects: {e}"),
            }
        }
    }
    let mut sources = sources::Sources::default();
    sources.builtin = builtin;
    let wake = Arc::new(tokio::sync::Notify::new());
    let (watched, named) = tokio::sync::watch::channel(Default::default());
    let triggers = triggers::start(&client, &kinds, wake.clone(), named).await.map_err(|e| anyhow::anyhow!(e))?;
    let olm =
        context::Olm { client, kinds, sources, resolver, csvs_seen: None, published: Default::default(), watched };
    Ok(Lifecycle { task: tokio::spawn(controller::run(olm, wake)), _triggers: triggers })
}
