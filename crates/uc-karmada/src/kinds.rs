//! Which resource serves a kind (`apiVersion` + `kind` → its plural and scope), per cluster, cached.

use std::collections::HashMap;

use kube::api::{Api, ApiResource, DynamicObject};
use parking_lot::Mutex;

/// A kind's resource in one cluster.
#[derive(Clone, Debug)]
pub struct Kind {
    pub ar: ApiResource,
    pub namespaced: bool,
}

impl Kind {
    /// The API of this kind in `namespace` (ignored for cluster-scoped kinds).
    pub fn api(&self, client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
        if self.namespaced && !namespace.is_empty() {
            Api::namespaced_with(client.clone(), namespace, &self.ar)
        } else {
            Api::all_with(client.clone(), &self.ar)
        }
    }
}

/// The kinds one cluster serves, learned from its discovery documents.
#[derive(Default)]
pub struct Kinds {
    cache: Mutex<HashMap<(String, String), Kind>>,
}

impl Kinds {
    /// The resource of `kind` in `api_version`.
    pub async fn get(&self, client: &kube::Client, api_version: &str, kind: &str) -> Result<Kind, String> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(k) = self.cache.lock().get(&key) {
            return Ok(k.clone());
        }
        let (group, version) = uc_api::resource::split_api_version(api_version);
        let list = if group.is_empty() {
            client.list_core_api_resources(version).await
        } else {
            client.list_api_group_resources(api_version).await
        }
        .map_err(|e| format!("{api_version} is not served: {e}"))?;
        let found = list
            .resources
            .iter()
            .find(|r| r.kind == kind && !r.name.contains('/'))
            .ok_or_else(|| format!("{api_version} has no kind {kind}"))?;
        let k = Kind {
            ar: ApiResource {
                group: group.to_string(),
                version: version.to_string(),
                api_version: api_version.to_string(),
                kind: kind.to_string(),
                plural: found.name.clone(),
            },
            namespaced: found.namespaced,
        };
        self.cache.lock().insert(key, k.clone());
        Ok(k)
    }

    /// Forgets what was learned (a CRD may have come or gone).
    pub fn forget(&self) {
        self.cache.lock().clear();
    }
}
