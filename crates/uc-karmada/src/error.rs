//! Why a pass of the control plane (detection, scheduling, propagation, execution, aggregation, the
//! multi-cluster Services) failed: a request, a member not ready, an override or an interpreter.

use crate::interpret::InterpretError;
use crate::overrides::OverrideError;
use uc_engine::dynamic::DynamicError;

/// Why a pass failed; the next pass tries again.
#[derive(Debug, thiserror::Error)]
pub enum PlaneError {
    /// A request to the control plane or a member failed.
    #[error(transparent)]
    Api(#[from] DynamicError),
    /// A member cluster is not ready, so nothing is done on it.
    #[error("cluster {name} is not ready: {message}")]
    NotReady { name: String, message: String },
    /// An override policy does not apply to a resource.
    #[error("override policy {policy}: {source}")]
    Override { policy: String, source: OverrideError },
    /// A stored object of the control plane's own kinds does not read as its type (the CRDs' schemas
    /// make that one uc did not write); nothing is decided from a partial list.
    #[error("{kind} {name} cannot be read: {source}")]
    Unreadable { kind: String, name: String, source: serde_json::Error },
    /// A resource interpreter failed.
    #[error(transparent)]
    Interpret(#[from] InterpretError),
}

/// The result of a step of a pass.
pub type Result<T, E = PlaneError> = std::result::Result<T, E>;
