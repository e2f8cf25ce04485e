//! Objects of any kind as JSON, for controllers that act on kinds they learn at run time (the
//! multi-cluster control plane, the operator lifecycle manager): which resource serves a kind, per
//! cluster, cached; list, get, server-side apply, status, merge patch and delete; `holds`, whether an
//! object already has what a desired one says.

use std::collections::HashMap;

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use parking_lot::Mutex;
use serde_json::{Value, json};
use uc_api::meta::str_at;

/// Why a request about objects of a dynamic kind failed, in the server's words.
#[derive(Debug, thiserror::Error)]
pub enum DynamicError {
    /// Discovery found no such group/version.
    #[error("{api_version} is not served: {}", api_error(.source))]
    NotServed { api_version: String, source: Box<kube::Error> },
    /// The group/version serves no such kind.
    #[error("{api_version} has no kind {kind}")]
    NoKind { api_version: String, kind: String },
    /// The request itself failed: `action` (listing, reading, …) of `kind` `at` (namespace/name).
    #[error("{action} {kind} {at}: {}", api_error(.source))]
    Request { action: &'static str, kind: String, at: String, source: Box<kube::Error> },
}

impl DynamicError {
    fn request(action: &'static str, kind: &str, at: String) -> impl FnOnce(kube::Error) -> DynamicError {
        let kind = kind.to_string();
        move |source| DynamicError::Request { action, kind, at, source: Box::new(source) }
    }

