//! ClusterServiceVersions: checked against their OperatorGroup and the CRDs they own and need, then
//! installed — their Deployments created, owned by them, annotated with the namespaces they serve —
//! and watched until those are available (`phase.rs` decides the phase). A CSV replaced by a newer one
//! is `Replacing` until the newer one succeeded, then deleted.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::config::SubscriptionConfig;
use crate::context::{Olm, now, str_at};
use crate::csv::{Csv, CsvCondition, CsvStatus};
use crate::error::LifecycleError;
use crate::group::{self, Group};
use crate::phase::{Observed, Phase, next};
use crate::plan::{
    LABELLED_KINDS, OPERATOR_GROUP_ANNOTATION, OWNER_LABEL, OWNER_NAMESPACE_LABEL, PlanError,
    TARGET_NAMESPACES_ANNOTATION, deployments,
};
use crate::subscription::Subscription;

/// Most phase changes a CSV's `status.conditions` keeps.
const MAX_CONDITIONS: usize = 20;

/// Whether a CRD is served: it exists and is `Established`.
fn established(crds: &[CustomResourceDefinition], name: &str) -> bool {
    let is_established = |c: &CustomResourceDefinition| {
        let conditions = c.status.iter().flat_map(|s| s.conditions.iter().flatten());
        conditions.into_iter().any(|x| x.type_ == "Established" && x.status == "True")
    };
    crds.iter().any(|c| c.metadata.name.as_deref() == Some(name) && is_established(c))
}

/// Whether a Deployment is available: as many available replicas as it wants.
pub fn available(d: &Deployment) -> bool {
    let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    d.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0) >= want
}

/// The controllers a CSV installed (uc's operators: UniversalControllers and Metacontroller's) serve
/// its OperatorGroup's namespaces: they carry `olm.targetNamespaces`, which the engine honours.
async fn scope_controllers(olm: &Olm, csv: &str, ns: &str, targets: &str) -> Result<(), LifecycleError> {
    let selector = format!("{OWNER_LABEL}={csv},{OWNER_NAMESPACE_LABEL}={ns}");
    for (api_version, kind) in LABELLED_KINDS.iter().filter(|(_, k)| k.ends_with("Controller")) {
        let Ok(controllers) =
            uc_engine::dynamic::list_selected(&olm.client, &olm.kinds, api_version, kind, &selector).await
        else {
            continue; // a kind this cluster does not serve
        };
        for c in controllers {
            let have = c
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(TARGET_NAMESPACES_ANNOTATION))
                .and_then(Value::as_str);
            if have != Some(targets) {
                let patch = json!({"metadata": {"annotations": {TARGET_NAMESPACES_ANNOTATION: targets}}});
                uc_engine::dynamic::merge(&olm.client, &olm.kinds, &c, &patch).await?;
            }
        }
    }
    Ok(())
}

/// The `spec.config` of the Subscription that installed a CSV (the one in its namespace whose
/// installed or current CSV it is).
pub fn config_for<'a>(subs: &'a [Subscription], namespace: &str, csv: &str) -> Option<&'a Value> {
    subs.iter().filter(|s| s.namespace() == namespace).find(|s| s.holds(csv)).and_then(|s| s.spec.config.as_ref())
}

/// What a pass knows of every CSV's surroundings.
pub struct World<'a> {
    pub csvs: &'a [Csv],
    pub groups: &'a [Group],
    pub crds: &'a [CustomResourceDefinition],
    pub subscriptions: &'a [Subscription],
}

