//! The resource interpreter: how many replicas a resource declares, the resource with its replicas
//! revised, the status to reflect from a member and its health. Kinds Karmada knows are answered here
//! (its default interpreter); any kind a `ResourceInterpreterWebhookConfiguration` names is asked over
//! its webhook with a `ResourceInterpreterContext`, as Karmada does.

use std::sync::Arc;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};
use uc_api::meta::str_at;
use uc_engine::hooks::webhook::WebhookHook;
use uc_engine::names::Resolver;

use crate::interpreter_context::{InterpreterContext, InterpreterRequest, InterpreterResponse};
use crate::types::{InterpreterClientConfig, InterpreterWebhook, InterpreterWebhookConfiguration};
use uc_api::GroupVersionKind;

/// Why a resource interpreter webhook could not interpret an object.
#[derive(Debug, thiserror::Error)]
pub enum InterpretError {
    /// The webhook could not be called.
    #[error("interpreter webhook {name}: {source}")]
    Call { name: String, source: uc_engine::hooks::HookError },
    /// The webhook answered, unsuccessfully.
    #[error("interpreter webhook {name} answered {operation} unsuccessfully: {why}")]
    Unsuccessful { name: String, operation: &'static str, why: String },
    /// The webhook's patch could not be used.
    #[error("the interpreter's patch: {0}")]
    Patch(String),
}

/// The operations the control plane asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    InterpretReplica,
    ReviseReplica,
    InterpretStatus,
    InterpretHealth,
}

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Operation::InterpretReplica => "InterpretReplica",
            Operation::ReviseReplica => "ReviseReplica",
            Operation::InterpretStatus => "InterpretStatus",
            Operation::InterpretHealth => "InterpretHealth",
        }
    }
}

/// Whether a webhook's rules take `op` on `apiVersion`/`kind` (`*` matches everything).
pub fn rules_match(webhook: &InterpreterWebhook, op: Operation, api_version: &str, kind: &str) -> bool {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    webhook.rules.iter().any(|r| r.takes(op.name(), (group, version, kind)))
}

/// One webhook of a configuration, ready to call.
struct Hook {
    config: InterpreterWebhook,
    client: Arc<WebhookHook>,
}

/// The interpreter: the default one plus the webhooks configured when it was built.
#[derive(Default)]
pub struct Interpreter {
    hooks: Vec<Hook>,
    /// Configurations that could not be used, with why.
    pub errors: Vec<String>,
}

/// A webhook's URL: its own, or its Service's in-cluster name.
fn url_of(c: &InterpreterClientConfig) -> Option<String> {
    match (&c.url, &c.service) {
        (_, Some(s)) => Some(format!(
            "https://{}.{}.svc:{}{}",
            s.name,
            s.namespace,
            s.port.unwrap_or(443),
            s.path.as_deref().unwrap_or_default()
        )),
        (Some(u), None) => Some(u.clone()),
        (None, None) => None,
    }
}

impl Interpreter {
    /// From every `ResourceInterpreterWebhookConfiguration`.
    pub fn new(configs: &[Value], resolver: &Resolver) -> Interpreter {
        let mut out = Interpreter::default();
        for cfg in configs {
            let cfg = match InterpreterWebhookConfiguration::deserialize(cfg) {
                Ok(c) => c,
                Err(e) => {
                    out.errors.push(format!("{}: {e}", str_at(cfg, "/metadata/name")));
                    continue;
                }
            };
            for w in cfg.webhooks {
                let Some(url) = url_of(&w.client_config) else {
                    out.errors.push(format!("{}: clientConfig needs url or service", w.name));
                    continue;
                };
                let spec = uc_api::controller::Webhook {
                    url: Some(url),
                    timeout: Some(format!("{}s", w.timeout_seconds.unwrap_or(10))),
                    ..Default::default()
                };
                let credentials = uc_engine::hooks::credentials::Credentials {
                    ca_pem: w.client_config.ca_bundle.as_deref().map(uc_engine::hooks::credentials::decode_pem),
                    ..Default::default()
                };
                match WebhookHook::new(&spec, resolver.clone(), credentials) {
                    Ok(client) => out.hooks.push(Hook { config: w, client: Arc::new(client) }),
                    Err(e) => out.errors.push(format!("{}: {e}", w.name)),
                }
            }
        }
        out
    }

