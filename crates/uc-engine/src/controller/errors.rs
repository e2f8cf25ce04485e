//! Why a controller cannot start, why one reconcile failed, and what is wrong with a hook's source:
//! a reason (an enum, reported as the `Ready` condition's or the Event's reason) and a message.

use crate::hooks::HookError;

/// Why a controller cannot run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartReason {
    /// The UniversalController's spec is wrong.
    InvalidSpec,
    /// A resource it names is not served.
    UnknownResource,
    /// A hook cannot be reached or loaded.
    HookUnavailable,
    /// An older controller controls the same parent type.
    ParentClaimed,
}

impl StartReason {
    /// The condition reason.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidSpec => "InvalidSpec",
            Self::UnknownResource => "UnknownResource",
            Self::HookUnavailable => "HookUnavailable",
            Self::ParentClaimed => "ParentClaimed",
        }
    }
}

/// Why a controller cannot run (reported in the UC object's `Ready` condition).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", reason.as_str())]
pub struct StartError {
    /// Condition reason.
    pub reason: StartReason,
    /// What is wrong.
    pub message: String,
}

impl StartError {
    pub fn new(reason: StartReason, message: impl Into<String>) -> Self {
        Self { reason, message: message.into() }
    }
}

/// Why one reconcile failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncReason {
    /// The hook failed or answered something unusable.
    HookError,
    /// The parent cannot be reconciled as it is (no selector).
    InvalidParent,
    /// A desired child is invalid.
    InvalidChild,
    /// The API server refused a write.
    ApplyError,
    /// A write met a newer version of its object (409): retried, routine unless retries give up.
    Conflict,
    /// Something that cannot happen did.
    InternalError,
    /// A write was not sent: this engine no longer holds the leader lease (its controllers stop).
    NotLeader,
}

impl SyncReason {
    /// The Event reason.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::HookError => "HookError",
            Self::InvalidParent => "InvalidParent",
            Self::InvalidChild => "InvalidChild",
            Self::ApplyError => "ApplyError",
            Self::Conflict => "Conflict",
            Self::InternalError => "InternalError",
            Self::NotLeader => "NotLeader",
        }
    }
}

/// Why one reconcile failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", reason.as_str())]
pub struct SyncError {
    /// Event reason.
    pub reason: SyncReason,
    /// What failed.
    pub message: String,
    /// The API server's own words when it refused a write (its Status message: `pods "x" is
    /// forbidden: …`), which kube's controllers quote in their Events.
    pub refusal: Option<String>,
    /// Whether an Event about the parent said so already (a built-in controller's `FailedCreate`, in
    /// kube's words): the reconcile records no second one.
    pub reported: bool,
}

impl SyncError {
    pub(crate) fn new(reason: SyncReason, message: impl Into<String>) -> Self {
        Self { reason, message: message.into(), refusal: None, reported: false }
    }

    /// A failed API call, in the server's words (its message and code, not a dump of the error).
    pub(crate) fn kube(what: &str, e: kube::Error) -> Self {
        match e {
            kube::Error::Api(s) if s.code == 409 && s.reason == "Conflict" => {
                Self::new(SyncReason::Conflict, format!("{what}: {} ({})", s.message, s.code))
            }
            kube::Error::Api(s) => Self {
                refusal: Some(s.message.clone()),
                ..Self::new(SyncReason::ApplyError, format!("{what}: {} ({})", s.message, s.code))
            },
            kube::Error::Service(e) if e.is::<crate::fenced::NotLeader>() => {
                Self::new(SyncReason::NotLeader, format!("{what}: {e}"))
            }
            other => Self::new(SyncReason::ApplyError, format!("{what}: {}", crate::dynamic::api_error(&other))),
        }
    }

    /// The Warning Event's reason and message about the parent: a UniversalController names the
    /// failure's reason; a CompositeController or DecoratorController says `SyncError` with
    /// `Sync error: …`, as Metacontroller does (its users and examples look for that reason).
    pub(crate) fn event(&self, flavor: crate::flavor::Flavor) -> (&'static str, String) {
        match flavor {
            crate::flavor::Flavor::Universal => (self.reason.as_str(), self.message.clone()),
            crate::flavor::Flavor::Composite | crate::flavor::Flavor::Decorator => {
                ("SyncError", format!("Sync error: {self}"))
            }
        }
    }
}

impl From<HookError> for SyncError {
    fn from(e: HookError) -> Self {
        Self::new(SyncReason::HookError, e.to_string())
    }
}

/// What is wrong with a hook's source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceProblem {
    /// The ConfigMap or its key is gone: the hook can no longer be (re)loaded.
    Gone(String),
    /// The newest version does not load; the one before still runs.
    Broken(String),
}

impl std::fmt::Display for SourceProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceProblem::Gone(m) | SourceProblem::Broken(m) => f.write_str(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flavor::Flavor;

    #[test]
    fn metacontroller_kinds_report_failures_as_sync_errors() {
        let e = SyncError::new(SyncReason::HookError, "sync hook: 401 Unauthorized");
        assert_eq!(e.event(Flavor::Universal), ("HookError", "sync hook: 401 Unauthorized".to_string()));
        for flavor in [Flavor::Composite, Flavor::Decorator] {
            assert_eq!(
                e.event(flavor),
                ("SyncError", "Sync error: HookError: sync hook: 401 Unauthorized".to_string())
            );
        }
    }
}
