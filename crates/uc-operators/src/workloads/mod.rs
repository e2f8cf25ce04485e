//! The embedded cluster's workload controllers, written as uc controllers with native hooks: uc's
//! first user is uc itself. Each is a pure function from a typed sync request to a sync response (its
//! parent decoded into k8s-openapi's type, a malformed one refused with the field at fault); the engine
//! does the watching, claiming, applying and status writing.

pub mod claims;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod endpoints;
pub mod job;
pub mod replicaset;
pub mod replicationcontroller;
pub mod statefulset;

use std::sync::Arc;

use serde_json::{Value, json};
use uc_api::hook::{SyncRequest, SyncResponse};
use uc_engine::hooks::HookError;
use uc_engine::hooks::native::{self, NativeRegistry};

/// Registers the workload hooks.
pub fn register(natives: &mut NativeRegistry) {
    let sync = |f: fn(SyncRequest) -> Result<SyncResponse, HookError>| native::typed(Arc::new(f), None);
    natives.register("replicaset", sync(replicaset::sync));
    natives.register("deployment", sync(deployment::sync));
    natives.register("job", sync(job::sync));
    natives.register("statefulset", sync(statefulset::sync));
    natives.register("endpoints", native::typed(Arc::new(endpoints::sync), Some(Arc::new(endpoints::customize))));
    natives.register("daemonset", native::typed(Arc::new(daemonset::sync), Some(Arc::new(daemonset::customize))));
    natives.register("replicationcontroller", sync(replicationcontroller::sync));
    natives.register("persistentvolumeclaim", sync(claims::sync));
    natives.register(
        "poddisruptionbudget",
        native::typed(Arc::new(disruption::sync), Some(Arc::new(disruption::customize))),
    );
}

/// The UniversalController objects of the workload controllers.
#[expect(clippy::too_many_lines, reason = "data table: one UniversalController per workload kind")]
pub fn controllers() -> Vec<Value> {
    let uc = |name: &str,
              parent: (&str, &str),
              child: (&str, &str),
              method: &str,
              hook: &str,
              generate: bool,
              customize: bool| {
        let mut hooks = json!({"sync": {"native": {"name": hook}}});
        if customize {
            hooks["customize"] = json!({"native": {"name": hook}});
        }
        json!({
            "apiVersion": uc_api::controller::API_VERSION, "kind": "UniversalController",
            "metadata": {"name": name, "labels": {"uc.njuics.cn/builtin": "true"}},
            "spec": {
                "parentResource": {"apiVersion": parent.0, "resource": parent.1},
                "childResources": [{"apiVersion": child.0, "resource": child.1, "updateStrategy": {"method": method}}],
                "generateSelector": generate,
                "hooks": hooks
            }
        })
    };
    let statefulset = json!({
        "apiVersion": uc_api::controller::API_VERSION, "kind": "UniversalController",
        "metadata": {"name": "builtin-statefulset", "labels": {"uc.njuics.cn/builtin": "true"}},
        "spec": {
            "parentResource": {"apiVersion": "apps/v1", "resource": "statefulsets",
                               "revisionHistory": {"fieldPaths": ["spec.template"]}},
            "childResources": [
                {"apiVersion": "v1", "resource": "pods", "updateStrategy": {"method": "RollingRecreate",
                 "statusChecks": {"conditions": [{"type": "Ready", "status": "True"}]}}},
                {"apiVersion": "v1", "resource": "persistentvolumeclaims", "updateStrategy": {"method": "OnDelete"}}
            ],
            "hooks": {"sync": {"native": {"name": "statefulset"}}}
        }
    });
    // A DaemonSet's nodes are related resources (its customize hook); template changes roll one node at
    // a time through ControllerRevisions, like a StatefulSet's.
    let daemonset = json!({
        "apiVersion": uc_api::controller::API_VERSION, "kind": "UniversalController",
        "metadata": {"name": "builtin-daemonset", "labels": {"uc.njuics.cn/builtin": "true"}},
        "spec": {
            "parentResource": {"apiVersion": "apps/v1", "resource": "daemonsets",
                               "revisionHistory": {"fieldPaths": ["spec.template"]}},
            "childResources": [
                {"apiVersion": "v1", "resource": "pods", "updateStrategy": {"method": "RollingRecreate",
                 "statusChecks": {"conditions": [{"type": "Ready", "status": "True"}]}}}
            ],
            "hooks": {"sync": {"native": {"name": "daemonset"}}, "customize": {"native": {"name": "daemonset"}}}
        }
    });
    vec![
        statefulset,
        daemonset,
        uc(
            "builtin-replicationcontroller",
            ("v1", "replicationcontrollers"),
            ("v1", "pods"),
            "OnDelete",
            "replicationcontroller",
            false,
            false,
        ),
        uc("builtin-replicaset", ("apps/v1", "replicasets"), ("v1", "pods"), "OnDelete", "replicaset", false, false),
        uc(
            "builtin-deployment",
            ("apps/v1", "deployments"),
            ("apps/v1", "replicasets"),
            "InPlace",
            "deployment",
            false,
            false,
        ),
        // Jobs select their pods by a generated selector (kube generates controller-uid too).
        uc("builtin-job", ("batch/v1", "jobs"), ("v1", "pods"), "OnDelete", "job", true, false),
        // A budget's selector picks pods, which are not its children: they are related resources.
        json!({
            "apiVersion": uc_api::controller::API_VERSION, "kind": "UniversalController",
            "metadata": {"name": "builtin-poddisruptionbudget", "labels": {"uc.njuics.cn/builtin": "true"}},
            "spec": {
                "parentResource": {"apiVersion": "policy/v1", "resource": "poddisruptionbudgets"},
                "childResources": [],
                "hooks": {"sync": {"native": {"name": "poddisruptionbudget"}},
                          "customize": {"native": {"name": "poddisruptionbudget"}}}
            }
        }),
        // Claims are bound at once: the node provisions each as a directory (claims.rs).
        json!({
            "apiVersion": uc_api::controller::API_VERSION, "kind": "UniversalController",
            "metadata": {"name": "builtin-persistentvolumeclaim", "labels": {"uc.njuics.cn/builtin": "true"}},
            "spec": {
                "parentResource": {"apiVersion": "v1", "resource": "persistentvolumeclaims"},
                "childResources": [],
                "hooks": {"sync": {"native": {"name": "persistentvolumeclaim"}}}
            }
        }),
        // A Service's selector picks pods, not its Endpoints: the pods are related resources.
        uc("builtin-endpoints", ("v1", "services"), ("v1", "endpoints"), "InPlace", "endpoints", true, true),
    ]
}
