//! Dynamic admission: the `admissionregistration.k8s.io/v1` Mutating- and
//! ValidatingWebhookConfigurations, called on every create, update (patch, apply) and delete they
//! concern, as kube-apiserver calls them — mutating hooks first (their JSON patches applied in
//! turn, the result validated again), then validating hooks; a refusal answers the client with the
//! hook's code and message, a hook that cannot be called refuses the write unless its
//! `failurePolicy` is `Ignore`.

pub mod call;
pub mod config;
pub mod matching;

use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use serde::de::DeserializeOwned;
use serde_json::Value;
use uc_api::{GroupResource, Pointer, Status};

use crate::app::{App, Req};
use crate::error::{ApiError, Result};
use crate::request::{Target, dry_run};
use crate::storage::{Store, object_key};
use matching::{Hook, Verdict, Write};

const GROUP: &str = "admissionregistration.k8s.io";

fn configurations<T: DeserializeOwned>(store: &Store, resource: &str) -> Vec<T> {
    let (objects, _) = store.list_kept(&GroupResource::new(GROUP, resource), None, None).unwrap_or_default();
    objects.into_iter().filter_map(|(_, o)| o.decode().ok()).collect()
}

/// Whether any webhook configuration exists (most writes find none and skip admission at once).
pub fn configured(store: &Store) -> bool {
    ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"].iter().any(|r| {
        store.list_kept(&GroupResource::new(GROUP, *r), None, None).is_ok_and(|(objects, _)| !objects.is_empty())
    })
}

/// Every configured hook, mutating first.
pub fn load(store: &Store) -> Vec<Hook> {
    let mutating: Vec<MutatingWebhookConfiguration> = configurations(store, "mutatingwebhookconfigurations");
    let validating: Vec<ValidatingWebhookConfiguration> = configurations(store, "validatingwebhookconfigurations");
    if mutating.is_empty() && validating.is_empty() {
        return Vec::new();
    }
    matching::hooks(&mutating, &validating)
}

/// What changed after admission.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Admitted {
    /// A mutating hook patched the object (validate it again).
    pub patched: bool,
}

/// Runs the webhooks that concern a write of `object` (absent for a delete) over `old` (absent for
/// a create). `object` is in the version the request used.
pub async fn admit(
    app: &App,
    req: &mut Req,
    t: &Target,
    operation: &'static str,
    mut object: Option<&mut Value>,
    old: Option<&Value>,
) -> Result<Admitted> {
    // Webhook configurations are not subject to webhooks, so that a broken one can be removed.
    if t.info.group == GROUP {
        return Ok(Admitted::default());
    }
    let hooks = load(&app.store);
    if hooks.is_empty() {
        return Ok(Admitted::default());
    }
    let name = object
        .as_deref()
        .or(old)
        .and_then(|o| o.at("/metadata/name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let w = Write {
        operation,
        group: t.info.group.clone(),
        version: t.version.clone(),
        resource: t.info.resource.clone(),
        subresource: t.sub.clone().unwrap_or_default(),
        kind: t.info.kind.clone(),
        namespaced: t.info.namespaced,
        namespace: t.namespace.clone().unwrap_or_default(),
        name: name.clone(),
    };
    let namespace_labels: Option<Value> = if t.info.group.is_empty() && t.info.resource == "namespaces" {
        object.as_deref().or(old).and_then(|o| o.at("/metadata/labels")).cloned()
    } else if t.info.namespaced {
        app.store
            .get(&GroupResource::new("", "namespaces"), &object_key("", &w.namespace))
            .and_then(|n| n.at("/metadata/labels").cloned())
    } else {
        None
    };
    let dry = dry_run(req);
    let mut admitted = Admitted::default();
    for hook in hooks {
        if !matching::concerns(&hook, &w, namespace_labels.as_ref(), object.as_deref(), old) {
            continue;
        }
        if dry && !hook.dry_run_safe {
            return Err(ApiError::bad_request(format!("admission webhook {:?} does not support dry run", hook.name)));
        }
        let uid = uuid::Uuid::new_v4().to_string();
        let review = matching::review(&hook, &uid, &w, req.user.user_info(), object.as_deref(), old, dry);
        let timeout = std::time::Duration::from_secs(hook.timeout_seconds);
        let answer = call::call(&app.store, &hook.client, timeout, &review).await;
        match answer.map_err(|e| e.0).and_then(|a| matching::verdict(&hook, &uid, &a).map_err(|e| e.0)) {
            Err(e) if hook.fail_closed => {
                return Err(ApiError::internal(format!(
                    "Internal error occurred: failed calling webhook {:?}: failed to call webhook: {e}",
                    hook.name
                )));
            }
            Err(e) => {
                tracing::warn!(webhook = %hook.name, error = %e, "failed calling webhook; ignored (failurePolicy: Ignore)")
            }
            Ok(Verdict::Denied { code, message, reason }) => {
                return Err(ApiError::new(Status::failure(code, &reason, message)));
            }
            Ok(Verdict::Allowed { patch, warnings }) => {
                req.warnings.extend(warnings);
                if let (Some(patch), Some(obj)) = (patch, object.as_deref_mut()) {
                    // The webhook patched the object it was sent: managed fields as JSON.
                    crate::wire::expand(obj);
                    let bytes = serde_json::to_vec(&patch).unwrap_or_default();
                    crate::patch::json_patch(obj, &bytes).map_err(|e| {
                        ApiError::internal(format!(
                            "Internal error occurred: the patch of webhook {:?} does not apply: {e:?}",
                            hook.name
                        ))
                    })?;
                    admitted.patched = true;
                }
            }
        }
    }
    Ok(admitted)
}
