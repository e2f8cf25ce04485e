//! Objects as the informers decode them: one `serde_json::Value` per object, parsed once.
//!
//! kube's `DynamicObject` decodes its body through `#[serde(flatten)]`, which buffers every object into
//! an intermediate tree and decodes it again (typed metadata, then the rest), after which the informer
//! turned it back into a `Value`: three passes over each watch event, the largest part of the engine's
//! watch decoding in the convergence profile (docs/benchmarks.md). A `RawObject` is the `Value` the
//! cache keeps, with the one field kube's watcher reads (`metadata.resourceVersion`) copied beside it.
//! The engine's hottest writes (a child's apply, a parent's status) send a [`Sent`]: of their answers
//! only the resourceVersion is read, so the answer is scanned for it and not built into a tree.

use kube::core::ObjectMeta;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::sync::Arc;

use serde_json::Value;
use uc_api::Pointer;

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
        Ok(Self::new(d.deserialize_map(Members { skip: None, inner: Some("managedFields"), cut: &[] })?))
    }
}

/// What of each object an informer keeps: what its readers read (issue 58), as kube-rs's metadata
/// watchers keep less than the object. A tree costs about seven times its JSON (a `BTreeMap` node of
/// ~640 bytes per JSON object, however few its members), so a pod's tree is ~27 KB, most of it the
/// spec's containers, volumes and tolerations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Projection {
    /// The whole object (but `metadata.managedFields`, which nothing in the engine reads).
    #[default]
    Whole,
    /// What the built-in workload hooks read of the pods they own (their `PodView`): the metadata, of the
    /// spec where the pod runs, of the status its phase, its Ready condition and when its containers
    /// terminated — and all the engine reads of a child it never updates (an `OnDelete` child:
    /// its metadata). A pod's tree is about a quarter as large.
    PodView,
}

/// What a projection keeps of a JSON object: the members named, each whole (`None`) or cut to a shape of
/// its own, which applies to each element when the member is an array; of an array, only the elements
/// `keep` keeps (as cut), when it says.
#[derive(Debug)]
pub struct Shape {
    members: &'static [(&'static str, Option<&'static Shape>)],
    keep: Option<fn(&Value) -> bool>,
}

/// The members of an object [`Projection::PodView`] cuts, with what it keeps of each.
static POD_VIEW: &[(&str, &Shape)] = &[("spec", &POD_SPEC), ("status", &POD_STATUS)];
static POD_SPEC: Shape = Shape { members: &[("nodeName", None)], keep: None };
static POD_STATUS: Shape = Shape {
    members: &[("phase", None), ("conditions", Some(&READY)), ("containerStatuses", Some(&TERMINATION))],
    keep: None,
};
/// The Ready condition (a pod has four or five; each kept would cost a map).
static READY: Shape =
    Shape { members: &[("type", None), ("status", None)], keep: Some(|c| c.get("type").is_some_and(|t| t == "Ready")) };
/// When each container that terminated did.
static TERMINATION: Shape = Shape {
    members: &[("state", Some(&TERMINATED_STATE))],
    keep: Some(|c| c.get("state").and_then(|s| s.get("terminated")).is_some()),
};
static TERMINATED_STATE: Shape = Shape { members: &[("terminated", Some(&TERMINATED))], keep: None };
static TERMINATED: Shape = Shape { members: &[("finishedAt", None)], keep: None };

impl Projection {
    /// How an informer of `resource` (`group/version/resource`) in this projection is named (the
    /// `resource` label of the watch metrics): the resource, and what is kept when not the whole object.
    pub fn informer_id(self, resource: &str) -> String {
        match self {
            Projection::Whole => resource.to_string(),
            Projection::PodView => {
                let cut = |(name, shape): &(&str, &Shape)| {
                    format!("{name}: {}", shape.members.iter().map(|(m, _)| *m).collect::<Vec<_>>().join(", "))
                };
                format!("{resource} ({})", POD_VIEW.iter().map(cut).collect::<Vec<_>>().join("; "))
            }
        }
    }
}

/// An object decoded in the projection [`Projection::PodView`].
#[derive(Clone, Debug)]
pub struct PodViewObject {
    meta: ObjectMeta,
    body: Value,
}

impl<'de> Deserialize<'de> for PodViewObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let members = Members { skip: None, inner: Some("managedFields"), cut: POD_VIEW };
        let RawObject { meta, body } = RawObject::new(d.deserialize_map(members)?);
        Ok(Self { meta, body })
    }
}

