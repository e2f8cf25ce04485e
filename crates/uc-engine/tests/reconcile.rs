//! `reconcile` end to end but in-process: the embedded API server on 127.0.0.1:0, the engine with a
//! native hook, and one test per update strategy. Each test changes the parent and observes what the
//! engine did: the parent's status (written after every child action of a sync) and a watch of the
//! children from the resourceVersion before the change.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use parking_lot::Mutex;
use serde_json::{Value, json};
use uc_api::hook::{SyncRequest, SyncResponse};
use uc_engine::hooks::HookError;
use uc_engine::hooks::native::{NativeRegistry, typed};
use uc_engine::{Engine, EngineOptions};

const NS: &str = "default";
const WAIT: Duration = Duration::from_secs(60);

/// The API server and the engine, both in this process.
struct Cluster {
    client: Client,
    _engine: Engine,
    _server: uc_apiserver::RunningServer,
    _dir: tempfile::TempDir,
}

/// The hook: `spec.replicas` ConfigMaps `<parent>-<i>` holding `spec.value`; status `{value}`. It
/// panics on the value `boom` (a native hook with a bug).
fn configmaps(request: SyncRequest) -> Result<SyncResponse, HookError> {
    let parent = &request.parent;
    let name = parent["metadata"]["name"].as_str().ok_or_else(|| HookError::Config("no name".into()))?;
    let value = parent["spec"]["value"].clone();
    assert_ne!(value, "boom", "the hook met boom");
    let replicas = parent["spec"]["replicas"].as_u64().unwrap_or(1);
    let children: Vec<Value> = (0..replicas)
        .map(|i| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("{name}-{i}")}, "data": {"value": value}}))
        .collect();
    Ok(SyncResponse { status: Some(json!({"value": value})), children, ..Default::default() })
}

fn foo_resource() -> ApiResource {
    ApiResource {
        group: "test.uc.dev".into(),
        version: "v1".into(),
        api_version: "test.uc.dev/v1".into(),
        kind: "Foo".into(),
        plural: "foos".into(),
    }
}

/// Polls `f` until it gives a value; fails after `WAIT`.
async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

