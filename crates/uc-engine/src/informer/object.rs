//! What an informer holds and tells: objects, their keys, and changes.

use std::sync::Arc;

use serde_json::Value;
use uc_api::meta::meta_str;

/// An object in a cache.
pub type Obj = Arc<Value>;

/// `(namespace, name)`; namespace empty for cluster-scoped objects.
pub type ObjKey = (String, String);

/// An object's key as logs and messages write it: `namespace/name`, or `name` when cluster-scoped.
pub fn key_text((namespace, name): &ObjKey) -> String {
    if namespace.is_empty() { name.clone() } else { format!("{namespace}/{name}") }
}

/// The key of an object.
pub fn key_of(obj: &Value) -> ObjKey {
    (meta_str(obj, "namespace").to_string(), meta_str(obj, "name").to_string())
}

/// A change seen by an informer.
#[derive(Clone, Debug)]
pub struct Change {
    /// The object now (for deletes: its last state).
    pub object: Obj,
    /// The object before, if it was cached.
    pub old: Option<Obj>,
    /// Whether the object is gone.
    pub deleted: bool,
    /// Whether the change is the informer's first list (every object there at its start), not news.
    pub initial: bool,
}
