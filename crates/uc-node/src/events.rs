//! The Events a kubelet and the scheduler record about pods, with their reasons and words, so that
//! `kubectl describe pod` reads as on a kubeadm cluster: `Scheduled` (default-scheduler), then per
//! container `Pulled`, `Created`, `Started`, and `Killing`, `BackOff`, `Unhealthy`, `Failed`.
//! Recorded as client-go's recorder does: an Event that repeats within ten minutes is not written
//! again, its `count` and `lastTimestamp` are (the correlator's aggregation).

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Event, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use serde_json::json;

use crate::pod_api::{name, namespace, uid};

/// Repeats within this long are counted on the first Event instead of written anew.
const AGGREGATE_FOR: Duration = Duration::from_secs(600);

/// Most Events remembered for counting repeats, the oldest forgotten first: client-go's event correlator
/// keeps an LRU cache of 4,096. Unbounded, the node remembered every Event of the last ten minutes (five
/// per pod: ~1.4 MB for each 1,000 pods that came and went, and a scan of all of them per Event).
const REMEMBERED: usize = 4096;

/// Something that happened to a pod or one of its containers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Happened {
    /// The container it concerns (`fieldPath: spec.containers{name}`), if one.
    pub container: Option<String>,
    /// `Normal` or `Warning`.
    pub type_: &'static str,
    /// kube's reason (`Started`, `BackOff`, ...).
    pub reason: &'static str,
    /// kube's words.
    pub message: String,
}

impl Happened {
    fn about(container: &str, type_: &'static str, reason: &'static str, message: String) -> Happened {
        Happened { container: Some(container.to_string()), type_, reason, message }
    }

    /// The scheduler bound the pod to `node`.
    pub fn scheduled(pod: &Pod, node: &str) -> Happened {
        let message = format!("Successfully assigned {}/{} to {node}", namespace(pod), name(pod));
        Happened { container: None, type_: "Normal", reason: "Scheduled", message }
    }

    /// A run of a container began: the image is there (nothing is pulled), it was made and started.
    pub fn started(container: &str, image: &str) -> Vec<Happened> {
        vec![
            Happened::about(
                container,
                "Normal",
                "Pulled",
                format!("Container image {image:?} already present on machine"),
            ),
            Happened::about(container, "Normal", "Created", format!("Created container: {container}")),
            Happened::about(container, "Normal", "Started", format!("Started container {container}")),
        ]
    }

    /// A container is stopped (the pod is deleted, or its image changed).
    pub fn killing(container: &str) -> Happened {
        Happened::about(container, "Normal", "Killing", format!("Stopping container {container}"))
    }

    /// A container failed its liveness probe and is killed to be restarted.
    pub fn killed_for_liveness(container: &str) -> Happened {
        Happened::about(
            container,
            "Normal",
            "Killing",
            format!("Container {container} failed liveness probe, will be restarted"),
        )
    }

    /// A probe failed (`Liveness`, `Readiness`, `Startup`).
    pub fn unhealthy(container: &str, probe: &str, why: &str) -> Happened {
        Happened::about(container, "Warning", "Unhealthy", format!("{probe} probe failed: {why}"))
    }

    /// A container that ended waits its back-off before it runs again.
    pub fn back_off(container: &str, pod: &str) -> Happened {
        Happened::about(
            container,
            "Warning",
            "BackOff",
            format!("Back-off restarting failed container {container} in pod {pod}"),
        )
    }

    /// A container could not be started.
    pub fn failed(container: &str, message: &str) -> Happened {
        Happened::about(container, "Warning", "Failed", format!("Error: {message}"))
    }

    /// The pod's worker failed (it panicked) and runs again: the kubelet's `FailedSync`.
    pub fn failed_sync(error: &impl std::fmt::Display) -> Happened {
        Happened {
            container: None,
            type_: "Warning",
            reason: "FailedSync",
            message: format!("error syncing pod: {error}"),
        }
    }
}

/// The pod as a kubelet names it in messages: `name_namespace(uid)`.
pub fn pod_words(pod: &Pod) -> String {
    format!("{}_{}({})", name(pod), namespace(pod), uid(pod))
}

