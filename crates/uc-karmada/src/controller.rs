//! The control plane's loop: every pass reads the member clusters' health, then runs the detector and
//! scheduler, the binding controller, the execution controller, status aggregation and service
//! import, each level-triggered from what the API holds — so a pass that fails half-way (a member
//! gone, an API error) is made good by the next one. Passes run back to back, at most one per
//! `PERIOD`.

use std::collections::HashSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde_json::Value;
use uc_api::conditions::{Condition, set_in};
use uc_api::meta::str_at;

use crate::error::PlaneError;
use crate::interpret::Interpreter;
use crate::kinds::Kinds;
use crate::members::Members;
use crate::objects::{self, json_of};
use crate::plane::{CLUSTER_API, CONFIG_API, Plane};
use crate::types::Cluster;
use crate::{execute, mcs, propagate};

/// The shortest time between two passes.
const PERIOD: Duration = Duration::from_millis(700);

/// Runs the control plane until the task is dropped.
pub async fn run(client: kube::Client, resolver: uc_engine::names::Resolver) {
    let mut plane = Plane { client, kinds: Kinds::default(), members: Members::default(), resolver };
    let mut with_crds: HashSet<String> = HashSet::new();
    let mut interpreter = Cached::default();
    loop {
        let started = tokio::time::Instant::now();
        // A pass that panics (an input no check foresaw) is a failed pass: the next one runs.
        match uc_api::panics::unwound(pass(&mut plane, &mut with_crds, &mut interpreter)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "control plane pass incomplete");
                // A kind may have been installed or removed.
                plane.kinds.forget();
            }
            Err(panic) => {
                tracing::error!(%panic, "control plane pass panicked");
                plane.kinds.forget();
            }
        }
        tokio::time::sleep_until(started + PERIOD).await;
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The interpreter, rebuilt only when the webhook configurations change (its clients keep their
/// connections between passes).
#[derive(Default)]
struct Cached {
    versions: Option<Vec<String>>,
    interpreter: Interpreter,
}

impl Cached {
    fn get(&mut self, configs: &[Value], resolver: &uc_engine::names::Resolver) -> &Interpreter {
        let versions: Vec<String> =
            configs.iter().map(|c| str_at(c, "/metadata/resourceVersion").to_string()).collect();
        if self.versions.as_ref() != Some(&versions) {
            self.interpreter = Interpreter::new(configs, resolver);
            for e in &self.interpreter.errors {
                tracing::warn!(error = %e, "interpreter webhook not usable");
            }
            self.versions = Some(versions);
        }
        &self.interpreter
    }
}

async fn pass(plane: &mut Plane, with_crds: &mut HashSet<String>, cached: &mut Cached) -> Result<(), PlaneError> {
    let now = now();
    let clusters: Vec<Cluster> = objects::list(&plane.client, &plane.kinds, CLUSTER_API, "Cluster", "")
        .await?
        .iter()
        .filter_map(|c| {
            Cluster::deserialize(c).inspect_err(|e| tracing::warn!(error = %e, "a Cluster does not read")).ok()
        })
        .collect();
    plane.members.refresh(&plane.client, &clusters).await;
    for c in &clusters {
        cluster_status(plane, c, &now).await?;
    }
    for m in plane.members.by_name.values() {
        if !m.ready {
            with_crds.remove(&m.name);
        } else if !with_crds.contains(&m.name) {
            // Karmada installs the MCS API in every member it joins.
            let client = m.client.clone();
            let mut ok = true;
            for crd in crate::crds::member() {
                ok &= uc_engine::manager::install_crd(&client, crd).await.is_ok();
            }
            if ok {
                with_crds.insert(m.name.clone());
                m.kinds.forget();
            }
        }
    }
    ensure_execution_spaces(plane, &clusters).await?;
    let configs =
        objects::list(&plane.client, &plane.kinds, CONFIG_API, "ResourceInterpreterWebhookConfiguration", "").await?;
    let interpreter = cached.get(&configs, &plane.resolver);
    let scheduled = propagate::detect(plane, interpreter, &now).await?;
    propagate::sync_works(plane, interpreter).await?;
    execute::execute(plane, interpreter, &now).await?;
    execute::aggregate(plane, &scheduled, &now).await?;
    mcs::sync(plane).await?;
    Ok(())
}

/// A Cluster's `Ready` condition and Kubernetes version, from its last health check.
async fn cluster_status(plane: &Plane, cluster: &Cluster, now: &str) -> Result<(), PlaneError> {
    let name = cluster.metadata.name.as_deref().unwrap_or_default();
    let previous = cluster.status.clone().unwrap_or_default();
    let mut status = previous.clone();
    let cond = match plane.members.by_name.get(name) {
        Some(m) if m.ready => {
            status.kubernetes_version = Some(m.version.clone());
            Condition::new("Ready", true, "ClusterReady", &m.message)
        }
        Some(m) => Condition::new("Ready", false, "ClusterNotReachable", &m.message),
        None => Condition::new(
            "Ready",
            false,
            "ClusterNotReachable",
            "no client for the cluster: see spec.apiEndpoint and spec.secretRef",
        ),
    };
    set_in(&mut status.conditions, cond, &previous.conditions, now);
    if cluster.status.as_ref() != Some(&status) {
        objects::write_status(&plane.client, &plane.kinds, &json_of(cluster), &json_of(&status)).await?;
    }
    Ok(())
}

/// `karmada-es-<cluster>` for every member.
async fn ensure_execution_spaces(plane: &Plane, clusters: &[Cluster]) -> Result<(), PlaneError> {
    for c in clusters {
        let ns = crate::binding::execution_space(c.metadata.name.as_deref().unwrap_or_default());
        if objects::get(&plane.client, &plane.kinds, "v1", "Namespace", "", &ns).await?.is_none() {
            let obj = Namespace { metadata: ObjectMeta { name: Some(ns), ..Default::default() }, ..Default::default() };
            objects::apply(&plane.client, &plane.kinds, &json_of(&obj)).await?;
        }
    }
    Ok(())
}
