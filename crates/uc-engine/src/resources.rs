//! Resolving `apiVersion` + plural resource names through discovery.

use kube::api::ApiResource;

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
    /// The `<Kind>.<apiVersion>` key used in hook requests.
    pub fn type_key(&self) -> String {
        uc_api::hook::type_key(&self.ar.kind, &self.ar.api_version)
    }
}

/// Finds `resource` served at `api_version`; the error says what is missing.
pub async fn resolve(client: &kube::Client, api_version: &str, resource: &str) -> Result<Resolved, String> {
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
        .find(|r| r.name == resource)
        .ok_or_else(|| format!("resource {resource:?} is not served in {api_version}"))?;
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
