//! Resources served in a second shape over the same stored objects, with the conversions both ways:
//! - `events.k8s.io/v1` Events are the core Events (`regarding` ↔ `involvedObject`, `note` ↔
//!   `message`, `deprecatedCount` ↔ `count`, …), as kube-apiserver serves them;
//! - `apiextensions.k8s.io/v1beta1` CustomResourceDefinitions are the v1 ones (top-level `version`,
//!   `validation`, `subresources`, `additionalPrinterColumns` ↔ per-version fields, `JSONPath` ↔
//!   `jsonPath`), so that older operator bundles install; kube-apiserver removed v1beta1 in 1.22;
//! - `autoscaling/v1` HorizontalPodAutoscalers are the v2 ones (`hpa_v1.rs`).

use serde_json::{Map, Value, json};
use uc_api::{GroupResource, Pointer};

const EVENTS_GROUP: &str = "events.k8s.io";
const CRD_GROUP: &str = "apiextensions.k8s.io";
const AUTOSCALING: &str = "autoscaling";
const HPA: &str = "horizontalpodautoscalers";

/// Where objects of a served resource are stored.
pub fn storage_of(group: &str, resource: &str) -> GroupResource {
    if group == EVENTS_GROUP && resource == "events" {
        GroupResource::new("", "events")
    } else {
        GroupResource::new(group, resource)
    }
}

/// The apiVersion of stored objects of a served resource whose storage version is `storage_version`.
pub fn storage_api_version(group: &str, resource: &str, storage_version: &str) -> String {
    let gr = storage_of(group, resource);
    match (gr.group.as_str(), group == EVENTS_GROUP) {
        ("", true) => "v1".into(),
        ("", false) => storage_version.into(),
        (g, _) => format!("{g}/{storage_version}"),
    }
}

/// The field pairs of an events.k8s.io Event and a core Event.
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn rename(obj: &Value, pairs: impl Iterator<Item = (&'static str, &'static str)>) -> Value {
    let Some(map) = obj.as_object() else { return obj.clone() };
    let mut out = map.clone();
    for (from, to) in pairs {
        if let Some(v) = out.remove(from) {
            out.insert(to.to_string(), v);
        }
    }
    Value::Object(out)
}

/// Whether [`to_view`] makes a view of objects of this resource at `version`.
pub fn has_view(group: &str, resource: &str, version: &str) -> bool {
    matches!(
        (group, resource, version),
        (EVENTS_GROUP, "events", _) | (CRD_GROUP, "customresourcedefinitions", "v1beta1") | (AUTOSCALING, HPA, "v1")
    )
}

/// A stored object as the served `group/version` shows it.
pub fn to_view(group: &str, resource: &str, version: &str, obj: &Value) -> Option<Value> {
    match (group, resource, version) {
        (EVENTS_GROUP, "events", _) => {
            let mut v = rename(obj, EVENT_FIELDS.iter().map(|(a, b)| (*b, *a)));
            v["apiVersion"] = json!(format!("{EVENTS_GROUP}/{version}"));
            // `eventTime` is required in this API; an event recorded the core way has none, so it
            // shows when it first happened (clients such as the Python one refuse a null).
            if v.get("eventTime").is_none_or(Value::is_null) {
                let first = v.get("deprecatedFirstTimestamp").or_else(|| v.at("/metadata/creationTimestamp"));
                if let Some(t) = first.and_then(Value::as_str).filter(|t| t.ends_with('Z')) {
                    v["eventTime"] = json!(format!("{}.000000Z", t.trim_end_matches('Z')));
                }
            }
            Some(v)
        }
        (CRD_GROUP, "customresourcedefinitions", "v1beta1") => Some(crd_v1_to_v1beta1(obj)),
        (AUTOSCALING, HPA, "v1") => Some(hpa_v1::to_v1(obj)),
        _ => None,
    }
}

