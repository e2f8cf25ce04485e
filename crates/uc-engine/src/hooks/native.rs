//! Native hooks: Rust functions compiled into uc, for the operators it ships. They speak uc's typed hook
//! protocol ([`SyncRequest`] → [`SyncResponse`], [`CustomizeRequest`] → [`CustomizeResponse`]): the
//! engine hands them the request it built, with no JSON in between, and they hand back the answer
//! it validates like any other hook's.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use uc_api::hook::{CustomizeRequest, CustomizeResponse, SyncRequest, SyncResponse};

use super::protocol::HookError;
pub use crate::raw::Projection;

/// What a native sync (or finalize) call returns.
pub type SyncFuture = Pin<Box<dyn Future<Output = Result<SyncResponse, HookError>> + Send>>;

/// What a native customize call returns.
pub type CustomizeFuture = Pin<Box<dyn Future<Output = Result<CustomizeResponse, HookError>> + Send>>;

/// A hook written in Rust.
pub trait NativeHook: Send + Sync {
    /// Answers a sync call, or a finalize call (`request.finalizing`).
    fn sync(&self, request: SyncRequest) -> SyncFuture;

    /// Answers a customize call.
    fn customize(&self, request: CustomizeRequest) -> CustomizeFuture;

    /// What of its children's objects it reads: the engine may hand it no more (see [`reading`]).
    fn reads(&self) -> Projection {
        Projection::Whole
    }
}

/// A hook reading only `projection` of its children: the engine may keep no more of children it never
/// updates (issue 58; the built-in ReplicaSet, ReplicationController and Job read their pods' metadata
/// and status, not their spec).
pub fn reading(projection: Projection, hook: Arc<dyn NativeHook>) -> Arc<dyn NativeHook> {
    Arc::new(Reading { projection, hook })
}

struct Reading {
    projection: Projection,
    hook: Arc<dyn NativeHook>,
}

impl NativeHook for Reading {
    fn sync(&self, request: SyncRequest) -> SyncFuture {
        self.hook.sync(request)
    }

    fn customize(&self, request: CustomizeRequest) -> CustomizeFuture {
        self.hook.customize(request)
    }

    fn reads(&self) -> Projection {
        self.projection
    }
}

/// A sync (and finalize) hook on uc's typed protocol. It owns its request, so it can move children
/// out of it instead of copying them; `request.finalizing` tells a finalize call from a sync.
pub type SyncFn = dyn Fn(SyncRequest) -> Result<SyncResponse, HookError> + Send + Sync;

/// A customize hook on the typed protocol.
pub type CustomizeFn = dyn Fn(CustomizeRequest) -> Result<CustomizeResponse, HookError> + Send + Sync;

/// A sync hook on the typed protocol that waits on I/O (an operator talking to what it runs).
pub type AsyncSyncFn = dyn Fn(SyncRequest) -> SyncFuture + Send + Sync;

fn no_customize() -> CustomizeFuture {
    Box::pin(async { Err(HookError::Config("this native hook has no customize function".into())) })
}

struct Typed {
    sync: Arc<SyncFn>,
    customize: Option<Arc<CustomizeFn>>,
}

impl NativeHook for Typed {
    fn sync(&self, request: SyncRequest) -> SyncFuture {
        let answer = (self.sync)(request);
        Box::pin(async move { answer })
    }

    fn customize(&self, request: CustomizeRequest) -> CustomizeFuture {
        match &self.customize {
            Some(c) => {
                let answer = c(request);
                Box::pin(async move { answer })
            }
            None => no_customize(),
        }
    }
}

/// A native hook from typed functions: `sync` answers sync and finalize calls, `customize` (when the
/// controller names one) customize calls.
pub fn typed(sync: Arc<SyncFn>, customize: Option<Arc<CustomizeFn>>) -> Arc<dyn NativeHook> {
    Arc::new(Typed { sync, customize })
}

struct TypedAsync(Arc<AsyncSyncFn>);

impl NativeHook for TypedAsync {
    fn sync(&self, request: SyncRequest) -> SyncFuture {
        (self.0)(request)
    }

    fn customize(&self, _: CustomizeRequest) -> CustomizeFuture {
        no_customize()
    }
}

/// A native hook from an asynchronous typed sync function (it answers sync and finalize calls; such a
/// hook has no customize function).
pub fn typed_async(sync: Arc<AsyncSyncFn>) -> Arc<dyn NativeHook> {
    Arc::new(TypedAsync(sync))
}

/// What a factory answers: a hook made from a description, or why not.
pub type FactoryFuture = Pin<Box<dyn Future<Output = Result<Arc<dyn NativeHook>, HookError>> + Send>>;

/// Makes native hooks from a description in the controller (`native: {name, config}`): a chart, an
/// Ansible project.
pub type NativeFactory = dyn Fn(serde_json::Value) -> FactoryFuture + Send + Sync;

/// Native hooks by name, and factories of them by name.
#[derive(Clone, Default)]
pub struct NativeRegistry {
    hooks: HashMap<String, Arc<dyn NativeHook>>,
    factories: HashMap<String, Arc<NativeFactory>>,
}

impl NativeRegistry {
    /// Registers a hook.
    pub fn register(&mut self, name: impl Into<String>, hook: Arc<dyn NativeHook>) {
        self.hooks.insert(name.into(), hook);
    }