impl Cluster {
    async fn start() -> Cluster {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = uc_apiserver::Config::new(dir.path());
        config.port = 0;
        config.durable = false;
        let server = uc_apiserver::start(config).await.expect("API server starts");
        let kc = Kubeconfig::read_from(&server.kubeconfig).expect("kubeconfig");
        let kc = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await.expect("config");
        let client = Client::try_from(kc).expect("client");
        let crd: CustomResourceDefinition = serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "foos.test.uc.dev"},
            "spec": {"group": "test.uc.dev", "scope": "Namespaced",
                "names": {"plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList"},
                "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
        }))
        .expect("CRD");
        Api::<CustomResourceDefinition>::all(client.clone()).create(&PostParams::default(), &crd).await.expect("CRD");
        let mut natives = NativeRegistry::default();
        natives.register("configmaps", typed(Arc::new(configmaps), None));
        let options = EngineOptions { workers: 2, natives, ..Default::default() };
        let engine = Engine::start(client.clone(), options).await.expect("engine starts");
        Cluster { client, _engine: engine, _server: server, _dir: dir }
    }

    fn foos(&self) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), NS, &foo_resource())
    }

    fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), NS)
    }

    /// Registers the controller with `method` for its ConfigMaps and waits until it reports Ready.
    async fn controller(&self, method: &str) {
        let uc: DynamicObject = serde_json::from_value(json!({
            "apiVersion": uc_api::controller::API_VERSION, "kind": "UniversalController",
            "metadata": {"name": "foo"},
            "spec": {
                "parentResource": {"apiVersion": "test.uc.dev/v1", "resource": "foos"},
                "childResources": [{"apiVersion": "v1", "resource": "configmaps", "updateStrategy": {"method": method}}],
                "generateSelector": true,
                "hooks": {"sync": {"native": {"name": "configmaps"}}},
            }
        }))
        .expect("UC");
        let ucs = Api::<DynamicObject>::all_with(
            self.client.clone(),
            &uc_resource("UniversalController", "universalcontrollers"),
        );
        ucs.create(&PostParams::default(), &uc).await.expect("UniversalController");
        eventually("the controller to be Ready", || async {
            let o = ucs.get("foo").await.ok()?;
            let conds = o.data.pointer("/status/conditions")?.as_array()?.clone();
            conds.iter().any(|c| c["type"] == "Ready" && c["status"] == "True").then_some(())
        })
        .await;
    }

    /// Creates parent `p` and waits for its first sync to finish.
    async fn parent(&self, replicas: u64, value: &str) {
        let p: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "test.uc.dev/v1", "kind": "Foo", "metadata": {"name": "p"},
            "spec": {"replicas": replicas, "value": value}
        }))
        .expect("parent");
        self.foos().create(&PostParams::default(), &p).await.expect("parent");
        self.synced(value).await;
        self.children_at(value, replicas as usize).await;
    }

    /// Waits until the parent's status says a sync of `value` finished (status is written last).
    async fn synced(&self, value: &str) {
        eventually(&format!("a sync of {value}"), || async {
            let p = self.foos().get("p").await.ok()?;
            (p.data.pointer("/status/value") == Some(&json!(value))).then_some(())
        })
        .await;
    }

    /// Waits until `n` children all hold `value`; their uids by name.
    async fn children_at(&self, value: &str, n: usize) -> BTreeMap<String, String> {
        eventually(&format!("{n} children at {value}"), || async {
            let list = self.configmaps().list(&ListParams::default()).await.ok()?;
            let children: BTreeMap<String, String> = list
                .items
                .iter()
                .filter(|c| c.metadata.name.as_deref().is_some_and(|n| n.starts_with("p-")))
                .filter(|c| c.data.as_ref().and_then(|d| d.get("value")).map(String::as_str) == Some(value))
                .map(|c| (c.metadata.name.clone().unwrap_or_default(), c.metadata.uid.clone().unwrap_or_default()))
                .collect();
            (children.len() == n).then_some(children)
        })
        .await
    }

    async fn change(&self, value: &str) {
        let patch = json!({"spec": {"value": value}});
        self.foos().patch("p", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("spec change");
    }

    /// Records the children's watch events from now on, as (type, name, value).
    async fn watch_children(&self) -> Events {
        let rv = self.configmaps().list(&ListParams::default()).await.expect("list").metadata.resource_version;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let api = self.configmaps();
        let out = seen.clone();
        let mut stream =
            api.watch(&WatchParams::default().timeout(290), &rv.unwrap_or_default()).await.expect("watch").boxed();
        tokio::spawn(async move {
            while let Ok(Some(ev)) = stream.try_next().await {
                let (t, c) = match ev {
                    WatchEvent::Added(c) => ("ADDED", c),
                    WatchEvent::Modified(c) => ("MODIFIED", c),
                    WatchEvent::Deleted(c) => ("DELETED", c),
                    _ => continue,
                };
                let value = c.data.as_ref().and_then(|d| d.get("value")).cloned().unwrap_or_default();
                out.lock().push((t.to_string(), c.metadata.name.unwrap_or_default(), value));
            }
        });
        seen
    }

    async fn rolling_events(&self) -> usize {
        let events: Api<Event> = Api::namespaced(self.client.clone(), NS);
        let list = events.list(&ListParams::default()).await.expect("events");
        list.items.iter().filter(|e| e.reason.as_deref() == Some("RollingUpdate")).count()
    }

    async fn updated_condition(&self) -> Value {
        eventually("the Updated condition to be True", || async {
            let p = self.foos().get("p").await.ok()?;
            let conds = p.data.pointer("/status/conditions")?.as_array()?.clone();
            conds.into_iter().find(|c| c["type"] == "Updated" && c["status"] == "True")
        })
        .await
    }
}

