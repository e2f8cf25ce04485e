//! The RBAC objects a cluster starts with (`default_roles.yaml`) and the controller that fills
//! aggregated ClusterRoles (`admin`, `edit`, `view`, and any role with an `aggregationRule`) from
//! the ClusterRoles their selectors match.

use std::sync::Arc;

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use serde_json::{Value, json};
use tokio::sync::watch;
use uc_api::GroupResource;

use crate::app::App;
use crate::handlers::meta::stamp_new;
use crate::storage::{Op, StoreError, object_key};

const DEFAULTS: &str = include_str!("default_roles.yaml");
const GROUP: &str = "rbac.authorization.k8s.io";

/// The default ClusterRoles and ClusterRoleBindings, as stored objects.
pub fn default_objects() -> Vec<(GroupResource, Value)> {
    let items: Vec<Value> = serde_yaml_ng::from_str(DEFAULTS).expect("default_roles.yaml is valid YAML");
    items
        .into_iter()
        .map(|mut o| {
            let resource = if o["kind"] == "ClusterRole" { "clusterroles" } else { "clusterrolebindings" };
            o["apiVersion"] = json!(format!("{GROUP}/v1"));
            o["metadata"]["annotations"] = json!({"rbac.authorization.kubernetes.io/autoupdate": "true"});
            let labels = o["metadata"]["labels"].as_object().cloned().unwrap_or_default();
            o["metadata"]["labels"] = json!(labels);
            o["metadata"]["labels"]["kubernetes.io/bootstrapping"] = json!("rbac-defaults");
            (GroupResource::new(GROUP, resource), o)
        })
        .collect()
}

/// Creates the default RBAC objects that are missing (a user's changes to existing ones are kept).
pub async fn ensure(app: &App) -> Result<(), StoreError> {
    for (gr, mut object) in default_objects() {
        let key = object_key("", object["metadata"]["name"].as_str().unwrap_or_default());
        if app.store.get_kept(&gr, &key).is_none() {
            stamp_new(&mut object);
            match app.store.write(Op::Create { gr, key, object }).await {
                Ok(_) | Err(StoreError::AlreadyExists) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// The aggregated ClusterRoles whose rules differ from what their selectors collect now, with the
/// rules they should have. Aggregation chains (`admin` collects `edit`, which collects `view`), so
/// it is repeated until nothing changes.
pub fn aggregate(roles: &[ClusterRole]) -> Vec<(String, Vec<PolicyRule>)> {
    let mut roles = roles.to_vec();
    let mut changed: Vec<(String, Vec<PolicyRule>)> = Vec::new();
    for _ in 0..roles.len().max(1) {
        let mut any = false;
        for i in 0..roles.len() {
            let Some(rules) = super::rbac::aggregated_rules(&roles[i], &roles) else { continue };
            if roles[i].rules.as_deref().unwrap_or_default() != rules.as_slice() {
                let name = roles[i].metadata.name.clone().unwrap_or_default();
                roles[i].rules = Some(rules.clone());
                changed.retain(|(n, _)| *n != name);
                changed.push((name, rules));
                any = true;
            }
        }
        if !any {
            break;
        }
    }
    changed
}

async fn aggregate_once(app: &App) -> Result<(), StoreError> {
    let gr = GroupResource::new(GROUP, "clusterroles");
    let (stored, _) = app.store.list_kept(&gr, None, None)?;
    let roles: Vec<ClusterRole> = stored.iter().filter_map(|(_, o)| o.decode().ok()).collect();
    for (name, rules) in aggregate(&roles) {
        let key = object_key("", &name);
        let Some(old) = app.store.get(&gr, &key) else { continue };
        let mut new = (*old).clone();
        new["rules"] = serde_json::to_value(&rules).unwrap_or_default();
        let expect_rv = crate::storage::rv_of(&old);
        match app.store.write(Op::Update { gr: gr.clone(), key, object: new, expect_rv }).await {
            Ok(_) | Err(StoreError::Conflict { .. }) | Err(StoreError::NotFound) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Keeps aggregated ClusterRoles filled until `stop` changes: wakes on every change to a ClusterRole.
pub async fn run_aggregation(app: Arc<App>, mut stop: watch::Receiver<bool>) {
    let gr = GroupResource::new(GROUP, "clusterroles");
    let mut revisions = app.store.subscribe();
    let mut cursor = app.store.revision();
    crate::background::step("aggregating ClusterRoles", aggregate_once(&app)).await;
    loop {
        tokio::select! {
            r = revisions.changed() => if r.is_err() { return },
            _ = stop.changed() => return,
        }
        let mut touched = false;
        let newest = app.store.events_after(cursor, |ev| touched |= ev.gr == gr);
        cursor = match newest {
            Ok(rv) => rv,
            Err(_) => {
                touched = true;
                app.store.revision()
            }
        };
        if touched {
            crate::background::step("aggregating ClusterRoles", aggregate_once(&app)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles() -> Vec<ClusterRole> {
        default_objects()
            .into_iter()
            .filter(|(gr, _)| gr.resource == "clusterroles")
            .map(|(_, o)| serde_json::from_value(o).unwrap())
            .collect()
    }

    #[test]
    fn the_defaults_decode_and_chain_view_into_edit_into_admin() {
        let all = default_objects();
        assert!(all.iter().any(|(_, o)| o["metadata"]["name"] == "cluster-admin" && o["kind"] == "ClusterRoleBinding"));
        let changes = aggregate(&roles());
        let rules = |name: &str| changes.iter().find(|(n, _)| n == name).map(|(_, r)| r.clone()).unwrap();
        let grants = |rules: &[PolicyRule], verb: &str, resource: &str| {
            rules
                .iter()
                .any(|r| r.verbs.iter().any(|v| v == verb) && r.resources.iter().flatten().any(|x| x == resource))
        };
        assert!(grants(&rules("view"), "list", "pods") && !grants(&rules("view"), "get", "secrets"));
        assert!(grants(&rules("edit"), "list", "pods"), "edit includes view");
        assert!(grants(&rules("edit"), "create", "secrets"));
        assert!(grants(&rules("admin"), "list", "pods") && grants(&rules("admin"), "create", "roles"));
        assert!(!grants(&rules("edit"), "create", "roles"));
    }

    #[test]
    fn an_aggregated_role_already_filled_is_left_alone() {
        let mut roles = roles();
        for (name, rules) in aggregate(&roles) {
            roles.iter_mut().find(|r| r.metadata.name.as_deref() == Some(&name)).unwrap().rules = Some(rules);
        }
        assert!(aggregate(&roles).is_empty());
    }
}
