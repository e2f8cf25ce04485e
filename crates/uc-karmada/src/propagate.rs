//! Policies to bindings to Works: the detector (which policy takes which resource template), the
//! scheduler (which clusters, how many replicas) and the binding controller (one Work per target
//! cluster in its execution space: the template pruned, its replicas revised, overrides applied).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::statuses::Condition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uc_api::meta::{is_deleting, str_at};

use crate::binding::{self, PolicyRef};
use crate::error::PlaneError;
use crate::interpret::Interpreter;
use crate::objects::{self, holds, json_of};
use crate::overrides::{apply, rules_for, selector_matches};
use crate::plane::{BINDING_API, POLICY_API, Plane, WORK_API};
use crate::schedule::schedule;
use crate::types::{
    MemberCluster, OverrideSpec, PropagationPolicy, PropagationSpec, ResourceBinding, TargetCluster, Work, WorkSpec,
    WorkloadTemplate,
};

/// The `Scheduled` condition of each binding this pass, by `namespace/name`.
pub type Scheduled = HashMap<String, Condition>;

/// Namespaces whose objects are never propagated.
fn reserved(ns: &str) -> bool {
    matches!(ns, "karmada-system" | "karmada-cluster" | "kube-system" | "kube-public" | "kube-node-lease")
        || ns.starts_with("karmada-es-")
}

struct Policy {
    by: PolicyRef,
    spec: PropagationSpec,
}

async fn policies(plane: &Plane) -> Result<Vec<Policy>, PlaneError> {
    let mut out = Vec::new();
    for (kind, cluster_scoped) in [("PropagationPolicy", false), ("ClusterPropagationPolicy", true)] {
        for p in objects::list(&plane.client, &plane.kinds, POLICY_API, kind, "").await? {
            let p = match PropagationPolicy::deserialize(&p) {
                Ok(p) if p.metadata.deletion_timestamp.is_none() => p,
                Ok(_) => continue,
                Err(e) => {
                    tracing::warn!(policy = str_at(&p, "/metadata/name"), error = %e, "a policy that cannot be read");
                    continue;
                }
            };
            let by = PolicyRef {
                cluster_scoped,
                namespace: p.metadata.namespace.unwrap_or_default(),
                name: p.metadata.name.unwrap_or_default(),
            };
            out.push(Policy { by, spec: p.spec.unwrap_or_default() });
        }
    }
    // Higher priority first; a namespace's own policy before a cluster-wide one; then by name.
    out.sort_by(|a, b| {
        b.spec
            .priority
            .unwrap_or(0)
            .cmp(&a.spec.priority.unwrap_or(0))
            .then(a.by.cluster_scoped.cmp(&b.by.cluster_scoped))
            .then_with(|| a.by.name.cmp(&b.by.name))
    });
    Ok(out)
}

/// Makes or updates the binding of every template a policy takes; returns each one's `Scheduled`.
pub async fn detect(plane: &Plane, interpreter: &Interpreter, now: &str) -> Result<Scheduled, PlaneError> {
    let members = plane.members.for_scheduling();
    let member_names: Vec<String> = members.iter().map(|m| m.name.clone()).collect();
    let mut claimed = HashSet::new();
    let mut scheduled = Scheduled::new();
    for policy in policies(plane).await? {
        for sel in &policy.spec.resource_selectors {
            let ns = if policy.by.cluster_scoped {
                sel.namespace.clone().unwrap_or_default()
            } else {
                policy.by.namespace.clone()
            };
            let templates = match objects::list(&plane.client, &plane.kinds, &sel.api_version, &sel.kind, &ns).await {
                Ok(t) => t,
                Err(e) => {
                    tracing::debug!(error = %e, "a resource selector names a kind not served");
                    continue;
                }
            };
            for t in templates {
                let uid = str_at(&t, "/metadata/uid").to_string();
                let t_ns = str_at(&t, "/metadata/namespace");
                // Cluster-scoped templates would need a ClusterResourceBinding, which is not served.
                if t_ns.is_empty()
                    || is_deleting(&t)
                    || reserved(t_ns)
                    || !selector_matches(sel, &t)
                    || !claimed.insert(uid)
                {
                    continue;
                }
                let key =
                    format!("{t_ns}/{}", binding::binding_name(str_at(&t, "/kind"), str_at(&t, "/metadata/name")));
                match bind(plane, interpreter, &policy, &t, &members, &member_names, now).await {
                    Ok(cond) => {
                        scheduled.insert(key, cond);
                    }
                    Err(e) => tracing::warn!(binding = %key, error = %e, "binding not updated"),
                }
            }
        }
    }
    Ok(scheduled)
}

