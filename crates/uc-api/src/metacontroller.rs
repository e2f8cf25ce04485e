//! Metacontroller's API (`metacontroller.k8s.io/v1alpha1`): CompositeController, DecoratorController
//! and ControllerRevision, served from Metacontroller's own CRDs and run by uc's engine. A
//! CompositeController's spec is a UniversalController's (uc's spec is a superset of it); a
//! DecoratorController's becomes one UniversalController spec per decorated resource.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::controller::{ChildResource, Hooks, ParentResource, UniversalControllerSpec};
use crate::webhook_auth::EndpointConfig;

/// Metacontroller's API group.
pub const GROUP: &str = "metacontroller.k8s.io";
/// Its `apiVersion`.
pub const API_VERSION: &str = "metacontroller.k8s.io/v1alpha1";
/// The annotation a DecoratorController puts on its attachments (its name): an object owned by the
/// target without it is not an attachment of that decorator.
pub const DECORATOR_ANNOTATION: &str = "metacontroller.k8s.io/decorator-controller";
/// Labels of Metacontroller's ControllerRevisions: the parent's group and resource.
pub const LABEL_API_GROUP: &str = "metacontroller.k8s.io/apiGroup";
/// See [`LABEL_API_GROUP`].
pub const LABEL_RESOURCE: &str = "metacontroller.k8s.io/resource";

const CRDS: &str = include_str!("../crds/metacontroller-crds-v1.yaml");

/// The finalizer a CompositeController puts on parents when it has a finalize hook.
pub fn composite_finalizer(name: &str) -> String {
    format!("metacontroller.io/compositecontroller-{name}")
}

/// The finalizer a DecoratorController puts on targets when it has a finalize hook.
pub fn decorator_finalizer(name: &str) -> String {
    format!("metacontroller.io/decoratorcontroller-{name}")
}

/// Metacontroller's three CRDs as upstream ships them, with what uc adds (see `crds/PROVENANCE.md`):
/// the controllers' status keeps unknown fields, and `kubectl get` shows uc's conditions.
pub fn crds() -> Vec<CustomResourceDefinition> {
    let mut crds: Vec<CustomResourceDefinition> = serde_yaml_ng::Deserializer::from_str(CRDS)
        .filter_map(|d| CustomResourceDefinition::deserialize(d).ok())
        .collect();
    use crate::crds::column;
    let columns = vec![
        column("Ready", "string", ".status.conditions[?(@.type==\"Ready\")].status"),
        column("Synced", "string", ".status.conditions[?(@.type==\"Synced\")].status"),
        column("Parents", "integer", ".status.parents"),
        column("Reason", "string", ".status.conditions[?(@.type==\"Ready\")].reason"),
        column("Age", "date", ".metadata.creationTimestamp"),
    ];
    for crd in crds.iter_mut().filter(|c| c.spec.names.kind != "ControllerRevision") {
        for v in &mut crd.spec.versions {
            let schema = v.schema.as_mut().and_then(|s| s.open_api_v3_schema.as_mut());
            if let Some(status) = schema.and_then(|s| s.properties.as_mut()).and_then(|p| p.get_mut("status")) {
                status.x_kubernetes_preserve_unknown_fields = Some(true);
            }
            v.additional_printer_columns = Some(columns.clone());
        }
    }
    crds
}

/// A DecoratorController's spec.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecoratorControllerSpec {
    /// The types of objects decorated, each with optional label and annotation selectors.
    #[serde(default)]
    pub resources: Vec<DecoratorResource>,
    /// The types of objects attached to them.
    #[serde(default)]
    pub attachments: Vec<ChildResource>,
    /// Periodic resync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resync_period_seconds: Option<f64>,
    /// The hooks.
    #[serde(default)]
    pub hooks: Hooks,
    /// Webhook connection settings by host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoint_configs: Vec<EndpointConfig>,
}

/// A decorated resource type.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecoratorResource {
    /// `group/version` or `v1`.
    pub api_version: String,
    /// Plural resource name.
    pub resource: String,
    /// Labels the objects must have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<Value>,
    /// Annotations the objects must have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotation_selector: Option<Value>,
    /// Status-only changes do not sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_status_changes: Option<bool>,
}

