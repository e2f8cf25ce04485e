//! Objects as the informers decode them: one `serde_json::Value` per object, parsed once.
//!
//! kube's `DynamicObject` decodes its body through `#[serde(flatten)]`, which buffers every object into
//! an intermediate tree and decodes it again (typed metadata, then the rest), after which the informer
//! turned it back into a `Value`: three passes over each watch event, the largest part of the engine's
//! watch decoding in the convergence profile (docs/benchmarks.md). A `RawObject` is the `Value` the
//! cache keeps, with the one field kube's watcher reads (`metadata.resourceVersion`) copied beside it.
//! The engine's hottest writes (a child's apply, a parent's status) send and receive them too: of
//! their answers only the resourceVersion is read.

use std::borrow::Cow;

use kube::api::ApiResource;
use kube::core::{DynamicResourceScope, ObjectMeta, Resource};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// An object of any kind, as the API server sent it.
#[derive(Clone, Debug)]
pub struct RawObject {
    /// Only `resource_version` is set: what kube's watcher resumes from.
    meta: ObjectMeta,
    /// The whole object.
    pub body: Value,
}

impl<'de> Deserialize<'de> for RawObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let body = Value::deserialize(d)?;
        if !body.is_object() {
            return Err(serde::de::Error::custom("an object must be a JSON object"));
        }
        Ok(Self::new(body))
    }
}

impl Serialize for RawObject {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.body.serialize(s)
    }
}

impl RawObject {
    /// An object to send.
    pub fn new(body: Value) -> Self {
        let resource_version = body.pointer("/metadata/resourceVersion").and_then(Value::as_str).map(String::from);
        Self { meta: ObjectMeta { resource_version, ..Default::default() }, body }
    }
}

impl Resource for RawObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}

#[cfg(test)]
mod tests {
    use kube::core::WatchEvent;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_watch_event_decodes_to_the_object_and_its_resource_version() {
        let line = r#"{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","resourceVersion":"12"},"data":{"a":"1"}}}"#;
        let ev: WatchEvent<RawObject> = serde_json::from_str(line).unwrap();
        let WatchEvent::Modified(o) = ev else { panic!("not a MODIFIED event: {ev:?}") };
        assert_eq!(o.meta().resource_version.as_deref(), Some("12"));
        assert_eq!(o.body["data"], json!({"a": "1"}));
        assert_eq!(o.body["metadata"]["name"], "c");
        let list = r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"13"},"items":[{"metadata":{"name":"a"}}]}"#;
        let l: kube::core::ObjectList<RawObject> = serde_json::from_str(list).unwrap();
        assert_eq!((l.items.len(), l.items[0].meta().resource_version.clone()), (1, None));
        assert!(serde_json::from_str::<RawObject>("[1]").is_err(), "not an object");
    }
}