async fn bind(
    plane: &Plane,
    interpreter: &Interpreter,
    policy: &Policy,
    template: &Value,
    members: &[MemberCluster],
    member_names: &[String],
    now: &str,
) -> Result<Condition, PlaneError> {
    let replicas = interpreter.replicas(template).await?;
    let placement = &policy.spec.placement;
    let name = binding::binding_name(str_at(template, "/kind"), str_at(template, "/metadata/name"));
    let ns = str_at(template, "/metadata/namespace");
    let existing = objects::get(&plane.client, &plane.kinds, BINDING_API, "ResourceBinding", ns, &name).await?;
    let typed: Option<ResourceBinding> = existing.as_ref().and_then(|rb| ResourceBinding::deserialize(rb).ok());
    let kept = typed.as_ref().and_then(|rb| binding::kept_schedule(rb, placement, replicas, member_names));
    let rescheduled = kept.is_none();
    let (clusters, cond) = match kept.map(Ok).unwrap_or_else(|| schedule(placement, replicas, members)) {
        Ok(c) => (c, Condition::new("Scheduled", true, "Success", "Binding has been scheduled successfully.")),
        Err(no_fit) => {
            // Keep what was scheduled before; say why nothing new could be.
            let before = typed.map(|rb| rb.spec.clusters).unwrap_or_default();
            (before, Condition::new("Scheduled", false, "NoClusterFit", &no_fit.0))
        }
    };
    let desired = objects::json_of(&binding::binding(template, &policy.by, placement, replicas, &clusters));
    if existing.as_ref().is_none_or(|e| !holds(e, &desired)) {
        let applied = objects::apply(&plane.client, &plane.kinds, &desired).await?;
        if rescheduled {
            let written = ResourceBinding::deserialize(&applied).unwrap_or_default();
            let mut status = written.status.unwrap_or_default();
            status.scheduler_observed_generation = Some(written.metadata.generation.unwrap_or(1));
            status.last_scheduled_time = Some(now.into());
            objects::write_status(&plane.client, &plane.kinds, &applied, &objects::json_of(&status)).await?;
        }
    }
    Ok(cond)
}

/// Brings every binding's Works in line with its template, scheduling result and overrides, and
/// deletes Works no binding wants.
pub async fn sync_works(plane: &Plane, interpreter: &Interpreter) -> Result<(), PlaneError> {
    let members: BTreeMap<String, MemberCluster> =
        plane.members.for_scheduling().into_iter().map(|m| (m.name.clone(), m)).collect();
    let bindings: Vec<ResourceBinding> =
        objects::list_as(&plane.client, &plane.kinds, (BINDING_API, "ResourceBinding"), "").await?;
    let overrides = override_policies(plane).await?;
    let works: Vec<Work> = objects::list_as(&plane.client, &plane.kinds, (WORK_API, "Work"), "").await?;
    let mut wanted: HashSet<(String, String)> = HashSet::new();
    for rb in &bindings {
        let r = &rb.spec.resource;
        let template = objects::get(&plane.client, &plane.kinds, &r.api_version, &r.kind, &r.namespace, &r.name).await;
        let Ok(Some(template)) = template else { continue };
        if is_deleting(&template) {
            continue;
        }
        for tc in &rb.spec.clusters {
            let Some(member) = members.get(&tc.name) else { continue };
            let work = match work_for(interpreter, rb, &template, tc, member, &overrides).await {
                Ok(w) => w,
                Err(e) => {
                    tracing::warn!(binding = rb.metadata.name, cluster = %tc.name, error = %e, "work not updated");
                    continue;
                }
            };
            wanted.insert(key_of(&work));
            let existing = works.iter().find(|w| key_of(w) == key_of(&work));
            if existing.is_none_or(|e| !holds(&json_of(e), &json_of(&work)) || e.spec != work.spec) {
                objects::apply(&plane.client, &plane.kinds, &json_of(&work)).await?;
            }
        }
    }
    for w in &works {
        let Some(id) = w.metadata.labels.as_ref().and_then(|l| l.get(binding::BINDING_ID)) else { continue };
        let key = key_of(w);
        let owner = bindings.iter().find(|b| b.metadata.uid.as_ref() == Some(id));
        let unscheduled = owner.is_some_and(|rb| !wanted.contains(&key) && !targets(rb, &key.0));
        if (owner.is_none() || unscheduled) && w.metadata.deletion_timestamp.is_none() {
            objects::delete(&plane.client, &plane.kinds, WORK_API, "Work", &key.0, &key.1).await?;
        }
    }
    Ok(())
}

/// A Work's `namespace` and `name`.
fn key_of(w: &Work) -> (String, String) {
    (w.metadata.namespace.clone().unwrap_or_default(), w.metadata.name.clone().unwrap_or_default())
}

/// Whether the binding still targets the cluster of execution space `ns`.
fn targets(rb: &ResourceBinding, ns: &str) -> bool {
    let Some(cluster) = binding::cluster_of(ns) else { return true };
    rb.spec.clusters.iter().any(|c| c.name == cluster)
}

