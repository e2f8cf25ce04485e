//! The hook wire format per controller flavor and hook version: how a request is laid out (a
//! decorator's `object` and `attachments`), and how strictly an answer is read. uc's own controllers
//! read answers strictly (a missing `children` list is an error, not "delete everything");
//! Metacontroller's read v1 answers loosely (unknown fields ignored, a missing list is empty) and v2
//! answers strictly, as Metacontroller does.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use uc_api::Pointer;
use uc_api::controller::{Hook as HookSpec, HookVersion};
use uc_api::hook::{CustomizeResponse, SyncRequest, SyncResponse};

use super::protocol::HookError;
use crate::flavor::Flavor;

/// How one hook of one controller speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dialect {
    /// The controller's flavor.
    pub flavor: Flavor,
    /// The hook's version.
    pub version: HookVersion,
    /// Unknown answer fields are errors.
    pub strict: bool,
}

/// A sync request serialized as [`Dialect::request`] lays it out (the same text), straight from the
/// typed request: its objects, shared with the caches, are not copied into a JSON tree first.
pub struct RequestJson<'a> {
    request: &'a SyncRequest,
    /// What the parent and the children are called.
    names: (&'static str, &'static str),
}

impl serde::Serialize for RequestJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let r = self.request;
        // In the key order of the JSON form: `attachments`/`children` < `controller` < `finalizing` <
        // `object`/`parent` < `related`.
        let mut m = s.serialize_map(None)?;
        m.serialize_entry(self.names.1, &r.children)?;
        m.serialize_entry("controller", &*r.controller)?;
        m.serialize_entry("finalizing", &r.finalizing)?;
        m.serialize_entry(self.names.0, &*r.parent)?;
        m.serialize_entry("related", &r.related)?;
        m.end()
    }
}

/// Labels or annotations a decorator sets on its target: `None` removes the key.
pub type StringPatch = BTreeMap<String, Option<String>>;

/// A sync or finalize hook's answer, in every flavor's terms.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answer {
    /// Status, desired children (a decorator's attachments), resync, finalized.
    pub response: SyncResponse,
    /// A decorator's labels for its target.
    pub labels: StringPatch,
    /// A decorator's annotations for its target.
    pub annotations: StringPatch,
}

impl Dialect {
    /// uc's own format, strict.
    pub const UC: Dialect = Dialect { flavor: Flavor::Universal, version: HookVersion::V1, strict: true };

    /// The dialect of a hook of a controller of `flavor`.
    pub fn new(flavor: Flavor, spec: &HookSpec) -> Result<Dialect, HookError> {
        let version = spec.version.unwrap_or_default();
        let mode = spec.webhook.as_ref().and_then(|w| w.response_un_marshall_mode.as_deref());
        let strict = match mode {
            Some("strict") => true,
            Some("loose") => false,
            Some(other) => {
                return Err(HookError::Config(format!(
                    "webhook.responseUnMarshallMode: {other:?} is not one of \"loose\", \"strict\""
                )));
            }
            None => flavor == Flavor::Universal || version == HookVersion::V2,
        };
        Ok(Dialect { flavor, version, strict })
    }

    /// What a request calls the parent and the children: a decorator's `object` and `attachments`.
    pub fn request_names(&self) -> (&'static str, &'static str) {
        if self.flavor == Flavor::Decorator { ("object", "attachments") } else { ("parent", "children") }
    }

    /// The request as JSON: a decorator's has `object` and `attachments` where the others have
    /// `parent` and `children`.
    pub fn request(&self, request: SyncRequest) -> Value {
        let mut v = request.into_value();
        let (parent, children) = self.request_names();
        if let Some(m) = v.as_object_mut() {
            rename(m, "parent", parent);
            rename(m, "children", children);
        }
        v
    }

