//! Copied CSVs, as OLM makes them: an operator that serves other namespaces than its own shows its
//! ClusterServiceVersion in each of them — a copy labelled `olm.copiedFrom: <its namespace>`, with the
//! original's phase and reason `Copied` — so that `kubectl get csv -n <namespace>` lists the operators
//! serving it. Copies follow the original (and go when it goes, or stops serving the namespace). An
//! operator of an AllNamespaces group is not copied into every namespace: uc behaves as OLM does with
//! `OLMConfig.spec.features.disableCopiedCSVs`, which OLM's maintainers recommend for clusters with many
//! namespaces.
//!
//! With each copy comes the operator's tenant RBAC, as OLM's OperatorGroup controller makes it: the
//! Roles and RoleBindings its install made in its own namespace, under the same names in the target
//! namespace, owned by the copy (so they go with it) — a SingleNamespace operator may act where it
//! watches.

use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, ListParams};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uc_api::meta::json_of;

use crate::context::{Olm, V1ALPHA1, now, str_at};
use crate::csv::{Csv, CsvStatus};
use crate::error::LifecycleError;
use crate::group::{self, Group};
use crate::plan::{OWNER_KIND_LABEL, OWNER_LABEL, OWNER_NAMESPACE_LABEL, PlanError};

pub use crate::csv::COPIED_FROM_LABEL;

/// Whether a CSV is a copy.
pub fn is_copy(csv: &Value) -> bool {
    csv.pointer("/metadata/labels").and_then(|l| l.get(COPIED_FROM_LABEL)).is_some()
}

/// A copy as written: the original's spec whole (every field of it kept, read or not).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Copy<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: ObjectMeta,
    spec: &'a Value,
}

/// The copies the CSVs should have: for each original whose group targets namespaces other than its
/// own (not every namespace), one per such namespace, with the status it shows.
pub fn wanted(csvs: &[Value], groups: &[Group]) -> Vec<(Value, CsvStatus)> {
    let mut out = Vec::new();
    for c in csvs.iter().filter(|c| !is_copy(c)) {
        let Ok(csv) = Csv::from_value(c) else { continue };
        let (ns, phase) = (csv.namespace(), csv.phase());
        if phase.is_empty() || phase == "Replacing" || csv.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let Ok(g) = group::check(&csv, ns, groups) else { continue };
        if g.install_mode() == "AllNamespaces" {
            continue;
        }
        let mut labels = csv.metadata.labels.clone().unwrap_or_default();
        labels.insert(COPIED_FROM_LABEL.into(), ns.into());
        let spec = c.get("spec").unwrap_or(&Value::Null);
        for target in g.target_namespaces.iter().filter(|t| *t != ns) {
            let metadata = ObjectMeta {
                name: Some(csv.name().into()),
                namespace: Some(target.clone()),
                labels: Some(labels.clone()),
                annotations: Some(csv.metadata.annotations.clone().unwrap_or_default()),
                ..Default::default()
            };
            let copy = Copy { api_version: V1ALPHA1, kind: "ClusterServiceVersion", metadata, spec };
            let status = CsvStatus {
                phase: phase.into(),
                reason: "Copied".into(),
                message: format!("The operator is running in {ns} but is managing this namespace"),
                last_update_time: Some(now()),
                ..Default::default()
            };
            out.push((json_of(&copy), status));
        }
    }
    out
}

/// The metadata of the copy, in `copy`'s namespace, of what the install made as `original`: its name
/// and labels, labelled as the copy's, `olm.copiedFrom` the operator's namespace, and owned by the copy
/// without blocking its deletion.
fn tenant_meta(original: &ObjectMeta, copy: &ObjectMeta) -> ObjectMeta {
    let name = copy.name.clone().unwrap_or_default();
    let target = copy.namespace.clone().unwrap_or_default();
    let mut labels = original.labels.clone().unwrap_or_default();
    labels.insert(COPIED_FROM_LABEL.into(), original.namespace.clone().unwrap_or_default());
    labels.insert(OWNER_LABEL.into(), name.clone());
    labels.insert(OWNER_NAMESPACE_LABEL.into(), target.clone());
    labels.insert(OWNER_KIND_LABEL.into(), "ClusterServiceVersion".into());
    let owner = OwnerReference {
        api_version: V1ALPHA1.into(),
        kind: "ClusterServiceVersion".into(),
        name,
        uid: copy.uid.clone().unwrap_or_default(),
        controller: Some(false),
        block_owner_deletion: Some(false),
    };
    ObjectMeta {
        name: original.name.clone(),
        namespace: Some(target),
        labels: Some(labels),
        owner_references: Some(vec![owner]),
        ..Default::default()
    }
}