/// An override policy, in the order Karmada applies them, with its spec as written (which a Work's
/// annotation records).
struct OverrideRef {
    cluster_scoped: bool,
    namespace: String,
    name: String,
    spec: OverrideSpec,
    written: Value,
}

/// Override policies in the order Karmada applies them: cluster-wide ones, then namespaced, by name.
async fn override_policies(plane: &Plane) -> Result<Vec<OverrideRef>, PlaneError> {
    let mut out = Vec::new();
    for (kind, cluster_scoped) in [("ClusterOverridePolicy", true), ("OverridePolicy", false)] {
        let mut list = objects::list(&plane.client, &plane.kinds, POLICY_API, kind, "").await?;
        list.sort_by(|a, b| str_at(a, "/metadata/name").cmp(str_at(b, "/metadata/name")));
        for mut p in list {
            let (namespace, name) =
                (str_at(&p, "/metadata/namespace").to_string(), str_at(&p, "/metadata/name").to_string());
            let written = p["spec"].take();
            match OverrideSpec::deserialize(&written) {
                Ok(spec) => out.push(OverrideRef { cluster_scoped, namespace, name, spec, written }),
                Err(e) => tracing::warn!(policy = %name, error = %e, "an override policy that cannot be read"),
            }
        }
    }
    Ok(out)
}

/// What a Work's applied-overrides annotation records of one policy (Karmada's `OverridePolicyShadow`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Applied<'a> {
    policy_name: &'a str,
    overriders: &'a Value,
}

/// The Work of one binding for one cluster.
async fn work_for(
    interpreter: &Interpreter,
    rb: &ResourceBinding,
    template: &Value,
    tc: &TargetCluster,
    member: &MemberCluster,
    overrides: &[OverrideRef],
) -> Result<Work, PlaneError> {
    let mut manifest = binding::prune(template);
    let divided = rb.spec.placement.replica_scheduling.as_ref().and_then(|r| r.replica_scheduling_type.as_deref())
        == Some("Divided");
    if divided && rb.spec.replicas.unwrap_or(0) > 0 {
        manifest = interpreter.revise_replicas(&manifest, tc.replicas).await?;
    }
    let t_ns = str_at(template, "/metadata/namespace");
    let (mut applied, mut applied_cluster) = (Vec::new(), Vec::new());
    for o in overrides {
        if !o.cluster_scoped && o.namespace != t_ns {
            continue;
        }
        let rules = rules_for(&o.spec, template, member);
        if rules.is_empty() {
            continue;
        }
        for r in &rules {
            apply(&mut manifest, r).map_err(|source| PlaneError::Override { policy: o.name.clone(), source })?;
        }
        let record = Applied { policy_name: &o.name, overriders: o.written.get("overrideRules").unwrap_or(&o.written) };
        if o.cluster_scoped { applied_cluster.push(record) } else { applied.push(record) }
    }
    let mut annotations = BTreeMap::from([
        (binding::BINDING_NAME.to_string(), rb.metadata.name.clone().unwrap_or_default()),
        (binding::BINDING_NAMESPACE.to_string(), rb.metadata.namespace.clone().unwrap_or_default()),
    ]);
    for (key, records) in [(binding::APPLIED_OVERRIDES, applied), (binding::APPLIED_CLUSTER_OVERRIDES, applied_cluster)]
    {
        if !records.is_empty() {
            annotations.insert(key.to_string(), serde_json::to_string(&records).unwrap_or_default());
        }
    }
    let metadata = ObjectMeta {
        name: Some(binding::work_name(str_at(template, "/kind"), str_at(template, "/metadata/name"), t_ns)),
        namespace: Some(binding::execution_space(&tc.name)),
        labels: Some(BTreeMap::from([(binding::BINDING_ID.to_string(), rb.metadata.uid.clone().unwrap_or_default())])),
        annotations: Some(annotations),
        finalizers: Some(vec![binding::EXECUTION_FINALIZER.to_string()]),
        ..Default::default()
    };
    let spec = WorkSpec { workload: WorkloadTemplate { manifests: vec![manifest] } };
    Ok(Work { api_version: WORK_API.into(), kind: "Work".into(), metadata, spec, status: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_work_outside_its_bindings_targets_is_unscheduled_and_one_outside_execution_spaces_is_not() {
        let mut rb = ResourceBinding::default();
        rb.spec.clusters = vec![TargetCluster { name: "m1".into(), replicas: 0 }];
        assert!(targets(&rb, "karmada-es-m1"));
        assert!(!targets(&rb, "karmada-es-m2"));
        assert!(targets(&rb, "default"), "a Work outside an execution space is not the scheduler's to remove");
        let w = Work {
            metadata: ObjectMeta {
                name: Some("w".into()),
                namespace: Some("karmada-es-m1".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(key_of(&w), ("karmada-es-m1".to_string(), "w".to_string()));
    }
}