/// A CSV's new status in phase `p` at `t`, or `None` when it says that already: a change of phase or
/// reason starts a transition and appends a condition (the last `MAX_CONDITIONS` kept).
fn csv_status(csv: &Csv, p: &Phase, t: &str) -> Option<CsvStatus> {
    let was = csv.status.clone().unwrap_or_default();
    let mut status = CsvStatus {
        phase: p.phase.into(),
        reason: p.reason.into(),
        message: p.message.clone(),
        last_update_time: Some(t.into()),
        requirement_status: Some(Vec::new()),
        ..Default::default()
    };
    if was.phase != p.phase || was.reason != p.reason {
        status.last_transition_time = Some(t.into());
        let mut conditions = was.conditions;
        conditions.push(CsvCondition {
            phase: p.phase.into(),
            reason: p.reason.into(),
            message: p.message.clone(),
            last_transition_time: Some(t.into()),
            last_update_time: Some(t.into()),
        });
        let skip = conditions.len().saturating_sub(MAX_CONDITIONS);
        status.conditions = conditions.split_off(skip);
        Some(status)
    } else if was.message == p.message {
        None
    } else {
        Some(status)
    }
}

/// Installs a CSV of a valid group: its group annotations, its controllers scoped to the targets, its
/// Deployments as wanted.
async fn install(
    olm: &Olm,
    csv_obj: &Value,
    g: &Group,
    targets: &str,
    installing: bool,
    wanted: &[Deployment],
    existing: &[Option<Value>],
) -> Result<(), LifecycleError> {
    let (ns, name) = (str_at(csv_obj, "/metadata/namespace"), str_at(csv_obj, "/metadata/name"));
    let annotations = csv_obj.pointer("/metadata/annotations");
    let annotated = |k: &str, v: &str| annotations.and_then(|a| a.get(k)).and_then(Value::as_str) == Some(v);
    let regroup = !annotated(OPERATOR_GROUP_ANNOTATION, &g.name) || !annotated(TARGET_NAMESPACES_ANNOTATION, targets);
    if regroup {
        let patch = json!({"metadata": {"annotations": {OPERATOR_GROUP_ANNOTATION: g.name, TARGET_NAMESPACES_ANNOTATION: targets}}});
        uc_engine::dynamic::merge(&olm.client, &olm.kinds, csv_obj, &patch).await?;
    }
    if regroup || installing {
        scope_controllers(olm, name, ns, targets).await?;
    }
    for (d, have) in wanted.iter().zip(existing) {
        let d = serde_json::to_value(d).map_err(PlanError::Encode)?;
        if !have.as_ref().is_some_and(|h| uc_engine::dynamic::holds(h, &d)) {
            olm.apply(&d).await?;
        }
    }
    Ok(())
}

