//! A core/v1 Event about an object, as Kubernetes' recorders write one: the one builder behind the
//! node's pod Events (a kubelet's, the scheduler's) and the engine's Events about parents.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde_json::Value;

use crate::Pointer;

/// The longest message an Event keeps (the rest is cut, on a character boundary).
const MESSAGE_AT_MOST: usize = 1024;

/// Who records Events: `source` (`component`, `host`) and `reportingComponent`/`reportingInstance`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reporter {
    pub component: String,
    pub host: Option<String>,
    pub reporting_component: String,
    pub reporting_instance: Option<String>,
}

/// What an Event says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Said<'a> {
    /// `Normal` or `Warning`.
    pub type_: &'a str,
    pub reason: &'a str,
    pub message: &'a str,
    /// The part of the object it is about (`spec.containers{web}`), if a part.
    pub field_path: Option<String>,
}

/// The Event named `name` about `object`, first and last seen `now`, in the object's namespace
/// (`default` for a cluster-scoped one, as kube records those).
pub fn event(object: &Value, name: String, said: &Said<'_>, by: &Reporter, now: Time) -> Event {
    let s = |p: &str| object.at(p).and_then(Value::as_str).map(String::from);
    let about = ObjectReference {
        api_version: s("/apiVersion"),
        kind: s("/kind"),
        name: s("/metadata/name"),
        namespace: s("/metadata/namespace"),
        uid: s("/metadata/uid"),
        resource_version: s("/metadata/resourceVersion"),
        field_path: None,
    };
    event_about(about, name, said, by, now)
}

/// The Event named `name` about the object `about` refers to (its `fieldPath` is the one `said`
/// names), first and last seen `now`, in that object's namespace (`default` for a cluster-scoped one).
pub fn event_about(mut about: ObjectReference, name: String, said: &Said<'_>, by: &Reporter, now: Time) -> Event {
    about.namespace = about.namespace.filter(|n| !n.is_empty());
    about.field_path = said.field_path.clone();
    Event {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(about.namespace.clone().unwrap_or_else(|| "default".into())),
            ..Default::default()
        },
        involved_object: about,
        reason: Some(said.reason.into()),
        message: Some(said.message.chars().take(MESSAGE_AT_MOST).collect()),
        type_: Some(said.type_.into()),
        count: Some(1),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now),
        source: Some(EventSource { component: Some(by.component.clone()), host: by.host.clone() }),
        reporting_component: Some(by.reporting_component.clone()),
        reporting_instance: by.reporting_instance.clone(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn now() -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(1_800_000_000).unwrap())
    }

    #[test]
    fn an_event_names_its_object_and_its_recorder_and_keeps_a_short_message() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": "web-0", "namespace": "shop", "uid": "u1", "resourceVersion": "7"}});
        let by = Reporter {
            component: "kubelet".into(),
            host: Some("uc-node".into()),
            reporting_component: "kubelet".into(),
            reporting_instance: Some("uc-node".into()),
        };
        let long = "x".repeat(2000);
        let said = Said {
            type_: "Warning",
            reason: "BackOff",
            message: &long,
            field_path: Some("spec.containers{web}".into()),
        };
        let e = serde_json::to_value(event(&pod, "web-0.1".into(), &said, &by, now())).unwrap();
        assert_eq!(e["metadata"], json!({"name": "web-0.1", "namespace": "shop"}));
        assert_eq!(
            e["involvedObject"],
            json!({"apiVersion": "v1", "kind": "Pod", "name": "web-0", "namespace": "shop", "uid": "u1",
                   "resourceVersion": "7", "fieldPath": "spec.containers{web}"})
        );
        assert_eq!(e["source"], json!({"component": "kubelet", "host": "uc-node"}));
        assert_eq!(
            (e["reportingComponent"].as_str(), e["reportingInstance"].as_str()),
            (Some("kubelet"), Some("uc-node"))
        );
        assert_eq!(
            (e["type"].as_str(), e["reason"].as_str(), e["count"].as_i64()),
            (Some("Warning"), Some("BackOff"), Some(1))
        );
        assert_eq!(e["message"].as_str().map(str::len), Some(1024));
        assert_eq!(e["firstTimestamp"], e["lastTimestamp"]);
    }

    #[test]
    fn a_cluster_scoped_objects_event_is_kept_in_default() {
        let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "uid": "u"}});
        let said = Said { type_: "Normal", reason: "R", message: "m", field_path: None };
        let e = serde_json::to_value(event(&node, "n.1".into(), &said, &Reporter::default(), now())).unwrap();
        assert_eq!(e["metadata"]["namespace"], "default");
        assert!(e["involvedObject"].get("namespace").is_none());
    }
}
