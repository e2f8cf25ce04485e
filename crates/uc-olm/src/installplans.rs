//! InstallPlans: created by a Subscription with every step of its bundles, waiting for approval when
//! Manual, then carried out step by step (server-side apply, as the lifecycle manager) to Complete — or
//! Failed with the step and the reason, as when a CRD upgrade would drop a version still stored.

use k8s_openapi::api::core::v1::ObjectReference;
use serde::Deserialize;
use serde_json::Value;

use crate::context::{Olm, now, str_at};
use crate::error::LifecycleError;
use crate::group::OperatorGroup;
use crate::installplan::{InstallPlan, InstallPlanStatus, InstalledCondition, StepStatus};
use crate::plan::Step;

/// What a CRD step reads of a CRD, old (`apiextensions.k8s.io/v1beta1`: `spec.version`) or new.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CrdVersions {
    spec: CrdVersionsSpec,
    status: CrdStoredVersions,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CrdVersionsSpec {
    version: Option<String>,
    versions: Vec<CrdVersionName>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CrdVersionName {
    name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct CrdStoredVersions {
    stored_versions: Vec<String>,
}

/// The versions an update of a CRD would drop while objects may still be stored in them: the existing
/// CRD's `status.storedVersions` the new one does not serve.
pub fn dropped_stored_versions(existing: &Value, new: &Value) -> Vec<String> {
    let read = |crd: &Value| CrdVersions::deserialize(crd).unwrap_or_default();
    let (existing, new) = (read(existing), read(new));
    let served: Vec<&str> =
        new.spec.versions.iter().map(|v| v.name.as_str()).chain(new.spec.version.as_deref()).collect();
    existing.status.stored_versions.into_iter().filter(|v| !served.contains(&v.as_str())).collect()
}

/// An InstallPlan's status with its steps (each with its CatalogSource's namespace and name), all
/// `step_status`.
pub fn plan_status(
    phase: &str,
    steps: &[(Step, &str, &str)],
    step_status: &str,
    sources: &[String],
) -> InstallPlanStatus {
    let plan = steps.iter().map(|(s, ns, name)| s.to_status(name, ns, step_status)).collect();
    InstallPlanStatus {
        phase: phase.into(),
        catalog_sources: Some(sources.to_vec()),
        plan: Some(plan),
        ..Default::default()
    }
}

/// The manifests of a plan's steps.
fn steps_of(plan: &InstallPlan) -> Vec<Value> {
    let steps = plan.status.iter().flat_map(|s| s.plan.iter().flatten());
    steps.filter_map(|s| serde_json::from_str(&s.resource.manifest).ok()).collect()
}

fn condition(installed: bool, reason: &str, message: &str) -> InstalledCondition {
    let t = now();
    InstalledCondition {
        type_: "Installed".into(),
        status: if installed { "True" } else { "False" }.into(),
        reason: reason.into(),
        message: message.into(),
        last_transition_time: t.clone(),
        last_update_time: t,
    }
}

/// The service account an OperatorGroup scopes its namespace's installs to (`spec.serviceAccountName`,
/// OLM's operator scoping): the plans of that namespace are carried out with its permissions.
pub fn scoped_account(groups: &[OperatorGroup], namespace: &str) -> Option<uc_engine::acting::ServiceAccount> {
    groups
        .iter()
        .filter(|g| g.metadata.namespace.as_deref() == Some(namespace))
        .filter_map(|g| g.spec.service_account_name.as_deref())
        .find(|name| !name.is_empty())
        .map(|name| uc_engine::acting::ServiceAccount { namespace: namespace.to_string(), name: name.to_string() })
}

/// Moves one InstallPlan on: approval, then its steps — as `account` when its namespace's
/// OperatorGroup names one, so that what the account may not do fails the plan with the API server's
/// words, as on OLM.
pub async fn sync(
    olm: &Olm,
    object: &Value,
    account: Option<&uc_engine::acting::ServiceAccount>,
) -> Result<(), LifecycleError> {
    let plan: InstallPlan = serde_json::from_value(object.clone()).map_err(crate::plan::PlanError::Encode)?;
    let (phase, name) =
        (plan.status.as_ref().map(|s| s.phase.as_str()).unwrap_or_default(), str_at(object, "/metadata/name"));
    if matches!(phase, "Complete" | "Failed") || plan.status.as_ref().is_none_or(|s| s.plan.is_none()) {
        return Ok(());
    }
    let write = |status: InstallPlanStatus| async move { olm.write_status(object, &status).await };
    if !plan.spec.approved {
        return write(InstallPlanStatus { phase: "RequiresApproval".into(), ..Default::default() }).await;
    }
    let attenuated = account.map(|a| ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ServiceAccount".into()),
        name: Some(a.name.clone()),
        namespace: Some(a.namespace.clone()),
        ..Default::default()
    });
    if phase != "Installing" {
        write(InstallPlanStatus { phase: "Installing".into(), start_time: Some(now()), ..Default::default() }).await?;
    }
    let client = match account {
        Some(a) => uc_engine::acting::impersonating(&olm.client, a),
        None => olm.client.clone(),
    };
    let mut statuses = Vec::new();
    for manifest in steps_of(&plan) {
        let (kind, step) = (str_at(&manifest, "/kind"), str_at(&manifest, "/metadata/name"));
        match apply_step(olm, &client, &manifest).await {
            Ok(s) => statuses.push(s),
            Err(e) => {
                let message = format!("error creating {kind} {step}: {e}");
                tracing::warn!(plan = %name, %message, "install plan failed");
                // The steps done say so; the one that failed and those after it stay Unknown.
                return write(InstallPlanStatus {
                    phase: "Failed".into(),
                    plan: Some(with_statuses(&plan, &statuses)),
                    conditions: Some(vec![condition(false, "InstallComponentFailed", &message)]),
                    message: Some(message),
                    attenuated_service_account_ref: attenuated,
                    ..Default::default()
                })
                .await;
            }
        }
    }
    write(InstallPlanStatus {
        phase: "Complete".into(),
        plan: Some(with_statuses(&plan, &statuses)),
        conditions: Some(vec![condition(true, "", "")]),
        attenuated_service_account_ref: attenuated,
        ..Default::default()
    })
    .await
}

/// A plan's steps with the statuses of those carried out, in order (the rest as they were).
fn with_statuses(plan: &InstallPlan, statuses: &[&str]) -> Vec<StepStatus> {
    let mut steps = plan.status.as_ref().and_then(|s| s.plan.clone()).unwrap_or_default();
    for (step, s) in steps.iter_mut().zip(statuses) {
        step.status = s.to_string();
    }
    steps
}

/// Creates (or updates) one step's object with `client`: `Created` or `Present`.
async fn apply_step(olm: &Olm, client: &kube::Client, manifest: &Value) -> Result<&'static str, LifecycleError> {
    let (api_version, kind) = (str_at(manifest, "/apiVersion"), str_at(manifest, "/kind"));
    let (ns, name) = (str_at(manifest, "/metadata/namespace"), str_at(manifest, "/metadata/name"));
    let existing = uc_engine::dynamic::get(client, &olm.kinds, api_version, kind, ns, name).await?;
    if kind == "CustomResourceDefinition"
        && let Some(old) = &existing
    {
        let dropped = dropped_stored_versions(old, manifest);
        if !dropped.is_empty() {
            return Err(LifecycleError::DataLoss { name: name.to_string(), versions: dropped });
        }
    }
    if kind == "Subscription" && existing.is_some() {
        return Ok("Present"); // a dependency already subscribed to: the user's Subscription stays as it is
    }
    uc_engine::dynamic::apply(client, &olm.kinds, manifest, crate::context::MANAGER).await?;
    if kind == "CustomResourceDefinition" {
        // Later steps (the CSV, its custom resources) need the new kind served.
        olm.kinds.forget();
    }
    Ok(if existing.is_some() { "Present" } else { "Created" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::V1ALPHA1;
    use serde_json::json;

    #[test]
    fn a_crd_update_that_drops_a_stored_version_is_caught() {
        let existing = json!({"spec": {"versions": [{"name": "v1alpha1"}, {"name": "v1"}]},
                              "status": {"storedVersions": ["v1alpha1", "v1"]}});
        let keeps = json!({"spec": {"versions": [{"name": "v1alpha1"}, {"name": "v1"}, {"name": "v2"}]}});
        assert!(dropped_stored_versions(&existing, &keeps).is_empty());
        let drops = json!({"spec": {"versions": [{"name": "v1"}, {"name": "v2"}]}});
        assert_eq!(dropped_stored_versions(&existing, &drops), ["v1alpha1"]);
        let beta = json!({"spec": {"version": "v1alpha1", "versions": [{"name": "v1"}]}});
        assert!(dropped_stored_versions(&existing, &beta).is_empty(), "v1beta1's spec.version counts");
    }

    #[test]
    fn an_operator_groups_service_account_scopes_its_namespaces_installs() {
        let groups = [
            json!({"metadata": {"name": "g", "namespace": "team"}, "spec": {"serviceAccountName": "installer"}}),
            json!({"metadata": {"name": "g", "namespace": "open"}, "spec": {}}),
        ]
        .map(|g| serde_json::from_value::<OperatorGroup>(g).unwrap());
        let a = scoped_account(&groups, "team").unwrap();
        assert_eq!((a.namespace.as_str(), a.name.as_str()), ("team", "installer"));
        assert!(scoped_account(&groups, "open").is_none(), "no account: the lifecycle manager's own rights");
        assert!(scoped_account(&groups, "elsewhere").is_none());
    }

    #[test]
    fn the_steps_carried_out_say_how() {
        let plan: InstallPlan = serde_json::from_value(json!({"status": {"plan": [
            {"status": "Unknown", "resource": {"kind": "CustomResourceDefinition"}},
            {"status": "Unknown", "resource": {"kind": "ClusterServiceVersion"}},
            {"status": "Unknown", "resource": {"kind": "Role"}}]}}))
        .unwrap();
        let steps = with_statuses(&plan, &["Created"]);
        let got: Vec<&str> = steps.iter().map(|s| s.status.as_str()).collect();
        assert_eq!(got, ["Created", "Unknown", "Unknown"], "the failed step and those after it stay Unknown");
    }

    #[test]
    fn a_new_plan_waits_for_approval_unless_automatic() {
        let sub = ("etcd", "u");
        let plan = |name, approval| {
            let plan = InstallPlan::new(name, "ops", &["etcd.v1".into()], approval, ("olm", "uc-operators"), sub);
            serde_json::to_value(plan).unwrap()
        };
        let manual = plan("install-1", "Manual");
        assert_eq!(manual["spec"]["approved"], false);
        assert_eq!(manual["metadata"]["ownerReferences"][0]["name"], "etcd");
        let auto = plan("install-2", "Automatic");
        assert_eq!((auto["apiVersion"].as_str(), auto["kind"].as_str()), (Some(V1ALPHA1), Some("InstallPlan")));
        assert_eq!(
            (auto["spec"]["approved"].clone(), auto["spec"]["sourceNamespace"].clone()),
            (json!(true), json!("olm"))
        );
    }
}
