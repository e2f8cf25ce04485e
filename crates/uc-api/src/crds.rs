//! CRDs of uc's own resources, derived from their Rust types (`crate::controller`) and doc comments:
//! UniversalController (kube-derive) and ControllerRevision (schemars, as kube-derive generates a
//! structural schema, with its fields at the top level).

use kube_core::CustomResourceExt;
use schemars::JsonSchema;
use serde_json::{Value, json};

use crate::controller::{ControllerRevisionFields, GROUP, UniversalController, VERSION};

/// A structural schema of `T` as kube-derive makes one: no `$ref`s, no `$schema`, `nullable` for
/// optional fields, enums and untagged unions rewritten for Kubernetes.
fn structural_schema<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::openapi3()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .with_transform(schemars::transform::AddNullable::default())
        .with_transform(kube_core::schema::StructuralSchemaRewriter)
        .with_transform(kube_core::schema::OptionalEnum)
        .into_generator();
    let mut schema = serde_json::to_value(generator.into_root_schema_for::<T>()).unwrap_or(Value::Null);
    if let Some(m) = schema.as_object_mut() {
        m.remove("title");
    }
    schema
}

/// The UniversalController CRD (cluster-scoped, short names `uc`, `uctl`).
pub fn universal_controller_crd() -> Value {
    serde_json::to_value(UniversalController::crd()).unwrap_or(Value::Null)
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
                "schema": {"openAPIV3Schema": structural_schema::<ControllerRevisionFields>()}
            }]
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crds_carry_the_types_fields_and_docs() {
        let uc = universal_controller_crd();
        assert_eq!(uc["metadata"]["name"], json!(format!("universalcontrollers.{GROUP}")));
        assert_eq!(uc["spec"]["scope"], json!("Cluster"));
        assert_eq!(uc["spec"]["names"]["shortNames"], json!(["uc", "uctl"]));
        let spec = &uc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["required"], json!(["parentResource"]));
        let strategy = &spec["properties"]["childResources"]["items"]["properties"]["updateStrategy"];
        assert!(strategy["properties"]["method"]["enum"].as_array().unwrap().contains(&json!("ReCreate")));
        assert_eq!(
            spec["properties"]["hooks"]["properties"]["sync"]["properties"]["native"]["required"],
            json!(["name"])
        );
        let rev = controller_revision_crd();
        let schema = &rev["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        assert_eq!(schema["type"], json!("object"));
        assert_eq!(schema["properties"]["parentPatch"]["x-kubernetes-preserve-unknown-fields"], json!(true));
        assert_eq!(schema["properties"]["revision"]["format"], json!("int64"));
        let children = &schema["properties"]["children"]["items"];
        assert_eq!(children["properties"]["names"]["items"]["type"], json!("string"));
        assert!(!schema.to_string().contains("$ref") && !schema.to_string().contains("$schema"), "{schema}");
    }
}
