//! Bindings and Works as pure functions: Karmada's names, the template as a Work carries it, the
//! ResourceBinding a policy makes for a template, and the binding's status from its Works.

use serde_json::{Map, Value, json};
use uc_api::meta::{controller_owner_reference, str_at};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::statuses::{AggregatedStatusItem, BindingStatus, Condition, WorkStatus, set_condition};
use crate::types::{BoundResource, Placement, ResourceBinding, ResourceBindingSpec, TargetCluster};

/// Who writes what the control plane writes (its field manager).
pub const MANAGER: &str = "karmada-controller-manager";
/// Label on a Work: the uid of the binding it comes from.
pub const BINDING_ID: &str = "resourcebinding.karmada.io/permanent-id";
/// Annotations on a Work: the binding it comes from.
pub const BINDING_NAME: &str = "resourcebinding.karmada.io/name";
pub const BINDING_NAMESPACE: &str = "resourcebinding.karmada.io/namespace";
/// Labels on a binding: the policy that made it.
pub const POLICY_NAME: &str = "propagationpolicy.karmada.io/name";
pub const POLICY_NAMESPACE: &str = "propagationpolicy.karmada.io/namespace";
pub const CLUSTER_POLICY_NAME: &str = "clusterpropagationpolicy.karmada.io/name";
/// Annotations on a Work: the overrides applied (as Karmada records them).
pub const APPLIED_OVERRIDES: &str = "policy.karmada.io/applied-overrides";
pub const APPLIED_CLUSTER_OVERRIDES: &str = "policy.karmada.io/applied-cluster-overrides";
/// The finalizer that makes a Work's deletion delete its objects in the member first.
pub const EXECUTION_FINALIZER: &str = "karmada.io/execution-controller";

/// `<name>-<kind>`, lower case (Karmada's `GenerateBindingName`).
pub fn binding_name(kind: &str, name: &str) -> String {
    format!("{}-{}", name.replace(':', "."), kind).to_lowercase()
}

/// `<name>-<hash of namespace, name and kind>` (Karmada's `GenerateWorkName`: FNV-32a, safe-encoded).
pub fn work_name(kind: &str, name: &str, namespace: &str) -> String {
    let name = name.replace(':', ".").to_lowercase();
    let key = if namespace.is_empty() { format!("{name}-{kind}") } else { format!("{namespace}-{name}-{kind}") };
    let mut hash: u32 = 0x811c_9dc5;
    for b in key.to_lowercase().bytes() {
        hash ^= b as u32;
        hash = hash.wrapping_mul(0x0100_0193);
    }
    format!("{name}-{}", safe_encode(&hash.to_string()))
}

/// apimachinery's `rand.SafeEncodeString`: digits and letters mapped to ones that spell no words.
fn safe_encode(s: &str) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    s.bytes().map(|b| ALPHANUMS[b as usize % ALPHANUMS.len()] as char).collect()
}

/// `karmada-es-<cluster>`: where a cluster's Works live.
pub fn execution_space(cluster: &str) -> String {
    format!("karmada-es-{cluster}")
}

/// The cluster whose execution space `namespace` is.
pub fn cluster_of(namespace: &str) -> Option<&str> {
    namespace.strip_prefix("karmada-es-")
}

/// The template as a Work carries it: what the user wrote, without the control plane's metadata
/// (uid, resourceVersion, owners, managed fields), status, or a Service's allocated addresses.
pub fn prune(template: &Value) -> Value {
    let mut out = template.clone();
    if let Some(m) = out.as_object_mut() {
        m.remove("status");
    }
    let meta = template.get("metadata").cloned().unwrap_or(json!({}));
    let mut kept = Map::new();
    for key in ["name", "namespace", "labels", "annotations"] {
        if let Some(v) = meta.get(key) {
            kept.insert(key.into(), v.clone());
        }
    }
    if let Some(Value::Object(a)) = kept.get_mut("annotations") {
        a.remove("kubectl.kubernetes.io/last-applied-configuration");
    }
    out["metadata"] = Value::Object(kept);
    if str_at(template, "/kind") == "Service"
        && let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut)
    {
        if spec.get("clusterIP").and_then(Value::as_str) != Some("None") {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
        spec.remove("healthCheckNodePort");
    }
    out
}

/// The policy that made a binding: kind (`PropagationPolicy` / `ClusterPropagationPolicy`),
/// namespace and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyRef {
    pub cluster_scoped: bool,
    pub namespace: String,
    pub name: String,
}

