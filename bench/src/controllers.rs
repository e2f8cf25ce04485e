//! The controllers users would write by hand with kube-rs instead of uc, one process each, for the
//! side-by-side benchmark (`compare-bench`):
//!
//! - `donothing`: the thesis's donothing-operator (section 5.5): a `DoNothing` parent whose controller
//!   watches Pods and PersistentVolumeClaims and does nothing;
//! - `tfjob`: a tf-operator equivalent's watches: TensorFlowJobs, and caches of Pods and Services
//!   (what tf-operator's informers hold); reconcile only reads them;
//! - `catset`: a StatefulSet-like controller's watches: CatSets, caches of Pods and PVCs;
//! - `foo`: the sample-controller (Foo → Deployment + status) with kube-runtime's `Controller`, the
//!   convergence baseline.
//!
//! Each names itself in its User-Agent (`--name`), so the API server's per-client metrics tell them apart.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use clap::{Parser, ValueEnum};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Service};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Config, Resource, ResourceExt};
use serde_json::json;

#[derive(Clone, Copy, ValueEnum)]
enum Kind {
    Donothing,
    Tfjob,
    Catset,
    Foo,
}

#[derive(Parser)]
#[command(about = "A hand-written kube-rs controller for uc's benchmarks")]
struct Args {
    /// Which controller.
    #[arg(value_enum)]
    kind: Kind,
    /// Kubeconfig of the cluster.
    #[arg(long)]
    kubeconfig: String,
    /// Name in the User-Agent.
    #[arg(long, default_value = "bench-controller")]
    name: String,
}

async fn client(args: &Args) -> Result<Client> {
    let kc = Kubeconfig::read_from(&args.kubeconfig)?;
    let mut config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
    config.headers.push((http::header::USER_AGENT, http::HeaderValue::from_str(&args.name)?));
    Ok(Client::try_from(config)?)
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Error(String);

fn err(e: impl std::fmt::Display) -> Error {
    Error(e.to_string())
}

fn on_error<K>(_: Arc<K>, _: &Error, _: Arc<()>) -> Action {
    Action::requeue(Duration::from_secs(1))
}

/// A cache of `api`, kept by its own watch (an informer).
fn cache<K>(api: Api<K>) -> Store<K>
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (reader, writer) = reflector::store();
    let stream =
        reflector::reflector(writer, watcher(api, watcher::Config::default())).default_backoff().touched_objects();
    tokio::spawn(stream.for_each(|_| async {}));
    reader
}

/// A parent type whose controller owns Pods and keeps caches of the two child types.
async fn parent_with_caches<A, B>(client: Client, parent: ApiResource, a: Api<A>, b: Api<B>) -> Result<()>
where
    A: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    A::DynamicType: Default + Eq + std::hash::Hash + Clone,
    B: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    B::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (sa, sb) = (cache(a), cache(b));
    let parents: Api<DynamicObject> = Api::all_with(client, &parent);
    let ctx = Arc::new(());
    Controller::new_with(parents, watcher::Config::default(), parent)
        .run(
            move |p: Arc<DynamicObject>, _| {
                let (sa, sb) = (sa.clone(), sb.clone());
                async move {
                    // Read the children from the caches, as a real operator's reconcile would.
                    let uid = p.uid().unwrap_or_default();
                    let owned = |refs: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference>| {
                        refs.iter().any(|r| r.uid == uid)
                    };
                    let n = sa.state().iter().filter(|o| owned(o.owner_references().to_vec())).count()
                        + sb.state().iter().filter(|o| owned(o.owner_references().to_vec())).count();
                    tracing::debug!(children = n, "reconciled");
                    Ok::<_, Error>(Action::await_change())
                }
            },
            |_, _: &Error, _| Action::requeue(Duration::from_secs(1)),
            ctx,
        )
        .for_each(|_| async {})
        .await;
    Ok(())
}