/// The Role a copy brings into its namespace for one its operator's install made ([`tenant_meta`]).
fn tenant_role(original: &Role, copy: &ObjectMeta) -> Role {
    Role { metadata: tenant_meta(&original.metadata, copy), rules: original.rules.clone() }
}

/// The RoleBinding a copy brings into its namespace: the original's subjects (the operator's account,
/// where it runs) and role.
fn tenant_binding(original: &RoleBinding, copy: &ObjectMeta) -> RoleBinding {
    RoleBinding {
        metadata: tenant_meta(&original.metadata, copy),
        role_ref: original.role_ref.clone(),
        subjects: original.subjects.clone(),
    }
}

/// Applies a copy's tenant RBAC of one kind (`copied`: the copy of an original) where it is not
/// already what it should be.
async fn sync_tenant_kind<K>(
    olm: &Olm,
    original_namespace: &str,
    copy: &ObjectMeta,
    copied: fn(&K, &ObjectMeta) -> K,
) -> Result<(), LifecycleError>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    K: Clone + std::fmt::Debug + serde::de::DeserializeOwned + serde::Serialize,
{
    let name = copy.name.as_deref().unwrap_or_default();
    let owned_in = |ns: &str| format!("{OWNER_LABEL}={name},{OWNER_NAMESPACE_LABEL}={ns}");
    let list = |ns: &str| {
        let (api, params) = (Api::<K>::namespaced(olm.client.clone(), ns), ListParams::default().labels(&owned_in(ns)));
        async move { api.list(&params).await.map(|l| l.items) }
    };
    let originals = list(original_namespace).await?;
    let copies = list(copy.namespace.as_deref().unwrap_or_default()).await?;
    for want in originals.iter().map(|o| copied(o, copy)) {
        let have = copies.iter().find(|h| h.meta().name == want.meta().name);
        let want = serde_json::to_value(&want).map_err(PlanError::Encode)?;
        let held = |h: &K| serde_json::to_value(h).is_ok_and(|h| uc_engine::dynamic::holds(&h, &want));
        if !have.is_some_and(held) {
            olm.apply(&want).await?;
        }
    }
    Ok(())
}

/// Applies a copy's tenant RBAC, Roles then RoleBindings.
async fn sync_tenant_rbac(olm: &Olm, original_namespace: &str, copy: &Value) -> Result<(), LifecycleError> {
    let meta = ObjectMeta::deserialize(&copy["metadata"]).map_err(PlanError::Encode)?;
    sync_tenant_kind(olm, original_namespace, &meta, tenant_role).await?;
    sync_tenant_kind(olm, original_namespace, &meta, tenant_binding).await
}