/// The ResourceBinding a policy makes for a template: owned by the template, naming it, with the
/// policy's placement, the replicas the template declares and the scheduling result.
pub fn binding(
    template: &Value,
    policy: &PolicyRef,
    placement: &Placement,
    replicas: i32,
    clusters: &[TargetCluster],
) -> ResourceBinding {
    let at = |p: &str| str_at(template, p).to_string();
    let (kind, name, namespace) = (at("/kind"), at("/metadata/name"), at("/metadata/namespace"));
    let labels = if policy.cluster_scoped {
        [(CLUSTER_POLICY_NAME, &policy.name)].into_iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    } else {
        [(POLICY_NAMESPACE, &policy.namespace), (POLICY_NAME, &policy.name)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    };
    let owner = serde_json::from_value(controller_owner_reference(template)).ok();
    ResourceBinding {
        api_version: "work.karmada.io/v1alpha2".into(),
        kind: "ResourceBinding".into(),
        metadata: ObjectMeta {
            name: Some(binding_name(&kind, &name)),
            namespace: Some(namespace.clone()),
            labels: Some(labels),
            owner_references: owner.map(|o| vec![o]),
            ..Default::default()
        },
        spec: ResourceBindingSpec {
            resource: BoundResource {
                api_version: at("/apiVersion"),
                kind,
                namespace,
                name,
                uid: at("/metadata/uid"),
                resource_version: at("/metadata/resourceVersion"),
            },
            placement: placement.clone(),
            clusters: clusters.to_vec(),
            replicas: (replicas > 0).then_some(replicas),
        },
        status: None,
    }
}

/// The scheduling result to keep: the binding's own, when the placement and replicas it was made for
/// are unchanged and every cluster in it is still a member. Karmada does not move a workload
/// because a member stopped answering (it has no failover here).
pub fn kept_schedule(
    existing: &ResourceBinding,
    placement: &Placement,
    replicas: i32,
    members: &[String],
) -> Option<Vec<TargetCluster>> {
    let spec = &existing.spec;
    let same = spec.placement == *placement && spec.replicas.unwrap_or(0) == replicas;
    let all_members = spec.clusters.iter().all(|c| members.contains(&c.name));
    (same && all_members && !spec.clusters.is_empty()).then(|| spec.clusters.clone())
}

/// A binding's status from its Works: one `aggregatedStatus` item per target cluster (the status and
/// health the Work collected, whether it applied), `FullyApplied` when every Work applied, and
/// `Scheduled` as the scheduler left it.
pub fn binding_status(
    previous: Option<&BindingStatus>,
    clusters: &[TargetCluster],
    works: &[(String, WorkStatus)],
    scheduled: Condition,
    now: &str,
) -> BindingStatus {
    let mut all_applied = !clusters.is_empty();
    let items = clusters.iter().map(|c| {
        let work = works.iter().find(|(cluster, _)| *cluster == c.name).map(|(_, w)| w);
        let applied_cond = work.and_then(WorkStatus::applied);
        let applied = applied_cond.is_some_and(|c| c.status == "True");
        all_applied &= applied;
        let first = work.and_then(|w| w.manifest_statuses.as_ref()?.first());
        AggregatedStatusItem {
            cluster_name: c.name.clone(),
            status: first.and_then(|m| m.status.clone()),
            applied,
            applied_message: applied_cond.filter(|_| !applied).map(|c| c.message.clone()),
            health: first.map(|m| m.health.clone()).unwrap_or_else(|| "Unknown".into()),
        }
    });
    let aggregated_status = items.collect();
    let before = previous.map(|p| p.conditions.as_slice()).unwrap_or_default();
    let mut status = BindingStatus {
        scheduler_observed_generation: previous.and_then(|p| p.scheduler_observed_generation),
        last_scheduled_time: previous.and_then(|p| p.last_scheduled_time.clone()),
        conditions: Vec::new(),
        aggregated_status,
    };
    set_condition(&mut status.conditions, scheduled, before, now);
    let fully = if all_applied {
        Condition::new("FullyApplied", true, "FullyAppliedSuccess", "All works have been successfully applied")
    } else {
        let message = "Failed to apply all works, see status.aggregatedStatus for details";
        Condition::new("FullyApplied", false, "FullyAppliedFailed", message)
    };
    set_condition(&mut status.conditions, fully, before, now);
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects;

    #[test]
    fn karmadas_names() {
        assert_eq!(binding_name("Deployment", "nginx"), "nginx-deployment");
        assert_eq!(binding_name("ClusterRole", "system:x"), "system.x-clusterrole");
        let w = work_name("Deployment", "nginx", "default");
        assert!(w.starts_with("nginx-") && w.len() > 7, "{w}");
        assert_eq!(w, work_name("Deployment", "nginx", "default"));
        assert_ne!(w, work_name("Deployment", "nginx", "other"));
        assert_eq!(execution_space("m1"), "karmada-es-m1");
        assert_eq!(cluster_of("karmada-es-m1"), Some("m1"));
        assert_eq!(cluster_of("default"), None);
    }

    #[test]
    fn prune_keeps_what_the_user_wrote() {
        let t = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "namespace": "d", "uid": "u", "resourceVersion": "9", "labels": {"a": "b"},
                         "managedFields": [], "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "x": "y"}},
            "spec": {"clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"], "ports": [{"port": 80}]},
            "status": {"loadBalancer": {}}});
        let p = prune(&t);
        assert_eq!(
            p["metadata"],
            json!({"name": "s", "namespace": "d", "labels": {"a": "b"}, "annotations": {"x": "y"}})
        );
        assert_eq!(p["spec"], json!({"ports": [{"port": 80}]}));
        assert!(p.get("status").is_none());
        let mut headless = t.clone();
        headless["spec"]["clusterIP"] = json!("None");
        assert_eq!(prune(&headless)["spec"]["clusterIP"], "None");
    }

    #[test]
    fn a_schedule_is_kept_until_placement_replicas_or_members_change() {
        let p = Placement::default();
        let clusters = vec![TargetCluster { name: "m1".into(), replicas: 2 }];
        let rb = binding(
            &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "n", "namespace": "d", "uid": "u"}}),
            &PolicyRef { cluster_scoped: false, namespace: "d".into(), name: "pp".into() },
            &p,
            2,
            &clusters,
        );
        let json = objects::json_of(&rb);
        assert_eq!(json["metadata"]["name"], "n-deployment");
        assert_eq!(json["metadata"]["ownerReferences"][0]["uid"], "u");
        assert_eq!(json["spec"]["resource"]["apiVersion"], "apps/v1");
        assert_eq!(
            (json["spec"]["replicas"].as_i64(), json["metadata"]["labels"][POLICY_NAME].as_str()),
            (Some(2), Some("pp"))
        );
        let members = vec!["m1".to_string()];
        assert_eq!(kept_schedule(&rb, &p, 2, &members), Some(clusters.clone()));
        assert_eq!(kept_schedule(&rb, &p, 3, &members), None);
        assert_eq!(kept_schedule(&rb, &p, 2, &[]), None);
    }

    #[test]
    fn status_aggregates_works_and_says_when_all_applied() {
        let clusters =
            vec![TargetCluster { name: "m1".into(), replicas: 1 }, TargetCluster { name: "m2".into(), replicas: 1 }];
        let work = |v: Value| serde_json::from_value::<WorkStatus>(v).unwrap();
        let ok = work(json!({"conditions": [{"type": "Applied", "status": "True"}],
                             "manifestStatuses": [{"status": {"readyReplicas": 1}, "health": "Healthy"}]}));
        let failed = work(
            json!({"conditions": [{"type": "Applied", "status": "False", "message": "cluster m2 is not reachable"}]}),
        );
        let scheduled = Condition::new("Scheduled", true, "Success", "Binding has been scheduled successfully.");
        let s = binding_status(
            None,
            &clusters,
            &[("m1".into(), ok.clone()), ("m2".into(), failed)],
            scheduled.clone(),
            "t1",
        );
        assert_eq!(
            crate::objects::json_of(&s.aggregated_status[0]),
            json!({"clusterName": "m1", "applied": true, "status": {"readyReplicas": 1}, "health": "Healthy"})
        );
        assert_eq!(s.aggregated_status[1].applied_message.as_deref(), Some("cluster m2 is not reachable"));
        let fully = s.conditions.iter().find(|c| c.type_ == "FullyApplied").unwrap();
        assert_eq!(fully.status, "False");
        let previous = BindingStatus { scheduler_observed_generation: Some(3), ..s };
        let s2 = binding_status(
            Some(&previous),
            &clusters,
            &[("m1".into(), ok.clone()), ("m2".into(), ok)],
            scheduled,
            "t2",
        );
        let fully = s2.conditions.iter().find(|c| c.type_ == "FullyApplied").unwrap();
        assert_eq!((fully.status.as_str(), fully.last_transition_time.as_deref()), ("True", Some("t2")));
        let kept = s2.conditions.iter().find(|c| c.type_ == "Scheduled").unwrap();
        assert_eq!(kept.last_transition_time.as_deref(), Some("t1"), "Scheduled did not change");
        assert_eq!(s2.scheduler_observed_generation, Some(3), "what the scheduler noted is kept");
    }
}
