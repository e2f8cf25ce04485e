//! Why a pass of the lifecycle manager failed for one object (a CatalogSource, Subscription,
//! InstallPlan or CSV): a request, a catalog, a CSV, a plan, or a step OLM refuses too.

use uc_engine::dynamic::DynamicError;

use crate::csv::CsvError;
use crate::fbc::CatalogError;
use crate::plan::PlanError;

/// Why the lifecycle manager could not move an object on; it says so on the object and tries again.
#[derive(Debug, thiserror::Error)]
pub enum LifecycleError {
    /// A request to the API server failed.
    #[error(transparent)]
    Api(#[from] DynamicError),
    /// A typed request to the API server failed.
    #[error("request to the API server: {0}")]
    Request(#[from] kube::Error),
    /// A catalog could not be read.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// A ClusterServiceVersion does not read.
    #[error(transparent)]
    Csv(#[from] CsvError),
    /// An install could not be planned.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A status could not be encoded.
    #[error("encoding a status: {0}")]
    Encode(serde_json::Error),
    /// A CRD update would stop serving versions objects are stored at, as OLM refuses.
    #[error(
        "risk of data loss updating {name}: the new CRD does not serve version(s) {} that the existing CRD lists as stored (status.storedVersions)",
        versions.join(", ")
    )]
    DataLoss { name: String, versions: Vec<String> },
    /// A resolved bundle is no longer in its catalog.
    #[error("bundle {0} vanished from its catalog")]
    Vanished(String),
}

/// The result of a step of the lifecycle manager.
pub type Result<T, E = LifecycleError> = std::result::Result<T, E>;
