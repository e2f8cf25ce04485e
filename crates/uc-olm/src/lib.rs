//! Operator lifecycle with OLM's own API (`operators.coreos.com`): OLM's CRDs (`crds.rs`), and the
//! decisions, as pure functions: file-based catalogs (`fbc.rs`), bundles and package manifests on disk
//! read into them (`bundle.rs`), the ClusterServiceVersion parts OLM acts on (`csv.rs`), versions and
//! ranges (`versions.rs`), channel upgrade graphs (`graph.rs`), dependency resolution (`resolve.rs`),
//! InstallPlan steps and a CSV's Deployments (`plan.rs`), OperatorGroups (`group.rs`) and a CSV's phase
//! (`phase.rs`).

pub mod bundle;
pub mod crds;
pub mod csv;
pub mod fbc;
pub mod graph;
pub mod group;
pub mod phase;
pub mod plan;
pub mod resolve;
pub mod versions;
