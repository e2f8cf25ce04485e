//! The execution controller: every Work's manifests applied in its member cluster (namespace first),
//! their status and health collected back into the Work, objects deleted from the member when their
//! Work goes; and each binding's status aggregated from its Works.

use std::collections::HashSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};
use uc_api::meta::{NotAMap, set_annotation, set_label, str_at};

use crate::binding::{self, BINDING_ID, EXECUTION_FINALIZER};
use crate::error::PlaneError;
use crate::interpret::Interpreter;
use crate::members::Member;
use crate::objects::{self, holds, json_of};
use crate::plane::{BINDING_API, Plane, WORK_API};
use crate::propagate::Scheduled;
use crate::statuses::{Condition, ManifestStatus, ResourceIdentifier, WorkStatus, set_condition};
use crate::types::{ResourceBinding, Work};

/// Label on every object the control plane put into a member.
pub const MANAGED: &str = "karmada.io/managed";
/// Annotations on such an object: its Work.
pub const WORK_NAME: &str = "work.karmada.io/name";
pub const WORK_NAMESPACE: &str = "work.karmada.io/namespace";

/// Applies every Work in its member and records what came of it.
pub async fn execute(plane: &Plane, interpreter: &Interpreter, now: &str) -> Result<(), PlaneError> {
    let works: Vec<Work> = objects::list_as(&plane.client, &plane.kinds, (WORK_API, "Work"), "").await?;
    for w in works {
        let (ns, name) = (w.metadata.namespace.as_deref().unwrap_or_default(), w.metadata.name.as_deref());
        let Some(cluster) = binding::cluster_of(ns) else { continue };
        let member = plane.members.by_name.get(cluster);
        if w.metadata.deletion_timestamp.is_some() {
            if let Err(e) = delete_from_member(plane, &w, member).await {
                tracing::warn!(work = name, %cluster, error = %e, "work not deleted yet");
            }
            continue;
        }
        let previous = w.status.as_ref();
        let status = match member {
            Some(m) if m.ready => apply_in_member(m, interpreter, &w, now).await,
            Some(m) => failed(previous, &format!("cluster {cluster} is not ready: {}", m.message), now),
            None => failed(previous, &format!("cluster {cluster} is not a member"), now),
        };
        if previous != Some(&status) {
            objects::write_status(&plane.client, &plane.kinds, &json_of(&w), &json_of(&status)).await?;
        }
    }
    Ok(())
}

/// A manifest as a member gets it: marked as Karmada's, with the Work it came from. A manifest whose
/// labels or annotations are not a map is refused with its field (written over, they would be lost).
fn stamped(mut manifest: Value, w: &Work, i: usize) -> Result<Value, NotAMap> {
    let mut stamp = || {
        set_label(&mut manifest, MANAGED, "true")?;
        set_annotation(&mut manifest, WORK_NAME, w.metadata.name.as_deref().unwrap_or_default())?;
        set_annotation(&mut manifest, WORK_NAMESPACE, w.metadata.namespace.as_deref().unwrap_or_default())
    };
    let at = |path: &str| format!("spec.workload.manifests[{i}]{}{path}", if path.is_empty() { "" } else { "." });
    stamp().map(|()| manifest).map_err(|e| NotAMap { path: at(&e.path) })
}

/// The Work's status when nothing could be applied: `Applied` False, the last collected statuses kept.
fn failed(previous: Option<&WorkStatus>, message: &str, now: &str) -> WorkStatus {
    let mut status = previous.cloned().unwrap_or_default();
    let before = previous.map(|p| p.conditions.as_slice()).unwrap_or_default();
    set_condition(&mut status.conditions, Condition::new("Applied", false, "AppliedFailed", message), before, now);
    status
}

async fn apply_in_member(m: &Member, interpreter: &Interpreter, w: &Work, now: &str) -> WorkStatus {
    let previous = w.status.as_ref();
    let mut namespaces = HashSet::new();
    let mut statuses = Vec::new();
    for (i, manifest) in w.spec.workload.manifests.iter().cloned().enumerate() {
        let manifest = match stamped(manifest, w, i) {
            Ok(m) => m,
            Err(e) => return failed(previous, &e.to_string(), now),
        };
        let (av, kind) = (str_at(&manifest, "/apiVersion").to_string(), str_at(&manifest, "/kind").to_string());
        let (ns, name) =
            (str_at(&manifest, "/metadata/namespace").to_string(), str_at(&manifest, "/metadata/name").to_string());
        if !ns.is_empty()
            && namespaces.insert(ns.clone())
            && let Err(e) = ensure_namespace(m, &ns).await
        {
            return failed(previous, &format!("cluster {}: {e}", m.name), now);
        }
        let current = match objects::get(&m.client, &m.kinds, &av, &kind, &ns, &name).await {
            Ok(c) => c,
            Err(e) => return failed(previous, &format!("cluster {}: {e}", m.name), now),
        };
        let observed = match current {
            Some(c) if holds(&c, &manifest) => c,
            _ => match objects::apply(&m.client, &m.kinds, &manifest).await {
                Ok(applied) => applied,
                Err(e) => return failed(previous, &format!("cluster {}: {e}", m.name), now),
            },
        };
        let (group, version) = uc_api::resource::split_api_version(&av);
        let plural = m.kinds.get(&m.client, &av, &kind).await.map(|k| k.ar.plural).unwrap_or_default();
        let identifier = ResourceIdentifier {
            ordinal: i,
            group: group.into(),
            version: version.into(),
            kind,
            resource: plural,
            namespace: ns,
            name,
        };
        let status = interpreter.status(&observed).await.unwrap_or_else(|e| {
            tracing::warn!(cluster = %m.name, error = %e, "status not interpreted");
            None
        });
        let health = interpreter.health(&observed).await.unwrap_or_else(|e| {
            tracing::warn!(cluster = %m.name, error = %e, "health not interpreted");
            "Unknown"
        });
        statuses.push(ManifestStatus { identifier, status, health: health.into() });
    }
    let mut status = WorkStatus { conditions: Vec::new(), manifest_statuses: Some(statuses) };
    let ok = Condition::new("Applied", true, "AppliedSuccessful", "Manifest has been successfully applied");
    let before = previous.map(|p| p.conditions.as_slice()).unwrap_or_default();
    set_condition(&mut status.conditions, ok, before, now);
    status
}

