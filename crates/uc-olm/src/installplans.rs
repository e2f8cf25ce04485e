//! InstallPlans: created by a Subscription with every step of its bundles, waiting for approval when
//! Manual, then carried out step by step (server-side apply, as the lifecycle manager) to Complete — or
//! Failed with the step and the reason, as when a CRD upgrade would drop a version still stored.

use serde_json::{Value, json};

use crate::context::{Olm, V1ALPHA1, now, str_at};
use crate::error::LifecycleError;
use crate::plan::Step;

/// The versions an update of a CRD would drop while objects may still be stored in them: the existing
/// CRD's `status.storedVersions` the new one does not serve.
pub fn dropped_stored_versions(existing: &Value, new: &Value) -> Vec<String> {
    let served: Vec<&str> = new
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .chain(new.pointer("/spec/version").and_then(Value::as_str))
        .collect();
    existing
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|v| !served.contains(v))
        .map(str::to_string)
        .collect()
}

/// A new InstallPlan of `steps` for a Subscription in `namespace`.
pub fn install_plan(
    name: &str,
    namespace: &str,
    csvs: &[String],
    approval: &str,
    source: (&str, &str),
    subscription: &Value,
) -> Value {
    json!({
        "apiVersion": V1ALPHA1, "kind": "InstallPlan",
        "metadata": {"name": name, "namespace": namespace,
                     "ownerReferences": [{"apiVersion": V1ALPHA1, "kind": "Subscription",
                                          "name": str_at(subscription, "/metadata/name"),
                                          "uid": str_at(subscription, "/metadata/uid"),
                                          "controller": false, "blockOwnerDeletion": false}]},
        "spec": {"approval": approval, "approved": approval == "Automatic", "clusterServiceVersionNames": csvs,
                 "generation": 1, "source": source.1, "sourceNamespace": source.0},
    })
}

/// An InstallPlan's status with its steps (each with its CatalogSource's namespace and name), all
/// `step_status`.
pub fn plan_status(phase: &str, steps: &[(Step, &str, &str)], step_status: &str, sources: &[String]) -> Value {
    let plan: Vec<Value> = steps.iter().map(|(s, ns, name)| s.to_status(name, ns, step_status)).collect();
    json!({"phase": phase, "catalogSources": sources, "plan": plan})
}

/// The manifests of a plan's steps, from its status.
fn steps_of(plan: &Value) -> Vec<Value> {
    plan.pointer("/status/plan")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.pointer("/resource/manifest").and_then(Value::as_str))
        .filter_map(|m| serde_json::from_str(m).ok())
        .collect()
}

fn condition(installed: bool, reason: &str, message: &str) -> Value {
    let t = now();
    json!({"type": "Installed", "status": if installed { "True" } else { "False" }, "reason": reason,
           "message": message, "lastTransitionTime": t, "lastUpdateTime": t})
}

/// The service account an OperatorGroup scopes its namespace's installs to (`spec.serviceAccountName`,
/// OLM's operator scoping): the plans of that namespace are carried out with its permissions.
pub fn scoped_account(groups: &[Value], namespace: &str) -> Option<uc_engine::acting::ServiceAccount> {
    groups
        .iter()
        .filter(|g| str_at(g, "/metadata/namespace") == namespace)
        .map(|g| str_at(g, "/spec/serviceAccountName"))
        .find(|name| !name.is_empty())
        .map(|name| uc_engine::acting::ServiceAccount { namespace: namespace.to_string(), name: name.to_string() })
}

