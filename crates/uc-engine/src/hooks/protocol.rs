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

/// Most characters of a hook's own words (an error answer's body, its last stderr line) that go into
/// a controller's status and Events.
pub const EXCERPT_CHARS: usize = 200;

/// A hook's own words as status may carry them: one line (control characters and runs of white space
/// made one space), at most [`EXCERPT_CHARS`] characters, `…` where it was cut — so a hook pointed at some
/// other endpoint cannot pour that endpoint's answer into the controller's status.
pub fn excerpt(text: &str) -> String {
    let flat: String = text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    match flat.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_one_short_line() {
        assert_eq!(excerpt("  not\r\nfound \u{1b}[31m\t "), "not found [31m");
        let long = "x".repeat(500);
        let e = excerpt(&long);
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
        assert!(e.ends_with('…'));
        assert_eq!(excerpt(&"é".repeat(300)).chars().count(), EXCERPT_CHARS + 1, "cut between characters");
    }
}
