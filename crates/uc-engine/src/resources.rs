//! Resolving `apiVersion` + plural resource names through discovery.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube::api::ApiResource;
use parking_lot::Mutex;

/// A resource type found in discovery.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// kube's dynamic resource description.
    pub ar: ApiResource,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Whether `/status` is served.
    pub status_subresource: bool,
}

impl Resolved {
    /// A resource type as discovery would describe it, without a `/status` subresource.
    pub fn new(api_version: &str, kind: &str, plural: &str, namespaced: bool) -> Resolved {
        let (group, version) = uc_api::resource::split_api_version(api_version);
        let ar = ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: api_version.into(),
            kind: kind.into(),
            plural: plural.into(),
        };
        Resolved { ar, namespaced, status_subresource: false }
    }

    /// The `<Kind>.<apiVersion>` key used in hook requests.
    pub fn type_key(&self) -> String {
        uc_api::hook::type_key(&self.ar.kind, &self.ar.api_version)
    }
}

/// Why a resource type could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// Discovery of the group version failed (not served, or the server did not answer).
    #[error("{api_version} is not served: {reason}")]
    NotServed {
        /// The group version asked for.
        api_version: String,
        /// What discovery answered.
        reason: String,
    },
    /// The group version is served, without this resource.
    #[error("resource {resource:?} is not served in {api_version}")]
    NoSuchResource {
        /// The plural name asked for.
        resource: String,
        /// The group version.
        api_version: String,
    },
}

async fn fetch(client: &kube::Client, api_version: &str) -> Result<Arc<APIResourceList>, ResolveError> {
    let (group, version) = uc_api::resource::split_api_version(api_version);
    let list = if group.is_empty() {
        client.list_core_api_resources(version).await
    } else {
        client.list_api_group_resources(api_version).await
    }
    .map_err(|e| ResolveError::NotServed {
        api_version: api_version.to_string(),
        reason: crate::dynamic::api_error(&e),
    })?;
    Ok(Arc::new(list))
}

fn find(list: &APIResourceList, api_version: &str, resource: &str) -> Result<Resolved, ResolveError> {
    let (group, version) = uc_api::resource::split_api_version(api_version);
    let found = list.resources.iter().find(|r| r.name == resource).ok_or_else(|| ResolveError::NoSuchResource {
        resource: resource.to_string(),
        api_version: api_version.to_string(),
    })?;
    let status_subresource = list.resources.iter().any(|r| r.name == format!("{resource}/status"));
    let ar = ApiResource {
        group: group.to_string(),
        version: version.to_string(),
        api_version: api_version.to_string(),
        kind: found.kind.clone(),
        plural: resource.to_string(),
    };
    Ok(Resolved { ar, namespaced: found.namespaced, status_subresource })
}

/// Discovery shared by every controller of an engine: one fetch per group version, reused for a while.
/// Each controller resolving its types anew fetched `/api/v1` several times (every UniversalController
/// names Pods or Services), which was most of what a new controller cost the API server.
pub struct Discovery {
    client: kube::Client,
    cache: Mutex<HashMap<String, (Instant, Arc<APIResourceList>)>>,
}

/// How long a fetched group version is trusted when it has the resource asked for. A miss always
/// fetches again (a CRD may have just been created).
const FRESH: Duration = Duration::from_secs(30);

impl Discovery {
    /// A cache in front of `client`'s discovery.
    pub fn new(client: kube::Client) -> Discovery {
        Discovery { client, cache: Mutex::new(HashMap::new()) }
    }

    /// Finds `resource` served at `api_version` (the error says what is missing), from the cache when
    /// it is fresh and has the resource.
    pub async fn resolve(&self, api_version: &str, resource: &str) -> Result<Resolved, ResolveError> {
        let cached = self.cache.lock().get(api_version).filter(|(at, _)| at.elapsed() < FRESH).map(|(_, l)| l.clone());
        if let Some(hit) = cached.and_then(|l| find(&l, api_version, resource).ok()) {
            return Ok(hit);
        }
        let list = fetch(&self.client, api_version).await?;
        self.cache.lock().insert(api_version.to_string(), (Instant::now(), list.clone()));
        find(&list, api_version, resource)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource;

    use super::*;

    fn resource(name: &str, kind: &str, namespaced: bool) -> APIResource {
        APIResource { name: name.into(), kind: kind.into(), namespaced, ..Default::default() }
    }

    #[test]
    fn resources_are_found_with_their_scope_and_status() {
        let list = APIResourceList {
            group_version: "apps/v1".into(),
            resources: vec![
                resource("deployments", "Deployment", true),
                resource("deployments/status", "Deployment", true),
                resource("controllerrevisions", "ControllerRevision", true),
            ],
        };
        let d = find(&list, "apps/v1", "deployments").unwrap();
        assert_eq!(
            (d.ar.kind.as_str(), d.ar.group.as_str(), d.namespaced, d.status_subresource),
            ("Deployment", "apps", true, true)
        );
        assert!(!find(&list, "apps/v1", "controllerrevisions").unwrap().status_subresource);
        assert_eq!(
            find(&list, "apps/v1", "statefulsets").unwrap_err().to_string(),
            "resource \"statefulsets\" is not served in apps/v1"
        );
    }
}
