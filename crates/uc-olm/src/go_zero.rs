//! A bundle's ClusterServiceVersion as OLM sends it: OLM reads a bundle into operator-framework/api's Go
//! types and writes them back, so a scalar field those types declare without `omitempty` is always
//! there — `""`, `false` — even when the bundle's YAML leaves it out. Community bundles rely on it:
//! the etcd package (0.6.1 … 0.9.4) lists owned CRDs' `resources` without a `name`, which the CSV CRD
//! requires and OLM's decoding supplies as `""`.

use serde_json::{Map, Value, json};

/// Where operator-framework/api's v1alpha1 types have non-`omitempty` scalar fields: a path through
/// the CSV (`*` every item of a list or every value of a map), the fields, and their zero values.
const ALWAYS_WRITTEN: &[(&str, &[(&str, ZeroOf)])] = &[
    // CRDDescription {name, version, kind}; APIResourceReference {name, kind, version};
    // SpecDescriptor / StatusDescriptor / ActionDescriptor {path}.
    ("spec/customresourcedefinitions/*/*", &[("name", S), ("version", S), ("kind", S)]),
    ("spec/customresourcedefinitions/*/*/resources/*", &[("name", S), ("kind", S), ("version", S)]),
    ("spec/customresourcedefinitions/*/*/specDescriptors/*", &[("path", S)]),
    ("spec/customresourcedefinitions/*/*/statusDescriptors/*", &[("path", S)]),
    ("spec/customresourcedefinitions/*/*/actionDescriptors/*", &[("path", S)]),
    // APIServiceDescription {name, group, version, kind}, and its resources and descriptors.
    ("spec/apiservicedefinitions/*/*", &[("name", S), ("group", S), ("version", S), ("kind", S)]),
    ("spec/apiservicedefinitions/*/*/resources/*", &[("name", S), ("kind", S), ("version", S)]),
    // ClusterServiceVersionSpec {displayName}; NamedInstallStrategy {strategy}.
    ("spec", &[("displayName", S)]),
    ("spec/install", &[("strategy", S)]),
    // StrategyDeploymentSpec {name}; StrategyDeploymentPermissions {serviceAccountName}.
    ("spec/install/spec/deployments/*", &[("name", S)]),
    ("spec/install/spec/permissions/*", &[("serviceAccountName", S)]),
    ("spec/install/spec/clusterPermissions/*", &[("serviceAccountName", S)]),
    // InstallMode {type, supported}; Icon {base64data, mediatype}.
    ("spec/installModes/*", &[("type", S), ("supported", B)]),
    ("spec/icon/*", &[("base64data", S), ("mediatype", S)]),
    // WebhookDescription {generateName, type, deploymentName, sideEffects, admissionReviewVersions}.
    ("spec/webhookdefinitions/*", &[("generateName", S), ("type", S), ("deploymentName", S)]),
];

/// The zero value of a field's Go type.
#[derive(Clone, Copy)]
enum ZeroOf {
    String,
    Bool,
}
const S: ZeroOf = ZeroOf::String;
const B: ZeroOf = ZeroOf::Bool;

/// Fills in `csv` the scalar fields OLM's Go types always write, at their zero values; what is there
/// stays as it is.
pub fn fill_csv(csv: &mut Value) {
    for (path, fields) in ALWAYS_WRITTEN {
        let parts: Vec<&str> = path.split('/').collect();
        let mut at = Vec::new();
        reach(csv, &parts, &mut at);
        for obj in at {
            for (field, zero) in *fields {
                obj.entry(*field).or_insert_with(|| match zero {
                    ZeroOf::String => json!(""),
                    ZeroOf::Bool => json!(false),
                });
            }
        }
    }
}

/// The objects at `parts` under `v` (`*`: every list item or map value).
fn reach<'a>(v: &'a mut Value, parts: &[&str], out: &mut Vec<&'a mut Map<String, Value>>) {
    let Some((first, rest)) = parts.split_first() else {
        if let Value::Object(m) = v {
            out.push(m);
        }
        return;
    };
    match (v, *first) {
        (Value::Array(items), "*") => items.iter_mut().for_each(|i| reach(i, rest, out)),
        (Value::Object(m), "*") => m.values_mut().for_each(|i| reach(i, rest, out)),
        (Value::Object(m), key) => {
            if let Some(next) = m.get_mut(key) {
                reach(next, rest, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_community_etcd_csvs_unnamed_resources_are_named_as_olm_names_them() {
        // Abridged from community-operators/etcd/0.9.0 (operator-framework/community-operators).
        let mut csv = json!({"kind": "ClusterServiceVersion", "spec": {
            "displayName": "etcd",
            "customresourcedefinitions": {"owned": [{
                "name": "etcdclusters.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster",
                "resources": [{"kind": "Service", "version": "v1"}, {"kind": "Pod", "version": "v1"}],
                "specDescriptors": [{"description": "size", "displayName": "Size", "path": "size"}]}]},
            "installModes": [{"type": "OwnNamespace", "supported": true}, {"type": "AllNamespaces"}],
            "install": {"strategy": "deployment", "spec": {"permissions": [{"rules": []}]}}}});
        fill_csv(&mut csv);
        let owned = &csv["spec"]["customresourcedefinitions"]["owned"][0];
        assert_eq!(
            owned["resources"],
            json!([{"kind": "Service", "version": "v1", "name": ""}, {"kind": "Pod", "version": "v1", "name": ""}])
        );
        assert_eq!(owned["name"], "etcdclusters.etcd.database.coreos.com", "what is there stays");
        assert_eq!(owned["specDescriptors"][0]["path"], "size");
        assert_eq!(csv["spec"]["installModes"][1], json!({"type": "AllNamespaces", "supported": false}));
        assert_eq!(csv["spec"]["install"]["spec"]["permissions"][0]["serviceAccountName"], "");
        assert!(csv["spec"].get("icon").is_none(), "an absent list stays absent (omitempty)");
        assert!(csv["spec"].get("apiservicedefinitions").is_none());
    }
}
