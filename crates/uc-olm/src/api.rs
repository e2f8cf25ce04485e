//! The names of OLM's API that every module uses (a leaf: it imports nothing of the crate), and the
//! time as OLM writes it.

/// The namespace of the catalogs every namespace sees, as OLM's.
pub const GLOBAL_CATALOG_NAMESPACE: &str = "olm";
/// `operators.coreos.com/v1alpha1`: CatalogSource, Subscription, InstallPlan, ClusterServiceVersion.
pub const V1ALPHA1: &str = "operators.coreos.com/v1alpha1";
/// `operators.coreos.com/v1`: OperatorGroup.
pub const V1: &str = "operators.coreos.com/v1";
/// The field manager of what the lifecycle manager writes.
pub const MANAGER: &str = "olm";

/// The time now, as Kubernetes writes it.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