fn uc_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: uc_api::controller::GROUP.into(),
        version: "v1alpha1".into(),
        api_version: uc_api::controller::API_VERSION.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

type Events = Arc<Mutex<Vec<(String, String, String)>>>;

/// The events recorded once `n` of type `kind` arrived.
async fn seen(events: &Events, kind: &str, n: usize) -> Vec<(String, String, String)> {
    eventually(&format!("{n} {kind} events"), || async {
        let e = events.lock().clone();
        (e.iter().filter(|(t, _, _)| t == kind).count() >= n).then_some(e)
    })
    .await
}

/// At no point of the event sequence were two children missing at once (deleted and not yet back).
fn at_most_one_missing(events: &[(String, String, String)]) {
    let mut missing = std::collections::BTreeSet::new();
    for (t, name, _) in events {
        match t.as_str() {
            "DELETED" => {
                missing.insert(name.clone());
            }
            _ => {
                missing.remove(name);
            }
        }
        assert!(missing.len() <= 1, "{missing:?} missing at once in {events:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_delete_leaves_children_until_they_are_deleted() {
    let c = Cluster::start().await;
    c.controller("OnDelete").await;
    c.parent(2, "a").await;
    let before = c.children_at("a", 2).await;
    c.change("b").await;
    c.synced("b").await;
    // The sync of "b" is done (status is written after its child actions): nothing was updated.
    assert_eq!(c.children_at("a", 2).await, before);
    c.configmaps().delete("p-0", &DeleteParams::default()).await.expect("delete");
    eventually("p-0 recreated at b", || async {
        let cm = c.configmaps().get("p-0").await.ok()?;
        (cm.data?.get("value")? == "b").then_some(())
    })
    .await;
    assert_eq!(c.configmaps().get("p-1").await.expect("p-1").metadata.uid.as_ref(), before.get("p-1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recreate_replaces_differing_children() {
    let c = Cluster::start().await;
    c.controller("Recreate").await;
    c.parent(2, "a").await;
    let before = c.children_at("a", 2).await;
    c.change("b").await;
    let after = c.children_at("b", 2).await;
    for (name, uid) in &after {
        assert_ne!(before.get(name), Some(uid), "{name} is a new object");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_place_updates_children_keeping_them() {
    let c = Cluster::start().await;
    c.controller("InPlace").await;
    c.parent(2, "a").await;
    let before = c.children_at("a", 2).await;
    c.change("b").await;
    assert_eq!(c.children_at("b", 2).await, before, "same objects, new content");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_recreate_replaces_one_child_at_a_time() {
    let c = Cluster::start().await;
    c.controller("RollingRecreate").await;
    c.parent(3, "a").await;
    let before = c.children_at("a", 3).await;
    let events = c.watch_children().await;
    c.change("b").await;
    let after = c.children_at("b", 3).await;
    let cond = c.updated_condition().await;
    assert_eq!(cond["reason"], "RolloutComplete", "{cond}");
    for (name, uid) in &after {
        assert_ne!(before.get(name), Some(uid), "{name} is a new object");
    }
    let events = seen(&events, "DELETED", 3).await;
    at_most_one_missing(&events);
    assert_eq!(c.rolling_events().await, 3, "one move per child");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_in_place_moves_children_through_revisions() {
    let c = Cluster::start().await;
    c.controller("RollingInPlace").await;
    c.parent(3, "a").await;
    let before = c.children_at("a", 3).await;
    let events = c.watch_children().await;
    c.change("b").await;
    assert_eq!(c.children_at("b", 3).await, before, "same objects, new content");
    let cond = c.updated_condition().await;
    assert_eq!(cond["reason"], "RolloutComplete", "{cond}");
    let events = seen(&events, "MODIFIED", 3).await;
    assert!(events.iter().all(|(t, _, v)| t == "MODIFIED" && v == "b"), "{events:?}");
    assert_eq!(c.rolling_events().await, 3, "one move per child");
    // The revisions: one holds every child now; the old one, left with none, is gone.
    let revisions = Api::<DynamicObject>::namespaced_with(
        c.client.clone(),
        NS,
        &uc_resource("ControllerRevision", "controllerrevisions"),
    );
    let list = eventually("one ControllerRevision", || async {
        let l = revisions.list(&ListParams::default()).await.ok()?;
        (l.items.len() == 1).then_some(l)
    })
    .await;
    let children = list.items[0].data["children"].to_string();
    assert!(["p-0", "p-1", "p-2"].iter().all(|n| children.contains(n)), "{children}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_panics_fails_its_reconcile_and_the_parent_syncs_again() {
    let c = Cluster::start().await;
    c.controller("InPlace").await;
    let p: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "test.uc.dev/v1", "kind": "Foo", "metadata": {"name": "p"},
        "spec": {"replicas": 1, "value": "boom"}
    }))
    .expect("parent");
    c.foos().create(&PostParams::default(), &p).await.expect("parent");
    let events: Api<Event> = Api::namespaced(c.client.clone(), NS);
    let message = eventually("an InternalError event on the parent", || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("InternalError") && e.involved_object.name.as_deref() == Some("p"))
            .and_then(|e| e.message)
    })
    .await;
    assert!(message.contains("the reconcile panicked") && message.contains("the hook met boom"), "{message}");
    // The parent was let go by the reconcile that panicked: its next change syncs.
    c.change("v2").await;
    c.synced("v2").await;
    c.children_at("v2", 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_that_stops_matching_the_selector_is_let_go() {
    let c = Cluster::start().await;
    let uc: DynamicObject = serde_json::from_value(json!({
        "apiVersion": uc_api::controller::API_VERSION, "kind": "UniversalController",
        "metadata": {"name": "tiered"},
        "spec": {
            "parentResource": {"apiVersion": "test.uc.dev/v1", "resource": "foos",
                               "labelSelector": {"matchLabels": {"tier": "a"}}},
            "childResources": [{"apiVersion": "v1", "resource": "configmaps"}],
            "generateSelector": true,
            "hooks": {"sync": {"native": {"name": "configmaps"}}, "finalize": {"native": {"name": "configmaps"}}},
        }
    }))
    .expect("UC");
    let ucs =
        Api::<DynamicObject>::all_with(c.client.clone(), &uc_resource("UniversalController", "universalcontrollers"));
    ucs.create(&PostParams::default(), &uc).await.expect("UniversalController");
    let p: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "test.uc.dev/v1", "kind": "Foo", "metadata": {"name": "p", "labels": {"tier": "a"}},
        "spec": {"replicas": 1, "value": "v1"}
    }))
    .expect("parent");
    c.foos().create(&PostParams::default(), &p).await.expect("parent");
    c.synced("v1").await;
    let finalizers = |o: &DynamicObject| o.metadata.finalizers.clone().unwrap_or_default();
    eventually("the controller's finalizer", || async {
        let p = c.foos().get("p").await.ok()?;
        finalizers(&p).contains(&"universalcontroller.njuics.cn/tiered".to_string()).then_some(())
    })
    .await;
    let patch = json!({"metadata": {"labels": {"tier": "b"}}});
    c.foos().patch("p", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("relabel");
    eventually("the finalizer removed from the parent no longer selected", || async {
        let p = c.foos().get("p").await.ok()?;
        finalizers(&p).is_empty().then_some(())
    })
    .await;
    c.children_at("v1", 1).await;
    // Not selected, the parent is not synced: no child is written for its spec change, and its deletion
    // does not wait for the finalize hook.
    let events = c.watch_children().await;
    c.change("v2").await;
    c.foos().delete("p", &DeleteParams::default()).await.expect("delete");
    eventually("the parent gone without its finalize hook", || async {
        c.foos().get("p").await.is_err().then_some(())
    })
    .await;
    assert!(
        events.lock().iter().all(|(_, _, value)| value != "v2"),
        "no child was written for a parent the selector does not select: {:?}",
        events.lock()
    );
}