/// Who records: `source.component` and `host`, `reportingComponent` and `reportingInstance`.
#[derive(Clone, Debug)]
pub struct Reporter {
    pub component: String,
    pub host: Option<String>,
}

/// The Event recording `h` about `pod` (its name given by the caller).
pub fn event(pod: &Pod, h: &Happened, by: &Reporter, name: String, now: Time) -> Event {
    let by = uc_api::events::Reporter {
        component: by.component.clone(),
        host: by.host.clone(),
        reporting_component: by.component.clone(),
        reporting_instance: by.host.clone().or_else(|| Some(by.component.clone())),
    };
    let field_path = h.container.as_ref().map(|c| format!("spec.containers{{{c}}}"));
    let said = uc_api::events::Said { type_: h.type_, reason: h.reason, message: &h.message, field_path };
    let about = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: pod.metadata.name.clone(),
        namespace: pod.metadata.namespace.clone(),
        uid: pod.metadata.uid.clone(),
        resource_version: pod.metadata.resource_version.clone(),
        field_path: None,
    };
    uc_api::events::event_about(about, name, &said, &by, now)
}

/// What makes Events the same: (pod uid, container, reason, message).
type Key = (String, Option<String>, &'static str, String);

/// The Events written lately, to count repeats on: at most [`REMEMBERED`], none older than
/// [`AGGREGATE_FOR`].
#[derive(Default)]
struct Recent {
    /// (pod uid, container, reason, message) → (the Event's name, its count).
    events: HashMap<Key, (String, i32)>,
    /// The keys in the order their Events were first written.
    order: VecDeque<(Instant, Key)>,
}

impl Recent {
    /// Counts a repeat of `key`'s Event: its name and new count, if it is remembered.
    fn repeat(&mut self, key: &Key, now: Instant) -> Option<(String, i32)> {
        self.forget(now, 0);
        self.events.get_mut(key).map(|(name, count)| {
            *count += 1;
            (name.clone(), *count)
        })
    }

    /// Remembers the Event `name` written first for `key` at `now`.
    fn remember(&mut self, key: Key, name: String, now: Instant) {
        self.forget(now, 1);
        if self.events.insert(key.clone(), (name, 1)).is_none() {
            self.order.push_back((now, key));
        }
    }

    /// Forgets the Events older than [`AGGREGATE_FOR`], and the oldest while there are more than
    /// [`REMEMBERED`] less `room`.
    fn forget(&mut self, now: Instant, room: usize) {
        while let Some((at, key)) = self.order.front() {
            if now.saturating_duration_since(*at) < AGGREGATE_FOR && self.order.len() + room <= REMEMBERED {
                break;
            }
            self.events.remove(key);
            self.order.pop_front();
        }
    }
}

/// Records pod Events, aggregating repeats.
pub struct Recorder {
    client: kube::Client,
    by: Reporter,
    recent: Mutex<Recent>,
}

impl Recorder {
    /// A recorder writing with `client` as `by`.
    pub fn new(client: kube::Client, by: Reporter) -> Recorder {
        Recorder { client, by, recent: Mutex::new(Recent::default()) }
    }

    /// Records `h` about `pod`: a new Event, or the count of the same one written in the last ten minutes.
    pub async fn record(&self, pod: &Pod, h: &Happened) {
        let namespace = Some(namespace(pod)).filter(|n| !n.is_empty()).unwrap_or("default");
        let key = (uid(pod).to_string(), h.container.clone(), h.reason, h.message.clone());
        let now = Time(k8s_openapi::jiff::Timestamp::now());
        let repeat = self.recent.lock().repeat(&key, Instant::now());
        let api = Api::<Event>::namespaced(self.client.clone(), namespace);
        let written = match repeat {
            Some((name, count)) => {
                let patch = json!({"count": count, "lastTimestamp": now});
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map(|_| ())
            }
            None => {
                let pod_name = Some(name(pod)).filter(|n| !n.is_empty()).unwrap_or("pod");
                // As client-go names them: the object's name and the time in nanoseconds, in hex.
                let name = format!("{pod_name}.{:x}", now.0.as_nanosecond());
                self.recent.lock().remember(key, name.clone(), Instant::now());
                api.create(&PostParams::default(), &event(pod, h, &self.by, name, now)).await.map(|_| ())
            }
        };
        if let Err(e) = written {
            tracing::debug!(reason = h.reason, error = %crate::pod_api::said(&e), "recording an event failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> Pod {
        serde_json::from_value(
            json!({"metadata": {"name": "web-0", "namespace": "default", "uid": "u1", "resourceVersion": "7"}}),
        )
        .unwrap()
    }

    fn key(i: usize) -> Key {
        (format!("uid-{i}"), None, "Started", "Started container main".to_string())
    }

    #[test]
    fn repeats_are_counted_on_the_events_remembered_the_oldest_forgotten_beyond_the_cache() {
        let mut recent = Recent::default();
        let start = Instant::now();
        assert_eq!(recent.repeat(&key(0), start), None, "nothing written yet");
        recent.remember(key(0), "a.1".into(), start);
        assert_eq!(recent.repeat(&key(0), start), Some(("a.1".into(), 2)));
        assert_eq!(recent.repeat(&key(0), start), Some(("a.1".into(), 3)));
        for i in 1..=REMEMBERED {
            recent.remember(key(i), format!("p{i}.1"), start);
        }
        assert_eq!(recent.events.len(), REMEMBERED, "bounded as client-go's cache is");
        assert_eq!(recent.order.len(), REMEMBERED);
        assert_eq!(recent.repeat(&key(0), start), None, "the oldest was forgotten");
        assert_eq!(recent.repeat(&key(1), start), Some(("p1.1".into(), 2)));
        // Ten minutes on, every one of them has aged out.
        let later = start + AGGREGATE_FOR;
        assert_eq!(recent.repeat(&key(REMEMBERED), later), None);
        assert!(recent.events.is_empty() && recent.order.is_empty());
        recent.remember(key(1), "p1.2".into(), later);
        assert_eq!(recent.repeat(&key(1), later), Some(("p1.2".into(), 2)), "written anew, counted anew");
    }

    #[test]
    fn a_kubelets_reasons_and_words() {
        let reasons: Vec<(&str, String)> =
            Happened::started("etcd", "quay.io/coreos/etcd:v3.5").into_iter().map(|h| (h.reason, h.message)).collect();
        assert_eq!(
            reasons,
            [
                ("Pulled", "Container image \"quay.io/coreos/etcd:v3.5\" already present on machine".to_string()),
                ("Created", "Created container: etcd".to_string()),
                ("Started", "Started container etcd".to_string()),
            ]
        );
        assert_eq!(Happened::killing("c").message, "Stopping container c");
        assert_eq!(Happened::unhealthy("c", "Liveness", "HTTP probe failed with statuscode: 500").type_, "Warning");
        let pod = pod();
        assert_eq!(
            Happened::back_off("c", &pod_words(&pod)).message,
            "Back-off restarting failed container c in pod web-0_default(u1)"
        );
    }

    #[test]
    fn an_event_names_the_container_by_its_field_path() {
        let pod = pod();
        let by = Reporter { component: "kubelet".into(), host: Some("uc-node".into()) };
        let now = Time(k8s_openapi::jiff::Timestamp::now());
        let e = event(&pod, &Happened::killing("app"), &by, "web-0.1".into(), now);
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["involvedObject"]["fieldPath"], "spec.containers{app}");
        assert_eq!(v["involvedObject"]["uid"], "u1");
        assert_eq!(
            (v["involvedObject"]["apiVersion"].as_str(), v["involvedObject"]["kind"].as_str()),
            (Some("v1"), Some("Pod"))
        );
        assert_eq!(v["source"], json!({"component": "kubelet", "host": "uc-node"}));
        assert_eq!((v["count"].as_i64(), v["reason"].as_str()), (Some(1), Some("Killing")));
        let scheduled = Happened { container: None, type_: "Normal", reason: "Scheduled", message: "m".into() };
        let by = Reporter { component: "default-scheduler".into(), host: None };
        let v =
            serde_json::to_value(event(&pod, &scheduled, &by, "n".into(), Time(k8s_openapi::jiff::Timestamp::now())))
                .unwrap();
        assert!(v["involvedObject"].get("fieldPath").is_none());
        assert_eq!(v["reportingInstance"], "default-scheduler");
    }
}