/// A served object converted to how it is stored (`None`: stored as served).
pub fn from_view(group: &str, resource: &str, version: &str, obj: &Value) -> Option<Value> {
    match (group, resource, version) {
        (EVENTS_GROUP, "events", _) => {
            let mut v = rename(obj, EVENT_FIELDS.iter().copied());
            v["apiVersion"] = json!("v1");
            Some(v)
        }
        (CRD_GROUP, "customresourcedefinitions", "v1beta1") => Some(crd_v1beta1_to_v1(obj)),
        (AUTOSCALING, HPA, "v1") => Some(hpa_v1::from_v1(obj)),
        _ => None,
    }
}

fn rename_columns(columns: &Value, from: &str, to: &str) -> Value {
    match columns.as_array() {
        Some(cols) => Value::Array(cols.iter().map(|c| rename_key(c, from, to)).collect()),
        None => columns.clone(),
    }
}

fn rename_key(obj: &Value, from: &str, to: &str) -> Value {
    let mut m = obj.as_object().cloned().unwrap_or_default();
    if let Some(v) = m.remove(from) {
        m.insert(to.to_string(), v);
    }
    Value::Object(m)
}

/// A v1beta1 CustomResourceDefinition as v1: every version gets its schema, subresources and
/// columns; with `preserveUnknownFields` (v1beta1's default) the schemas keep unknown fields.
pub fn crd_v1beta1_to_v1(obj: &Value) -> Value {
    let mut crd = obj.clone();
    crd["apiVersion"] = json!(format!("{CRD_GROUP}/v1"));
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else { return crd };
    let top_version = spec.remove("version");
    let validation = spec.remove("validation");
    let subresources = spec.remove("subresources");
    let columns = spec.remove("additionalPrinterColumns");
    let preserve = spec.remove("preserveUnknownFields").and_then(|p| p.as_bool()).unwrap_or(true);
    let mut versions: Vec<Value> = spec.get("versions").and_then(Value::as_array).cloned().unwrap_or_default();
    if versions.is_empty()
        && let Some(name) = top_version.as_ref().and_then(Value::as_str)
    {
        versions.push(json!({"name": name, "served": true, "storage": true}));
    }
    for v in &mut versions {
        let Some(m) = v.as_object_mut() else { continue };
        if !m.contains_key("schema")
            && let Some(s) = &validation
        {
            m.insert("schema".into(), s.clone());
        }
        if !m.contains_key("subresources")
            && let Some(s) = &subresources
        {
            m.insert("subresources".into(), s.clone());
        }
        let cols = m.remove("additionalPrinterColumns").or_else(|| columns.clone());
        if let Some(cols) = cols {
            m.insert("additionalPrinterColumns".into(), rename_columns(&cols, "JSONPath", "jsonPath"));
        }
        let schema = m.entry("schema").or_insert_with(|| json!({"openAPIV3Schema": {"type": "object"}}));
        if let Some(root) = schema.get_mut("openAPIV3Schema") {
            fill_types(root);
        }
        if preserve && let Some(root) = schema.get_mut("openAPIV3Schema") {
            if let Some(m) = root.as_object_mut() {
                m.entry("type").or_insert(json!("object"));
            }
            preserve_unknown_fields(root);
        }
    }
    spec.insert("versions".into(), Value::Array(versions));
    if let Some(conversion) = spec.get_mut("conversion").and_then(Value::as_object_mut) {
        let client = conversion.remove("webhookClientConfig");
        let review = conversion.remove("conversionReviewVersions");
        if client.is_some() || review.is_some() {
            let mut webhook = Map::new();
            if let Some(c) = client {
                webhook.insert("clientConfig".into(), c);
            }
            webhook.insert("conversionReviewVersions".into(), review.unwrap_or_else(|| json!(["v1beta1"])));
            conversion.insert("webhook".into(), Value::Object(webhook));
        }
    }
    crd
}

