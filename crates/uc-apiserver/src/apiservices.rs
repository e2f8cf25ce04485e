//! `apiregistration.k8s.io/v1` APIServices: one per served group/version, marked `Local` and
//! `Available` as kube-aggregator lists the groups kube-apiserver serves itself — the built-in ones
//! from the start, a CRD's as it is served and gone when it is not.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::watch;
use uc_api::{GroupResource, Pointer};

use crate::app::App;
use crate::handlers::meta::stamp_new;
use crate::storage::{Op, StoreError, object_key, rv_of};

const MANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";

fn gr() -> GroupResource {
    GroupResource::new("apiregistration.k8s.io", "apiservices")
}

/// The APIService name of a group/version: `v1.apps`, and `v1.` for the core group.
pub fn name_of(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// The APIServices the served groups should have, by name. `crd_groups` are the groups CRDs define
/// (automanaged `true`, priority 1000, as kube's CRD autoregistration makes them); the rest are
/// built in (`onstart`).
pub fn desired(groups: &[(String, Vec<String>)], crd_groups: &[String]) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for (rank, (group, versions)) in groups.iter().enumerate() {
        let from_crd = crd_groups.contains(group);
        let group_priority = if group.is_empty() {
            18000
        } else if from_crd {
            1000
        } else {
            17900 - 100 * rank.min(100) as i64
        };
        for (i, version) in versions.iter().enumerate() {
            let name = name_of(group, version);
            out.insert(
                name.clone(),
                json!({
                    "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                    "metadata": {"name": name, "labels": {MANAGED: if from_crd { "true" } else { "onstart" }}},
                    "spec": {"group": group, "version": version, "groupPriorityMinimum": group_priority,
                             "versionPriority": if from_crd { 100 } else { 15 - i.min(14) as i64 }},
                    "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local",
                        "message": "Local APIServices are always available"}]}
                }),
            );
        }
    }
    out
}

/// The served groups and their versions: the built-in ones from the registry, the CRDs' from the
/// stored CRDs (the registry learns of a CRD just after it is stored, so it may lag a wake-up).
type Groups = Vec<(String, Vec<String>)>;

fn served(app: &App) -> Result<(Groups, Vec<String>), StoreError> {
    let all = app.registry.all();
    let mut groups: Groups = app
        .registry
        .groups()
        .into_iter()
        .filter(|(g, _)| all.iter().any(|r| r.group == *g && r.crd.is_none()))
        .collect();
    let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    let (stored, _) = app.store.list(&crds, None, None)?;
    let mut crd_groups = Vec::new();
    for (_, crd) in stored {
        let Some((group, versions)) = served_versions(&crd) else { continue };
        crd_groups.push(group.clone());
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, vs)) => vs.extend(versions.into_iter().filter(|v| !vs.contains(v)).collect::<Vec<_>>()),
            None => groups.push((group, versions)),
        }
    }
    Ok((groups, crd_groups))
}

/// A stored CRD's group and served versions, highest priority first (as its resource lists them),
/// read without parsing its schemas (admission checked them when it was stored): every sync reads every
/// CRD. None if it serves no version.
fn served_versions(crd: &Value) -> Option<(String, Vec<String>)> {
    let group = crd.at("/spec/group").and_then(Value::as_str).filter(|g| !g.is_empty())?;
    let mut versions: Vec<String> = crd
        .at("/spec/versions")
        .and_then(Value::as_array)?
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool).unwrap_or(false))
        .filter_map(|v| v.get("name").and_then(Value::as_str).map(String::from))
        .collect();
    versions.sort_by_key(|v| std::cmp::Reverse(crate::registry::version_priority(v)));
    (!versions.is_empty()).then(|| (group.to_string(), versions))
}

async fn sync(app: &App) -> Result<(), StoreError> {
    let (groups, crd_groups) = served(app)?;
    let want = desired(&groups, &crd_groups);
    let (stored, _) = app.store.list(&gr(), None, None)?;
    for (key, obj) in &stored {
        let name = key.trim_start_matches('/');
        let managed = obj.at(&format!("/metadata/labels/{}", MANAGED.replace('/', "~1"))).is_some();
        if managed && !want.contains_key(name) {
            match app.store.write(Op::Delete { gr: gr(), key: key.clone(), expect_rv: rv_of(obj) }).await {
                Ok(_) | Err(StoreError::NotFound) | Err(StoreError::Conflict { .. }) => {}
                Err(e) => return Err(e),
            }
        }
    }
    for (name, mut obj) in want {
        let key = object_key("", &name);
        if app.store.get(&gr(), &key).is_none() {
            stamp_new(&mut obj);
            match app.store.write(Op::Create { gr: gr(), key, object: obj }).await {
                Ok(_) | Err(StoreError::AlreadyExists) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Keeps the local APIServices in step with the served groups until `stop` changes: at start and
/// whenever a CustomResourceDefinition changes.
pub async fn run(app: Arc<App>, mut stop: watch::Receiver<bool>) {
    let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    let mut revisions = app.store.subscribe();
    let mut cursor = app.store.revision();
    let mut changed = true;
    loop {
        if changed {
            crate::background::step("listing the served groups as APIServices", sync(&app)).await;
        }
        tokio::select! {
            r = revisions.changed() => if r.is_err() { return },
            _ = stop.changed() => return,
        }
        changed = false;
        cursor = match app.store.events_after(cursor, |ev| changed |= ev.gr == crds) {
            Ok(rv) => rv,
            Err(_) => {
                changed = true;
                app.store.revision()
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crds_served_versions_are_those_of_the_resource_it_defines() {
        let schema = json!({"openAPIV3Schema": {"type": "object"}});
        let crd = json!({"metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com", "scope": "Cluster",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1alpha1", "served": true, "storage": false, "schema": schema},
                         {"name": "v1", "served": true, "storage": true, "schema": schema},
                         {"name": "v2beta1", "served": false, "storage": false, "schema": schema},
                         {"name": "v1beta1", "served": true, "storage": false, "schema": schema}]}});
        let info = crate::registry::crd_to_resource(&crd).unwrap();
        let names: Vec<String> = info.versions.iter().map(|v| v.name.clone()).collect();
        assert_eq!(served_versions(&crd), Some(("example.com".to_string(), names)));
        assert_eq!(served_versions(&crd).unwrap().1, ["v1", "v1beta1", "v1alpha1"]);
        let mut none_served = crd.clone();
        for v in none_served["spec"]["versions"].as_array_mut().unwrap() {
            v["served"] = json!(false);
        }
        assert_eq!(served_versions(&none_served), None);
    }

    #[test]
    fn every_served_group_version_is_a_local_apiservice() {
        let groups = vec![
            (String::new(), vec!["v1".to_string()]),
            ("apps".to_string(), vec!["v1".to_string()]),
            ("example.com".to_string(), vec!["v2".to_string(), "v1".to_string()]),
        ];
        let want = desired(&groups, &["example.com".to_string()]);
        assert_eq!(want.keys().collect::<Vec<_>>(), ["v1.", "v1.apps", "v1.example.com", "v2.example.com"]);
        assert_eq!(want["v1."]["spec"]["groupPriorityMinimum"], 18000);
        assert_eq!(want["v2.example.com"]["spec"]["groupPriorityMinimum"], 1000);
        assert_eq!(want["v1.apps"]["metadata"]["labels"][MANAGED], "onstart");
        assert_eq!(want["v1.example.com"]["metadata"]["labels"][MANAGED], "true");
        assert_eq!(want["v1.apps"]["status"]["conditions"][0]["reason"], "Local");
    }
}
