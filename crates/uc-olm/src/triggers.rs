//! What wakes the lifecycle manager: a watch on every kind its passes read — OLM's own kinds, CRDs,
//! Namespaces, the Deployments a CSV created (by their `olm.owner.kind` label) and the ConfigMaps a
//! CatalogSource names. Each event wakes the loop; nothing is kept (a pass reads what it needs).

use std::sync::Arc;

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::Notify;

use crate::context::{V1, V1ALPHA1, Watched};
use crate::plan::OWNER_KIND_LABEL;

/// The watches; they stop when dropped.
pub struct Triggers {
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Triggers {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// The kinds watched, `(apiVersion, kind, label selector)`.
fn watched_kinds() -> Vec<(&'static str, &'static str, Option<String>)> {
    vec![
        (V1ALPHA1, "CatalogSource", None),
        (V1ALPHA1, "Subscription", None),
        (V1ALPHA1, "InstallPlan", None),
        (V1ALPHA1, "ClusterServiceVersion", None),
        (V1, "OperatorGroup", None),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition", None),
        ("v1", "Namespace", None),
        ("apps/v1", "Deployment", Some(format!("{OWNER_KIND_LABEL}=ClusterServiceVersion"))),
    ]
}

/// Whether an event on a ConfigMap concerns a catalog.
fn names_a_catalog(watched: &Watched, obj: &kube::api::DynamicObject) -> bool {
    let key = (obj.metadata.namespace.clone().unwrap_or_default(), obj.metadata.name.clone().unwrap_or_default());
    watched.lock().contains(&key)
}

/// Starts the watches; each event on them notifies `wake`.
pub async fn start(
    client: &kube::Client,
    kinds: &uc_engine::dynamic::Kinds,
    wake: Arc<Notify>,
    watched: Watched,
) -> Result<Triggers, String> {
    let mut tasks = Vec::new();
    let mut all: Vec<_> = watched_kinds().into_iter().map(|(v, k, s)| (v, k, s, false)).collect();
    all.push(("v1", "ConfigMap", None, true));
    for (api_version, kind, selector, filtered) in all {
        let api = kinds.get(client, api_version, kind).await?.api(client, "");
        let mut config = watcher::Config::default();
        if let Some(s) = &selector {
            config = config.labels(s);
        }
        let (wake, watched) = (wake.clone(), watched.clone());
        tasks.push(tokio::spawn(async move {
            let mut events = std::pin::pin!(watcher(api, config).default_backoff());
            while let Some(event) = events.next().await {
                let relevant = match &event {
                    Ok(watcher::Event::Apply(o) | watcher::Event::Delete(o) | watcher::Event::InitApply(o)) => {
                        !filtered || names_a_catalog(&watched, o)
                    }
                    Ok(watcher::Event::Init | watcher::Event::InitDone) => false,
                    Err(e) => {
                        tracing::debug!(kind, error = %e, "lifecycle watch interrupted");
                        false
                    }
                };
                if relevant {
                    wake.notify_one();
                }
            }
        }));
    }
    Ok(Triggers { tasks })
}