    /// The request as [`Dialect::request`] writes it, serialized from the typed request in place.
    pub fn request_json<'a>(&self, request: &'a SyncRequest) -> RequestJson<'a> {
        RequestJson { request, names: self.request_names() }
    }

    /// The key of an object in a request's children or related map: its name, or `namespace/name`
    /// for namespaced objects of a cluster-scoped parent (v1) or always (v2).
    pub fn object_key(&self, parent_namespaced: bool, object_namespaced: bool, obj: &Value) -> String {
        let meta = |f: &str| obj.at(&format!("/metadata/{f}")).and_then(Value::as_str).unwrap_or_default();
        let qualified = object_namespaced && (self.version == HookVersion::V2 || !parent_namespaced);
        if qualified { format!("{}/{}", meta("namespace"), meta("name")) } else { meta("name").to_string() }
    }

    /// Reads a sync or finalize answer.
    pub fn decode(&self, answer: Value) -> Result<Answer, HookError> {
        let invalid = |m: String| HookError::InvalidResponse(m);
        let Value::Object(mut obj) = answer else {
            return Err(invalid("the answer must be a JSON object".into()));
        };
        let decorator = self.flavor == Flavor::Decorator;
        let list = if decorator { "attachments" } else { "children" };
        let known: &[&str] = if decorator {
            &["labels", "annotations", "status", "attachments", "resyncAfterSeconds", "finalized"]
        } else {
            &["status", "children", "resyncAfterSeconds", "finalized"]
        };
        if self.strict
            && let Some(k) = obj.keys().find(|k| !known.contains(&k.as_str()))
        {
            return Err(invalid(format!("unknown field `{k}`, expected one of {}", known.join(", "))));
        }
        let children = match obj.remove(list) {
            Some(Value::Array(a)) => a,
            None | Some(Value::Null) if !(self.flavor == Flavor::Universal && self.strict) => Vec::new(),
            None | Some(Value::Null) => {
                return Err(invalid(format!("missing field `{list}` (a response must have a `{list}` list)")));
            }
            Some(_) => return Err(invalid(format!("`{list}` must be a list"))),
        };
        let status = match obj.remove("status") {
            None | Some(Value::Null) => None,
            Some(s @ Value::Object(_)) => Some(s),
            Some(_) => return Err(invalid("`status` must be an object or null".into())),
        };
        let resync_after_seconds = match obj.remove("resyncAfterSeconds") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => n.as_f64(),
            Some(_) => return Err(invalid("`resyncAfterSeconds` must be a number".into())),
        };
        let finalized = match obj.remove("finalized") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(b),
            Some(_) => return Err(invalid("`finalized` must be a boolean".into())),
        };
        let (labels, annotations) = if decorator {
            (string_patch(obj.remove("labels"), "labels")?, string_patch(obj.remove("annotations"), "annotations")?)
        } else {
            Default::default()
        };
        Ok(Answer { response: SyncResponse { status, children, resync_after_seconds, finalized }, labels, annotations })
    }

    /// Reads a customize answer; loosely, unknown fields of the answer and its rules are dropped.
    pub fn decode_customize(&self, answer: Value) -> Result<CustomizeResponse, HookError> {
        let answer = if self.strict { answer } else { drop_unknown_customize_fields(answer) };
        serde_json::from_value(answer).map_err(|e| HookError::InvalidResponse(format!("customize: {e}")))
    }
}

fn rename(m: &mut Map<String, Value>, from: &str, to: &str) {
    if from == to {
        return;
    }
    if let Some(v) = m.remove(from) {
        m.insert(to.into(), v);
    }
}

fn string_patch(v: Option<Value>, field: &str) -> Result<StringPatch, HookError> {
    let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(StringPatch::new()) };
    let Value::Object(m) = v else {
        return Err(HookError::InvalidResponse(format!("`{field}` must be a map of strings")));
    };
    m.into_iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k, Some(s))),
            Value::Null => Ok((k, None)),
            _ => Err(HookError::InvalidResponse(format!("`{field}.{k}` must be a string or null"))),
        })
        .collect()
}

fn drop_unknown_customize_fields(answer: Value) -> Value {
    // namespaceSelector is kept so that decoding refuses it: uc does not select namespaces by label.
    const RULE: &[&str] = &["apiVersion", "resource", "labelSelector", "namespace", "names", "namespaceSelector"];
    let Value::Object(mut m) = answer else { return answer };
    let mut out = Map::new();
    if let Some(Value::Array(rules)) = m.remove("relatedResources") {
        let rules = rules
            .into_iter()
            .map(|r| match r {
                Value::Object(r) => Value::Object(r.into_iter().filter(|(k, _)| RULE.contains(&k.as_str())).collect()),
                other => other,
            })
            .collect();
        out.insert("relatedResources".into(), Value::Array(rules));
    }
    Value::Object(out)
}

