//! A controller written as a native Rust hook: every `Greeting` gets a ConfigMap holding its message,
//! and its status says how many greetings the ConfigMap holds. uc's engine does the watching,
//! claiming, applying and status writing; the hook is one pure function from the typed request to the
//! typed response.
//!
//! Run it against any cluster (here the embedded one, without uc's own engine, so that only this
//! process runs controllers):
//!
//! ```text
//! uc up --no-engine --data-dir /tmp/uc-hook &     # prints export KUBECONFIG=...
//! export KUBECONFIG=/tmp/uc-hook/kubeconfig
//! cargo run -p native-hook-example
//! kubectl apply -f examples/native-hook/greeting.yaml
//! kubectl get configmap hello-greeting -o yaml
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::{Value, json};
use uc_api::hook::{SyncRequest, SyncResponse};
use uc_engine::hooks::HookError;
use uc_engine::hooks::native::{NativeRegistry, typed};
use uc_engine::{Engine, EngineOptions};

/// The hook: a pure function from what the parent is (and what children it has) to what it should
/// have. Errors leave the cluster as it is and are reported as Events on the parent.
fn sync(request: SyncRequest) -> Result<SyncResponse, HookError> {
    let parent = &request.parent;
    let name = parent["metadata"]["name"].as_str().ok_or_else(|| HookError::Failed("the parent has no name".into()))?;
    let message =
        parent["spec"]["message"].as_str().ok_or_else(|| HookError::Failed("spec.message is required".into()))?;
    let times = parent["spec"]["times"].as_u64().unwrap_or(1).min(10);
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(format!("{name}-greeting"));
    cm.data = Some(BTreeMap::from([("greeting".to_string(), vec![message; times as usize].join(" "))]));
    let mut child = serde_json::to_value(cm).map_err(|e| HookError::Failed(e.to_string()))?;
    child["apiVersion"] = json!("v1");
    child["kind"] = json!("ConfigMap");
    // What the engine observed, in the request: the children it claimed for this parent.
    let existing = request.children.get("ConfigMap.v1").map_or(0, BTreeMap::len);
    Ok(SyncResponse {
        status: Some(json!({"greetings": times, "configMaps": existing})),
        children: vec![child],
        ..Default::default()
    })
}

const CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "greetings.example.uc.dev"},
  "spec": {"group": "example.uc.dev", "scope": "Namespaced",
    "names": {"plural": "greetings", "singular": "greeting", "kind": "Greeting", "listKind": "GreetingList"},
    "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "required": ["message"], "properties": {
          "message": {"type": "string"}, "times": {"type": "integer", "minimum": 1, "maximum": 10}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}
}"#;

/// The UniversalController that names the native hook.
fn controller() -> Value {
    json!({
        "apiVersion": uc_api::controller::API_VERSION, "kind": "UniversalController",
        "metadata": {"name": "greetings"},
        "spec": {
            "generateSelector": true,
            "parentResource": {"apiVersion": "example.uc.dev/v1", "resource": "greetings"},
            "childResources": [{"apiVersion": "v1", "resource": "configmaps", "updateStrategy": {"method": "InPlace"}}],
            "hooks": {"sync": {"native": {"name": "greeting"}}}
        }
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = kube::Client::try_default().await?;
    let crd: CustomResourceDefinition = serde_json::from_str(CRD)?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    if crds.get_opt("greetings.example.uc.dev").await?.is_none() {
        crds.create(&Default::default(), &crd).await?;
    }
    let mut natives = NativeRegistry::default();
    natives.register("greeting", typed(Arc::new(sync), None));
    let _engine = Engine::start(client.clone(), EngineOptions { natives, ..Default::default() }).await?;
    let ucs = ApiResource {
        group: uc_api::controller::GROUP.into(),
        version: uc_api::controller::VERSION.into(),
        api_version: uc_api::controller::API_VERSION.into(),
        kind: "UniversalController".into(),
        plural: "universalcontrollers".into(),
    };
    let uc: DynamicObject = serde_json::from_value(controller())?;
    match Api::<DynamicObject>::all_with(client, &ucs).create(&Default::default(), &uc).await {
        Err(kube::Error::Api(s)) if s.code == 409 => {} // registered by an earlier run
        r => drop(r?),
    }
    println!("running the greetings controller; Ctrl-C stops it");
    tokio::signal::ctrl_c().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_greeting_becomes_a_configmap() {
        let request = SyncRequest {
            parent: json!({"metadata": {"name": "hello"}, "spec": {"message": "hi", "times": 3}}).into(),
            ..Default::default()
        };
        let out = sync(request).unwrap();
        assert_eq!(out.children[0]["metadata"]["name"], json!("hello-greeting"));
        assert_eq!(out.children[0]["data"]["greeting"], json!("hi hi hi"));
        assert_eq!(out.status, Some(json!({"greetings": 3, "configMaps": 0})));
        let bad = SyncRequest { parent: json!({"metadata": {"name": "x"}, "spec": {}}).into(), ..Default::default() };
        assert_eq!(sync(bad).unwrap_err().to_string(), "hook failed: spec.message is required");
    }
}
