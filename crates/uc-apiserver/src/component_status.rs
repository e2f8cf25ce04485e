//! `v1 componentstatuses` (`kubectl get cs`), deprecated since Kubernetes 1.19 and still served by
//! kube-apiserver 1.33: the health of the control plane's parts, computed on each read and never
//! stored. In uc the scheduler, the controller manager and the store are parts of this process, so
//! they answer healthy while it answers at all. Clients still look them up by name (kube-rs's event
//! recorder test reads `scheduler`).

use serde_json::{Value, json};

/// The components kube-apiserver reports, by name.
const COMPONENTS: &[&str] = &["controller-manager", "scheduler", "etcd-0"];

/// The warning kube-apiserver sends with every read of them.
pub const DEPRECATION: &str = "v1 ComponentStatus is deprecated in v1.19+";

/// One component's status; None for a name that is not one.
pub fn get(name: &str) -> Option<Value> {
    COMPONENTS.contains(&name).then(|| {
        json!({
            "kind": "ComponentStatus", "apiVersion": "v1",
            "metadata": {"name": name},
            "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}],
        })
    })
}

/// Every component's status.
pub fn list() -> Value {
    json!({
        "kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {},
        "items": COMPONENTS.iter().filter_map(|n| get(n)).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_components_kube_reports_each_healthy() {
        let all = list();
        let names: Vec<&str> =
            all["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["controller-manager", "scheduler", "etcd-0"]);
        assert_eq!(
            get("scheduler").unwrap()["conditions"][0],
            json!({"type": "Healthy", "status": "True", "message": "ok"})
        );
        assert!(get("kube-proxy").is_none());
    }
}
