//! The MultiClusterZooKeeper operator (seed 002): on a Karmada control plane (Karmada itself, or uc's
//! embedded one, `uc up --control-plane`) a `MultiClusterZooKeeper` becomes a ZookeeperCluster, a
//! ServiceExport and ServiceImport of its headless Service, and a PropagationPolicy; Karmada divides
//! the replicas over the member clusters (the ResourceBinding's scheduling result), this operator's
//! resource interpreter revises every member's replicas to 0, and the deployment records of the
//! status move one cluster at a time from pending to deploying to completed, each cluster given its
//! part — its replicas, its server ids and every server's address — by an OverridePolicy of its own.
//! Each member's ZooKeeper operator runs its part (`spec.ensemble`), joining the servers the clusters
//! before it started.
//!
//! The hook is native (a function on the engine): it reads the ResourceBinding through its client,
//! as any Karmada user would; `plan.rs` is the decision, `records.rs` the records' rules,
//! `interpreter.rs` the webhook.

pub mod binding;
pub mod interpreter;
pub mod plan;
pub mod records;
pub mod types;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde::Deserialize;
use serde_json::Value;
use uc_api::hook::{ObjectMap, SyncRequest, SyncResponse};
use uc_engine::hooks::native::{self, AsyncSyncFn, NativeRegistry, SyncFuture};

use crate::objects::{json_of, take_children};
use binding::Binding;
use types::{MultiClusterZooKeeper, MultiClusterZooKeeperSpec, MultiClusterZooKeeperStatus};

/// Name of the native hook.
pub const HOOK: &str = "multicluster-zookeeper";

/// The MultiClusterZooKeeper CRD.
pub fn crd() -> CustomResourceDefinition {
    types::MultiClusterZooKeeper::crd()
}

/// The operator's CRDs (the ZookeeperCluster's too: it is the resource template it propagates).
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![crd(), crate::zookeeper::crd()]
}

/// The operator's UniversalControllers.
pub fn controllers() -> Vec<uc_api::controller::UniversalController> {
    use uc_api::controller::UpdateMethod::InPlace;
    let children = [
        (plan::ZK_API, "zookeeperclusters", InPlace),
        ("multicluster.x-k8s.io/v1alpha1", "serviceexports", InPlace),
        ("multicluster.x-k8s.io/v1alpha1", "serviceimports", InPlace),
        ("policy.karmada.io/v1alpha1", "propagationpolicies", InPlace),
        ("policy.karmada.io/v1alpha1", "overridepolicies", InPlace),
        ("v1", "secrets", InPlace),
    ];
    let spec = crate::objects::native_spec((types::API_VERSION, "multiclusterzookeepers"), &children, HOOK);
    let spec = uc_api::controller::UniversalControllerSpec { resync_period_seconds: Some(10.0), ..spec };
    let label = ("uc.njuics.cn/operator", "multicluster-zookeeper");
    vec![crate::objects::universal_controller("multicluster-zookeeper-operator", label, spec)]
}

