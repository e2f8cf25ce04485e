//! What wakes the lifecycle manager: a watch on every kind its passes read — OLM's own kinds, CRDs,
//! Namespaces, the Deployments a CSV created (by their `olm.owner.kind` label) — and one on each
//! ConfigMap a CatalogSource names, by its name. Each event wakes the loop; nothing is kept (a pass
//! reads what it needs).
//!
//! The ConfigMaps are watched one by one rather than all of them: a cluster's other ConfigMaps never
//! reach the manager (a watch on every ConfigMap decoded each one the cluster wrote, data and all, to
//! keep the events of the few that are catalogs).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::{Notify, watch};

use crate::context::{V1, V1ALPHA1};
use crate::error::LifecycleError;
use crate::plan::OWNER_KIND_LABEL;

/// The watches; they stop when dropped.
pub struct Triggers {
    _tasks: Vec<Task>,
}

/// A task aborted when dropped.
struct Task(tokio::task::JoinHandle<()>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
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

/// A ConfigMap `(namespace, name)`.
type Named = (String, String);

/// Which ConfigMap watches to start and which to stop for the watches to be those of `want`.
fn changes<'a>(running: impl Iterator<Item = &'a Named>, want: &BTreeSet<Named>) -> (Vec<Named>, Vec<Named>) {
    let running: BTreeSet<&Named> = running.collect();
    let start = want.iter().filter(|n| !running.contains(n)).cloned().collect();
    let stop = running.into_iter().filter(|n| !want.contains(*n)).cloned().collect();
    (start, stop)
}

/// Notifies `wake` on each event of `api` under `config` (the start of a watch too: what changed
/// before it is not missed).
fn wake_on(api: kube::Api<kube::api::DynamicObject>, config: watcher::Config, what: String, wake: Arc<Notify>) -> Task {
    Task(tokio::spawn(async move {
        let mut events = std::pin::pin!(watcher(api, config).default_backoff());
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitApply(_)) => {
                    wake.notify_one()
                }
                Ok(watcher::Event::Init | watcher::Event::InitDone) => {}
                Err(e) => tracing::debug!(watch = %what, error = %e, "lifecycle watch interrupted"),
            }
        }
    }))
}

/// Starts the watches; each event on them notifies `wake`. The ConfigMaps watched follow `named`.
pub async fn start(
    client: &kube::Client,
    kinds: &uc_engine::dynamic::Kinds,
    wake: Arc<Notify>,
    mut named: watch::Receiver<BTreeSet<Named>>,
) -> Result<Triggers, LifecycleError> {
    let mut tasks = Vec::new();
    for (api_version, kind, selector) in watched_kinds() {
        let api = kinds.get(client, api_version, kind).await?.api(client, "");
        let mut config = watcher::Config::default();
        if let Some(s) = &selector {
            config = config.labels(s);
        }
        tasks.push(wake_on(api, config, kind.to_string(), wake.clone()));
    }
    let config_maps = kinds.get(client, "v1", "ConfigMap").await?;
    let client = client.clone();
    tasks.push(Task(tokio::spawn(async move {
        let mut running: BTreeMap<Named, Task> = BTreeMap::new();
        loop {
            let want = named.borrow_and_update().clone();
            let (start, stop) = changes(running.keys(), &want);
            for n in stop {
                running.remove(&n);
            }
            for (ns, name) in start {
                let api = config_maps.api(&client, &ns);
                let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
                let task = wake_on(api, config, format!("ConfigMap {ns}/{name}"), wake.clone());
                running.insert((ns, name), task);
            }
            if named.changed().await.is_err() {
                break;
            }
        }
    })));
    Ok(Triggers { _tasks: tasks })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(items: &[(&str, &str)]) -> BTreeSet<Named> {
        items.iter().map(|(ns, n)| (ns.to_string(), n.to_string())).collect()
    }

    #[test]
    fn the_config_map_watches_follow_the_catalogs() {
        let running = named(&[("olm", "a"), ("cat", "b")]);
        let want = named(&[("cat", "b"), ("cat", "c")]);
        let (start, stop) = changes(running.iter(), &want);
        assert_eq!(start, vec![("cat".to_string(), "c".to_string())], "a new catalog's ConfigMap");
        assert_eq!(stop, vec![("olm".to_string(), "a".to_string())], "a catalog gone");
        let (start, stop) = changes(want.iter(), &want);
        assert!(start.is_empty() && stop.is_empty(), "nothing changed, nothing restarted");
        let (start, stop) = changes(std::iter::empty(), &want);
        assert_eq!((start.len(), stop.len()), (2, 0), "the first catalogs");
    }
}
