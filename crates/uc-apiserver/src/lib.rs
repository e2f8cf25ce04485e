//! The embedded Kubernetes-compatible API server of uc.
//!
//! Data flows one way: HTTPS request → authentication → routing (`handlers::dispatch`) → admission
//! (defaulting, pruning, validation) → the store's writer (group commit to a write-ahead log) → the in-memory state
//! and revision log → watchers and the garbage collector. See `docs/ARCHITECTURE.md`.

pub mod apiservices;
pub mod app;
pub mod audit;
pub mod auth;
mod background;
pub mod builtin;
mod builtin_autoscaling;
pub mod builtin_container;
mod builtin_cronjob;
mod builtin_job;
mod builtin_networking;
mod builtin_scheduling;
pub mod builtin_schemas;
mod builtin_storage;
mod builtin_update;
pub mod certificates;
pub mod cluster_objects;
pub mod component_status;
mod default_class;
pub mod discovery;
pub mod ephemeral;
pub mod error;
pub mod event_ttl;
pub mod fairness;
pub mod fuzzing;
pub mod gc;
pub mod handlers;
pub mod history;
pub mod json_duplicates;
pub mod kept;
pub mod kubelet;
pub mod kubelet_tls;
mod limit_ranges;
pub mod limits;
#[cfg(test)]
mod merge_properties;
pub mod node_ports;
pub mod node_restriction;
pub mod openapi;
pub mod openapi_proto;
pub mod patch;
mod pod_resources;
pub mod pod_security;
pub mod proto;
pub mod registry;
pub mod request;
mod resource_quotas;
pub mod schema;
pub mod server;
pub mod service_account;
pub mod service_ips;
pub mod snapshot_file;
pub mod ssa;
pub mod storage;
pub mod stored;
pub mod table;
pub mod tls;
pub mod traffic;
pub mod typed;
pub mod views;
pub mod wal;
pub mod wal_integrity;
pub mod watch;
pub mod webhooks;
pub mod wire;

pub use app::Config;
pub use server::{RunningServer, StartError, start};
