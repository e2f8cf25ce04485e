//! Karmada's CRDs as upstream ships them (`crds/`, see its PROVENANCE.md), and `Cluster`'s, built from
//! Karmada's OpenAPI definitions: karmada-aggregated-apiserver serves `cluster.karmada.io` itself, uc
//! serves it as a CRD with the same schema.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceSubresourceStatus, CustomResourceSubresources,
};
use serde_json::{Map, Value, json};
use uc_api::crds::{column, crd, names, served_version, vendored};

const YAML: &[&str] = &[
    include_str!("../crds/policy.karmada.io_propagationpolicies.yaml"),
    include_str!("../crds/policy.karmada.io_clusterpropagationpolicies.yaml"),
    include_str!("../crds/policy.karmada.io_overridepolicies.yaml"),
    include_str!("../crds/policy.karmada.io_clusteroverridepolicies.yaml"),
    include_str!("../crds/work.karmada.io_resourcebindings.yaml"),
    include_str!("../crds/work.karmada.io_works.yaml"),
    include_str!("../crds/multicluster.x-k8s.io_serviceexports.yaml"),
    include_str!("../crds/multicluster.x-k8s.io_serviceimports.yaml"),
    include_str!("../crds/config.karmada.io_resourceinterpretercustomizations.yaml"),
    include_str!("../crds/config.karmada.io_resourceinterpreterwebhookconfigurations.yaml"),
];

const CLUSTER_OPENAPI: &str = include_str!("../crds/cluster.karmada.io_v1alpha1.openapi-subset.json");
const CLUSTER_DEFINITION: &str = "com.github.karmada-io.karmada.pkg.apis.cluster.v1alpha1.Cluster";

/// Every CRD the control plane serves: Karmada's and the MCS API's.
pub fn control_plane() -> Vec<CustomResourceDefinition> {
    let mut crds: Vec<CustomResourceDefinition> = YAML.iter().copied().map(vendored).collect();
    crds.push(cluster());
    crds
}

/// The MCS API's CRDs, which every member cluster serves (Karmada installs them on join).
pub fn member() -> Vec<CustomResourceDefinition> {
    control_plane().into_iter().filter(|c| c.spec.group == "multicluster.x-k8s.io").collect()
}

/// `clusters.cluster.karmada.io`, its schema Karmada's OpenAPI definition with references inlined.
pub fn cluster() -> CustomResourceDefinition {
    let doc: Value = serde_json::from_str(CLUSTER_OPENAPI).expect("the vendored OpenAPI document parses");
    let defs = doc["definitions"].as_object().expect("definitions");
    let schema = serde_json::from_value(inline(&defs[CLUSTER_DEFINITION], defs)).expect("Cluster's schema reads");
    let mut version = served_version("v1alpha1", schema);
    version.subresources =
        Some(CustomResourceSubresources { status: Some(CustomResourceSubresourceStatus(json!({}))), scale: None });
    // The columns karmada-aggregated-apiserver's table shows.
    version.additional_printer_columns = Some(vec![
        column("VERSION", "string", ".status.kubernetesVersion"),
        column("MODE", "string", ".spec.syncMode"),
        column("READY", "string", r#".status.conditions[?(@.type=="Ready")].status"#),
        column("AGE", "date", ".metadata.creationTimestamp"),
    ]);
    let mut names = names("Cluster", "clusters");
    names.categories = Some(vec!["karmada-io".into()]);
    crd("cluster.karmada.io", names, "Cluster", version)
}

/// An OpenAPI v2 schema as a CRD's structural schema: references inlined, the apimachinery types
/// CRDs spell differently (ObjectMeta, Time, Quantity, RawExtension) in their CRD form, and the
/// extensions CRDs do not accept dropped.
fn inline(schema: &Value, defs: &Map<String, Value>) -> Value {
    let Some(obj) = schema.as_object() else { return schema.clone() };
    let mut out = Map::new();
    if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/definitions/");
        let resolved = match name {
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" => json!({"type": "object"}),
            "io.k8s.apimachinery.pkg.apis.meta.v1.Time" => json!({"type": "string", "format": "date-time"}),
            "io.k8s.apimachinery.pkg.api.resource.Quantity" => json!({
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
                "x-kubernetes-int-or-string": true,
            }),
            "io.k8s.apimachinery.pkg.runtime.RawExtension" => {
                json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
            }
            other => defs.get(other).map(|d| inline(d, defs)).unwrap_or_else(|| json!({"type": "object"})),
        };
        if let Value::Object(m) = resolved {
            out.extend(m);
        }
        if let Some(d) = obj.get("description") {
            out.insert("description".into(), d.clone());
        }
        return Value::Object(out);
    }
    for (k, v) in obj {
        match k.as_str() {
            "x-kubernetes-group-version-kind" | "x-kubernetes-patch-strategy" | "x-kubernetes-patch-merge-key" => {}
            // OpenAPI's defaults are Go's zero values (`""` for an enum, `{}` for an object with
            // required fields): a CRD's defaults must validate, these would not.
            "default" => {}
            "properties" => {
                let props = v.as_object().map(|p| p.iter().map(|(n, s)| (n.clone(), inline(s, defs))).collect());
                out.insert(k.clone(), Value::Object(props.unwrap_or_default()));
            }
            "items" | "additionalProperties" if v.is_object() => {
                out.insert(k.clone(), inline(v, defs));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_crd_parses_and_names_its_group() {
        let crds = control_plane();
        let names: Vec<&str> = crds.iter().filter_map(|c| c.metadata.name.as_deref()).collect();
        for want in [
            "propagationpolicies.policy.karmada.io",
            "overridepolicies.policy.karmada.io",
            "resourcebindings.work.karmada.io",
            "works.work.karmada.io",
            "serviceexports.multicluster.x-k8s.io",
            "serviceimports.multicluster.x-k8s.io",
            "resourceinterpreterwebhookconfigurations.config.karmada.io",
            "clusters.cluster.karmada.io",
        ] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
        assert_eq!(member().len(), 2);
    }

    #[test]
    fn the_cluster_schema_is_karmadas_with_references_inlined() {
        let crd = uc_api::meta::json_of(&cluster());
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let text = schema.to_string();
        assert!(!text.contains("$ref"), "a reference is left");
        assert!(!text.contains("x-kubernetes-patch-strategy"));
        assert!(!text.contains("\"default\""), "Go's zero values are no defaults");
        let spec = &schema["properties"]["spec"];
        assert_eq!(spec["required"], json!(["syncMode"]));
        assert_eq!(spec["properties"]["secretRef"]["required"], json!(["namespace", "name"]));
        assert_eq!(spec["properties"]["apiEndpoint"]["type"], "string");
        // Taints are core/v1's, inlined; conditions are metav1's.
        assert_eq!(spec["properties"]["taints"]["items"]["properties"]["effect"]["type"], "string");
        let conditions = &schema["properties"]["status"]["properties"]["conditions"]["items"];
        assert_eq!(conditions["properties"]["lastTransitionTime"]["format"], "date-time");
        assert_eq!(schema["properties"]["metadata"], json!({"type": "object"}));
    }
}
