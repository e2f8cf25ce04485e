//! The operator's own resources: their API group, and their API in a namespace.

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};

/// API group of the etcd operator's resources (the coreos one, so its YAML applies as written).
pub const GROUP: &str = "etcd.database.coreos.com";

/// The API of one of the operator's resources in a namespace.
pub fn api(client: &kube::Client, namespace: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(GROUP, "v1beta2", kind);
    Api::namespaced_with(client.clone(), namespace, &ApiResource::from_gvk_with_plural(&gvk, plural))
}