    /// Registers a factory: a controller's `native: {name, config}` hook is what it makes of `config`.
    pub fn register_factory(&mut self, name: impl Into<String>, factory: Arc<NativeFactory>) {
        self.factories.insert(name.into(), factory);
    }

    /// A hook by name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn NativeHook>> {
        self.hooks.get(name).cloned()
    }

    /// The hook a controller's `native` names: a registered one (no `config`), or one a factory makes
    /// of its `config`.
    pub async fn resolve(
        &self,
        name: &str,
        config: Option<&serde_json::Value>,
    ) -> Result<Arc<dyn NativeHook>, HookError> {
        match (config, self.factories.get(name)) {
            (Some(c), Some(f)) => f(c.clone()).await,
            (Some(_), None) => Err(HookError::Config(format!("no native hook {name:?} is made from a config"))),
            (None, _) => self.get(name).ok_or_else(|| match self.factories.contains_key(name) {
                true => HookError::Config(format!("the native hook {name:?} needs its config")),
                false => HookError::Config(format!("no native hook named {name:?}")),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(parent: serde_json::Value, finalizing: bool) -> SyncRequest {
        let children = std::collections::BTreeMap::from([(
            "ConfigMap.v1".to_string(),
            uc_api::hook::ObjectMap::from([("a".to_string(), json!({"kind": "ConfigMap"}).into())]),
        )]);
        SyncRequest { parent: parent.into(), children, finalizing, ..Default::default() }
    }

    #[tokio::test]
    async fn factories_make_hooks_from_their_config() {
        let mut r = NativeRegistry::default();
        let factory: Arc<NativeFactory> = Arc::new(|config: serde_json::Value| {
            Box::pin(async move {
                let greeting = config["greeting"].as_str().ok_or(HookError::Config("no greeting".into()))?.to_string();
                let sync: Arc<SyncFn> = Arc::new(move |_| {
                    Ok(SyncResponse { status: Some(json!({"said": greeting})), ..Default::default() })
                });
                Ok(typed(sync, None))
            })
        });
        r.register_factory("greeter", factory);
        let hook = r.resolve("greeter", Some(&json!({"greeting": "hi"}))).await.unwrap();
        assert_eq!(hook.sync(request(json!({}), false)).await.unwrap().status, Some(json!({"said": "hi"})));
        let e = |r: Result<Arc<dyn NativeHook>, HookError>| r.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e(r.resolve("greeter", Some(&json!({}))).await).contains("no greeting"));
        assert!(e(r.resolve("greeter", None).await).contains("needs its config"));
        assert!(e(r.resolve("other", Some(&json!({}))).await).contains("is made from a config"));
        assert!(e(r.resolve("other", None).await).contains("no native hook named"));
    }

    #[tokio::test]
    async fn typed_hooks_answer_sync_finalize_and_customize() {
        let sync: Arc<SyncFn> = Arc::new(|r: SyncRequest| {
            let name = r.parent["metadata"]["name"].as_str().ok_or(HookError::Failed("no name".into()))?.to_string();
            let children =
                r.children.into_values().flat_map(|m| m.into_values()).map(std::sync::Arc::unwrap_or_clone).collect();
            Ok(SyncResponse {
                status: Some(json!({"name": name})),
                children,
                finalized: Some(r.finalizing),
                ..Default::default()
            })
        });
        let customize: Arc<CustomizeFn> = Arc::new(|_| Ok(CustomizeResponse::default()));
        let hook = typed(sync.clone(), Some(customize));
        let out = hook.sync(request(json!({"metadata": {"name": "p"}}), false)).await.unwrap();
        assert_eq!(
            out.into_value(),
            json!({"status": {"name": "p"}, "children": [{"kind": "ConfigMap"}], "finalized": false})
        );
        let finalized = hook.sync(request(json!({"metadata": {"name": "p"}}), true)).await.unwrap();
        assert_eq!(finalized.finalized, Some(true));
        let c = hook.customize(CustomizeRequest::default()).await.unwrap();
        assert!(c.related_resources.is_empty());
        let refused = hook.sync(request(json!({}), false)).await.unwrap_err();
        assert_eq!(refused.to_string(), "hook failed: no name");
        let without = typed(sync, None);
        assert!(matches!(without.customize(CustomizeRequest::default()).await, Err(HookError::Config(_))));
    }

    #[tokio::test]
    async fn asynchronous_hooks_answer_after_waiting() {
        let waits: Arc<AsyncSyncFn> = Arc::new(|r: SyncRequest| -> SyncFuture {
            Box::pin(async move {
                tokio::task::yield_now().await;
                Ok(SyncResponse {
                    status: Some(std::sync::Arc::unwrap_or_clone(r.parent)),
                    resync_after_seconds: Some(1.0),
                    ..Default::default()
                })
            })
        });
        let hook = typed_async(waits);
        let out = hook.sync(request(json!({"metadata": {"name": "p"}}), false)).await.unwrap();
        assert_eq!(
            out.into_value(),
            json!({"status": {"metadata": {"name": "p"}}, "children": [], "resyncAfterSeconds": 1.0})
        );
        assert!(matches!(hook.customize(CustomizeRequest::default()).await, Err(HookError::Config(_))));
    }
}