/// Moves one InstallPlan on: approval, then its steps — as `account` when its namespace's
/// OperatorGroup names one, so that what the account may not do fails the plan with the API server's
/// words, as on OLM.
pub async fn sync(
    olm: &Olm,
    plan: &Value,
    account: Option<&uc_engine::acting::ServiceAccount>,
) -> Result<(), LifecycleError> {
    let phase = str_at(plan, "/status/phase");
    if matches!(phase, "Complete" | "Failed") || plan.pointer("/status/plan").is_none() {
        return Ok(());
    }
    let approved = plan.pointer("/spec/approved").and_then(Value::as_bool) == Some(true);
    if !approved {
        return olm.status(plan, &json!({"phase": "RequiresApproval"})).await;
    }
    let attenuated = account
        .map(|a| json!({"kind": "ServiceAccount", "name": a.name, "namespace": a.namespace, "apiVersion": "v1"}));
    if phase != "Installing" {
        olm.status(plan, &json!({"phase": "Installing", "startTime": now()})).await?;
    }
    let client = match account {
        Some(a) => uc_engine::acting::impersonating(&olm.client, a),
        None => olm.client.clone(),
    };
    let mut statuses = Vec::new();
    for manifest in steps_of(plan) {
        let (kind, name) = (str_at(&manifest, "/kind"), str_at(&manifest, "/metadata/name"));
        let outcome = apply_step(olm, &client, &manifest).await;
        match outcome {
            Ok(s) => statuses.push(s),
            Err(message) => {
                let message = format!("error creating {kind} {name}: {message}");
                tracing::warn!(plan = %str_at(plan, "/metadata/name"), %message, "install plan failed");
                // The steps done say so; the one that failed and those after it stay Unknown.
                let status = json!({"phase": "Failed", "message": message, "plan": with_statuses(plan, &statuses),
                                    "conditions": [condition(false, "InstallComponentFailed", &message)],
                                    "attenuatedServiceAccountRef": attenuated});
                return olm.status(plan, &status).await;
            }
        }
    }
    let status = json!({"phase": "Complete", "plan": with_statuses(plan, &statuses),
                        "conditions": [condition(true, "", "")], "attenuatedServiceAccountRef": attenuated});
    olm.status(plan, &status).await
}

/// A plan's steps with the statuses of those carried out, in order (the rest as they were).
fn with_statuses(plan: &Value, statuses: &[&str]) -> Value {
    let mut steps = plan.pointer("/status/plan").cloned().unwrap_or_else(|| json!([]));
    if let Some(list) = steps.as_array_mut() {
        for (step, s) in list.iter_mut().zip(statuses) {
            step["status"] = json!(s);
        }
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
        ];
        let a = scoped_account(&groups, "team").unwrap();
        assert_eq!((a.namespace.as_str(), a.name.as_str()), ("team", "installer"));
        assert!(scoped_account(&groups, "open").is_none(), "no account: the lifecycle manager's own rights");
        assert!(scoped_account(&groups, "elsewhere").is_none());
    }

    #[test]
    fn the_steps_carried_out_say_how() {
        let plan = json!({"status": {"plan": [{"status": "Unknown", "resource": {"kind": "CustomResourceDefinition"}},
                                              {"status": "Unknown", "resource": {"kind": "ClusterServiceVersion"}},
                                              {"status": "Unknown", "resource": {"kind": "Role"}}]}});
        let steps = with_statuses(&plan, &["Created"]);
        let got: Vec<&str> = steps.as_array().unwrap().iter().map(|s| s["status"].as_str().unwrap()).collect();
        assert_eq!(got, ["Created", "Unknown", "Unknown"], "the failed step and those after it stay Unknown");
    }

    #[test]
    fn a_new_plan_waits_for_approval_unless_automatic() {
        let sub = json!({"metadata": {"name": "etcd", "uid": "u"}});
        let manual = install_plan("install-1", "ops", &["etcd.v1".into()], "Manual", ("olm", "uc-operators"), &sub);
        assert_eq!(manual["spec"]["approved"], false);
        assert_eq!(manual["metadata"]["ownerReferences"][0]["name"], "etcd");
        let auto = install_plan("install-2", "ops", &["etcd.v1".into()], "Automatic", ("olm", "uc-operators"), &sub);
        assert_eq!(
            (auto["spec"]["approved"].clone(), auto["spec"]["sourceNamespace"].clone()),
            (json!(true), json!("olm"))
        );
    }
}
