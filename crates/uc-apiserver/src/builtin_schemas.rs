//! The OpenAPI schemas of the built-in kinds, with kube's descriptions, for the `/openapi` documents
//! (`kubectl explain pod.spec.containers`, client-side validation): generated from k8s-openapi's
//! types, which carry kube-apiserver's published schemas; the same types decode the built-in kinds'
//! bodies as kube-apiserver does (`crate::typed`).

use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value};

use k8s_openapi::api::{
    admissionregistration::v1 as admission, apps::v1 as apps, authentication::v1 as authn, authorization::v1 as authz,
    autoscaling::v1 as autoscaling_v1, autoscaling::v2 as autoscaling, batch::v1 as batch, certificates::v1 as certs,
    coordination::v1 as coord, core::v1 as core, discovery::v1 as discovery, events::v1 as events,
    networking::v1 as networking, policy::v1 as policy, rbac::v1 as rbac, scheduling::v1 as scheduling,
    storage::v1 as storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;

/// What is done with a body read as its built-in type ([`read_typed`]), whatever the type.
pub(crate) trait WithTyped {
    type Out;
    /// The answer for `typed`, or the path and words of why there is none.
    fn with<T: serde::Serialize>(self, typed: &T) -> Result<Self::Out, (String, String)>;
}

macro_rules! kinds {
    ($($group:literal $version:literal $kind:literal => $ty:ty),* $(,)?) => {
        /// Adds the schema of a built-in kind (and everything it refers to) to `generator`; its
        /// definition name, or None for a kind without a published schema here.
        fn register(generator: &mut SchemaGenerator, group: &str, version: &str, kind: &str) -> Option<String> {
            match (group, version, kind) {
                $(($group, $version, $kind) => {
                    generator.subschema_for::<$ty>();
                    Some(<$ty as schemars::JsonSchema>::schema_name().into_owned())
                })*
                _ => None,
            }
        }

        /// `obj` read as the k8s-openapi type of a built-in kind (what kube-apiserver's decoding keeps)
        /// and handed to `then`; the field path and words of what does not read. None for a kind without
        /// a type here.
        pub(crate) fn read_typed<W: WithTyped>(group: &str, version: &str, kind: &str, obj: &Value, then: W) -> Option<Result<W::Out, (String, String)>> {
            match (group, version, kind) {
                // Read without tracking the path (which costs at every field); read again to name it only when
                // something does not read.
                $(($group, $version, $kind) => Some(
                    <$ty as serde::Deserialize>::deserialize(obj)
                        .or_else(|_| serde_path_to_error::deserialize::<_, $ty>(obj))
                        .map_err(|e| (e.path().to_string(), e.inner().to_string()))
                        .and_then(|typed| then.with(&typed)),
                ),)*
                _ => None,
            }
        }
    };
}

kinds! {
    "" "v1" "Namespace" => core::Namespace,
    "" "v1" "Pod" => core::Pod,
    "" "v1" "Service" => core::Service,
    "" "v1" "Endpoints" => core::Endpoints,
    "" "v1" "ConfigMap" => core::ConfigMap,
    "" "v1" "LimitRange" => core::LimitRange,
    "" "v1" "ResourceQuota" => core::ResourceQuota,
    "" "v1" "PodTemplate" => core::PodTemplate,
    "" "v1" "Binding" => core::Binding,
    "" "v1" "Secret" => core::Secret,
    "" "v1" "PersistentVolumeClaim" => core::PersistentVolumeClaim,
    "" "v1" "PersistentVolume" => core::PersistentVolume,
    "" "v1" "Event" => core::Event,
    "" "v1" "ServiceAccount" => core::ServiceAccount,
    "" "v1" "Node" => core::Node,
    "" "v1" "ReplicationController" => core::ReplicationController,
    "apps" "v1" "Deployment" => apps::Deployment,
    "apps" "v1" "ReplicaSet" => apps::ReplicaSet,
    "apps" "v1" "StatefulSet" => apps::StatefulSet,
    "apps" "v1" "DaemonSet" => apps::DaemonSet,
    "apps" "v1" "ControllerRevision" => apps::ControllerRevision,
    "batch" "v1" "Job" => batch::Job,
    "batch" "v1" "CronJob" => batch::CronJob,
    "coordination.k8s.io" "v1" "Lease" => coord::Lease,
    "discovery.k8s.io" "v1" "EndpointSlice" => discovery::EndpointSlice,
    "events.k8s.io" "v1" "Event" => events::Event,
    "networking.k8s.io" "v1" "Ingress" => networking::Ingress,
    "networking.k8s.io" "v1" "IngressClass" => networking::IngressClass,
    "networking.k8s.io" "v1" "NetworkPolicy" => networking::NetworkPolicy,
    "autoscaling" "v2" "HorizontalPodAutoscaler" => autoscaling::HorizontalPodAutoscaler,
    "autoscaling" "v1" "HorizontalPodAutoscaler" => autoscaling_v1::HorizontalPodAutoscaler,
    "policy" "v1" "PodDisruptionBudget" => policy::PodDisruptionBudget,
    "storage.k8s.io" "v1" "StorageClass" => storage::StorageClass,
    "scheduling.k8s.io" "v1" "PriorityClass" => scheduling::PriorityClass,
    "rbac.authorization.k8s.io" "v1" "Role" => rbac::Role,
    "rbac.authorization.k8s.io" "v1" "RoleBinding" => rbac::RoleBinding,
    "rbac.authorization.k8s.io" "v1" "ClusterRole" => rbac::ClusterRole,
    "rbac.authorization.k8s.io" "v1" "ClusterRoleBinding" => rbac::ClusterRoleBinding,
    "authentication.k8s.io" "v1" "SelfSubjectReview" => authn::SelfSubjectReview,
    "authentication.k8s.io" "v1" "TokenReview" => authn::TokenReview,
    "authorization.k8s.io" "v1" "SelfSubjectAccessReview" => authz::SelfSubjectAccessReview,
    "authorization.k8s.io" "v1" "SelfSubjectRulesReview" => authz::SelfSubjectRulesReview,
    "authorization.k8s.io" "v1" "SubjectAccessReview" => authz::SubjectAccessReview,
    "authorization.k8s.io" "v1" "LocalSubjectAccessReview" => authz::LocalSubjectAccessReview,
    "certificates.k8s.io" "v1" "CertificateSigningRequest" => certs::CertificateSigningRequest,
    "admissionregistration.k8s.io" "v1" "ValidatingWebhookConfiguration" => admission::ValidatingWebhookConfiguration,
    "admissionregistration.k8s.io" "v1" "MutatingWebhookConfiguration" => admission::MutatingWebhookConfiguration,
    "apiextensions.k8s.io" "v1" "CustomResourceDefinition" => apiext::CustomResourceDefinition,
}

/// The schemas of the given built-in kinds: each kind's schema by kind, and every definition they
/// refer to by name (`io.k8s.api.core.v1.PodSpec`, …; references are `#/components/schemas/…`).
pub fn schemas(group: &str, version: &str, kinds: &[&str]) -> (Map<String, Value>, Map<String, Value>) {
    let mut generator = SchemaGenerator::new(SchemaSettings::openapi3());
    let names: Vec<(String, String)> =
        kinds.iter().filter_map(|k| register(&mut generator, group, version, k).map(|n| (k.to_string(), n))).collect();
    let mut definitions = generator.take_definitions(true);
    let mut by_kind = Map::new();
    for (kind, name) in names {
        if let Some(mut schema) = definitions.remove(&name) {
            // k8s-openapi marks `metadata` required (it is not optional in Rust); kube does not.
            if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
                required.retain(|r| r != "metadata");
            }
            by_kind.insert(kind, schema);
        }
    }
    (by_kind, definitions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_kinds_carry_kubes_descriptions_and_definitions() {
        let (kinds, definitions) = schemas("", "v1", &["Pod", "Nope"]);
        assert_eq!(kinds.len(), 1, "a kind without a schema is left out");
        let pod = &kinds["Pod"];
        assert!(pod["description"].as_str().unwrap().starts_with("Pod is a collection of containers"));
        assert!(pod.get("required").is_none_or(|r| !r.as_array().unwrap().contains(&Value::from("metadata"))));
        let spec = &definitions["io.k8s.api.core.v1.PodSpec"];
        assert!(spec["properties"]["containers"]["description"].as_str().unwrap().contains("containers"));
        assert!(definitions.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        let text = serde_json::to_string(pod).unwrap();
        assert!(text.contains("#/components/schemas/io.k8s.api.core.v1.PodSpec"), "{text}");
    }
}