    fn hook_for(&self, op: Operation, obj: &Value) -> Option<&Hook> {
        let (av, kind) = (str_at(obj, "/apiVersion"), str_at(obj, "/kind"));
        self.hooks.iter().find(|h| rules_match(&h.config, op, av, kind))
    }

    async fn ask(
        &self,
        hook: &Hook,
        op: Operation,
        obj: &Value,
        replicas: Option<i32>,
    ) -> Result<InterpreterResponse, InterpretError> {
        let av = str_at(obj, "/apiVersion");
        let (group, version) = av.rsplit_once('/').unwrap_or(("", av));
        let request = InterpreterRequest {
            uid: uuid::Uuid::new_v4().to_string(),
            kind: GroupVersionKind { group: group.into(), version: version.into(), kind: str_at(obj, "/kind").into() },
            name: str_at(obj, "/metadata/name").into(),
            namespace: str_at(obj, "/metadata/namespace").into(),
            operation: op.name().into(),
            object: obj.clone(),
            replicas,
        };
        let name = hook.config.name.clone();
        let answer = hook
            .client
            .call_with(&InterpreterContext::asking(request), None)
            .await
            .map_err(|source| InterpretError::Call { name: name.clone(), source })?;
        let unsuccessful = |why: String| InterpretError::Unsuccessful { name: name.clone(), operation: op.name(), why };
        let answer = InterpreterContext::deserialize(&answer)
            .map_err(|e| unsuccessful(format!("its answer does not read: {e}")))?;
        let response = answer.response.unwrap_or_default();
        if !response.successful {
            return Err(unsuccessful(response.status.map(|s| s.message).unwrap_or_default()));
        }
        Ok(response)
    }

    /// The replicas `obj` declares.
    pub async fn replicas(&self, obj: &Value) -> Result<i32, InterpretError> {
        if let Some(h) = self.hook_for(Operation::InterpretReplica, obj) {
            let r = self.ask(h, Operation::InterpretReplica, obj, None).await?;
            return Ok(r.replicas.unwrap_or(0));
        }
        Ok(default_replicas(obj))
    }

    /// `obj` with its replicas set to `n`.
    pub async fn revise_replicas(&self, obj: &Value, n: i32) -> Result<Value, InterpretError> {
        if let Some(h) = self.hook_for(Operation::ReviseReplica, obj) {
            let r = self.ask(h, Operation::ReviseReplica, obj, Some(n)).await?;
            return apply_response_patch(obj, r.patch.as_deref());
        }
        let mut out = obj.clone();
        if let Some(path) = replicas_path(str_at(obj, "/kind")) {
            out[path.0][path.1] = json!(n);
        }
        Ok(out)
    }

    /// The status to reflect from a member's object.
    pub async fn status(&self, observed: &Value) -> Result<Option<Value>, InterpretError> {
        if let Some(h) = self.hook_for(Operation::InterpretStatus, observed) {
            let r = self.ask(h, Operation::InterpretStatus, observed, None).await?;
            return Ok(r.raw_status);
        }
        Ok(observed.get("status").cloned())
    }

    /// `Healthy`, `Unhealthy` or `Unknown`.
    pub async fn health(&self, observed: &Value) -> Result<&'static str, InterpretError> {
        if let Some(h) = self.hook_for(Operation::InterpretHealth, observed) {
            let r = self.ask(h, Operation::InterpretHealth, observed, None).await?;
            return Ok(match r.healthy {
                Some(true) => "Healthy",
                Some(false) => "Unhealthy",
                None => "Unknown",
            });
        }
        Ok(default_health(observed))
    }
}

/// A webhook's answer applied: its base64 JSON patch, when it sent one.
fn apply_response_patch(obj: &Value, patch: Option<&str>) -> Result<Value, InterpretError> {
    let Some(p) = patch else { return Ok(obj.clone()) };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(p)
        .map_err(|e| InterpretError::Patch(format!("not base64: {e}")))?;
    let patch: json_patch::Patch =
        serde_json::from_slice(&bytes).map_err(|e| InterpretError::Patch(format!("not a JSON patch: {e}")))?;
    let mut out = obj.clone();
    json_patch::patch(&mut out, &patch).map_err(|e| InterpretError::Patch(format!("it does not apply: {e}")))?;
    Ok(out)
}

