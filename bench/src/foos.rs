//! Foo parents (the sample-controller's) for the convergence benchmarks: creating N of them, and
//! measuring how far a controller has got.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ObjectMeta, PartialObjectMeta, PostParams};
use kube::core::GroupVersionKind;
use kube::runtime::watcher::{self, Event};
use serde::Deserialize;
use serde_json::json;

/// Creates `foo-0` .. `foo-<n-1>` with `writers` concurrent clients.
pub async fn create(foos: &Api<DynamicObject>, n: usize, writers: usize) -> Result<()> {
    let mut tasks = Vec::new();
    for w in 0..writers {
        let foos = foos.clone();
        tasks.push(tokio::spawn(async move {
            for i in (w..n).step_by(writers) {
                create_one(&foos, &format!("foo-{i}")).await?;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// Creates the Foo `name` (its Deployment named alike, one replica).
pub async fn create_one(foos: &Api<DynamicObject>, name: &str) -> Result<()> {
    let parent: DynamicObject = serde_json::from_value(json!({"apiVersion": "njuics.cn/v1alpha1", "kind": "Foo",
        "metadata": {"name": name}, "spec": {"deploymentName": name, "replicas": 1}}))?;
    foos.create(&PostParams::default(), &parent).await?;
    Ok(())
}

/// How far a controller has got: which Foos have a status for their current generation, and which
/// Deployments exist, kept by two watches (the Foos, the Deployments' metadata) from before the first
/// Foo is created. Counting with lists instead — 10,000 Foos and 10,000 Deployments every quarter
/// second — took half the API server's CPU in the profile (docs/benchmarks.md), time every controller
/// under test lost alike.
pub struct Progress {
    state: Arc<Mutex<(HashSet<String>, HashSet<String>)>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Progress {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Progress {
    /// Starts both watches and waits until each has listed what exists.
    pub async fn start(c: &Client, foos: &Api<DynamicObject>) -> Result<Self> {
        let state: Arc<Mutex<(HashSet<String>, HashSet<String>)>> = Default::default();
        let (listed_tx, mut listed) = tokio::sync::mpsc::channel::<()>(2);
        let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("njuics.cn", "v1alpha1", "Foo"), "foos");
        let progress: Api<FooProgress> = Api::namespaced_with(c.clone(), foos.namespace().unwrap_or("default"), &ar);
        let foo_events = watcher::watcher(progress, watcher::Config::default());
        let deployments: Api<PartialObjectMeta<Deployment>> = Api::namespaced(c.clone(), "default");
        let deployment_events = watcher::watcher(deployments, watcher::Config::default());
        let (s, tx) = (state.clone(), listed_tx.clone());
        let foo_task = tokio::spawn(foo_events.for_each(move |e| {
            let (s, tx) = (s.clone(), tx.clone());
            async move {
                match e {
                    Ok(Event::Apply(f) | Event::InitApply(f)) => {
                        let done = f.observed_generation.is_some() && f.observed_generation == f.meta.generation;
                        let name = f.meta.name.unwrap_or_default();
                        let mut s = s.lock().expect("progress lock");
                        if done {
                            s.0.insert(name)
                        } else {
                            s.0.remove(&name)
                        };
                    }
                    Ok(Event::Delete(f)) => {
                        s.lock().expect("progress lock").0.remove(&f.meta.name.unwrap_or_default());
                    }
                    Ok(Event::InitDone) => {
                        let _ = tx.try_send(());
                    }
                    _ => {}
                }
            }
        }));
        let (s, tx) = (state.clone(), listed_tx);
        let deployment_task = tokio::spawn(deployment_events.for_each(move |e| {
            let (s, tx) = (s.clone(), tx.clone());
            async move {
                match e {
                    Ok(Event::Apply(d) | Event::InitApply(d)) => {
                        s.lock().expect("progress lock").1.insert(d.metadata.name.unwrap_or_default());
                    }
                    Ok(Event::Delete(d)) => {
                        s.lock().expect("progress lock").1.remove(&d.metadata.name.unwrap_or_default());
                    }
                    Ok(Event::InitDone) => {
                        let _ = tx.try_send(());
                    }
                    _ => {}
                }
            }
        }));
        let progress = Self { state, tasks: vec![foo_task, deployment_task] };
        for _ in 0..2 {
            tokio::time::timeout(std::time::Duration::from_secs(60), listed.recv())
                .await
                .map_err(|_| anyhow::anyhow!("the progress watches did not list within 60 s"))?;
        }
        Ok(progress)
    }

    /// Whether the Foo `name` has a status for its current generation.
    pub fn converged(&self, name: &str) -> bool {
        self.state.lock().expect("progress lock").0.contains(name)
    }

    /// How many Foos have a status for their current generation, and how many Deployments exist.
    pub fn counts(&self) -> (usize, usize) {
        let s = self.state.lock().expect("progress lock");
        (s.0.len(), s.1.len())
    }
}

/// What the progress watch reads of a Foo: its name, generation and `status.observedGeneration` (and the
/// resourceVersion kube's watcher resumes from). The rest of each event is skipped, not decoded: the
/// benchmark's own watch shares the cores with the controller it measures.
#[derive(Clone, Debug)]
struct FooProgress {
    meta: ObjectMeta,
    observed_generation: Option<i64>,
}

impl<'de> Deserialize<'de> for FooProgress {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Meta {
            name: Option<String>,
            generation: Option<i64>,
            resource_version: Option<String>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Status {
            observed_generation: Option<i64>,
        }
        #[derive(Deserialize)]
        struct Foo {
            metadata: Meta,
            status: Option<Status>,
        }
        let f = Foo::deserialize(d)?;
        let Meta { name, generation, resource_version } = f.metadata;
        Ok(Self {
            meta: ObjectMeta { name, generation, resource_version, ..Default::default() },
            observed_generation: f.status.and_then(|s| s.observed_generation),
        })
    }
}

uc_engine::dynamic_resource!(FooProgress);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_foos_progress_is_its_generation_against_the_one_its_status_observed() {
        let f: FooProgress = serde_json::from_str(r#"{"apiVersion":"njuics.cn/v1alpha1","kind":"Foo","metadata":{"name":"foo-1","generation":2,"resourceVersion":"7","managedFields":[{"manager":"uc"}]},"spec":{"replicas":1},"status":{"availableReplicas":0,"observedGeneration":1}}"#).unwrap();
        assert_eq!(
            (f.meta.name.as_deref(), f.meta.generation, f.observed_generation),
            (Some("foo-1"), Some(2), Some(1))
        );
        assert_eq!(f.meta.resource_version.as_deref(), Some("7"));
        let new: FooProgress = serde_json::from_str(r#"{"metadata":{"name":"foo-2","generation":1}}"#).unwrap();
        assert_eq!(new.observed_generation, None);
    }
}
