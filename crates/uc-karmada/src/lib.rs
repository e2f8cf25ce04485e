//! An embedded multi-cluster control plane with Karmada's API: `Cluster` objects for member clusters,
//! PropagationPolicy → ResourceBinding scheduling, OverridePolicy per cluster, Works in
//! `karmada-es-<cluster>` applied to the members, status and health collected back, interpreter
//! webhooks for custom kinds, and ServiceExport/ServiceImport across members. See docs/multicluster.md.

pub mod binding;
pub mod controller;
pub mod crds;
pub mod error;
pub mod execute;
pub mod interpret;
pub mod interpreter_context;
pub mod join;
pub mod kinds;
pub mod mcs;
pub mod members;
pub mod objects;
pub mod overrides;
pub mod plane;
pub mod propagate;
pub mod schedule;
pub mod statuses;
pub mod types;

/// Installs Karmada's CRDs into the control plane and starts its controllers (stopped when the handle
/// is dropped).
pub async fn start(client: kube::Client, resolver: uc_engine::names::Resolver) -> anyhow::Result<ControlPlane> {
    for crd in crds::control_plane() {
        uc_engine::manager::install_crd(&client, crd).await?;
    }
    let task = tokio::spawn(controller::run(client, resolver));
    Ok(ControlPlane { task })
}

/// The running control plane.
pub struct ControlPlane {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.task.abort();
    }
}