/// Moves one CSV on.
pub async fn sync(olm: &Olm, csv_obj: &Value, world: &World<'_>) -> Result<(), LifecycleError> {
    let World { csvs, groups, crds, subscriptions } = *world;
    if crate::copies::is_copy(csv_obj) {
        return Ok(()); // copies follow their original (`copies.rs`)
    }
    let csv = Csv::from_value(csv_obj)?;
    let (ns, name) = (csv.namespace(), csv.name());
    let group = group::check(&csv, ns, groups);
    let descriptions = csv.spec.customresourcedefinitions.clone().unwrap_or_default();
    let missing_crds: Vec<String> = descriptions
        .owned
        .iter()
        .chain(&descriptions.required)
        .map(|d| d.name.clone())
        .filter(|n| !established(crds, n))
        .collect();
    let replaced_by = csvs
        .iter()
        .find(|c| c.namespace() == ns && c.spec.replaces.as_deref() == Some(name))
        .map(|c| (c.name().to_string(), c.phase().to_string()));
    let targets = group.as_ref().map(|g| g.target_annotation()).unwrap_or_default();
    let config = config_for(subscriptions, ns, name).map(SubscriptionConfig::from_value).transpose();
    let wanted = deployments(csv_obj, &targets, config.map_err(PlanError::from)?.as_ref())?;
    let mut existing = Vec::new();
    for d in &wanted {
        let name = d.metadata.name.as_deref().unwrap_or_default();
        existing.push(uc_engine::dynamic::get(&olm.client, &olm.kinds, "apps/v1", "Deployment", ns, name).await?);
    }
    let is_available = |d: &Value| Deployment::deserialize(d).is_ok_and(|d| available(&d));
    let observed = Observed {
        phase: csv.phase().to_string(),
        group: group.as_ref().err().cloned(),
        missing_crds,
        deployments_created: existing.iter().all(Option::is_some),
        unavailable: wanted
            .iter()
            .zip(&existing)
            .filter(|(_, e)| !e.as_ref().is_some_and(is_available))
            .map(|(d, _)| d.metadata.name.clone().unwrap_or_default())
            .collect(),
        replaced_by: replaced_by.as_ref().map(|(n, _)| n.clone()),
    };
    let p = next(&observed);
    if p.phase == "Replacing" && replaced_by.as_ref().is_some_and(|(_, phase)| phase == "Succeeded") {
        tracing::info!(csv = %name, namespace = %ns, "replaced; deleting");
        let (client, kinds) = (&olm.client, &olm.kinds);
        return Ok(uc_engine::dynamic::delete(
            client,
            kinds,
            crate::context::V1ALPHA1,
            "ClusterServiceVersion",
            ns,
            name,
        )
        .await?);
    }
    if let Ok(g) = &group
        && matches!(p.phase, "InstallReady" | "Installing" | "Succeeded" | "Failed")
        && observed.missing_crds.is_empty()
    {
        let installing = matches!(p.phase, "InstallReady" | "Installing");
        install(olm, csv_obj, g, &targets, installing, &wanted, &existing).await?;
    }
    match csv_status(&csv, &p, &now()) {
        Some(status) => {
            if csv.phase() != p.phase {
                tracing::info!(csv = %name, namespace = %ns, phase = p.phase, reason = p.reason, "csv phase");
            }
            olm.write_status(csv_obj, &status).await
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_csv_status_changes_only_when_its_phase_reason_or_message_does() {
        let phase = |phase, reason, message: &str| Phase { phase, reason, message: message.into() };
        let csv: Csv = serde_json::from_value(json!({"status": {"phase": "Pending", "reason": "RequirementsUnknown",
                                    "message": "m", "conditions": [{"phase": "Pending"}]}}))
        .unwrap();
        assert_eq!(csv_status(&csv, &phase("Pending", "RequirementsUnknown", "m"), "t1"), None);
        let message = csv_status(&csv, &phase("Pending", "RequirementsUnknown", "m2"), "t1").expect("a new message");
        let written = serde_json::to_value(&message).unwrap();
        assert!(written.get("conditions").is_none() && written.get("lastTransitionTime").is_none(), "{written}");
        assert_eq!(written["requirementStatus"], json!([]));
        let moved = csv_status(&csv, &phase("InstallReady", "AllRequirementsMet", "ok"), "t2").expect("a new phase");
        assert_eq!(moved.last_transition_time.as_deref(), Some("t2"));
        let phases: Vec<&str> = moved.conditions.iter().map(|c| c.phase.as_str()).collect();
        assert_eq!(phases, ["Pending", "InstallReady"]);
    }

    #[test]
    fn served_crds_and_available_deployments() {
        let crd = |name: &str, status: &str| {
            let spec =
                json!({"group": "x", "names": {"kind": "A", "plural": name}, "scope": "Namespaced", "versions": []});
            let conditions = [{ json!({"type": "Established", "status": status}) }];
            serde_json::from_value(
                json!({"metadata": {"name": name}, "spec": spec, "status": {"conditions": conditions}}),
            )
            .unwrap()
        };
        let crds = [crd("a.x", "True"), crd("b.x", "False")];
        assert!(established(&crds, "a.x") && !established(&crds, "b.x") && !established(&crds, "c.x"));
        let deployment = |v: Value| serde_json::from_value::<Deployment>(v).unwrap();
        assert!(available(&deployment(json!({"spec": {"replicas": 2}, "status": {"availableReplicas": 2}}))));
        assert!(!available(&deployment(json!({"spec": {"replicas": 2}, "status": {"availableReplicas": 1}}))));
        assert!(!available(&deployment(json!({"spec": {}}))), "one replica by default, none available yet");
    }
}