/// Test support: a sync request with a member of every kind (a controller, a parent, a child, an empty
/// related type, finalizing).
#[cfg(test)]
pub(crate) fn sample_request() -> SyncRequest {
    use serde_json::json;
    SyncRequest {
        controller: std::sync::Arc::new(json!({"metadata": {"name": "c"}, "spec": {"z": 1, "a": [1, 2]}})),
        parent: json!({"metadata": {"name": "p"}, "spec": {"n": 1.5}}).into(),
        children: [("ConfigMap.v1".to_string(), [("x".to_string(), json!({"data": {"k": "v"}}).into())].into())].into(),
        related: [("Secret.v1".to_string(), Default::default())].into(),
        finalizing: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dialect(flavor: Flavor, hook: Value) -> Dialect {
        Dialect::new(flavor, &serde_json::from_value(hook).unwrap()).unwrap()
    }

    /// A typed request serialized in place is the text of its JSON form, in either flavor's names.
    #[test]
    fn a_request_serialized_in_place_is_its_json_form() {
        let request = sample_request();
        for flavor in [Flavor::Universal, Flavor::Decorator] {
            let d = Dialect { flavor, ..Dialect::UC };
            let tree = d.request(request.clone());
            assert_eq!(
                serde_json::to_string(&d.request_json(&request)).unwrap(),
                serde_json::to_string(&tree).unwrap(),
                "{flavor:?}"
            );
        }
    }

    #[test]
    fn strictness_by_flavor_version_and_mode() {
        let v1 = json!({"webhook": {"url": "http://h"}});
        assert!(dialect(Flavor::Universal, v1.clone()).strict);
        assert!(!dialect(Flavor::Composite, v1).strict, "Metacontroller reads v1 answers loosely");
        assert!(dialect(Flavor::Decorator, json!({"version": "v2", "webhook": {"url": "http://h"}})).strict);
        let loose = json!({"webhook": {"url": "http://h", "responseUnMarshallMode": "loose"}});
        assert!(!dialect(Flavor::Universal, loose).strict);
        let bad = serde_json::from_value(json!({"webhook": {"url": "h", "responseUnMarshallMode": "lax"}})).unwrap();
        assert!(Dialect::new(Flavor::Composite, &bad).unwrap_err().to_string().contains("responseUnMarshallMode"));
    }

    #[test]
    fn answers_by_strictness() {
        let uc = Dialect::UC;
        assert!(uc.decode(json!({"status": {}})).unwrap_err().to_string().contains("missing field `children`"));
        assert!(
            uc.decode(json!({"children": [], "extra": 1})).unwrap_err().to_string().contains("unknown field `extra`")
        );
        let loose = Dialect { flavor: Flavor::Composite, version: HookVersion::V1, strict: false };
        let a = loose.decode(json!({"status": {"a": 1}, "extra": 1})).unwrap();
        assert_eq!((a.response.children.len(), a.response.status), (0, Some(json!({"a": 1}))));
        let strict = Dialect { strict: true, version: HookVersion::V2, ..loose };
        assert!(strict.decode(json!({"children": [], "extra": 1})).is_err());
        assert!(strict.decode(json!({"status": {}})).unwrap().response.children.is_empty());
        assert!(loose.decode(json!({"children": {}})).unwrap_err().to_string().contains("must be a list"));
        assert!(loose.decode(json!({"status": "ok"})).is_err());
        assert!(loose.decode(json!([])).is_err());
        let full =
            loose.decode(json!({"children": [{"kind": "Pod"}], "resyncAfterSeconds": 1.5, "finalized": true})).unwrap();
        assert_eq!((full.response.resync_after_seconds, full.response.finalized), (Some(1.5), Some(true)));
    }

    #[test]
    fn decorator_answers_and_requests() {
        let d = Dialect { flavor: Flavor::Decorator, version: HookVersion::V1, strict: true };
        let a = d
            .decode(json!({"labels": {"a": "1", "gone": null}, "annotations": {"b": "2"}, "attachments": [{"kind": "Service"}]}))
            .unwrap();
        assert_eq!(a.labels, StringPatch::from([("a".into(), Some("1".into())), ("gone".into(), None)]));
        assert_eq!(a.annotations["b"], Some("2".into()));
        assert_eq!(a.response.children.len(), 1);
        assert!(d.decode(json!({"children": []})).is_err(), "a decorator answers attachments");
        assert!(d.decode(json!({"labels": {"a": 1}})).unwrap_err().to_string().contains("labels.a"));
        let req = d.request(SyncRequest { parent: json!({"kind": "StatefulSet"}).into(), ..Default::default() });
        assert_eq!(req["object"]["kind"], "StatefulSet");
        assert!(req.get("attachments").is_some() && req.get("parent").is_none() && req.get("children").is_none());
    }

    #[test]
    fn object_keys_by_version() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns"}});
        let v1 = Dialect::UC;
        let v2 = Dialect { version: HookVersion::V2, ..v1 };
        assert_eq!(v1.object_key(true, true, &pod), "p");
        assert_eq!(v1.object_key(false, true, &pod), "ns/p");
        assert_eq!(v2.object_key(true, true, &pod), "ns/p");
        let node = json!({"metadata": {"name": "n"}});
        assert_eq!(v2.object_key(true, false, &node), "n");
    }

    #[test]
    fn loose_customize_answers_drop_unknown_fields() {
        let loose = Dialect { flavor: Flavor::Composite, version: HookVersion::V1, strict: false };
        let r = loose
            .decode_customize(json!({"relatedResources": [{"apiVersion": "v1", "resource": "configmaps", "names": ["a"], "x": 1}], "y": 2}))
            .unwrap();
        assert_eq!(r.related_resources[0].names.as_deref(), Some(&["a".to_string()][..]));
        assert!(Dialect::UC.decode_customize(json!({"relatedResources": [], "y": 2})).is_err());
        let by_namespace = json!({"relatedResources": [{"apiVersion": "v1", "resource": "configmaps",
                                                         "namespaceSelector": {"matchLabels": {"a": "b"}}}]});
        let e = loose.decode_customize(by_namespace).unwrap_err().to_string();
        assert!(e.contains("namespaceSelector"), "refused, not widened: {e}");
    }
}