/// v1beta1 accepted schemas that leave out the obvious `type` (`properties` without `type: object`,
/// as older generators wrote them), which v1 requires: it is filled in.
fn fill_types(schema: &mut Value) {
    let Some(m) = schema.as_object_mut() else { return };
    if !m.contains_key("type") && !m.contains_key("x-kubernetes-int-or-string") {
        if m.contains_key("properties") || m.contains_key("additionalProperties") {
            m.insert("type".into(), json!("object"));
        } else if m.contains_key("items") {
            m.insert("type".into(), json!("array"));
        }
    }
    if let Some(props) = m.get_mut("properties").and_then(Value::as_object_mut) {
        props.values_mut().for_each(fill_types);
    }
    for k in ["items", "additionalProperties"] {
        if let Some(child) = m.get_mut(k) {
            fill_types(child);
        }
    }
}

/// v1beta1's `preserveUnknownFields: true` kept unknown fields everywhere: every object of the
/// schema keeps them.
fn preserve_unknown_fields(schema: &mut Value) {
    let Some(m) = schema.as_object_mut() else { return };
    if m.get("type").and_then(Value::as_str) == Some("object") {
        m.entry("x-kubernetes-preserve-unknown-fields").or_insert(json!(true));
    }
    if let Some(props) = m.get_mut("properties").and_then(Value::as_object_mut) {
        props.values_mut().for_each(preserve_unknown_fields);
    }
    for k in ["items", "additionalProperties"] {
        if let Some(child) = m.get_mut(k) {
            preserve_unknown_fields(child);
        }
    }
}

/// A v1 CustomResourceDefinition as v1beta1 shows it (per-version fields kept, `version` naming
/// the first one).
pub fn crd_v1_to_v1beta1(obj: &Value) -> Value {
    let mut crd = obj.clone();
    crd["apiVersion"] = json!(format!("{CRD_GROUP}/v1beta1"));
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else { return crd };
    if let Some(versions) = spec.get_mut("versions").and_then(Value::as_array_mut) {
        for v in versions.iter_mut() {
            if let Some(cols) = v.get("additionalPrinterColumns").cloned() {
                v["additionalPrinterColumns"] = rename_columns(&cols, "jsonPath", "JSONPath");
            }
        }
    }
    // What every version has alike shows at the top, as v1beta1 wrote it (so that a client's
    // patch of the top-level field, computed from a v1beta1 file, lands where it is read).
    for (per_version, top) in [
        ("schema", "validation"),
        ("subresources", "subresources"),
        ("additionalPrinterColumns", "additionalPrinterColumns"),
    ] {
        let versions = spec.get("versions").and_then(Value::as_array).cloned().unwrap_or_default();
        let first = versions.first().and_then(|v| v.get(per_version)).cloned();
        if let Some(first) = first.filter(|f| versions.iter().all(|v| v.get(per_version) == Some(f))) {
            spec.insert(top.into(), first);
            if let Some(vs) = spec.get_mut("versions").and_then(Value::as_array_mut) {
                for v in vs.iter_mut().filter_map(Value::as_object_mut) {
                    v.remove(per_version);
                }
            }
        }
    }
    let first = spec.get("versions").and_then(|v| v.at("/0/name")).cloned();
    if let Some(first) = first {
        spec.insert("version".into(), first);
    }
    if let Some(conversion) = spec.get_mut("conversion").and_then(Value::as_object_mut)
        && let Some(Value::Object(webhook)) = conversion.remove("webhook")
    {
        for (k, v) in webhook {
            let k = if k == "clientConfig" { "webhookClientConfig".to_string() } else { k };
            conversion.insert(k, v);
        }
    }
    crd
}