/// Makes the copies what they should be: creates and updates those wanted, deletes the others.
pub async fn sync(olm: &Olm, csvs: &[Value], groups: &[Group]) -> Result<(), LifecycleError> {
    let wanted = wanted(csvs, groups);
    let key = |v: &Value| (str_at(v, "/metadata/namespace").to_string(), str_at(v, "/metadata/name").to_string());
    for (copy, status) in &wanted {
        let have = csvs.iter().find(|c| key(c) == key(copy));
        if let Some(h) = have
            && !is_copy(h)
        {
            continue; // the namespace has its own install of this CSV
        }
        let copied = match have {
            Some(h) if uc_engine::dynamic::holds(h, copy) => h.clone(),
            _ => match olm.apply(copy).await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(namespace = %str_at(copy, "/metadata/namespace"), csv = %str_at(copy, "/metadata/name"), error = %e, "csv not copied");
                    continue;
                }
            },
        };
        olm.write_status(&copied, status).await?;
        let from =
            copy.pointer("/metadata/labels").map(|l| str_at(l, &format!("/{COPIED_FROM_LABEL}"))).unwrap_or_default();
        if let Err(e) = sync_tenant_rbac(olm, from, &copied).await {
            tracing::warn!(namespace = %str_at(&copied, "/metadata/namespace"), csv = %str_at(&copied, "/metadata/name"), error = %e, "tenant rbac not copied");
        }
    }
    for stale in csvs.iter().filter(|c| is_copy(c) && !wanted.iter().any(|(w, _)| key(w) == key(c))) {
        let (ns, name) = key(stale);
        tracing::info!(namespace = %ns, csv = %name, "removing a copied csv");
        uc_engine::dynamic::delete(&olm.client, &olm.kinds, V1ALPHA1, "ClusterServiceVersion", &ns, &name).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn csv(ns: &str, phase: &str) -> Value {
        json!({"apiVersion": V1ALPHA1, "kind": "ClusterServiceVersion",
               "metadata": {"name": "op.v1", "namespace": ns, "labels": {"a": "b"}},
               "spec": {"installModes": [{"type": "OwnNamespace", "supported": true},
                                         {"type": "MultiNamespace", "supported": true},
                                         {"type": "AllNamespaces", "supported": true}]},
               "status": {"phase": phase}})
    }

    fn group(ns: &str, targets: &[&str]) -> Group {
        Group {
            name: "g".into(),
            namespace: ns.into(),
            target_namespaces: targets.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn copies_go_to_the_other_target_namespaces_with_the_originals_phase() {
        let w = wanted(&[csv("ops", "Succeeded")], &[group("ops", &["ops", "team-a", "team-b"])]);
        let namespaces: Vec<&str> = w.iter().map(|(c, _)| str_at(c, "/metadata/namespace")).collect();
        assert_eq!(namespaces, ["team-a", "team-b"], "not into its own namespace");
        let (copy, status) = &w[0];
        assert_eq!(copy["metadata"]["labels"], json!({"a": "b", "olm.copiedFrom": "ops"}));
        assert_eq!((status.phase.as_str(), status.reason.as_str()), ("Succeeded", "Copied"));
        assert!(status.message.contains("running in ops"));
        assert_eq!(copy["spec"], csv("ops", "Succeeded")["spec"], "the spec whole");
    }

    #[test]
    fn tenant_rbac_is_the_originals_under_the_copys_name_and_ownership() {
        let role: Role = serde_json::from_value(json!({
            "metadata": {"name": "op.v1-op", "namespace": "ops", "uid": "r1", "resourceVersion": "7",
                         "labels": {OWNER_LABEL: "op.v1", OWNER_NAMESPACE_LABEL: "ops", "x": "y"}},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]}]}))
        .unwrap();
        let binding: RoleBinding = serde_json::from_value(json!({
            "metadata": {"name": "op.v1-op", "namespace": "ops"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "op.v1-op"},
            "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": "ops"}]}))
        .unwrap();
        let copy = ObjectMeta {
            name: Some("op.v1".into()),
            namespace: Some("team".into()),
            uid: Some("c1".into()),
            ..Default::default()
        };
        let role = serde_json::to_value(tenant_role(&role, &copy)).unwrap();
        assert_eq!(
            role["metadata"],
            json!({"name": "op.v1-op", "namespace": "team",
            "labels": {OWNER_LABEL: "op.v1", OWNER_NAMESPACE_LABEL: "team", OWNER_KIND_LABEL: "ClusterServiceVersion",
                       COPIED_FROM_LABEL: "ops", "x": "y"},
            "ownerReferences": [{"apiVersion": V1ALPHA1, "kind": "ClusterServiceVersion", "name": "op.v1", "uid": "c1",
                                 "controller": false, "blockOwnerDeletion": false}]})
        );
        assert_eq!(
            (role["apiVersion"].as_str(), role["kind"].as_str()),
            (Some("rbac.authorization.k8s.io/v1"), Some("Role"))
        );
        assert_eq!(role["rules"][0]["resources"], json!(["pods"]));
        let binding = tenant_binding(&binding, &copy);
        let subject = &binding.subjects.as_ref().unwrap()[0];
        assert_eq!(subject.namespace.as_deref(), Some("ops"), "the operator's account, where it runs");
        assert_eq!(binding.role_ref.name, "op.v1-op");
    }

    #[test]
    fn no_copies_for_every_namespace_own_namespace_replacing_or_copies() {
        assert!(wanted(&[csv("ops", "Succeeded")], &[group("ops", &[])]).is_empty(), "AllNamespaces");
        assert!(wanted(&[csv("ops", "Succeeded")], &[group("ops", &["ops"])]).is_empty(), "OwnNamespace");
        assert!(wanted(&[csv("ops", "Replacing")], &[group("ops", &["team"])]).is_empty());
        assert!(wanted(&[csv("ops", "")], &[group("ops", &["team"])]).is_empty(), "no phase yet");
        let mut copy = csv("team", "Succeeded");
        copy["metadata"]["labels"][COPIED_FROM_LABEL] = json!("ops");
        assert!(is_copy(&copy) && !is_copy(&csv("ops", "Succeeded")));
        assert!(wanted(&[copy], &[group("team", &["x"])]).is_empty(), "a copy is not copied");
    }
}
