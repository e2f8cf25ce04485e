//! What uc ships on its own engine. For now: the built-in workload controllers of the embedded cluster.

pub mod workloads;
