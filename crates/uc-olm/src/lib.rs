//! Operator lifecycle with OLM's own API (`operators.coreos.com`). This crate holds the decisions, as
//! pure functions: file-based catalogs (`fbc.rs`), versions and ranges (`versions.rs`), channel upgrade
//! graphs (`graph.rs`) and dependency resolution (`resolve.rs`).

pub mod fbc;
pub mod graph;
pub mod resolve;
pub mod versions;
