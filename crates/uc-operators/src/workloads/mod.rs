//! The embedded cluster's workload controllers, written as uc controllers with native hooks: uc's
//! first user is uc itself. Each is a pure function from a typed sync request to a sync response (its
//! parent decoded into k8s-openapi's type, a malformed one refused with the field at fault); the engine
//! does the watching, claiming, applying and status writing.

pub mod autoscaler;
pub mod claims;
pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod endpoint_slices;
pub mod endpoints;
pub mod job;
pub mod job_indexed;
pub mod replicaset;
pub mod replicationcontroller;
pub mod statefulset;
pub mod ttl_after_finished;

use std::sync::Arc;

use uc_api::controller::{ChildResource, ConditionCheck, Hook, RevisionHistory, StatusChecks, UpdateMethod};
use uc_api::hook::{SyncRequest, SyncResponse};
use uc_engine::hooks::HookError;
use uc_engine::hooks::native::{self, NativeRegistry, Projection};

use crate::objects::{native_spec, universal_controller};

/// Registers the workload hooks.
pub fn register(natives: &mut NativeRegistry) {
    let sync = |f: fn(SyncRequest) -> Result<SyncResponse, HookError>| native::typed(Arc::new(f), None);
    // Hooks reading their pods as `PodView` (metadata, spec.nodeName, the status's phase, Ready condition
    // and terminations): the engine keeps only that of those pods, a quarter of their size (issue 58).
    let pod_views = |f| native::reading(Projection::PodView, sync(f));
    natives.register("replicaset", pod_views(replicaset::sync));
    natives.register("deployment", sync(deployment::sync));
    natives.register("job", pod_views(job::sync));
    natives.register("cronjob", sync(cronjob::sync));
    natives.register("statefulset", sync(statefulset::sync));
    natives.register("endpoints", native::typed(Arc::new(endpoints::sync), Some(Arc::new(endpoints::customize))));
    natives.register("daemonset", native::typed(Arc::new(daemonset::sync), Some(Arc::new(daemonset::customize))));
    natives.register("replicationcontroller", pod_views(replicationcontroller::sync));
    natives.register("persistentvolumeclaim", sync(claims::sync));
    natives.register(
        "poddisruptionbudget",
        native::typed(Arc::new(disruption::sync), Some(Arc::new(disruption::customize))),
    );
}

