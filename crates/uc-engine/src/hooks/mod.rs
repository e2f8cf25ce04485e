//! Hooks behind one interface: webhooks, JavaScript run in-process, and native Rust hooks.

pub mod javascript;
pub mod native;
mod protocol;
pub mod webhook;

pub use protocol::{HookError, HookKind};

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use uc_api::controller::Hook as HookSpec;

/// A hook implementation: what a UniversalController's hook spec names, ready to call.
#[derive(Clone)]
pub enum HookImpl {
    /// HTTP(S) webhook.
    Webhook(Arc<webhook::WebhookHook>),
    /// In-process JavaScript.
    JavaScript(Arc<javascript::JsHook>),
    /// Native Rust.
    Native(Arc<dyn native::NativeHook>),
}

impl HookImpl {
    /// Builds a hook from its spec. JavaScript from a ConfigMap is passed in already resolved.
    pub fn from_spec(
        spec: &HookSpec,
        js_source: Option<String>,
        natives: &native::NativeRegistry,
        resolver: crate::names::Resolver,
    ) -> Result<Self, HookError> {
        let set =
            [spec.webhook.is_some(), spec.javascript.is_some(), spec.native.is_some()].iter().filter(|x| **x).count();
        if set != 1 {
            return Err(HookError::Config("a hook needs exactly one of webhook, javascript, native".into()));
        }
        if let Some(w) = &spec.webhook {
            return Ok(HookImpl::Webhook(Arc::new(webhook::WebhookHook::new(w, resolver)?)));
        }
        if let Some(js) = &spec.javascript {
            let source = js_source
                .or_else(|| js.source.clone())
                .ok_or_else(|| HookError::Config("javascript needs source or configMapRef".into()))?;
            let limits = javascript::JsLimits::from_spec(js)?;
            return Ok(HookImpl::JavaScript(Arc::new(javascript::JsHook::new(source, limits)?)));
        }
        let name = spec.native.as_ref().map(|n| n.name.clone()).unwrap_or_default();
        natives
            .get(&name)
            .map(HookImpl::Native)
            .ok_or_else(|| HookError::Config(format!("no native hook named {name:?}")))
    }

    /// Calls the hook with a request; returns the raw JSON answer and the call's duration. The request is
    /// taken, not borrowed: a native hook gets it without a copy.
    pub async fn call(&self, kind: HookKind, request: Value) -> (Result<Value, HookError>, Duration) {
        let started = Instant::now();
        let r = match self {
            HookImpl::Webhook(w) => w.call(&request).await,
            HookImpl::JavaScript(j) => j.call(kind, &request).await,
            HookImpl::Native(n) => n.call(kind, request).await,
        };
        (r, started.elapsed())
    }
}
