//! The owner of what a run creates, as the SDK's API proxy sets it (`inject_owner.go`): the custom
//! resource travels in the run's kubeconfig as the user name (base64url JSON of the owner reference and
//! its namespace, `kubeconfig.EncodeOwnerRef`); an object created through the proxy gets an owner
//! reference to it when Kubernetes allows one (same namespace, or a cluster-scoped owner), else the
//! annotations `operator-sdk/primary-resource` and `operator-sdk/primary-resource-type`.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub const PRIMARY_RESOURCE: &str = "operator-sdk/primary-resource";
pub const PRIMARY_RESOURCE_TYPE: &str = "operator-sdk/primary-resource-type";

/// The custom resource a run acts for.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
pub struct Owner {
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    /// Empty for a cluster-scoped owner (the SDK's field name, capitalised).
    #[serde(rename = "Namespace", default)]
    pub namespace: String,
}

impl Owner {
    /// The owner of a custom resource object.
    pub fn of(object: &Value) -> Self {
        let s = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
        Owner {
            api_version: s("/apiVersion"),
            kind: s("/kind"),
            name: s("/metadata/name"),
            uid: s("/metadata/uid"),
            namespace: s("/metadata/namespace"),
        }
    }

    /// The kubeconfig user name carrying the owner.
    pub fn encode(&self) -> String {
        URL_SAFE.encode(serde_json::to_vec(self).unwrap_or_default())
    }

    /// The owner a kubeconfig user name carries.
    pub fn decode(user: &str) -> Option<Self> {
        let bytes = URL_SAFE.decode(user).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    fn group(&self) -> &str {
        self.api_version.split_once('/').map(|(g, _)| g).unwrap_or("")
    }

    /// Whether `object` (as the API server returned it) is this owner's dependent.
    pub fn owns(&self, object: &Value) -> bool {
        let by_reference = object
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(|refs| refs.iter().any(|r| r.get("uid").and_then(Value::as_str) == Some(&self.uid)));
        let annotations = object.pointer("/metadata/annotations");
        let by_annotation = annotations.and_then(|a| a.get(PRIMARY_RESOURCE)).and_then(Value::as_str)
            == Some(&format!("{}/{}", self.namespace, self.name))
            && annotations.and_then(|a| a.get(PRIMARY_RESOURCE_TYPE)).and_then(Value::as_str)
                == Some(&format!("{}.{}", self.kind, self.group()));
        by_reference || by_annotation
    }

    /// Marks an object about to be created as this owner's: `namespace` is where it is created (empty
    /// for a cluster-scoped object).
    pub fn inject(&self, object: &mut Value, namespace: &str) {
        let Some(meta) = object.as_object_mut().map(|o| o.entry("metadata").or_insert_with(|| json!({}))) else {
            return;
        };
        let Some(meta) = meta.as_object_mut() else { return };
        if self.namespace.is_empty() || self.namespace == namespace {
            let reference =
                json!({"apiVersion": self.api_version, "kind": self.kind, "name": self.name, "uid": self.uid});
            let refs = meta.entry("ownerReferences").or_insert_with(|| json!([]));
            if let Some(refs) = refs.as_array_mut()
                && !refs.iter().any(|r| r.get("uid").and_then(Value::as_str) == Some(&self.uid))
            {
                refs.push(reference);
            }
        } else {
            let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
            if let Some(a) = annotations.as_object_mut() {
                a.insert(PRIMARY_RESOURCE.into(), json!(format!("{}/{}", self.namespace, self.name)));
                a.insert(PRIMARY_RESOURCE_TYPE.into(), json!(format!("{}.{}", self.kind, self.group())));
            }
        }
    }
}

/// The kubeconfig a run's modules use: the proxy at `server`, the owner as the user name, and the
/// proxy's `token` as the password (the proxy serves no one without it).
pub fn kubeconfig(server: &str, owner: &Owner, token: &str) -> String {
    let ns = if owner.namespace.is_empty() { "default" } else { &owner.namespace };
    let user = owner.encode();
    format!(
        "---\napiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    insecure-skip-tls-verify: true\n    server: {server}\n  name: proxy-server\ncontexts:\n- context:\n    cluster: proxy-server\n    namespace: {ns}\n    user: admin/proxy-server\n  name: {ns}/proxy-server\ncurrent-context: {ns}/proxy-server\npreferences: {{}}\nusers:\n- name: admin/proxy-server\n  user:\n    username: {user}\n    password: {token}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(ns: &str) -> Owner {
        Owner {
            api_version: "cache.example.com/v1alpha1".into(),
            kind: "Memcached".into(),
            name: "m".into(),
            uid: "u-1".into(),
            namespace: ns.into(),
        }
    }

    #[test]
    fn the_owner_travels_as_the_sdk_encodes_it() {
        let o = owner("ns");
        let user = o.encode();
        let raw: Value = serde_json::from_slice(&URL_SAFE.decode(&user).unwrap()).unwrap();
        assert_eq!(
            raw,
            json!({"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "m", "uid": "u-1", "Namespace": "ns"})
        );
        assert_eq!(Owner::decode(&user), Some(o.clone()));
        assert_eq!(Owner::decode("not base64!"), None);
        let cfg = kubeconfig("http://127.0.0.1:9", &o, "secret");
        let parsed: Value = serde_yaml_ng::from_str(&cfg).unwrap();
        assert_eq!(parsed["users"][0]["user"], json!({"username": user, "password": "secret"}));
        assert_eq!(parsed["contexts"][0]["context"]["namespace"], "ns");
        assert_eq!(
            Owner::of(&json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n", "uid": "x"}})).namespace,
            ""
        );
    }

    #[test]
    fn a_reference_where_kubernetes_allows_one_else_annotations() {
        let o = owner("ns");
        let mut same = json!({"kind": "Deployment", "metadata": {"name": "d", "ownerReferences": [{"uid": "other"}]}});
        o.inject(&mut same, "ns");
        assert_eq!(
            same["metadata"]["ownerReferences"][1],
            json!({"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "m", "uid": "u-1"})
        );
        assert!(o.owns(&same));
        o.inject(&mut same, "ns");
        assert_eq!(same["metadata"]["ownerReferences"].as_array().unwrap().len(), 2, "injected once");
        for ns in ["other", ""] {
            let mut elsewhere = json!({"kind": "Namespace"});
            o.inject(&mut elsewhere, ns);
            assert!(elsewhere["metadata"].get("ownerReferences").is_none());
            assert_eq!(elsewhere["metadata"]["annotations"][PRIMARY_RESOURCE], "ns/m");
            assert_eq!(elsewhere["metadata"]["annotations"][PRIMARY_RESOURCE_TYPE], "Memcached.cache.example.com");
            assert!(o.owns(&elsewhere));
        }
        let mut cluster_owned = json!({"metadata": {}});
        owner("").inject(&mut cluster_owned, "any");
        assert_eq!(
            cluster_owned["metadata"]["ownerReferences"][0]["uid"], "u-1",
            "a cluster-scoped owner owns anything"
        );
        assert!(!o.owns(&json!({"metadata": {"annotations": {PRIMARY_RESOURCE: "ns/m"}}})));
    }
}