    /// The HTTP status the server answered with, if it answered.
    pub fn code(&self) -> Option<u16> {
        match self {
            DynamicError::NotServed { source, .. } | DynamicError::Request { source, .. } => match &**source {
                kube::Error::Api(s) => Some(s.code),
                _ => None,
            },
            DynamicError::NoKind { .. } => None,
        }
    }
}

/// The result of a request about dynamic objects.
pub type Result<T, E = DynamicError> = std::result::Result<T, E>;

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
    pub async fn get(&self, client: &kube::Client, api_version: &str, kind: &str) -> Result<Kind> {
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
        .map_err(|e| DynamicError::NotServed { api_version: api_version.to_string(), source: Box::new(e) })?;
        let found = list
            .resources
            .iter()
            .find(|r| r.kind == kind && !r.name.contains('/'))
            .ok_or_else(|| DynamicError::NoKind { api_version: api_version.to_string(), kind: kind.to_string() })?;
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

/// Every object of `api_version`/`kind` (in `namespace`, or everywhere when it is empty).
pub async fn list(
    client: &kube::Client,
    kinds: &Kinds,
    api_version: &str,
    kind: &str,
    namespace: &str,
) -> Result<Vec<Value>> {
    list_with(client, kinds, (api_version, kind), namespace, &ListParams::default()).await
}

/// Every object of `api_version`/`kind` whose labels `selector` selects (string form), everywhere.
pub async fn list_selected(
    client: &kube::Client,
    kinds: &Kinds,
    api_version: &str,
    kind: &str,
    selector: &str,
) -> Result<Vec<Value>> {
    list_with(client, kinds, (api_version, kind), "", &ListParams::default().labels(selector)).await
}

async fn list_with(
    client: &kube::Client,
    kinds: &Kinds,
    (api_version, kind): (&str, &str),
    namespace: &str,
    params: &ListParams,
) -> Result<Vec<Value>> {
    let k = kinds.get(client, api_version, kind).await?;
    let api = if namespace.is_empty() || !k.namespaced {
        kube::Api::<DynamicObject>::all_with(client.clone(), &k.ar)
    } else {
        k.api(client, namespace)
    };
    let at = if namespace.is_empty() { "everywhere".to_string() } else { format!("in {namespace}") };
    let list = api.list(params).await.map_err(DynamicError::request("listing", kind, at))?;
    Ok(list.items.into_iter().map(|o| typed(&k, o)).collect())
}

/// One object, or None.
pub async fn get(
    client: &kube::Client,
    kinds: &Kinds,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Result<Option<Value>> {
    let k = kinds.get(client, api_version, kind).await?;
    let got = k.api(client, namespace).get_opt(name).await.map_err(DynamicError::request(
        "reading",
        kind,
        format!("{namespace}/{name}"),
    ))?;
    Ok(got.map(|o| typed(&k, o)))
}

fn typed(k: &Kind, o: DynamicObject) -> Value {
    let mut v = serde_json::to_value(o).unwrap_or(Value::Null);
    v["apiVersion"] = json!(k.ar.api_version);
    v["kind"] = json!(k.ar.kind);
    v
}

/// Server-side applies `obj` as field manager `manager`, forced.
pub async fn apply(client: &kube::Client, kinds: &Kinds, obj: &Value, manager: &str) -> Result<Value> {
    let (kind, name, ns) = (str_at(obj, "/kind"), str_at(obj, "/metadata/name"), str_at(obj, "/metadata/namespace"));
    let k = kinds.get(client, str_at(obj, "/apiVersion"), kind).await?;
    let applied = k
        .api(client, ns)
        .patch(name, &PatchParams::apply(manager).force(), &Patch::Apply(obj))
        .await
        .map_err(DynamicError::request("applying", kind, format!("{ns}/{name}")))?;
    Ok(typed(&k, applied))
}

/// Merges `status` into an object's status subresource.
pub async fn write_status(client: &kube::Client, kinds: &Kinds, obj: &Value, status: &Value) -> Result<()> {
    let (kind, name, ns) = (str_at(obj, "/kind"), str_at(obj, "/metadata/name"), str_at(obj, "/metadata/namespace"));
    let k = kinds.get(client, str_at(obj, "/apiVersion"), kind).await?;
    k.api(client, ns)
        .patch_status(name, &PatchParams::default(), &Patch::Merge(json!({"status": status})))
        .await
        .map_err(DynamicError::request("writing the status of", kind, format!("{ns}/{name}")))?;
    Ok(())
}

/// Merge-patches an object (metadata such as finalizers).
pub async fn merge(client: &kube::Client, kinds: &Kinds, obj: &Value, patch: &Value) -> Result<()> {
    let (kind, name, ns) = (str_at(obj, "/kind"), str_at(obj, "/metadata/name"), str_at(obj, "/metadata/namespace"));
    let k = kinds.get(client, str_at(obj, "/apiVersion"), kind).await?;
    match k.api(client, ns).patch(name, &PatchParams::default(), &Patch::Merge(patch)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(DynamicError::request("patching", kind, format!("{ns}/{name}"))(e)),
    }
}

/// Deletes an object (gone already is fine).
pub async fn delete(
    client: &kube::Client,
    kinds: &Kinds,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Result<()> {
    let k = kinds.get(client, api_version, kind).await?;
    match k.api(client, namespace).delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(DynamicError::request("deleting", kind, format!("{namespace}/{name}"))(e)),
    }
}

/// An API error in the server's words (its message and code), not a debug dump.
pub fn api_error(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} ({})", s.message, s.code),
        // The transport's own words, without kube's variant names.
        kube::Error::Service(e) => e.to_string(),
        kube::Error::HyperError(e) => format!("cannot reach the API server: {e}"),
        other => other.to_string(),
    }
}

/// A watch's failure in the server's words.
pub fn watch_error(e: &kube::runtime::watcher::Error) -> String {
    use kube::runtime::watcher::Error as W;
    match e {
        W::InitialListFailed(e) => format!("listing: {}", api_error(e)),
        W::WatchStartFailed(e) => format!("starting the watch: {}", api_error(e)),
        W::WatchError(s) => format!("{} ({})", s.message, s.code),
        W::WatchFailed(e) => format!("watching: {}", api_error(e)),
        other => other.to_string(),
    }
}

/// Whether `have` already holds everything `want` says: every key of an object (recursively), lists
/// item by item, scalars equal. Fields the server added (defaults, metadata) do not count.
pub fn holds(have: &Value, want: &Value) -> bool {
    match (have, want) {
        (Value::Object(h), Value::Object(w)) => w.iter().all(|(k, wv)| h.get(k).is_some_and(|hv| holds(hv, wv))),
        (Value::Array(h), Value::Array(w)) => h.len() == w.len() && h.iter().zip(w).all(|(a, b)| holds(a, b)),
        _ => have == want,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_ignores_what_the_server_added() {
        let want = json!({"spec": {"replicas": 2, "containers": [{"name": "a"}]}});
        let have =
            json!({"spec": {"replicas": 2, "containers": [{"name": "a", "imagePullPolicy": "Always"}]}, "status": {}});
        assert!(holds(&have, &want));
        assert!(!holds(&json!({"spec": {"replicas": 3, "containers": [{"name": "a"}]}}), &want));
        assert!(!holds(&json!({"spec": {"replicas": 2, "containers": []}}), &want));
    }
}
