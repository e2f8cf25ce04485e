//! `lookup` for the charts of uc's Helm operators: a read of the cluster from the render thread, answered
//! only with the release's own objects (`uc_helm::operator::lookup_answer`) — what charts look up to keep
//! a generated password across upgrades, and nothing a resource's author could not see otherwise.

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::{ApiResource, Discovery, Scope};
use serde_json::Value;

/// Why a chart's lookup could not be answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LookupError(pub String);

impl From<String> for LookupError {
    fn from(message: String) -> Self {
        LookupError(message)
    }
}

impl From<&str> for LookupError {
    fn from(message: &str) -> Self {
        LookupError(message.to_string())
    }
}

impl From<LookupError> for String {
    fn from(e: LookupError) -> String {
        e.0
    }
}

/// The cluster's kinds, by `apiVersion` and kind, and a client to read them.
pub struct ClusterLookup {
    client: kube::Client,
    kinds: HashMap<(String, String), (ApiResource, bool)>,
}

impl ClusterLookup {
    pub fn new(client: kube::Client, discovery: &Discovery) -> Arc<ClusterLookup> {
        let mut kinds = HashMap::new();
        for group in discovery.groups() {
            for version in group.versions() {
                for (ar, caps) in group.versioned_resources(version) {
                    kinds.insert((ar.api_version.clone(), ar.kind.clone()), (ar, caps.scope == Scope::Namespaced));
                }
            }
        }
        Arc::new(ClusterLookup { client, kinds })
    }

    /// `lookup api_version kind namespace name` for `release` in `namespace`, blocking on `handle`.
    fn get(
        &self,
        handle: &tokio::runtime::Handle,
        (api_version, kind, ns, name): (&str, &str, &str, &str),
        (release, namespace): (&str, &str),
    ) -> Result<Value, LookupError> {
        let Some((ar, namespaced)) = self.kinds.get(&(api_version.to_string(), kind.to_string())) else {
            return Err(LookupError::from(format!(
                "unable to get apiresource from unstructured: {api_version}, Kind={kind}"
            )));
        };
        if !namespaced || ns != namespace {
            return Ok(uc_helm::operator::lookup_answer(None, release, namespace));
        }
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), ns, ar);
        let found = if name.is_empty() {
            let list = handle.block_on(api.list(&ListParams::default())).map_err(|e| e.to_string())?;
            let items: Vec<Value> = list.items.into_iter().filter_map(|o| serde_json::to_value(o).ok()).collect();
            Some(serde_json::json!({"apiVersion": api_version, "kind": format!("{kind}List"), "items": items}))
        } else {
            handle.block_on(api.get_opt(name)).map_err(|e| e.to_string())?.and_then(|o| serde_json::to_value(o).ok())
        };
        Ok(uc_helm::operator::lookup_answer(found, release, namespace))
    }

    /// The chart's `lookup` for one render of `release` in `namespace` (on the render thread).
    pub fn for_release(
        self: &Arc<Self>,
        handle: tokio::runtime::Handle,
        release: String,
        namespace: String,
    ) -> uc_helm::render::Lookup {
        let this = self.clone();
        Rc::new(move |api_version, kind, ns, name| {
            this.get(&handle, (api_version, kind, ns, name), (&release, &namespace))
                .map(|v| uc_helm::gotemplate::Value::from_json(&v, true))
                .map_err(|e| uc_helm::error::HelmError(e.0))
        })
    }
}
