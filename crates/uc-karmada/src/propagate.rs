//! Policies to bindings to Works: the detector (which policy takes which resource template), the
//! scheduler (which clusters, how many replicas) and the binding controller (one Work per target
//! cluster in its execution space: the template pruned, its replicas revised, overrides applied).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::statuses::{BindingStatus, Condition};
use serde::Deserialize;
use serde_json::{Value, json};
use uc_api::meta::{is_deleting, str_at};

use crate::binding::{self, PolicyRef};
use crate::error::PlaneError;
use crate::interpret::Interpreter;
use crate::objects::{self, holds};
use crate::overrides::{apply, rules_for, selector_matches};
use crate::plane::{BINDING_API, POLICY_API, Plane, WORK_API};
use crate::schedule::schedule;
use crate::types::{MemberCluster, OverrideSpec, PropagationSpec, ResourceBinding, TargetCluster};

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
            if is_deleting(&p) {
                continue;
            }
            let spec: PropagationSpec = match serde_json::from_value(p["spec"].clone()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(policy = str_at(&p, "/metadata/name"), error = %e, "a policy that cannot be read");
                    continue;
                }
            };
            let by = PolicyRef {
                cluster_scoped,
                namespace: str_at(&p, "/metadata/namespace").to_string(),
                name: str_at(&p, "/metadata/name").to_string(),
            };
            out.push(Policy { by, spec });
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
            let mut status = applied.get("status").and_then(|s| BindingStatus::deserialize(s).ok()).unwrap_or_default();
            let written = ResourceBinding::deserialize(&applied).map(|rb| rb.metadata.generation);
            status.scheduler_observed_generation = Some(written.ok().flatten().unwrap_or(1));
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
    let bindings = objects::list(&plane.client, &plane.kinds, BINDING_API, "ResourceBinding", "").await?;
    let overrides = override_policies(plane).await?;
    let works = objects::list(&plane.client, &plane.kinds, WORK_API, "Work", "").await?;
    let mut wanted: HashSet<(String, String)> = HashSet::new();
    let binding_ids: HashSet<&str> = bindings.iter().map(|b| str_at(b, "/metadata/uid")).collect();
    for rb in &bindings {
        let r = &rb["spec"]["resource"];
        let template = objects::get(
            &plane.client,
            &plane.kinds,
            str_at(r, "/apiVersion"),
            str_at(r, "/kind"),
            str_at(r, "/namespace"),
            str_at(r, "/name"),
        )
        .await;
        let Ok(Some(template)) = template else { continue };
        if is_deleting(&template) {
            continue;
        }
        let clusters: Vec<TargetCluster> =
            serde_json::from_value(rb.pointer("/spec/clusters").cloned().unwrap_or(json!([]))).unwrap_or_default();
        for tc in &clusters {
            let Some(member) = members.get(&tc.name) else { continue };
            let work = match work_for(interpreter, rb, &template, tc, member, &overrides).await {
                Ok(w) => w,
                Err(e) => {
                    tracing::warn!(binding = str_at(rb, "/metadata/name"), cluster = %tc.name, error = %e, "work not updated");
                    continue;
                }
            };
            let key = (str_at(&work, "/metadata/namespace").to_string(), str_at(&work, "/metadata/name").to_string());
            wanted.insert(key.clone());
            let existing = works
                .iter()
                .find(|w| str_at(w, "/metadata/namespace") == key.0 && str_at(w, "/metadata/name") == key.1);
            if existing.is_none_or(|e| !holds(e, &work) || work_drops_something(e, &work)) {
                objects::apply(&plane.client, &plane.kinds, &work).await?;
            }
        }
    }
    for w in &works {
        let id = uc_api::meta::label(w, binding::BINDING_ID);
        let Some(id) = id else { continue };
        let key = (str_at(w, "/metadata/namespace").to_string(), str_at(w, "/metadata/name").to_string());
        let orphan = !binding_ids.contains(id);
        let unscheduled =
            binding_ids.contains(id) && !wanted.contains(&key) && owned_binding_scheduled(&bindings, id, &key.0);
        if (orphan || unscheduled) && !is_deleting(w) {
            objects::delete(&plane.client, &plane.kinds, WORK_API, "Work", &key.0, &key.1).await?;
        }
    }
    Ok(())
}