/// Registers the native hook, and serves the resource interpreter webhook (registering it with the
/// control plane as soon as Karmada's API is there).
pub fn register(natives: &mut NativeRegistry, client: kube::Client, listen: interpreter::Listen) {
    let hook_client = client.clone();
    let sync_fn: Arc<AsyncSyncFn> = Arc::new(move |request: SyncRequest| -> SyncFuture {
        let client = hook_client.clone();
        Box::pin(async move { Ok(sync(&client, request).await) })
    });
    natives.register(HOOK, native::typed_async(sync_fn));
    tokio::spawn(async move {
        let (url, ca) = match interpreter::serve(listen).await {
            Ok(x) => x,
            Err(e) => {
                tracing::error!(error = %e, "the ZookeeperCluster interpreter webhook could not start");
                return;
            }
        };
        let config = interpreter::configuration(&url, &ca);
        let ar = ApiResource {
            group: "config.karmada.io".into(),
            version: "v1alpha1".into(),
            api_version: "config.karmada.io/v1alpha1".into(),
            kind: "ResourceInterpreterWebhookConfiguration".into(),
            plural: "resourceinterpreterwebhookconfigurations".into(),
        };
        let api: Api<DynamicObject> = Api::all_with(client, &ar);
        let params = PatchParams::apply("uc-multicluster-zookeeper").force();
        // Karmada's CRDs may come a moment after the engine.
        while let Err(e) = api.patch(interpreter::CONFIGURATION, &params, &Patch::Apply(&config)).await {
            tracing::debug!(error = %e, "interpreter webhook not registered yet");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        tracing::info!(%url, "ZookeeperCluster interpreter webhook registered");
    });
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// One sync of a MultiClusterZooKeeper. Never an error: what goes wrong is in the status.
async fn sync(client: &kube::Client, mut request: SyncRequest) -> SyncResponse {
    let overrides = take_children(&mut request, "OverridePolicy.policy.karmada.io/v1alpha1");
    let templates = take_children(&mut request, &format!("ZookeeperCluster.{}", plan::ZK_API));
    let secrets = take_children(&mut request, "Secret.v1");
    let parent = &request.parent;
    // The status as it was (one that does not read is started anew: its records are the operator's own).
    let previous: MultiClusterZooKeeperStatus = parent
        .get("status")
        .and_then(|s| {
            MultiClusterZooKeeperStatus::deserialize(s)
                .inspect_err(|e| tracing::warn!(error = %e, "the status does not read"))
                .ok()
        })
        .unwrap_or_default();
    let metadata = parent.get("metadata").and_then(|m| ObjectMeta::deserialize(m).ok()).unwrap_or_default();
    let spec = match parent.get("spec").map(MultiClusterZooKeeperSpec::deserialize) {
        Some(Ok(s)) => s,
        Some(Err(e)) => return invalid_spec(request, [overrides, templates, secrets], previous, &format!("spec: {e}")),
        None => return invalid_spec(request, [overrides, templates, secrets], previous, "spec: missing"),
    };
    let parent = MultiClusterZooKeeper { metadata, spec, status: Some(previous) };
    let (name, ns) =
        (parent.metadata.name.as_deref().unwrap_or_default(), parent.metadata.namespace.as_deref().unwrap_or_default());
    let binding = read_binding(client, ns, &plan::binding_name(name)).await;
    let admin = match secrets.get(&plan::admin_secret(name)) {
        Some(s) => crate::objects::as_written(s),
        None => json_of(&admin_secret(name, ns)),
    };
    let seen = plan::Observed {
        binding: binding.as_ref(),
        template: templates.get(name).map(|t| &**t),
        overrides: &overrides,
    };
    let decision = plan::plan(&parent, seen, admin, &now());
    SyncResponse {
        status: Some(json_of(&decision.status)),
        children: decision.children,
        resync_after_seconds: Some(if decision.busy { 2.0 } else { 10.0 }),
        finalized: None,
    }
}

/// A spec that does not read: what runs is kept (a bad edit must not take an ensemble down), and the
/// status says why nothing changes.
fn invalid_spec(
    request: SyncRequest,
    taken: [ObjectMap; 3],
    previous: MultiClusterZooKeeperStatus,
    why: &str,
) -> SyncResponse {
    let mut kept: Vec<Value> = request.children.values().flat_map(|m| m.values().map(|o| Value::clone(o))).collect();
    kept.extend(taken.into_iter().flat_map(|m| m.into_values().map(Arc::unwrap_or_clone)));
    let mut status = previous.clone();
    let invalid = uc_api::conditions::Condition::new("Ready", false, "InvalidSpec", why);
    uc_api::conditions::set_in(&mut status.conditions, invalid, &previous.conditions, &now());
    SyncResponse { status: Some(json_of(&status)), children: kept, ..Default::default() }
}

/// A new Secret with a random super user password, and its digest for the servers.
fn admin_secret(name: &str, namespace: &str) -> Secret {
    use k8s_openapi::ByteString;
    let password: String = (0..32).map(|_| char::from(b'a' + rand::random_range(0..26u8))).collect();
    let digest = crate::zookeeper::client::super_digest(&password);
    let data = [("password", password), ("digest", digest)].map(|(k, v)| (k.to_string(), ByteString(v.into_bytes())));
    Secret {
        metadata: ObjectMeta {
            name: Some(plan::admin_secret(name)),
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        type_: Some("Opaque".into()),
        data: Some(data.into()),
        ..Default::default()
    }
}

async fn read_binding(client: &kube::Client, namespace: &str, name: &str) -> Option<Binding> {
    let ar = ApiResource {
        group: "work.karmada.io".into(),
        version: "v1alpha2".into(),
        api_version: "work.karmada.io/v1alpha2".into(),
        kind: "ResourceBinding".into(),
        plural: "resourcebindings".into(),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &ar);
    match api.get_opt(name).await {
        Ok(b) => {
            let read = b.map(|b| serde_json::to_value(b).and_then(Binding::deserialize)).transpose();
            read.inspect_err(|e| tracing::warn!(binding = name, error = %e, "the ResourceBinding does not read"))
                .ok()?
        }
        Err(e) => {
            tracing::debug!(binding = name, error = %e, "ResourceBinding not read");
            None
        }
    }
}