impl DecoratorControllerSpec {
    /// One UniversalController spec per decorated resource: that resource as the parent, the
    /// attachments as children, the same hooks.
    pub fn parts(&self) -> Vec<UniversalControllerSpec> {
        self.resources
            .iter()
            .map(|r| UniversalControllerSpec {
                parent_resource: ParentResource {
                    api_version: r.api_version.clone(),
                    resource: r.resource.clone(),
                    revision_history: None,
                    label_selector: r.label_selector.clone(),
                    annotation_selector: r.annotation_selector.clone(),
                    ignore_status_changes: r.ignore_status_changes,
                },
                child_resources: self.attachments.clone(),
                resync_period_seconds: self.resync_period_seconds,
                generate_selector: None,
                hooks: self.hooks.clone(),
                endpoint_configs: self.endpoint_configs.clone(),
                // Metacontroller's kinds name it by annotation (`uc.njuics.cn/service-account`).
                service_account_name: None,
                service_account_namespace: None,
                finalizer_name: None,
                max_concurrent_reconciles: None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Pointer;

    #[test]
    fn the_vendored_crds_are_served_with_status_kept() {
        let crds: Vec<Value> = crds().iter().map(crate::meta::json_of).collect();
        let names: Vec<&str> = crds.iter().filter_map(|c| c.at("/metadata/name").and_then(Value::as_str)).collect();
        assert_eq!(
            names,
            [
                "compositecontrollers.metacontroller.k8s.io",
                "controllerrevisions.metacontroller.k8s.io",
                "decoratorcontrollers.metacontroller.k8s.io"
            ]
        );
        let status = crds[0].at("/spec/versions/0/schema/openAPIV3Schema/properties/status").unwrap();
        assert_eq!(status["x-kubernetes-preserve-unknown-fields"], json!(true));
        assert!(crds[1].at("/spec/versions/0/additionalPrinterColumns").is_none(), "revisions unchanged");
    }

    #[test]
    fn a_composite_controller_reads_as_a_universal_controller() {
        // Metacontroller's own catset example, with v2 hooks and Metacontroller's webhook settings.
        let spec: UniversalControllerSpec = serde_json::from_value(json!({
            "parentResource": {"apiVersion": "ctl.enisoc.com/v1", "resource": "catsets",
                               "revisionHistory": {"fieldPaths": ["spec.template"]},
                               "labelSelector": {"matchLabels": {"tier": "a"}}},
            "childResources": [{"apiVersion": "v1", "resource": "pods", "updateStrategy": {"method": "RollingRecreate",
                "statusChecks": {"conditions": [{"type": "Ready", "status": "True"}]}}}],
            "resyncPeriodSeconds": 5,
            "hooks": {"sync": {"version": "v2", "webhook": {"url": "https://catset.ns/sync", "timeout": "10s",
                "etag": {"enabled": true, "cacheTimeoutSeconds": 20},
                "caBundle": {"configMapRef": {"name": "ca", "namespace": "ns"}},
                "authorization": {"secretRef": {"name": "t", "namespace": "ns", "key": "token"}}}}},
            "endpointConfigs": [{"host": "catset.ns", "clientTLS": {"secretRef": {"name": "c", "namespace": "ns"}}}]
        }))
        .unwrap();
        let sync = spec.hooks.sync.unwrap();
        assert_eq!(sync.version, Some(crate::controller::HookVersion::V2));
        assert!(sync.webhook.unwrap().etag.unwrap().enabled.unwrap());
        assert_eq!(spec.resync_period_seconds, Some(5.0));
        assert_eq!(spec.endpoint_configs[0].client_tls.as_ref().unwrap().secret_ref.name, "c");
    }

    #[test]
    fn a_decorator_is_one_part_per_resource() {
        let spec: DecoratorControllerSpec = serde_json::from_value(json!({
            "resources": [
                {"apiVersion": "apps/v1", "resource": "statefulsets",
                 "annotationSelector": {"matchExpressions": [{"key": "service-per-pod-label", "operator": "Exists"}]}},
                {"apiVersion": "v1", "resource": "pods", "labelSelector": {"matchLabels": {"a": "b"}}}
            ],
            "attachments": [{"apiVersion": "v1", "resource": "services"}],
            "hooks": {"sync": {"webhook": {"url": "http://service-per-pod.metacontroller/sync"}}}
        }))
        .unwrap();
        let parts = spec.parts();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].parent_resource.resource, "statefulsets");
        assert!(parts[0].parent_resource.annotation_selector.is_some());
        assert_eq!(parts[1].child_resources[0].resource, "services");
        assert!(parts[1].hooks.sync.is_some());
    }
}