/// What a watch decodes objects into, and the tree of each an informer keeps.
pub trait Watched:
    kube::Resource<DynamicType = kube::core::ApiResource>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
    + Send
    + 'static
{
    /// The object's tree, moved out.
    fn into_tree(self) -> Value;
}

impl Watched for RawObject {
    fn into_tree(self) -> Value {
        self.body
    }
}

impl Watched for PodViewObject {
    fn into_tree(self) -> Value {
        self.body
    }
}

/// Decodes a JSON object into a `Value`, skipping the member `skip` (scanned, never built), in its
/// `metadata` the member `inner`, and cutting the members `cut` names to their shapes. The informers'
/// objects leave out `metadata.managedFields` this way: nothing in the engine reads them (children are applied from their desired state, hooks get objects
/// as `kubectl get` shows them, kube-rs advises reflectors to drop them), and they are a third of a
/// child's JSON.
struct Members {
    skip: Option<&'static str>,
    inner: Option<&'static str>,
    cut: &'static [(&'static str, &'static Shape)],
}

impl<'de> serde::de::Visitor<'de> for Members {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object (a JSON object)")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(k) = a.next_key::<String>()? {
            if Some(k.as_str()) == self.skip {
                a.next_value::<serde::de::IgnoredAny>()?;
            } else if k == "metadata" && self.inner.is_some() {
                let meta = a.next_value_seed(MetadataSeed(self.inner))?;
                out.insert(k, meta);
            } else if let Some((_, shape)) = self.cut.iter().find(|(name, _)| *name == k) {
                let kept = a.next_value_seed(KeptSeed(shape))?;
                out.insert(k, kept);
            } else {
                out.insert(k, a.next_value()?);
            }
        }
        Ok(Value::Object(out))
    }
}

/// An object's `metadata`, decoded without the member it names; anything but an object as it is.
struct MetadataSeed(Option<&'static str>);

impl<'de> serde::de::DeserializeSeed<'de> for MetadataSeed {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(Metadata(self.0))
    }
}

struct Metadata(Option<&'static str>);

impl<'de> serde::de::Visitor<'de> for Metadata {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object's metadata")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, a: A) -> Result<Value, A::Error> {
        Members { skip: self.0, inner: None, cut: &[] }.visit_map(a)
    }

    uc_api::json_scalar_visits!();

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, a: A) -> Result<Value, A::Error> {
        array_of(a)
    }
}

/// A JSON array as a `Value`.
fn array_of<'de, A: serde::de::SeqAccess<'de>>(mut a: A) -> Result<Value, A::Error> {
    let mut out = Vec::new();
    while let Some(v) = a.next_element()? {
        out.push(v);
    }
    Ok(Value::Array(out))
}

