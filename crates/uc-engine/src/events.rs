//! Kubernetes Events about parents, so `kubectl describe` shows what went wrong.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, PostParams};
use parking_lot::Mutex;
use serde_json::Value;
use uc_api::Pointer;

/// Identical events about one object are recorded at most this often.
const REPEAT_AFTER: Duration = Duration::from_secs(30);

/// Records Events.
pub struct Recorder {
    client: kube::Client,
    component: String,
    recent: Mutex<HashMap<(String, String), Instant>>,
}

impl Recorder {
    /// A recorder using this client, its Events from `uc`.
    pub fn new(client: kube::Client) -> Self {
        Self::named(client, "uc")
    }

    /// A recorder whose Events come from `component` (a controller's name).
    pub fn named(client: kube::Client, component: &str) -> Self {
        Self { client, component: component.to_string(), recent: Mutex::new(HashMap::new()) }
    }

    /// Records an event of `type_` (`Normal`, `Warning`) about `object`.
    pub async fn record(&self, object: &Value, type_: &str, reason: &str, message: &str) {
        let component = self.component.clone();
        self.record_as(&component, object, type_, reason, message).await
    }

    /// Records an event from `component` (`source.component`; `reportingComponent`
    /// `uc.njuics.cn/<component>`).
    pub async fn record_as(&self, component: &str, object: &Value, type_: &str, reason: &str, message: &str) {
        let s = |p: &str| object.at(p).and_then(Value::as_str).map(String::from);
        let uid = s("/metadata/uid").unwrap_or_default();
        {
            let mut recent = self.recent.lock();
            let key = (uid.clone(), format!("{reason}/{message}"));
            if recent.get(&key).is_some_and(|t| t.elapsed() < REPEAT_AFTER) {
                return;
            }
            recent.retain(|_, t| t.elapsed() < REPEAT_AFTER);
            recent.insert(key, Instant::now());
        }
        let name = s("/metadata/name").unwrap_or_default();
        let namespace = s("/metadata/namespace").filter(|n| !n.is_empty()).unwrap_or_else(|| "default".into());
        let now = Time(k8s_openapi::jiff::Timestamp::now());
        let suffix: u64 = rand::random();
        let event = Event {
            metadata: ObjectMeta {
                name: Some(format!("{name}.{suffix:016x}")),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            involved_object: ObjectReference {
                api_version: s("/apiVersion"),
                kind: s("/kind"),
                name: Some(name),
                namespace: s("/metadata/namespace"),
                uid: Some(uid),
                resource_version: s("/metadata/resourceVersion"),
                ..Default::default()
            },
            reason: Some(reason.into()),
            message: Some(message.chars().take(1024).collect()),
            type_: Some(type_.into()),
            count: Some(1),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now),
            source: Some(EventSource { component: Some(component.into()), ..Default::default() }),
            reporting_component: Some(format!("uc.njuics.cn/{component}")),
            ..Default::default()
        };
        if let Err(e) =
            Api::<Event>::namespaced(self.client.clone(), &namespace).create(&PostParams::default(), &event).await
        {
            tracing::debug!(error = %crate::dynamic::api_error(&e), "recording an event failed");
        }
    }
}
