//! What uc ships on its own engine: the built-in workload controllers of the embedded cluster, and the
//! etcd and ZooKeeper operators.

pub mod etcd;
pub mod multicluster;
pub mod objects;
pub mod restricted;
pub mod workloads;
pub mod zookeeper;
