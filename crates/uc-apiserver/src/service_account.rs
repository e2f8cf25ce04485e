//! The ServiceAccount admission plugin's mutation of a new pod, as kube-apiserver has it: the pod's
//! `serviceAccountName` defaults to `default`, and unless the pod (or else its ServiceAccount) sets
//! `automountServiceAccountToken: false`, a projected volume `kube-api-access-<suffix>` — a bound
//! token, the cluster CA (`kube-root-ca.crt`) and the namespace — is mounted read-only at
//! [`MOUNT_PATH`] in every container and init container that mounts nothing there itself. With it,
//! in-cluster clients (client-go, the Python client, kube-rs) find their credentials.

use serde_json::{Value, json};

/// Where the credentials are mounted.
pub const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The token's lifetime kube asks for (an hour and seven seconds, so that clients see it is bound).
const EXPIRATION_SECONDS: u64 = 3607;

/// Mutates a new pod; `account_automount` is its ServiceAccount's `automountServiceAccountToken`.
pub fn admit(pod: &mut Value, account_automount: Option<bool>, suffix: &str) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let account = spec.get("serviceAccountName").and_then(Value::as_str).filter(|s| !s.is_empty());
    let account = account.or(spec.get("serviceAccount").and_then(Value::as_str)).unwrap_or("default").to_string();
    spec.insert("serviceAccountName".into(), json!(account));
    spec.insert("serviceAccount".into(), json!(account));
    let automount = spec.get("automountServiceAccountToken").and_then(Value::as_bool).or(account_automount);
    if automount == Some(false) {
        return;
    }
    let name = format!("kube-api-access-{suffix}");
    let mut mounted = false;
    for key in ["initContainers", "containers"] {
        for c in spec.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten() {
            let mounts = c.as_object_mut().map(|c| c.entry("volumeMounts").or_insert_with(|| json!([])));
            let Some(mounts) = mounts.and_then(Value::as_array_mut) else { continue };
            if mounts.iter().any(|m| m.get("mountPath").and_then(Value::as_str) == Some(MOUNT_PATH)) {
                continue;
            }
            mounts.push(json!({"name": name, "readOnly": true, "mountPath": MOUNT_PATH}));
            mounted = true;
        }
    }
    if !mounted {
        return;
    }
    let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
    if let Some(volumes) = volumes.as_array_mut() {
        volumes.push(json!({"name": name, "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": EXPIRATION_SECONDS, "path": "token"}},
            {"configMap": {"name": crate::cluster_objects::ROOT_CA, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ]}}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "team"}, "spec": spec})
    }

    #[test]
    fn every_container_gets_the_credentials_of_the_default_account() {
        let mut p = pod(json!({"initContainers": [{"name": "i"}], "containers": [{"name": "a"}, {"name": "b"}]}));
        admit(&mut p, None, "x2b4c");
        assert_eq!(p["spec"]["serviceAccountName"], "default");
        assert_eq!(p["spec"]["serviceAccount"], "default");
        let volumes = p["spec"]["volumes"].as_array().unwrap();
        assert_eq!(volumes.len(), 1);
        assert_eq!(volumes[0]["name"], "kube-api-access-x2b4c");
        let sources = volumes[0]["projected"]["sources"].as_array().unwrap();
        assert_eq!(sources[0]["serviceAccountToken"]["path"], "token");
        assert_eq!(sources[1]["configMap"]["name"], "kube-root-ca.crt");
        assert_eq!(sources[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"], "metadata.namespace");
        for c in ["/spec/initContainers/0", "/spec/containers/0", "/spec/containers/1"] {
            let m = &p.pointer(c).unwrap()["volumeMounts"][0];
            assert_eq!(m, &json!({"name": "kube-api-access-x2b4c", "readOnly": true, "mountPath": MOUNT_PATH}));
        }
    }

    #[test]
    fn the_pod_opting_out_wins_over_its_account_and_a_mount_of_its_own_is_kept() {
        let mut off = pod(json!({"serviceAccountName": "robot", "automountServiceAccountToken": false,
                                 "containers": [{"name": "a"}]}));
        admit(&mut off, Some(true), "aaaaa");
        assert_eq!(off["spec"]["serviceAccountName"], "robot");
        assert!(off["spec"].get("volumes").is_none() && off["spec"]["containers"][0].get("volumeMounts").is_none());
        let mut by_account = pod(json!({"containers": [{"name": "a"}]}));
        admit(&mut by_account, Some(false), "aaaaa");
        assert!(by_account["spec"].get("volumes").is_none());
        let mut pod_on = pod(json!({"automountServiceAccountToken": true, "containers": [{"name": "a"}]}));
        admit(&mut pod_on, Some(false), "aaaaa");
        assert_eq!(pod_on["spec"]["volumes"].as_array().unwrap().len(), 1, "the pod's true beats its account's false");
        let own = json!({"name": "mine", "mountPath": MOUNT_PATH});
        let mut p = pod(json!({"serviceAccount": "legacy", "volumes": [{"name": "mine", "emptyDir": {}}],
                               "containers": [{"name": "a", "volumeMounts": [own]}]}));
        admit(&mut p, None, "aaaaa");
        assert_eq!(p["spec"]["serviceAccountName"], "legacy", "the deprecated field names the account");
        assert_eq!(p["spec"]["volumes"].as_array().unwrap().len(), 1, "no volume nothing mounts");
        assert_eq!(p["spec"]["containers"][0]["volumeMounts"], json!([own]));
    }
}
