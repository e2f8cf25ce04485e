//! The node's heartbeat: a `coordination.k8s.io/v1` Lease named after the node in `kube-node-lease`,
//! renewed every 10 s, as the kubelet keeps it (`kubectl get leases -n kube-node-lease`).

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};

/// Where node leases live.
pub const NAMESPACE: &str = "kube-node-lease";
/// How long a lease holds without renewal (the kubelet's default).
pub const DURATION_SECONDS: i32 = 40;
/// How often the node renews it.
pub const RENEW_EVERY: Duration = Duration::from_secs(10);

/// The lease of node `name` (uid `uid`, its owner: the lease goes with the Node), renewed at `now`.
pub fn lease(name: &str, uid: Option<&str>, now: Timestamp) -> Lease {
    let mut lease = Lease {
        spec: Some(LeaseSpec {
            holder_identity: Some(name.to_string()),
            lease_duration_seconds: Some(DURATION_SECONDS),
            renew_time: Some(MicroTime(now)),
            ..Default::default()
        }),
        ..Default::default()
    };
    lease.metadata.name = Some(name.to_string());
    lease.metadata.namespace = Some(NAMESPACE.to_string());
    lease.metadata.owner_references = uid.map(|uid| {
        vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: name.to_string(),
            uid: uid.to_string(),
            ..Default::default()
        }]
    });
    lease
}

/// Renews the node's lease once: creates it, or moves its renew time.
pub async fn renew(client: &kube::Client, name: &str, uid: Option<&str>) -> Result<(), kube::Error> {
    let api: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    let lease = lease(name, uid, Timestamp::now());
    let patch = Lease { spec: lease.spec.clone(), ..Lease::default() };
    match api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => match api.create(&PostParams::default(), &lease).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    }
}

/// Renews the lease every `RENEW_EVERY` for as long as the node runs.
pub async fn heartbeat(client: kube::Client, name: String, uid: Option<String>) {
    loop {
        if let Err(e) = renew(&client, &name, uid.as_deref()).await {
            tracing::debug!(error = %crate::pod_api::said(&e), "renewing the node lease failed; trying again");
        }
        tokio::time::sleep(RENEW_EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lease_names_its_node_and_holds_for_forty_seconds() {
        let now: Timestamp = "2026-01-01T00:00:00.5Z".parse().unwrap();
        let l = serde_json::to_value(lease("uc-node", Some("u1"), now)).unwrap();
        assert_eq!(l["metadata"]["namespace"], "kube-node-lease");
        assert_eq!(l["spec"]["holderIdentity"], "uc-node");
        assert_eq!(l["spec"]["leaseDurationSeconds"], 40);
        assert_eq!(l["spec"]["renewTime"], "2026-01-01T00:00:00.500000Z", "MicroTime: microseconds");
        assert_eq!(l["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert!(serde_json::to_value(lease("n", None, now)).unwrap()["metadata"].get("ownerReferences").is_none());
    }
}