/// Whether the binding `id` no longer targets the cluster of execution space `ns`.
fn owned_binding_scheduled(bindings: &[Value], id: &str, ns: &str) -> bool {
    let Some(rb) = bindings.iter().find(|b| str_at(b, "/metadata/uid") == id) else { return true };
    let Some(cluster) = binding::cluster_of(ns) else { return false };
    !rb.pointer("/spec/clusters").and_then(Value::as_array).into_iter().flatten().any(|c| str_at(c, "/name") == cluster)
}

/// A manifest with fewer fields than the Work holds (`holds` sees only additions and changes).
fn work_drops_something(existing: &Value, desired: &Value) -> bool {
    existing.pointer("/spec/workload") != desired.pointer("/spec/workload")
}

/// Override policies in the order Karmada applies them: cluster-wide ones, then namespaced, by name.
async fn override_policies(plane: &Plane) -> Result<Vec<(bool, String, String, OverrideSpec, Value)>, PlaneError> {
    let mut out = Vec::new();
    for (kind, cluster_scoped) in [("ClusterOverridePolicy", true), ("OverridePolicy", false)] {
        let mut list = objects::list(&plane.client, &plane.kinds, POLICY_API, kind, "").await?;
        list.sort_by(|a, b| str_at(a, "/metadata/name").cmp(str_at(b, "/metadata/name")));
        for p in list {
            match serde_json::from_value::<OverrideSpec>(p["spec"].clone()) {
                Ok(spec) => out.push((
                    cluster_scoped,
                    str_at(&p, "/metadata/namespace").to_string(),
                    str_at(&p, "/metadata/name").to_string(),
                    spec,
                    p["spec"].clone(),
                )),
                Err(e) => {
                    tracing::warn!(policy = str_at(&p, "/metadata/name"), error = %e, "an override policy that cannot be read")
                }
            }
        }
    }
    Ok(out)
}

/// The Work of one binding for one cluster.
async fn work_for(
    interpreter: &Interpreter,
    rb: &Value,
    template: &Value,
    tc: &TargetCluster,
    member: &MemberCluster,
    overrides: &[(bool, String, String, OverrideSpec, Value)],
) -> Result<Value, PlaneError> {
    let mut manifest = binding::prune(template);
    let divided = rb.pointer("/spec/placement/replicaScheduling/replicaSchedulingType").and_then(Value::as_str)
        == Some("Divided");
    if divided && rb.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(0) > 0 {
        manifest = interpreter.revise_replicas(&manifest, tc.replicas).await?;
    }
    let t_ns = str_at(template, "/metadata/namespace");
    let (mut applied, mut applied_cluster) = (Vec::new(), Vec::new());
    for (cluster_scoped, ns, name, spec, raw) in overrides {
        if !cluster_scoped && ns != t_ns {
            continue;
        }
        let rules = rules_for(spec, template, member);
        if rules.is_empty() {
            continue;
        }
        for r in &rules {
            apply(&mut manifest, r).map_err(|source| PlaneError::Override { policy: name.to_string(), source })?;
        }
        let record =
            json!({"policyName": name, "overriders": raw.get("overrideRules").cloned().unwrap_or(raw.clone())});
        if *cluster_scoped { applied_cluster.push(record) } else { applied.push(record) }
    }
    let mut annotations = json!({
        binding::BINDING_NAME: str_at(rb, "/metadata/name"),
        binding::BINDING_NAMESPACE: str_at(rb, "/metadata/namespace"),
    });
    if !applied.is_empty() {
        annotations[binding::APPLIED_OVERRIDES] = json!(serde_json::to_string(&applied).unwrap_or_default());
    }
    if !applied_cluster.is_empty() {
        annotations[binding::APPLIED_CLUSTER_OVERRIDES] =
            json!(serde_json::to_string(&applied_cluster).unwrap_or_default());
    }
    Ok(json!({
        "apiVersion": WORK_API,
        "kind": "Work",
        "metadata": {
            "name": binding::work_name(str_at(template, "/kind"), str_at(template, "/metadata/name"), t_ns),
            "namespace": binding::execution_space(&tc.name),
            "labels": {binding::BINDING_ID: str_at(rb, "/metadata/uid")},
            "annotations": annotations,
            "finalizers": [binding::EXECUTION_FINALIZER],
        },
        "spec": {"workload": {"manifests": [manifest]}},
    }))
}