/// A value decoded in a [`Shape`]: of an object only the members named (the others scanned, never
/// built), of an array each element so (those the shape keeps); anything else as it is.
struct KeptSeed(&'static Shape);

impl<'de> serde::de::DeserializeSeed<'de> for KeptSeed {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for KeptSeed {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(k) = a.next_key::<String>()? {
            match self.0.members.iter().find(|(name, _)| *name == k) {
                Some((_, None)) => {
                    let v = a.next_value()?;
                    out.insert(k, v);
                }
                Some((_, Some(shape))) => {
                    let v = a.next_value_seed(KeptSeed(shape))?;
                    out.insert(k, v);
                }
                None => {
                    a.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }

    uc_api::json_scalar_visits!();

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = a.next_element_seed(KeptSeed(self.0))? {
            if self.0.keep.is_none_or(|keep| keep(&v)) {
                out.push(v);
            }
        }
        Ok(Value::Array(out))
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
        let resource_version = body.at("/metadata/resourceVersion").and_then(Value::as_str).map(String::from);
        Self { meta: ObjectMeta { resource_version, ..Default::default() }, body }
    }
}

/// An object a write sends. Its answer — the whole stored object, managed fields and all — is read only
/// for `metadata.resourceVersion`: decoded, the answer holds that and a null body.
#[derive(Clone, Debug)]
pub struct Sent {
    meta: ObjectMeta,
    body: Body,
}

#[derive(Clone, Debug)]
enum Body {
    Whole(Value),
    /// A cached object with another status, written as that object without copying it first.
    WithStatus(Arc<Value>, Value),
}

impl Sent {
    /// An object to send.
    pub fn new(body: Value) -> Self {
        Self { meta: ObjectMeta::default(), body: Body::Whole(body) }
    }

    /// `object` with its status replaced by `status` (the whole object, as a status update sends it).
    pub fn with_status(object: Arc<Value>, status: Value) -> Self {
        Self { meta: ObjectMeta::default(), body: Body::WithStatus(object, status) }
    }
}

impl Serialize for Sent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match &self.body {
            Body::Whole(v) => v.serialize(s),
            Body::WithStatus(object, status) => {
                let Some(members) = object.as_object() else { return object.serialize(s) };
                let mut m = s.serialize_map(None)?;
                let mut placed = false;
                for (k, v) in members {
                    // Members in the object's (sorted) order, the status in its place.
                    if !placed && k.as_str() >= "status" {
                        m.serialize_entry("status", status)?;
                        placed = true;
                    }
                    if k != "status" {
                        m.serialize_entry(k, v)?;
                    }
                }
                if !placed {
                    m.serialize_entry("status", status)?;
                }
                m.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Sent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Meta {
            #[serde(rename = "resourceVersion")]
            resource_version: Option<String>,
        }
        #[derive(Deserialize)]
        struct Answer {
            metadata: Option<Meta>,
        }
        let a = Answer::deserialize(d)?;
        let resource_version = a.metadata.and_then(|m| m.resource_version);
        Ok(Self { meta: ObjectMeta { resource_version, ..Default::default() }, body: Body::Whole(Value::Null) })
    }
}

/// `kube::Resource` for a type of objects of any kind (its `DynamicType` an `ApiResource`) that keeps its
/// metadata in a field `meta`: the engine's raw objects, and the benchmarks' lean ones.
#[macro_export]
macro_rules! dynamic_resource {
    ($t:ty) => {
        impl ::kube::core::Resource for $t {
            type DynamicType = ::kube::core::ApiResource;
            type Scope = ::kube::core::DynamicResourceScope;

            fn group(dt: &::kube::core::ApiResource) -> ::std::borrow::Cow<'_, str> {
                dt.group.as_str().into()
            }

            fn version(dt: &::kube::core::ApiResource) -> ::std::borrow::Cow<'_, str> {
                dt.version.as_str().into()
            }

            fn kind(dt: &::kube::core::ApiResource) -> ::std::borrow::Cow<'_, str> {
                dt.kind.as_str().into()
            }

            fn api_version(dt: &::kube::core::ApiResource) -> ::std::borrow::Cow<'_, str> {
                dt.api_version.as_str().into()
            }

            fn plural(dt: &::kube::core::ApiResource) -> ::std::borrow::Cow<'_, str> {
                dt.plural.as_str().into()
            }

            fn meta(&self) -> &::kube::core::ObjectMeta {
                &self.meta
            }

            fn meta_mut(&mut self) -> &mut ::kube::core::ObjectMeta {
                &mut self.meta
            }
        }
    };
}

dynamic_resource!(RawObject);
dynamic_resource!(PodViewObject);
dynamic_resource!(Sent);

#[cfg(test)]
mod tests {
    use kube::core::WatchEvent;
    use serde_json::json;

    use kube::core::Resource;

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

