//! The operator's own resources: their API group.

/// API group of the etcd operator's resources (the coreos one, so its YAML applies as written).
pub const GROUP: &str = "etcd.database.coreos.com";
