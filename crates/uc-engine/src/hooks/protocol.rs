//! What every kind of hook speaks: which hook is called, and why a call failed.

use std::time::Duration;

/// Which hook is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HookKind {
    /// `sync`.
    Sync,
    /// `finalize`.
    Finalize,
    /// `customize`.
    Customize,
}

impl HookKind {
    /// Lowercase name, used in metrics and JavaScript entry points.
    pub fn as_str(self) -> &'static str {
        match self {
            HookKind::Sync => "sync",
            HookKind::Finalize => "finalize",
            HookKind::Customize => "customize",
        }
    }
}

/// Why a hook call failed. Any of these leaves the cluster unchanged.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HookError {
    /// The hook did not answer in time.
    #[error("hook timed out after {0:?}")]
    Timeout(Duration),
    /// The hook could not be reached.
    #[error("hook unreachable: {0}")]
    Unreachable(String),
    /// The webhook answered with a non-2xx status.
    #[error("hook answered HTTP {status}: {body}")]
    Status {
        /// HTTP status.
        status: u16,
        /// Start of the body.
        body: String,
    },
    /// The answer is not a valid response.
    #[error("invalid hook response: {0}")]
    InvalidResponse(String),
    /// The script threw, ran out of memory or is malformed.
    #[error("hook script failed: {0}")]
    Script(String),
    /// A native hook could not decode its request.
    #[error("invalid hook request: {0}")]
    InvalidRequest(String),
    /// A native hook refused the request (its own reason).
    #[error("hook failed: {0}")]
    Failed(String),
    /// The hook spec is unusable.
    #[error("invalid hook configuration: {0}")]
    Config(String),
}
