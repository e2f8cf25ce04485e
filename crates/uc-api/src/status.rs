//! The Kubernetes `Status` object: how every API error is reported on the wire.

use serde::{Deserialize, Serialize};

/// A `meta/v1 Status` object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Always `Status`.
    pub kind: String,
    /// Always `v1`.
    pub api_version: String,
    /// Empty list metadata.
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// `Success` or `Failure`.
    pub status: String,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Machine-readable reason, e.g. `NotFound`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Extended data about the object concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// HTTP status code.
    pub code: u16,
}

/// The object a `Status` is about, and the causes of an error.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// Object name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// API group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Kind or resource.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object uid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Per-field causes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// Suggested client retry delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u32>,
}

/// One cause of an error, usually tied to a field path.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusCause {
    /// Machine-readable reason, e.g. `FieldValueInvalid`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Field path, e.g. `spec.replicas`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

impl Status {
    /// A failure with a code, reason and message.
    pub fn failure(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self {
            kind: "Status".into(),
            api_version: "v1".into(),
            metadata: Default::default(),
            status: "Failure".into(),
            message: message.into(),
            reason: reason.into(),
            details: None,
            code,
        }
    }

    /// A success, as returned by deletes that remove an object at once.
    pub fn success(details: StatusDetails) -> Self {
        Self {
            kind: "Status".into(),
            api_version: "v1".into(),
            metadata: Default::default(),
            status: "Success".into(),
            message: String::new(),
            reason: String::new(),
            details: Some(details),
            code: 200,
        }
    }

    /// Attaches details.
    pub fn with_details(mut self, details: StatusDetails) -> Self {
        self.details = Some(details);
        self
    }
}
