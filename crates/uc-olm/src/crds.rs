//! OLM's CRDs as operator-framework/api ships them (`crds/`, see its PROVENANCE.md).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

const YAML: &[&str] = &[
    include_str!("../crds/operators.coreos.com_catalogsources.yaml"),
    include_str!("../crds/operators.coreos.com_clusterserviceversions.yaml"),
    include_str!("../crds/operators.coreos.com_installplans.yaml"),
    include_str!("../crds/operators.coreos.com_operatorconditions.yaml"),
    include_str!("../crds/operators.coreos.com_operatorgroups.yaml"),
    include_str!("../crds/operators.coreos.com_subscriptions.yaml"),
];

/// The CRDs of `operators.coreos.com`.
pub fn crds() -> Vec<CustomResourceDefinition> {
    YAML.iter().copied().map(uc_api::crds::vendored).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn olms_crds() {
        let names: Vec<String> = crds().into_iter().map(|c| c.metadata.name.unwrap_or_default()).collect();
        assert_eq!(names.len(), 6);
        assert!(names.iter().all(|n| n.ends_with(".operators.coreos.com")), "{names:?}");
        assert!(names.contains(&"subscriptions.operators.coreos.com".to_string()));
    }
}
