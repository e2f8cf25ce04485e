//! What every pass of the lifecycle manager shares: its client, the kinds it has learned, the catalogs
//! it has read; and the names of OLM's kinds.

use serde_json::Value;
use uc_engine::dynamic::Kinds;

use crate::error::LifecycleError;
use crate::sources::Sources;

pub use crate::api::{GLOBAL_CATALOG_NAMESPACE, MANAGER, V1, V1ALPHA1, now};

/// The ConfigMaps `(namespace, name)` that CatalogSources name, kept current by the passes: each is
/// watched by name, and its changes wake the manager (`triggers.rs`).
pub type Watched = tokio::sync::watch::Sender<std::collections::BTreeSet<(String, String)>>;

/// The lifecycle manager's state between passes.
pub struct Olm {
    pub client: kube::Client,
    pub kinds: Kinds,
    pub sources: Sources,
    pub resolver: uc_engine::names::Resolver,
    /// The CSVs (namespace, name) of the last pass; None before the first.
    pub csvs_seen: Option<std::collections::BTreeSet<(String, String)>>,
    /// The catalog each CatalogSource's PackageManifests were last written from (its address).
    pub published: std::collections::HashMap<String, usize>,
    /// The ConfigMaps that CatalogSources name, whose changes wake the manager.
    pub watched: Watched,
}

impl Olm {
    /// Every object of an OLM kind, in every namespace.
    pub async fn list(&self, api_version: &str, kind: &str) -> Result<Vec<Value>, LifecycleError> {
        Ok(uc_engine::dynamic::list(&self.client, &self.kinds, api_version, kind, "").await?)
    }

    /// Server-side applies an object as the lifecycle manager.
    pub async fn apply(&self, obj: &Value) -> Result<Value, LifecycleError> {
        Ok(uc_engine::dynamic::apply(&self.client, &self.kinds, obj, MANAGER).await?)
    }

    /// Merges a typed `status` into an object's status, unless it holds it already (times aside: a
    /// status that differs only in when it was computed is not written again).
    pub async fn write_status<S: serde::Serialize>(&self, obj: &Value, status: &S) -> Result<(), LifecycleError> {
        let status = serde_json::to_value(status).map_err(LifecycleError::Encode)?;
        if obj.get("status").is_some_and(|s| uc_engine::dynamic::holds(&timeless(s), &timeless(&status))) {
            return Ok(());
        }
        Ok(uc_engine::dynamic::write_status(&self.client, &self.kinds, obj, &status).await?)
    }
}

/// The time fields of OLM's statuses.
const TIMES: &[&str] = &["lastUpdated", "lastUpdateTime", "lastTransitionTime", "lastConnect", "startTime"];

/// A status without its time fields.
pub fn timeless(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter().filter(|(k, _)| !TIMES.contains(&k.as_str())).map(|(k, v)| (k.clone(), timeless(v))).collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(timeless).collect()),
        other => other.clone(),
    }
}

/// The objects as `T`; one that does not read as one is logged and left out (the API server admitted
/// it; its own sync reports it).
pub fn typed<T: serde::de::DeserializeOwned>(objects: &[Value], kind: &str) -> Vec<T> {
    beside(objects, kind).into_iter().map(|(_, t)| t).collect()
}

/// Each object that reads as `T`, beside what it reads as (for writes that name the object).
pub fn beside<'a, T: serde::de::DeserializeOwned>(objects: &'a [Value], kind: &str) -> Vec<(&'a Value, T)> {
    let read = |o: &'a Value| {
        T::deserialize(o)
            .inspect_err(|e| tracing::warn!(kind, name = %str_at(o, "/metadata/name"), error = %e, "does not read"))
            .ok()
            .map(|t| (o, t))
    };
    objects.iter().filter_map(read).collect()
}

/// A string at a JSON pointer ("" when absent): uc-api's.
pub use uc_api::meta::str_at;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn statuses_compare_without_their_times() {
        let a = json!({"state": "AtLatestKnown", "lastUpdated": "t1", "conditions": [{"type": "X", "lastTransitionTime": "t1"}]});
        let b = json!({"state": "AtLatestKnown", "lastUpdated": "t2", "conditions": [{"type": "X", "lastTransitionTime": "t2"}]});
        assert_eq!(timeless(&a), timeless(&b));
        assert_ne!(timeless(&a), timeless(&json!({"state": "UpgradePending"})));
    }
}