async fn ensure_namespace(m: &Member, ns: &str) -> Result<(), PlaneError> {
    if objects::get(&m.client, &m.kinds, "v1", "Namespace", "", ns).await?.is_some() {
        return Ok(());
    }
    let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    objects::apply(&m.client, &m.kinds, &obj).await?;
    Ok(())
}

/// Deletes a deleted Work's objects from its member, then lets the Work go. A member that is gone
/// has nothing left to delete; one that does not answer keeps the Work until it does.
async fn delete_from_member(plane: &Plane, w: &Work, member: Option<&Member>) -> Result<(), PlaneError> {
    let finalizers = w.metadata.finalizers.as_deref().unwrap_or_default();
    if !finalizers.iter().any(|f| f == EXECUTION_FINALIZER) {
        return Ok(());
    }
    if let Some(m) = member {
        if !m.ready {
            return Err(PlaneError::NotReady { name: m.name.clone(), message: m.message.clone() });
        }
        for manifest in &w.spec.workload.manifests {
            let (av, kind) = (str_at(manifest, "/apiVersion"), str_at(manifest, "/kind"));
            let (ns, name) = (str_at(manifest, "/metadata/namespace"), str_at(manifest, "/metadata/name"));
            objects::delete(&m.client, &m.kinds, av, kind, ns, name).await?;
        }
    }
    let rest: Vec<String> = finalizers.iter().filter(|f| *f != EXECUTION_FINALIZER).cloned().collect();
    // The resourceVersion makes the patch a precondition: a finalizer added since is not dropped.
    let metadata = ObjectMeta {
        finalizers: Some(rest),
        resource_version: w.metadata.resource_version.clone(),
        ..Default::default()
    };
    Ok(objects::merge(&plane.client, &plane.kinds, &json_of(w), &json!({ "metadata": metadata })).await?)
}

/// Every binding's status from its Works and this pass's scheduling.
pub async fn aggregate(plane: &Plane, scheduled: &Scheduled, now: &str) -> Result<(), PlaneError> {
    let bindings: Vec<ResourceBinding> =
        objects::list_as(&plane.client, &plane.kinds, (BINDING_API, "ResourceBinding"), "").await?;
    let works: Vec<Work> = objects::list_as(&plane.client, &plane.kinds, (WORK_API, "Work"), "").await?;
    for rb in bindings {
        let id = rb.metadata.uid.as_ref();
        let mine: Vec<(String, WorkStatus)> = works
            .iter()
            .filter(|w| id.is_some() && w.metadata.labels.as_ref().and_then(|l| l.get(BINDING_ID)) == id)
            .filter_map(|w| {
                let cluster = binding::cluster_of(w.metadata.namespace.as_deref().unwrap_or_default())?;
                Some((cluster.to_string(), w.status.clone().unwrap_or_default()))
            })
            .collect();
        let previous = rb.status.as_ref();
        let (ns, name) = (rb.metadata.namespace.as_deref(), rb.metadata.name.as_deref());
        let key = format!("{}/{}", ns.unwrap_or_default(), name.unwrap_or_default());
        let cond = scheduled
            .get(&key)
            .cloned()
            .or_else(|| previous.and_then(|p| p.conditions.iter().find(|c| c.type_ == "Scheduled")).cloned());
        let cond = cond.unwrap_or_else(|| {
            Condition::new("Scheduled", false, "Unschedulable", "no policy propagates the resource")
        });
        let cond = Condition { last_transition_time: None, ..cond };
        let status = binding::binding_status(previous, &rb.spec.clusters, &mine, cond, now);
        if previous != Some(&status) {
            objects::write_status(&plane.client, &plane.kinds, &json_of(&rb), &json_of(&status)).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_is_stamped_with_its_work_or_refused_with_its_field() {
        let work: Work =
            serde_json::from_value(json!({"metadata": {"name": "w", "namespace": "karmada-es-m1"}})).unwrap();
        let m =
            stamped(json!({"kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "b"}}}), &work, 0).unwrap();
        assert_eq!(m["metadata"]["labels"], json!({"a": "b", MANAGED: "true"}));
        assert_eq!(m["metadata"]["annotations"], json!({WORK_NAME: "w", WORK_NAMESPACE: "karmada-es-m1"}));
        let bad = stamped(json!({"kind": "ConfigMap", "metadata": {"name": "c", "annotations": "x"}}), &work, 2);
        assert_eq!(bad.unwrap_err().to_string(), "spec.workload.manifests[2].metadata.annotations: must be an object");
        let whole = stamped(json!([1]), &work, 0).unwrap_err();
        assert_eq!(whole.to_string(), "spec.workload.manifests[0]: must be an object");
    }
}
