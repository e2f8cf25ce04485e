//! Kubernetes Events about parents, so `kubectl describe` shows what went wrong.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
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
        let by = uc_api::events::Reporter {
            component: component.into(),
            reporting_component: format!("uc.njuics.cn/{component}"),
            ..Default::default()
        };
        let said = uc_api::events::Said { type_, reason, message, field_path: None };
        let event = uc_api::events::event(object, format!("{name}.{suffix:016x}"), &said, &by, now);
        if let Err(e) =
            Api::<Event>::namespaced(self.client.clone(), &namespace).create(&PostParams::default(), &event).await
        {
            tracing::debug!(error = %crate::dynamic::api_error(&e), "recording an event failed");
        }
    }
}