    #[test]
    fn an_informers_object_is_decoded_without_its_managed_fields() {
        let text = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","managedFields":[{"manager":"uc","fieldsV1":{"f:spec":{}}}],"labels":{"a":"b"},"resourceVersion":"4"},"spec":{"replicas":2,"x":[1,2.5,null,true,"s"],"managedFields":1}}"#;
        let o: RawObject = serde_json::from_str(text).unwrap();
        let mut expected: Value = serde_json::from_str(text).unwrap();
        expected["metadata"].as_object_mut().unwrap().remove("managedFields");
        assert_eq!(o.body, expected, "only metadata's managedFields left out");
        assert_eq!(o.meta().resource_version.as_deref(), Some("4"));
        let odd: RawObject = serde_json::from_str(r#"{"metadata":null,"n":-1}"#).unwrap();
        assert_eq!(odd.body, json!({"metadata": null, "n": -1}), "a metadata that is no object is kept as it is");
        assert!(
            serde_json::from_str::<RawObject>(r#"{"metadata":{"managedFields":[}}"#).is_err(),
            "skipped, still checked"
        );
    }

    #[test]
    fn a_pod_view_keeps_what_the_workload_hooks_read() {
        let text = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","managedFields":[{}],"labels":{"a":"b"},"resourceVersion":"5"},
            "spec":{"containers":[{"name":"c","image":"i"}],"nodeName":"n1","volumes":[{"name":"v"}]},
            "status":{"phase":"Running","hostIP":"10.0.0.1","podIPs":[{"ip":"10.1.0.2"}],
                      "conditions":[{"type":"Initialized","status":"True"},{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}],
                      "containerStatuses":[{"name":"c","image":"i","ready":true,"state":{"running":{"startedAt":"t0"}}},
                                           {"name":"d","lastState":{},"state":{"terminated":{"exitCode":0,"finishedAt":"t1"}}}]}}"#;
        let o: PodViewObject = serde_json::from_str(text).unwrap();
        assert_eq!(
            o.clone().into_tree(),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}, "resourceVersion": "5"},
                   "spec": {"nodeName": "n1"},
                   "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                              "containerStatuses": [{"state": {"terminated": {"finishedAt": "t1"}}}]}})
        );
        assert_eq!(o.meta().resource_version.as_deref(), Some("5"));
        let odd: PodViewObject =
            serde_json::from_str(r#"{"spec":[1,{"x":2,"nodeName":"n"}],"status":"s","n":null}"#).unwrap();
        assert_eq!(
            odd.into_tree(),
            json!({"spec": [1, {"nodeName": "n"}], "status": "s", "n": null}),
            "anything but an object is kept, an array's objects cut"
        );
        assert!(
            serde_json::from_str::<PodViewObject>(r#"{"spec":{"containers":[}}"#).is_err(),
            "skipped, still checked"
        );
        let whole: RawObject = serde_json::from_str(text).unwrap();
        assert_eq!(whole.body["spec"]["containers"][0]["image"], "i", "the whole object keeps its spec");
        assert_eq!(Projection::Whole.informer_id("/v1/pods"), "/v1/pods");
        assert_eq!(
            Projection::PodView.informer_id("/v1/pods"),
            "/v1/pods (spec: nodeName; status: phase, conditions, containerStatuses)"
        );
    }

    /// A status update sends the cached object with the new status, the same text a copy would give.
    #[test]
    fn an_object_with_another_status_is_sent_as_its_copy_would_be() {
        let status = json!({"ready": 2});
        for object in [
            json!({"apiVersion": "v1", "metadata": {"name": "f"}, "spec": {"a": 1}, "status": {"ready": 1, "old": true}}),
            json!({"apiVersion": "v1", "metadata": {"name": "f"}, "spec": {"a": 1}}),
            json!({"apiVersion": "v1", "metadata": {"name": "f"}, "zzz": {"after": "status"}}),
        ] {
            let mut copy = object.clone();
            copy["status"] = status.clone();
            let sent = Sent::with_status(Arc::new(object), status.clone());
            assert_eq!(serde_json::to_string(&sent).unwrap(), serde_json::to_string(&copy).unwrap());
        }
        let odd = Sent::with_status(Arc::new(json!("not an object")), status);
        assert_eq!(serde_json::to_value(&odd).unwrap(), json!("not an object"), "nothing to put a status in");
    }

    #[test]
    fn a_write_sends_the_whole_object_and_reads_only_the_answers_resource_version() {
        let sent = Sent::new(json!({"metadata": {"name": "f", "resourceVersion": "3"}, "status": {"n": 1}}));
        assert_eq!(
            serde_json::to_value(&sent).unwrap(),
            json!({"metadata": {"name": "f", "resourceVersion": "3"}, "status": {"n": 1}})
        );
        let answer = r#"{"metadata":{"name":"f","managedFields":[{"manager":"uc","fieldsV1":{"f:status":{}}}],"resourceVersion":"9"},"status":{"n":1}}"#;
        let a: Sent = serde_json::from_str(answer).unwrap();
        assert_eq!(a.meta().resource_version.as_deref(), Some("9"));
        assert!(matches!(a.body, Body::Whole(Value::Null)), "nothing else kept");
        let none: Sent = serde_json::from_str(r#"{"kind":"Status"}"#).unwrap();
        assert_eq!(none.meta().resource_version, None);
        assert!(
            serde_json::from_str::<Sent>(r#"{"metadata":{"resourceVersion":7}}"#).is_err(),
            "a resourceVersion is a string"
        );
    }
}