/// The UniversalController objects of the workload controllers.
pub fn controllers() -> Vec<uc_api::controller::UniversalController> {
    use UpdateMethod::{InPlace, OnDelete, RollingRecreate};
    let builtin = |name: &str, spec| universal_controller(name, ("uc.njuics.cn/builtin", "true"), spec);
    // One child type; `generate`: a selector generated per parent; `customize`: related resources too.
    let one = |parent: (&str, &str), child: (&str, &str, UpdateMethod), hook: &str, generate, customize: bool| {
        let mut spec = native_spec(parent, &[child], hook);
        spec.generate_selector = Some(generate);
        if customize {
            spec.hooks.customize = Some(Hook::native(hook));
        }
        spec
    };
    // Pods rolled one at a time, each Ready before the next, template changes kept as
    // ControllerRevisions (`spec.template`); the parent's own selector.
    let rolled = |parent: &str, children: &[(&str, &str, UpdateMethod)], hook: &str| {
        let mut spec = native_spec(("apps/v1", parent), children, hook);
        spec.generate_selector = None;
        spec.parent_resource.revision_history = Some(RevisionHistory { field_paths: vec!["spec.template".into()] });
        let ready = ConditionCheck { type_: "Ready".into(), status: Some("True".into()), reason: None };
        let pods = spec.child_resources.iter_mut().filter(|c| c.resource == "pods");
        for strategy in pods.filter_map(|c| c.update_strategy.as_mut()) {
            strategy.status_checks = Some(StatusChecks { conditions: vec![ready.clone()] });
        }
        spec
    };
    // No children of its own (what it reads are related resources, or nothing).
    let childless = |parent: (&str, &str), hook: &str, customize: bool| {
        let mut spec = native_spec(parent, &[], hook);
        spec.generate_selector = None;
        if customize {
            spec.hooks.customize = Some(Hook::native(hook));
        }
        spec
    };
    let statefulset = rolled(
        "statefulsets",
        &[("v1", "pods", RollingRecreate), ("v1", "persistentvolumeclaims", OnDelete)],
        "statefulset",
    );
    // A DaemonSet's nodes are related resources (its customize hook); template changes roll one node at
    // a time through ControllerRevisions, like a StatefulSet's.
    let mut daemonset = rolled("daemonsets", &[("v1", "pods", RollingRecreate)], "daemonset");
    daemonset.hooks.customize = Some(Hook::native("daemonset"));
    let pods = ("v1", "pods", OnDelete);
    vec![
        builtin("builtin-statefulset", statefulset),
        builtin("builtin-daemonset", daemonset),
        builtin(
            "builtin-replicationcontroller",
            one(("v1", "replicationcontrollers"), pods, "replicationcontroller", false, false),
        ),
        builtin("builtin-replicaset", one(("apps/v1", "replicasets"), pods, "replicaset", false, false)),
        builtin(
            "builtin-deployment",
            one(("apps/v1", "deployments"), ("apps/v1", "replicasets", InPlace), "deployment", false, false),
        ),
        // Jobs select their pods by a generated selector (kube generates controller-uid too).
        builtin("builtin-job", one(("batch/v1", "jobs"), pods, "job", true, false)),
        // A CronJob's Jobs are made once and never updated; it has no selector of its own.
        builtin(
            "builtin-cronjob",
            one(("batch/v1", "cronjobs"), ("batch/v1", "jobs", OnDelete), "cronjob", true, false),
        ),
        // A budget's selector picks pods, which are not its children: they are related resources.
        builtin(
            "builtin-poddisruptionbudget",
            childless(("policy/v1", "poddisruptionbudgets"), "poddisruptionbudget", true),
        ),
        // Claims are bound at once: the node provisions each as a directory (claims.rs).
        builtin("builtin-horizontalpodautoscaler", {
            let mut spec = childless(("autoscaling/v2", "horizontalpodautoscalers"), autoscaler::HOOK, false);
            spec.resync_period_seconds = Some(autoscaler::SYNC_PERIOD_SECONDS);
            spec
        }),
        builtin(
            "builtin-persistentvolumeclaim",
            childless(("v1", "persistentvolumeclaims"), "persistentvolumeclaim", false),
        ),
        // A Service's selector picks pods, not its Endpoints: the pods are related resources.
        builtin("builtin-endpoints", {
            let mut spec = one(("v1", "services"), ("v1", "endpoints", InPlace), "endpoints", true, true);
            spec.child_resources.push(ChildResource::new("discovery.k8s.io/v1", "endpointslices", InPlace));
            spec
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn the_builtin_controllers_are_the_objects_uc_has_always_installed() {
        let b = |name: &str, spec: Value| {
            json!({"apiVersion": "universalcontroller.njuics.cn/v1alpha1", "kind": "UniversalController",
                   "metadata": {"name": name, "labels": {"uc.njuics.cn/builtin": "true"}}, "spec": spec})
        };
        let native = |hook: &str| json!({"native": {"name": hook}});
        let child = |api: &str, resource: &str, method: &str| json!({"apiVersion": api, "resource": resource, "updateStrategy": {"method": method}});
        let ready = json!({"conditions": [{"type": "Ready", "status": "True"}]});
        let rolled_pods = json!({"apiVersion": "v1", "resource": "pods",
                                 "updateStrategy": {"method": "RollingRecreate", "statusChecks": ready}});
        let revisions = |resource: &str| json!({"apiVersion": "apps/v1", "resource": resource, "revisionHistory": {"fieldPaths": ["spec.template"]}});
        let one = |parent: (&str, &str), c: Value, hook: &str, generate: bool| {
            json!({"parentResource": {"apiVersion": parent.0, "resource": parent.1}, "childResources": [c],
                   "generateSelector": generate, "hooks": {"sync": native(hook)}})
        };
        let mut endpoints = one(("v1", "services"), child("v1", "endpoints", "InPlace"), "endpoints", true);
        endpoints["childResources"].as_array_mut().unwrap().push(child(
            "discovery.k8s.io/v1",
            "endpointslices",
            "InPlace",
        ));
        endpoints["hooks"]["customize"] = native("endpoints");
        let expected = vec![
            b(
                "builtin-statefulset",
                json!({"parentResource": revisions("statefulsets"),
                "childResources": [rolled_pods.clone(), child("v1", "persistentvolumeclaims", "OnDelete")],
                "hooks": {"sync": native("statefulset")}}),
            ),
            b(
                "builtin-daemonset",
                json!({"parentResource": revisions("daemonsets"), "childResources": [rolled_pods],
                "hooks": {"sync": native("daemonset"), "customize": native("daemonset")}}),
            ),
            b(
                "builtin-replicationcontroller",
                one(("v1", "replicationcontrollers"), child("v1", "pods", "OnDelete"), "replicationcontroller", false),
            ),
            b(
                "builtin-replicaset",
                one(("apps/v1", "replicasets"), child("v1", "pods", "OnDelete"), "replicaset", false),
            ),
            b(
                "builtin-deployment",
                one(("apps/v1", "deployments"), child("apps/v1", "replicasets", "InPlace"), "deployment", false),
            ),
            b("builtin-job", one(("batch/v1", "jobs"), child("v1", "pods", "OnDelete"), "job", true)),
            b("builtin-cronjob", one(("batch/v1", "cronjobs"), child("batch/v1", "jobs", "OnDelete"), "cronjob", true)),
            b(
                "builtin-poddisruptionbudget",
                json!({"parentResource": {"apiVersion": "policy/v1",
                "resource": "poddisruptionbudgets"}, "childResources": [],
                "hooks": {"sync": native("poddisruptionbudget"), "customize": native("poddisruptionbudget")}}),
            ),
            b(
                "builtin-horizontalpodautoscaler",
                json!({"parentResource": {"apiVersion": "autoscaling/v2", "resource": "horizontalpodautoscalers"},
                "childResources": [], "resyncPeriodSeconds": 15.0, "hooks": {"sync": native("horizontalpodautoscaler")}}),
            ),
            b(
                "builtin-persistentvolumeclaim",
                json!({"parentResource": {"apiVersion": "v1",
                "resource": "persistentvolumeclaims"}, "childResources": [],
                "hooks": {"sync": native("persistentvolumeclaim")}}),
            ),
            b("builtin-endpoints", endpoints),
        ];
        let written: Vec<Value> = controllers().iter().map(crate::objects::json_of).collect();
        assert_eq!(written, expected);
    }
}