async fn donothing(client: Client) -> Result<()> {
    let parent = resource("bench.njuics.cn", "v1", "DoNothing", "donothings");
    let parents: Api<DynamicObject> = Api::all_with(client.clone(), &parent);
    Controller::new_with(parents, watcher::Config::default(), parent)
        .owns(Api::<Pod>::all(client.clone()), watcher::Config::default())
        .owns(Api::<PersistentVolumeClaim>::all(client), watcher::Config::default())
        .run(|_, _| async { Ok::<_, Error>(Action::await_change()) }, on_error, Arc::new(()))
        .for_each(|_| async {})
        .await;
    Ok(())
}

struct FooCtx {
    client: Client,
}

async fn reconcile_foo(parent: Arc<DynamicObject>, ctx: Arc<FooCtx>) -> Result<Action, Error> {
    let ns = parent.namespace().unwrap_or_default();
    let name = parent.data.pointer("/spec/deploymentName").and_then(|v| v.as_str()).unwrap_or_default().to_string();
    let replicas = parent.data.pointer("/spec/replicas").and_then(|v| v.as_i64()).unwrap_or(1);
    let owner =
        parent.controller_owner_ref(&resource("njuics.cn", "v1alpha1", "Foo", "foos")).ok_or_else(|| err("no uid"))?;
    let labels = json!({"app": "sample", "controller": parent.name_any()});
    let desired: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "ownerReferences": [owner]},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "nginx", "image": "nginx:stable"}]}}}
    }))
    .map_err(err)?;
    let api: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ns);
    // kube-rs's examples read the child with a GET in reconcile; `owns` only triggers.
    let current = api.get_opt(&name).await.map_err(err)?;
    let available = match &current {
        None => {
            match api.create(&PostParams::default(), &desired).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(e) => return Err(err(e)),
            }
            0
        }
        Some(d) => {
            if d.spec.as_ref().and_then(|s| s.replicas) != Some(replicas as i32) {
                let patch = json!({"spec": {"replicas": replicas}});
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(err)?;
            }
            d.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0)
        }
    };
    let status = json!({"status": {"availableReplicas": available, "observedGeneration": parent.metadata.generation}});
    if parent.data.get("status") != status.get("status") {
        let foos: Api<DynamicObject> =
            Api::namespaced_with(ctx.client.clone(), &ns, &resource("njuics.cn", "v1alpha1", "Foo", "foos"));
        foos.patch_status(&parent.name_any(), &PatchParams::default(), &Patch::Merge(&status)).await.map_err(err)?;
    }
    Ok(Action::await_change())
}

async fn foo(client: Client) -> Result<()> {
    let kind = resource("njuics.cn", "v1alpha1", "Foo", "foos");
    let foos: Api<DynamicObject> = Api::all_with(client.clone(), &kind);
    let deployments = Api::<Deployment>::all(client.clone());
    Controller::new_with(foos, watcher::Config::default(), kind)
        .owns(deployments, watcher::Config::default())
        .run(reconcile_foo, |_, _, _| Action::requeue(Duration::from_secs(1)), Arc::new(FooCtx { client }))
        .for_each(|_| async {})
        .await;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let client = client(&args).await?;
    match args.kind {
        Kind::Donothing => donothing(client).await,
        Kind::Tfjob => {
            let parent = resource("mlhub.njuics.cn", "v1alpha1", "TensorFlowJob", "tensorflowjobs");
            parent_with_caches(client.clone(), parent, Api::<Pod>::all(client.clone()), Api::<Service>::all(client))
                .await
        }
        Kind::Catset => {
            let parent = resource("mlhub.njuics.cn", "v1alpha1", "CatSet", "catsets");
            let pvcs = Api::<PersistentVolumeClaim>::all(client.clone());
            parent_with_caches(client.clone(), parent, Api::<Pod>::all(client), pvcs).await
        }
        Kind::Foo => foo(client).await,
    }
}
