//! Native hooks: Rust functions compiled into uc, for the operators it ships (same request/response
//! JSON as every other hook, so they are tested the same way).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use uc_api::hook::{CustomizeRequest, CustomizeResponse, SyncRequest, SyncResponse};

use super::protocol::{HookError, HookKind};

/// Boxed future returned by native hooks.
pub type HookFuture = Pin<Box<dyn Future<Output = Result<Value, HookError>> + Send>>;

/// A hook written in Rust.
pub trait NativeHook: Send + Sync {
    /// Answers one request.
    fn call(&self, kind: HookKind, request: Value) -> HookFuture;
}

impl<F> NativeHook for F
where
    F: Fn(HookKind, Value) -> HookFuture + Send + Sync,
{
    fn call(&self, kind: HookKind, request: Value) -> HookFuture {
        self(kind, request)
    }
}

/// A sync (and finalize) hook on uc's typed protocol. It owns its request, so it can move children
/// out of it instead of copying them; `request.finalizing` tells a finalize call from a sync.
pub type SyncFn = dyn Fn(SyncRequest) -> Result<SyncResponse, HookError> + Send + Sync;

/// A customize hook on the typed protocol.
pub type CustomizeFn = dyn Fn(CustomizeRequest) -> Result<CustomizeResponse, HookError> + Send + Sync;

/// A native hook from typed functions: `sync` answers sync and finalize calls, `customize` (when the
/// controller names one) customize calls.
pub fn typed(sync: Arc<SyncFn>, customize: Option<Arc<CustomizeFn>>) -> Arc<dyn NativeHook> {
    Arc::new(move |kind: HookKind, request: Value| -> HookFuture {
        let answer = match (kind, &customize) {
            (HookKind::Customize, Some(c)) => serde_json::from_value::<CustomizeRequest>(request)
                .map_err(|e| HookError::InvalidRequest(e.to_string()))
                .and_then(|r| c(r))
                .and_then(|r| serde_json::to_value(r).map_err(|e| HookError::InvalidResponse(e.to_string()))),
            (HookKind::Customize, None) => Err(HookError::Config("this native hook has no customize function".into())),
            _ => serde_json::from_value::<SyncRequest>(request)
                .map_err(|e| HookError::InvalidRequest(e.to_string()))
                .and_then(|r| sync(r))
                .map(SyncResponse::into_value),
        };
        Box::pin(async move { answer })
    })
}

/// Native hooks by name.
#[derive(Clone, Default)]
pub struct NativeRegistry {
    hooks: HashMap<String, Arc<dyn NativeHook>>,
}

impl NativeRegistry {
    /// Registers a hook.
    pub fn register(&mut self, name: impl Into<String>, hook: Arc<dyn NativeHook>) {
        self.hooks.insert(name.into(), hook);
    }

    /// A hook by name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn NativeHook>> {
        self.hooks.get(name).cloned()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn typed_hooks_get_decoded_requests_and_answer_json() {
        let sync: Arc<SyncFn> = Arc::new(|r: SyncRequest| {
            let name = r.parent["metadata"]["name"].as_str().ok_or(HookError::Failed("no name".into()))?.to_string();
            let children = r.children.into_values().flat_map(|m| m.into_values()).collect();
            Ok(SyncResponse {
                status: Some(json!({"name": name})),
                children,
                finalized: Some(r.finalizing),
                ..Default::default()
            })
        });
        let customize: Arc<CustomizeFn> = Arc::new(|_| Ok(CustomizeResponse::default()));
        let hook = typed(sync, Some(customize));
        let request = json!({"controller": {}, "parent": {"metadata": {"name": "p"}},
            "children": {"ConfigMap.v1": {"a": {"kind": "ConfigMap"}}}, "related": {}, "finalizing": false});
        let out = hook.call(HookKind::Sync, request.clone()).await.unwrap();
        assert_eq!(out, json!({"status": {"name": "p"}, "children": [{"kind": "ConfigMap"}], "finalized": false}));
        let mut finalize = request.clone();
        finalize["finalizing"] = json!(true);
        assert_eq!(hook.call(HookKind::Finalize, finalize).await.unwrap()["finalized"], json!(true));
        let c = hook.call(HookKind::Customize, json!({"controller": {}, "parent": {}})).await.unwrap();
        assert_eq!(c, json!({"relatedResources": []}));
        let bad = hook.call(HookKind::Sync, json!({"parent": 1})).await.unwrap_err();
        assert!(matches!(bad, HookError::InvalidRequest(_)), "{bad}");
        let refused = hook.call(
            HookKind::Sync,
            json!({"controller": {}, "parent": {}, "children": {}, "related": {}, "finalizing": false}),
        );
        assert_eq!(refused.await.unwrap_err().to_string(), "hook failed: no name");
    }
}
