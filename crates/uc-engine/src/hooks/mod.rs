//! Hooks behind one interface: webhooks, JavaScript run in-process, and native Rust hooks.

mod close_delimited;
pub mod credentials;
pub mod dialect;
pub mod exec;
pub mod javascript;
mod js_threads;
mod js_values;
pub mod native;
mod protocol;
pub mod sandbox;
pub mod webhook;

pub use protocol::{HookError, HookKind};

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::recording::CallFailed;
use serde_json::Value;
use uc_api::controller::Hook as HookSpec;
use uc_api::hook::{CustomizeRequest, CustomizeResponse, SyncRequest, SyncResponse};

/// A hook implementation: what a UniversalController's hook spec names, ready to call.
#[derive(Clone)]
pub enum HookImpl {
    /// HTTP(S) webhook.
    Webhook(Arc<webhook::WebhookHook>),
    /// In-process JavaScript.
    JavaScript(Arc<javascript::JsHook>),
    /// A program, run for each call.
    Exec(Arc<exec::ExecHook>),
    /// Native Rust.
    Native(Arc<dyn native::NativeHook>),
}

impl HookImpl {
    /// What of its children's objects the hook reads: a native hook says, any other reads them whole.
    pub fn reads(&self) -> crate::raw::Projection {
        match self {
            HookImpl::Native(h) => h.reads(),
            _ => crate::raw::Projection::Whole,
        }
    }

    /// Builds a hook of controller `label` from its spec, with the engine's native hooks and its exec
    /// policy. JavaScript from a ConfigMap and a webhook's credentials from Secrets are passed in
    /// already resolved.
    pub async fn from_spec(
        spec: &HookSpec,
        js_source: Option<String>,
        credentials: credentials::Credentials,
        (natives, exec): (&native::NativeRegistry, &sandbox::ExecPolicy),
        resolver: crate::names::Resolver,
        label: &str,
    ) -> Result<Self, HookError> {
        let set = [spec.webhook.is_some(), spec.javascript.is_some(), spec.exec.is_some(), spec.native.is_some()]
            .iter()
            .filter(|x| **x)
            .count();
        if set != 1 {
            return Err(HookError::Config("a hook needs exactly one of webhook, javascript, exec, native".into()));
        }
        if let Some(e) = &spec.exec {
            return Ok(HookImpl::Exec(Arc::new(exec::ExecHook::new(e, label, exec)?)));
        }
        if let Some(w) = &spec.webhook {
            return Ok(HookImpl::Webhook(Arc::new(webhook::WebhookHook::new(w, resolver, credentials)?)));
        }
        if let Some(js) = &spec.javascript {
            let source = js_source
                .or_else(|| js.source.clone())
                .ok_or_else(|| HookError::Config("javascript needs source, configMapRef or secretRef".into()))?;
            let limits = javascript::JsLimits::from_spec(js)?;
            return Ok(HookImpl::JavaScript(Arc::new(javascript::JsHook::start(source, limits, label).await?)));
        }
        let native = spec.native.as_ref();
        let name = native.map(|n| n.name.as_str()).unwrap_or_default();
        natives.resolve(name, native.and_then(|n| n.config.as_ref())).await.map(HookImpl::Native)
    }

    /// Calls the hook's sync (or finalize) function in uc's own format; returns its answer and the
    /// call's duration. The request is taken, not borrowed: a native hook gets it without a copy.
    pub async fn sync(&self, kind: HookKind, request: SyncRequest) -> (Result<SyncResponse, HookError>, Duration) {
        let (answer, elapsed) = self.sync_as(kind, request, &dialect::Dialect::UC).await;
        (answer.map(|a| a.response), elapsed)
    }

    /// Calls the hook's sync (or finalize) function in `dialect`'s format.
    pub async fn sync_as(
        &self,
        kind: HookKind,
        request: SyncRequest,
        dialect: &dialect::Dialect,
    ) -> (Result<dialect::Answer, HookError>, Duration) {
        let started = Instant::now();
        let answer = match self {
            HookImpl::Native(n) => {
                n.sync(request).await.map(|response| dialect::Answer { response, ..Default::default() })
            }
            HookImpl::JavaScript(j) => match j.call_sync(kind, request, dialect.request_names()).await {
                Ok(answer) => dialect.decode(answer),
                Err(e) => Err(e),
            },
            // Serialized from the typed request: its objects are not copied into a JSON tree first.
            HookImpl::Webhook(w) => match w.call_with(&dialect.request_json(&request), Some(&request.parent)).await {
                Ok(answer) => dialect.decode(answer),
                Err(e) => Err(e),
            },
            HookImpl::Exec(e) => match e.call(kind, &dialect.request_json(&request)).await {
                Ok(answer) => dialect.decode(answer),
                Err(e) => Err(e),
            },
        };
        (answer, started.elapsed())
    }

    /// As [`HookImpl::sync_as`], also returning the call as it went over the wire (for recording).
    pub async fn sync_traced(
        &self,
        kind: HookKind,
        request: SyncRequest,
        dialect: &dialect::Dialect,
    ) -> (Result<dialect::Answer, HookError>, Duration, crate::recording::Exchange) {
        let started = Instant::now();
        let (answer, raw) = match self {
            HookImpl::Native(n) => {
                let sent = dialect.request(request.clone());
                let answer = n.sync(request).await;
                let raw = answer.as_ref().map(|r| r.clone().into_value()).map_err(|e| CallFailed(e.to_string()));
                (answer.map(|response| dialect::Answer { response, ..Default::default() }), (sent, raw))
            }
            other => {
                let sent = dialect.request(request);
                match other.call_json(kind, sent.clone()).await {
                    Ok(raw) => (dialect.decode(raw.clone()), (sent, Ok(raw))),
                    Err(e) => {
                        let m = CallFailed(e.to_string());
                        (Err(e), (sent, Err(m)))
                    }
                }
            }
        };
        let exchange = crate::recording::Exchange { request: raw.0, answer: raw.1 };
        (answer, started.elapsed(), exchange)
    }

    /// Calls the hook's customize function; returns its answer and the call's duration.
    pub async fn customize(
        &self,
        request: CustomizeRequest,
        dialect: &dialect::Dialect,
    ) -> (Result<CustomizeResponse, HookError>, Duration) {
        let started = Instant::now();
        let answer = match self {
            HookImpl::Native(n) => n.customize(request).await,
            other => match serde_json::to_value(request) {
                Ok(json) => match other.call_json(HookKind::Customize, json).await {
                    Ok(answer) => dialect.decode_customize(answer),
                    Err(e) => Err(e),
                },
                Err(e) => Err(HookError::InvalidRequest(e.to_string())),
            },
        };
        (answer, started.elapsed())
    }

    /// A webhook or JavaScript call, in the JSON they speak.
    pub async fn call_json(&self, kind: HookKind, request: Value) -> Result<Value, HookError> {
        match self {
            HookImpl::Webhook(w) => w.call(&request).await,
            HookImpl::JavaScript(j) => j.call(kind, request).await,
            HookImpl::Exec(e) => e.call(kind, &request).await,
            HookImpl::Native(_) => Err(HookError::Config("a native hook is called with typed requests".into())),
        }
    }
}
