//! The hook wire format: what sync, finalize and customize hooks receive and must answer.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Objects of one type keyed by name (or `namespace/name` for a cluster-scoped parent), shared with the
/// caches they were read from rather than copied (a ReplicaSet's request holds all of its pods).
pub type ObjectMap = BTreeMap<String, Arc<Value>>;

/// Request to a sync or finalize hook.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncRequest {
    /// The UniversalController object: the same in every request of a controller, shared rather than
    /// copied (a JavaScript hook keeps it serialized between calls).
    pub controller: Arc<Value>,
    /// The parent, as `kubectl get -o json` shows it (shared with the cache it was read from).
    pub parent: Arc<Value>,
    /// One entry per declared child type, keyed `<Kind>.<apiVersion>`, present even when empty.
    pub children: BTreeMap<String, ObjectMap>,
    /// Related objects named by the customize hook, same layout as children.
    pub related: BTreeMap<String, ObjectMap>,
    /// True for the finalize hook.
    pub finalizing: bool,
}

impl SyncRequest {
    /// The request as JSON, its objects moved rather than copied (`serde_json::to_value` would copy every
    /// child: a ReplicaSet's request holds all of its pods). Same shape as the serialized struct.
    pub fn into_value(self) -> Value {
        let group = |m: BTreeMap<String, ObjectMap>| -> Value {
            let objects = |objs: ObjectMap| objs.into_iter().map(|(name, o)| (name, Arc::unwrap_or_clone(o))).collect();
            Value::Object(m.into_iter().map(|(k, objs)| (k, Value::Object(objects(objs)))).collect())
        };
        let mut out = serde_json::Map::new();
        out.insert("controller".into(), Arc::unwrap_or_clone(self.controller));
        out.insert("parent".into(), Arc::unwrap_or_clone(self.parent));
        out.insert("children".into(), group(self.children));
        out.insert("related".into(), group(self.related));
        out.insert("finalizing".into(), Value::Bool(self.finalizing));
        Value::Object(out)
    }
}

/// Response of a sync or finalize hook. Decoded strictly: unknown fields and a missing `children`
/// are errors, because a lenient decoder would read a broken answer as "delete every child".
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SyncResponse {
    /// Replaces the parent's status.
    #[serde(default)]
    pub status: Option<Value>,
    /// Every desired child; existing children not listed are deleted.
    pub children: Vec<Value>,
    /// Sync this parent again after this many seconds.
    #[serde(default)]
    pub resync_after_seconds: Option<f64>,
    /// Finalize hooks: whether the parent may go now (ignored from sync hooks).
    #[serde(default)]
    pub finalized: Option<bool>,
}

impl SyncResponse {
    /// The response as JSON, its children moved rather than copied.
    pub fn into_value(self) -> Value {
        let mut out = serde_json::Map::new();
        if let Some(s) = self.status {
            out.insert("status".into(), s);
        }
        out.insert("children".into(), Value::Array(self.children));
        if let Some(r) = self.resync_after_seconds {
            out.insert("resyncAfterSeconds".into(), Value::from(r));
        }
        if let Some(f) = self.finalized {
            out.insert("finalized".into(), Value::Bool(f));
        }
        Value::Object(out)
    }
}

/// Request to a customize hook.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CustomizeRequest {
    /// The UniversalController object.
    pub controller: Value,
    /// The parent.
    pub parent: Value,
}

/// Response of a customize hook.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CustomizeResponse {
    /// The related resources to pass to sync.
    #[serde(default)]
    pub related_resources: Vec<RelatedResourceRule>,
}

/// One related-resource rule: a label selector, or a namespace and names.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RelatedResourceRule {
    /// `group/version` or `v1`.
    pub api_version: String,
    /// Plural resource name.
    pub resource: String,
    /// Structured label selector.
    #[serde(default)]
    pub label_selector: Option<Value>,
    /// Namespace of the named objects (default: the parent's).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Object names.
    #[serde(default)]
    pub names: Option<Vec<String>>,
}

/// The key of a child or related type in requests: `<Kind>.<apiVersion>`.
pub fn type_key(kind: &str, api_version: &str) -> String {
    format!("{kind}.{api_version}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_decoded_strictly() {
        assert!(serde_json::from_str::<SyncResponse>(r#"{"status": {}}"#).is_err(), "children is required");
        assert!(serde_json::from_str::<SyncResponse>(r#"{"children": [], "extra": 1}"#).is_err());
        let ok: SyncResponse =
            serde_json::from_str(r#"{"children": [], "finalized": true, "resyncAfterSeconds": 2.5}"#).unwrap();
        assert_eq!((ok.finalized, ok.resync_after_seconds), (Some(true), Some(2.5)));
        assert_eq!(type_key("StatefulSet", "apps/v1"), "StatefulSet.apps/v1");
    }

    #[test]
    fn a_request_moved_into_json_reads_as_the_serialized_one() {
        let objects = |names: &[&str]| -> ObjectMap {
            names.iter().map(|n| (n.to_string(), serde_json::json!({"metadata": {"name": n}}).into())).collect()
        };
        let request = SyncRequest {
            controller: Arc::new(serde_json::json!({"kind": "UniversalController"})),
            parent: serde_json::json!({"metadata": {"name": "p"}}).into(),
            children: BTreeMap::from([("Pod.v1".into(), objects(&["a", "b"])), ("Service.v1".into(), objects(&[]))]),
            related: BTreeMap::from([("ConfigMap.v1".into(), objects(&["c"]))]),
            finalizing: true,
        };
        let expected = serde_json::to_value(&request).unwrap();
        let moved = request.into_value();
        assert_eq!(moved, expected);
        assert_eq!(moved["children"]["Service.v1"], serde_json::json!({}), "empty types stay present");
        assert_eq!(serde_json::from_value::<SyncRequest>(moved).unwrap().children["Pod.v1"].len(), 2);
    }
}
