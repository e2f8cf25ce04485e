//! Native hooks: Rust functions compiled into uc, for the operators it ships (same request/response
//! JSON as every other hook, so they are tested the same way).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use super::{HookError, HookKind};

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
