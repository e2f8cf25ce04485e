//! CRDs of uc's own resources, as objects ready to apply: UniversalController and ControllerRevision.

use serde_json::{Value, json};

use crate::controller::{GROUP, VERSION};

fn hook_schema() -> Value {
    json!({
        "type": "object",
        "description": "One hook: exactly one of webhook, javascript, native.",
        "properties": {
            "webhook": {"type": "object", "properties": {
                "url": {"type": "string"}, "timeout": {"type": "string"}, "path": {"type": "string"},
                "caBundle": {"type": "string"}, "bearerToken": {"type": "string"},
                "service": {"type": "object", "properties": {
                    "name": {"type": "string"}, "namespace": {"type": "string"},
                    "port": {"type": "integer"}, "protocol": {"type": "string"}}}}},
            "javascript": {"type": "object", "properties": {
                "source": {"type": "string"}, "timeout": {"type": "string"}, "memoryLimitMiB": {"type": "integer"},
                "configMapRef": {"type": "object", "properties": {
                    "name": {"type": "string"}, "namespace": {"type": "string"}, "key": {"type": "string"}}}}},
            "native": {"type": "object", "properties": {"name": {"type": "string"}}}
        }
    })
}

/// The UniversalController CRD (cluster-scoped, short names `uc`, `uctl`).
pub fn universal_controller_crd() -> Value {
    let rule = json!({"type": "object", "required": ["apiVersion", "resource"], "properties": {
        "apiVersion": {"type": "string"}, "resource": {"type": "string"}}});
    let mut parent = rule.clone();
    parent["properties"]["revisionHistory"] = json!({"type": "object", "properties": {
        "fieldPaths": {"type": "array", "items": {"type": "string"}}}});
    let mut child = rule;
    child["properties"]["updateStrategy"] = json!({"type": "object", "properties": {
        "method": {"type": "string", "enum": ["OnDelete", "Recreate", "ReCreate", "InPlace", "RollingRecreate", "RollingInPlace"]},
        "statusChecks": {"type": "object", "properties": {"conditions": {"type": "array", "items": {
            "type": "object", "required": ["type"], "properties": {
                "type": {"type": "string"}, "status": {"type": "string"}, "reason": {"type": "string"}}}}}}}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("universalcontrollers.{GROUP}")},
        "spec": {
            "group": GROUP,
            "names": {"kind": "UniversalController", "listKind": "UniversalControllerList", "plural": "universalcontrollers",
                      "singular": "universalcontroller", "shortNames": ["uc", "uctl"]},
            "scope": "Cluster",
            "versions": [{
                "name": VERSION, "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Parent", "type": "string", "jsonPath": ".spec.parentResource.resource"},
                    {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                    {"name": "Reason", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].reason"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                ],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": "A controller of a parent resource type, written as hooks.",
                    "properties": {
                        "spec": {"type": "object", "required": ["parentResource"], "properties": {
                            "parentResource": parent,
                            "childResources": {"type": "array", "items": child},
                            "resyncPeriodSeconds": {"type": "number"},
                            "generateSelector": {"type": "boolean"},
                            "hooks": {"type": "object", "properties": {
                                "sync": hook_schema(), "finalize": hook_schema(), "customize": hook_schema()}}}},
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }
                }}
            }]
        }
    })
}

/// The ControllerRevision CRD of uc (thesis listing 4.7).
pub fn controller_revision_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("controllerrevisions.{GROUP}")},
        "spec": {
            "group": GROUP,
            "names": {"kind": "ControllerRevision", "listKind": "ControllerRevisionList", "plural": "controllerrevisions",
                      "singular": "controllerrevision"},
            "scope": "Namespaced",
            "versions": [{
                "name": VERSION, "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "parentPatch": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "revision": {"type": "integer", "format": "int64"},
                    "children": {"type": "array", "items": {"type": "object", "properties": {
                        "apiGroup": {"type": "string"}, "kind": {"type": "string"},
                        "names": {"type": "array", "items": {"type": "string"}}}}}}}}
            }]
        }
    })
}
