//! CRDs of uc's own resources, derived from their Rust types (`crate::controller`) and doc comments:
//! UniversalController (kube-derive) and ControllerRevision (schemars, as kube-derive generates a
//! structural schema, with its fields at the top level).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition, CustomResourceDefinitionNames,
    CustomResourceDefinitionSpec, CustomResourceDefinitionVersion, CustomResourceValidation, JSONSchemaProps,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::CustomResourceExt;
use schemars::JsonSchema;
use serde_json::Value;

use crate::controller::{ControllerRevisionFields, GROUP, UniversalController, VERSION};

/// A structural schema of `T` as kube-derive makes one: no `$ref`s, no `$schema`, `nullable` for
/// optional fields, enums and untagged unions rewritten for Kubernetes.
fn structural_schema<T: JsonSchema>() -> JSONSchemaProps {
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
    serde_json::from_value(schema).unwrap_or_default()
}

/// The UniversalController CRD (cluster-scoped, short names `uc`, `uctl`).
pub fn universal_controller_crd() -> CustomResourceDefinition {
    UniversalController::crd()
}

/// The ControllerRevision CRD of uc (thesis listing 4.7).
pub fn controller_revision_crd() -> CustomResourceDefinition {
    let version = served_version(VERSION, structural_schema::<ControllerRevisionFields>());
    crd(GROUP, names("ControllerRevision", "controllerrevisions"), "Namespaced", version)
}

/// A CRD written by hand: `<plural>.<group>`, one version.
pub fn crd(
    group: &str,
    names: CustomResourceDefinitionNames,
    scope: &str,
    version: CustomResourceDefinitionVersion,
) -> CustomResourceDefinition {
    CustomResourceDefinition {
        metadata: ObjectMeta { name: Some(format!("{}.{group}", names.plural)), ..Default::default() },
        spec: CustomResourceDefinitionSpec {
            group: group.into(),
            names,
            scope: scope.into(),
            versions: vec![version],
            ..Default::default()
        },
        status: None,
    }
}

/// A CRD's names: its kind and plural, the list kind and singular as Kubernetes derives them.
pub fn names(kind: &str, plural: &str) -> CustomResourceDefinitionNames {
    CustomResourceDefinitionNames {
        kind: kind.into(),
        list_kind: Some(format!("{kind}List")),
        plural: plural.into(),
        singular: Some(kind.to_lowercase()),
        ..Default::default()
    }
}

/// A version served and stored, with its schema.
pub fn served_version(name: &str, schema: JSONSchemaProps) -> CustomResourceDefinitionVersion {
    CustomResourceDefinitionVersion {
        name: name.into(),
        served: true,
        storage: true,
        schema: Some(CustomResourceValidation { open_api_v3_schema: Some(schema) }),
        ..Default::default()
    }
}

/// A column `kubectl get` shows.
pub fn column(name: &str, type_: &str, json_path: &str) -> CustomResourceColumnDefinition {
    CustomResourceColumnDefinition {
        name: name.into(),
        type_: type_.into(),
        json_path: json_path.into(),
        ..Default::default()
    }
}

/// A CRD among documents that does not read: its name, the field and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("CustomResourceDefinition {name}: {field}: {message}")]
pub struct UnreadableCrd {
    pub name: String,
    pub field: String,
    pub message: String,
}

/// The CRDs among documents of any kind (others are skipped).
pub fn among(docs: &[Value]) -> Result<Vec<CustomResourceDefinition>, UnreadableCrd> {
    docs.iter()
        .filter(|d| d.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
        .map(|d| {
            serde_path_to_error::deserialize(d).map_err(|e| UnreadableCrd {
                name: d.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string(),
                field: e.path().to_string(),
                message: e.inner().to_string(),
            })
        })
        .collect()
}

/// A CRD vendored as YAML (a build-time constant: one that does not read is a bug of uc's).
pub fn vendored(yaml: &str) -> CustomResourceDefinition {
    serde_yaml_ng::from_str(yaml).expect("a vendored CRD reads")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crds_carry_the_types_fields_and_docs() {
        use serde_json::json;
        let uc = crate::meta::json_of(&universal_controller_crd());
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
        let rev = crate::meta::json_of(&controller_revision_crd());
        let schema = &rev["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        assert_eq!(schema["type"], json!("object"));
        assert_eq!(schema["properties"]["parentPatch"]["x-kubernetes-preserve-unknown-fields"], json!(true));
        assert_eq!(schema["properties"]["revision"]["format"], json!("int64"));
        let children = &schema["properties"]["children"]["items"];
        assert_eq!(children["properties"]["names"]["items"]["type"], json!("string"));
        assert!(!schema.to_string().contains("$ref") && !schema.to_string().contains("$schema"), "{schema}");
    }
}