mod hpa_v1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_the_core_events_renamed() {
        let core = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "n"},
                          "involvedObject": {"kind": "Pod", "name": "p"}, "message": "pulled", "reason": "Pulled",
                          "count": 3, "reportingComponent": "kubelet", "type": "Normal"});
        let view = to_view("events.k8s.io", "events", "v1", &core).unwrap();
        assert_eq!(view["apiVersion"], "events.k8s.io/v1");
        assert_eq!((view["regarding"]["name"].as_str(), view["note"].as_str()), (Some("p"), Some("pulled")));
        assert_eq!(
            (view["deprecatedCount"].as_i64(), view["reportingController"].as_str()),
            (Some(3), Some("kubelet"))
        );
        assert_eq!(from_view("events.k8s.io", "events", "v1", &view).unwrap(), core, "the round trip is exact");
        let mut old = core.clone();
        old["firstTimestamp"] = json!("2026-11-23T10:00:00Z");
        let view = to_view("events.k8s.io", "events", "v1", &old).unwrap();
        assert_eq!(view["eventTime"], "2026-11-23T10:00:00.000000Z", "a core event shows when it first happened");
        assert_eq!(storage_of("events.k8s.io", "events"), GroupResource::new("", "events"));
        assert_eq!(storage_api_version("events.k8s.io", "events", "v1"), "v1");
        assert_eq!(storage_api_version("apps", "deployments", "v1"), "apps/v1");
        assert!(to_view("apps", "deployments", "v1", &core).is_none());
    }

    #[test]
    fn a_v1beta1_crd_becomes_v1_and_shows_as_v1beta1() {
        let old = json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "foos.example.com"},
            "spec": {"group": "example.com", "version": "v1alpha1", "scope": "Namespaced",
                     "names": {"plural": "foos", "kind": "Foo"},
                     "validation": {"openAPIV3Schema": {"properties": {"spec": {"type": "object"}}}},
                     "subresources": {"status": {}},
                     "additionalPrinterColumns": [{"name": "Size", "type": "integer", "JSONPath": ".spec.size"}],
                     "conversion": {"strategy": "None"}}});
        let v1 = crd_v1beta1_to_v1(&old);
        let version = &v1["spec"]["versions"][0];
        assert_eq!(version["name"], "v1alpha1");
        assert_eq!(version["served"], true);
        assert_eq!(version["subresources"], json!({"status": {}}));
        assert_eq!(version["additionalPrinterColumns"][0]["jsonPath"], ".spec.size");
        assert_eq!(version["schema"]["openAPIV3Schema"]["x-kubernetes-preserve-unknown-fields"], true);
        assert_eq!(version["schema"]["openAPIV3Schema"]["type"], "object");
        let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["type"], "object", "filled in");
        assert_eq!(spec["x-kubernetes-preserve-unknown-fields"], true, "nothing is pruned anywhere");
        assert!(v1["spec"].get("validation").is_none() && v1["spec"].get("version").is_none());
        let back = crd_v1_to_v1beta1(&v1);
        assert_eq!(back["spec"]["version"], "v1alpha1");
        assert_eq!(back["spec"]["additionalPrinterColumns"][0]["JSONPath"], ".spec.size", "alike: at the top");
        assert!(back["spec"]["validation"]["openAPIV3Schema"].is_object());
        assert!(back["spec"]["versions"][0].get("schema").is_none());
        let mut patched = back.clone();
        patched["spec"]["validation"]["openAPIV3Schema"]["properties"]["spec"]["x-marker"] = json!(1);
        let again = crd_v1beta1_to_v1(&patched);
        assert_eq!(again["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-marker"], 1);
        let pruned = json!({"spec": {"group": "g.io", "version": "v1", "preserveUnknownFields": false}});
        let v1 = crd_v1beta1_to_v1(&pruned);
        assert!(
            v1["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
                .get("x-kubernetes-preserve-unknown-fields")
                .is_none()
        );
        let webhook = json!({"spec": {"conversion": {"strategy": "Webhook", "webhookClientConfig": {"url": "https://x"},
                                                     "conversionReviewVersions": ["v1beta1"]}}});
        assert_eq!(crd_v1beta1_to_v1(&webhook)["spec"]["conversion"]["webhook"]["clientConfig"]["url"], "https://x");
    }
}