/// Where a kind Karmada knows keeps its replicas.
fn replicas_path(kind: &str) -> Option<(&'static str, &'static str)> {
    match kind {
        "Deployment" | "ReplicaSet" | "StatefulSet" | "ReplicationController" => Some(("spec", "replicas")),
        "Job" => Some(("spec", "parallelism")),
        _ => None,
    }
}

/// The replicas of a kind Karmada knows (Deployment's default of 1 included); 0 for the rest.
pub fn default_replicas(obj: &Value) -> i32 {
    match replicas_path(str_at(obj, "/kind")) {
        Some((a, b)) => obj.get(a).and_then(|s| s.get(b)).and_then(Value::as_i64).unwrap_or(1) as i32,
        None if str_at(obj, "/kind") == "Pod" => 1,
        None => 0,
    }
}

/// Health of a kind Karmada knows: workloads whose replicas are all updated and available at their
/// generation, Pods running or done; `Unknown` for the rest.
pub fn default_health(obj: &Value) -> &'static str {
    let int = |p: &str| obj.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    let observed = int("/status/observedGeneration") >= int("/metadata/generation");
    let verdict = match str_at(obj, "/kind") {
        "Deployment" | "StatefulSet" | "ReplicaSet" => {
            let want = obj.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
            let ready = if str_at(obj, "/kind") == "Deployment" {
                int("/status/availableReplicas")
            } else {
                int("/status/readyReplicas")
            };
            Some(observed && ready >= want && int("/status/updatedReplicas").max(ready) >= want)
        }
        "DaemonSet" => Some(observed && int("/status/numberReady") >= int("/status/desiredNumberScheduled")),
        "Pod" => Some(matches!(str_at(obj, "/status/phase"), "Running" | "Succeeded")),
        "Service" | "ConfigMap" | "Secret" | "Namespace" | "ServiceAccount" => Some(true),
        _ => None,
    };
    match verdict {
        Some(true) => "Healthy",
        Some(false) => "Unhealthy",
        None => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhook_rules_match_by_operation_group_version_kind() {
        let w: InterpreterWebhook =
            serde_json::from_value(json!({"rules": [{"operations": ["ReviseReplica", "InterpretHealth"],
            "apiGroups": ["zookeeper.pravega.io"], "apiVersions": ["*"], "kinds": ["ZookeeperCluster"]}]}))
            .unwrap();
        let av = "zookeeper.pravega.io/v1beta1";
        assert!(rules_match(&w, Operation::ReviseReplica, av, "ZookeeperCluster"));
        assert!(!rules_match(&w, Operation::InterpretReplica, av, "ZookeeperCluster"));
        assert!(!rules_match(&w, Operation::ReviseReplica, "apps/v1", "ZookeeperCluster"));
        assert!(!rules_match(&w, Operation::ReviseReplica, av, "Other"));
    }

    #[test]
    fn the_default_interpreter_knows_workloads() {
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"generation": 2}, "spec": {}});
        assert_eq!(default_replicas(&d), 1);
        assert_eq!(default_replicas(&json!({"kind": "ConfigMap"})), 0);
        assert_eq!(default_health(&d), "Unhealthy");
        let mut healthy = d.clone();
        healthy["spec"]["replicas"] = json!(2);
        healthy["status"] = json!({"observedGeneration": 2, "availableReplicas": 2, "updatedReplicas": 2});
        assert_eq!(default_health(&healthy), "Healthy");
        assert_eq!(default_health(&json!({"kind": "Widget"})), "Unknown");
    }

    #[tokio::test]
    async fn the_default_revision_sets_replicas() {
        let i = Interpreter::default();
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 5}});
        assert_eq!(i.revise_replicas(&d, 2).await.unwrap()["spec"]["replicas"], 2);
        let w = json!({"apiVersion": "x/v1", "kind": "Widget", "spec": {"replicas": 5}});
        assert_eq!(i.revise_replicas(&w, 2).await.unwrap(), w);
    }

    #[test]
    fn a_response_patch_is_applied() {
        let patch =
            base64::engine::general_purpose::STANDARD.encode(r#"[{"op":"replace","path":"/spec/replicas","value":0}]"#);
        let out = apply_response_patch(&json!({"spec": {"replicas": 5}}), Some(&patch));
        assert_eq!(out.unwrap()["spec"]["replicas"], 0);
        assert!(apply_response_patch(&json!({}), Some("***")).is_err());
        assert_eq!(apply_response_patch(&json!({"a": 1}), None).unwrap(), json!({"a": 1}), "no patch: unchanged");
    }
}
