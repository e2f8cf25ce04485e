//! The universal controller engine: a controller of controllers. Users register a parent type, child
//! types and hooks in a `UniversalController` object; the engine watches (one shared watch per resource
//! type), queues, calls hooks, applies desired children, and writes status.
//!
//! Data flows one way: informer (watch → cache) → work queue → one reconcile at a time per parent →
//! hook → plan → apply → status. See `docs/ARCHITECTURE.md`.

pub mod acting;
pub mod apply;
pub mod clients;
pub mod controller;
pub mod dynamic;
pub mod events;
pub mod fenced;
pub mod flavor;
pub mod fuzzing;
pub mod guard;
pub mod hooks;
pub mod informer;
mod key_set;
pub mod leader;
mod leadership;
pub mod manager;
pub mod metrics;
pub mod metrics_auth;
pub mod names;
pub mod ownership;
pub mod plan;
pub mod queue;
pub mod raw;
pub mod recording;
pub mod resources;
pub mod revision;
#[cfg(test)]
mod testing;
pub mod watch_health;

pub use manager::{Engine, EngineOptions};
