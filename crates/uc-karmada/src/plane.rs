//! What every pass of the control plane shares: its client, the kinds it serves, the member clusters.

use crate::kinds::Kinds;
use crate::members::Members;

/// The control plane's state between passes.
pub struct Plane {
    pub client: kube::Client,
    pub kinds: Kinds,
    pub members: Members,
    /// Resolves the names of interpreter webhooks (in-cluster Service names included).
    pub resolver: uc_engine::names::Resolver,
}

/// `cluster.karmada.io/v1alpha1`.
pub const CLUSTER_API: &str = "cluster.karmada.io/v1alpha1";
/// `policy.karmada.io/v1alpha1`.
pub const POLICY_API: &str = "policy.karmada.io/v1alpha1";
/// `work.karmada.io/v1alpha2` (bindings).
pub const BINDING_API: &str = "work.karmada.io/v1alpha2";
/// `work.karmada.io/v1alpha1` (Works).
pub const WORK_API: &str = "work.karmada.io/v1alpha1";
/// `config.karmada.io/v1alpha1`.
pub const CONFIG_API: &str = "config.karmada.io/v1alpha1";
/// `multicluster.x-k8s.io/v1alpha1`.
pub const MCS_API: &str = "multicluster.x-k8s.io/v1alpha1";
