//! What the store holds and answers with: the shared, immutable object and the store's errors.

use std::sync::Arc;

use serde_json::Value;

/// A stored object, shared between the state, the revision log and responses.
pub type Obj = Arc<Value>;

/// Storage errors.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Create of a key that exists.
    #[error("object already exists")]
    AlreadyExists,
    /// Update or delete of a key that does not exist.
    #[error("object not found")]
    NotFound,
    /// The object changed since the caller read it.
    #[error("object was modified: expected resourceVersion {expected}, found {found}")]
    Conflict {
        /// The resourceVersion the caller expected.
        expected: u64,
        /// The current resourceVersion.
        found: u64,
    },
    /// The requested revision is older than the oldest one the log still holds.
    #[error("too old resource version: {requested} ({oldest})")]
    Gone {
        /// The revision asked for.
        requested: u64,
        /// The oldest revision that can still be served.
        oldest: u64,
    },
    /// The object is more than the store keeps (too deep, too large).
    #[error("{0}")]
    Unstorable(crate::limits::Exceeded),
    /// The database file failed.
    #[error("storage failure: {0}")]
    Backend(String),
    /// The writer thread is gone (the server is shutting down).
    #[error("storage is shutting down")]
    Closed,
}
