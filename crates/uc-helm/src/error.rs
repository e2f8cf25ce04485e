//! The error of Helm's template language and its chart tooling, as Go's `error` is: a message saying
//! what failed and where (`template: x.yaml:3:7: executing "x.yaml" at <.Values.y>: …`), the words
//! Helm prints, which the tests compare with Helm's.

/// What failed, in Helm's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HelmError(pub String);

impl From<String> for HelmError {
    fn from(message: String) -> Self {
        HelmError(message)
    }
}

impl From<&str> for HelmError {
    fn from(message: &str) -> Self {
        HelmError(message.to_string())
    }
}

impl From<HelmError> for String {
    fn from(e: HelmError) -> String {
        e.0
    }
}

impl HelmError {
    /// The message.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}
