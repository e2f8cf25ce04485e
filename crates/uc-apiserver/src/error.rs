//! API errors: every failure a client sees is a Kubernetes `Status` with the right code and reason.

use uc_api::{Status, StatusCause, StatusDetails};

use crate::stored::StoreError;

/// An error answered to the client as a `Status` object.
#[derive(Debug, Clone)]
pub struct ApiError(pub Box<Status>);

/// Result alias of the request handlers.
pub type Result<T, E = ApiError> = std::result::Result<T, E>;

/// What an error is about: the resource (plural, with group) and the object's name.
#[derive(Debug, Clone, Default)]
pub struct Subject {
    /// API group.
    pub group: String,
    /// Plural resource name.
    pub resource: String,
    /// Object name.
    pub name: String,
}

impl Subject {
    fn qualified(&self) -> String {
        if self.group.is_empty() { self.resource.clone() } else { format!("{}.{}", self.resource, self.group) }
    }

    fn details(&self) -> StatusDetails {
        StatusDetails {
            name: self.name.clone(),
            group: self.group.clone(),
            kind: self.resource.clone(),
            ..Default::default()
        }
    }
}

impl ApiError {
    /// Wraps a Status.
    pub fn new(status: Status) -> Self {
        Self(Box::new(status))
    }

    /// The HTTP status code.
    pub fn code(&self) -> u16 {
        self.0.code
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(Status::failure(400, "BadRequest", message))
    }

    /// 401 Unauthorized.
    pub fn unauthorized() -> Self {
        Self::new(Status::failure(401, "Unauthorized", "Unauthorized"))
    }

    /// 403 Forbidden.
    pub fn forbidden(subject: &Subject, message: impl Into<String>) -> Self {
        let message = if subject.name.is_empty() {
            format!("{} is forbidden: {}", subject.qualified(), message.into())
        } else {
            format!("{} {:?} is forbidden: {}", subject.qualified(), subject.name, message.into())
        };
        Self::new(Status::failure(403, "Forbidden", message).with_details(subject.details()))
    }

    /// 404 NotFound for an object.
    pub fn not_found(subject: &Subject) -> Self {
        let message = format!("{} {:?} not found", subject.qualified(), subject.name);
        Self::new(Status::failure(404, "NotFound", message).with_details(subject.details()))
    }

    /// 404 for a path that names no resource.
    pub fn no_route() -> Self {
        Self::new(Status::failure(404, "NotFound", "the server could not find the requested resource"))
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(Status::failure(405, "MethodNotAllowed", message))
    }

    /// 406 NotAcceptable.
    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(Status::failure(406, "NotAcceptable", message))
    }

    /// 409 AlreadyExists.
    pub fn already_exists(subject: &Subject) -> Self {
        let message = format!("{} {:?} already exists", subject.qualified(), subject.name);
        Self::new(Status::failure(409, "AlreadyExists", message).with_details(subject.details()))
    }

    /// 409 Conflict for a stale resourceVersion or a failed precondition.
    pub fn conflict(subject: &Subject, why: &str) -> Self {
        let message = format!("Operation cannot be fulfilled on {} {:?}: {}", subject.qualified(), subject.name, why);
        Self::new(Status::failure(409, "Conflict", message).with_details(subject.details()))
    }

    /// 409 Conflict with causes (a server-side apply's: the fields other managers own, one each).
    pub fn conflict_with_causes(subject: &Subject, message: String, causes: Vec<StatusCause>) -> Self {
        let details = StatusDetails { causes, ..subject.details() };
        Self::new(Status::failure(409, "Conflict", message).with_details(details))
    }

    /// 410 Gone (Expired).
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(Status::failure(410, "Expired", message))
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large(limit: usize) -> Self {
        Self::new(Status::failure(413, "RequestEntityTooLarge", format!("Request entity too large: limit is {limit}")))
    }

    /// 413 RequestEntityTooLarge with kube-apiserver's prefix and a reason.
    pub fn too_large_because(why: impl std::fmt::Display) -> Self {
        Self::new(Status::failure(413, "RequestEntityTooLarge", format!("Request entity too large: {why}")))
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(Status::failure(415, "UnsupportedMediaType", message))
    }

    /// 422 Invalid, with one cause per field error.
    pub fn invalid(kind: &str, group: &str, name: &str, errors: &[FieldError]) -> Self {
        let summary: Vec<String> = errors.iter().map(FieldError::to_string).collect();
        let qualified = if group.is_empty() { kind.to_string() } else { format!("{kind}.{group}") };
        let message = format!("{qualified} {name:?} is invalid: {}", join_errors(&summary));
        let causes = errors
            .iter()
            .map(|e| StatusCause { reason: e.kind.reason().into(), message: e.body(), field: e.field.clone() })
            .collect();
        let details =
            StatusDetails { name: name.into(), group: group.into(), kind: kind.into(), causes, ..Default::default() };
        Self::new(Status::failure(422, "Invalid", message).with_details(details))
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(Status::failure(500, "InternalError", message))
    }

    /// 503 ServiceUnavailable.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(Status::failure(503, "ServiceUnavailable", message))
    }

    /// Maps a storage error for an object.
    pub fn from_store(e: StoreError, subject: &Subject) -> Self {
        match e {
            StoreError::AlreadyExists => Self::already_exists(subject),
            StoreError::NotFound => Self::not_found(subject),
            StoreError::Conflict { .. } => Self::conflict(
                subject,
                "the object has been modified; please apply your changes to the latest version and try again",
            ),
            StoreError::Gone { requested, oldest } => {
                Self::gone(format!("too old resource version: {requested} ({oldest})"))
            }
            StoreError::Closed => Self::unavailable("the server is shutting down"),
            StoreError::Backend(m) => Self::internal(m),
            StoreError::Unstorable(crate::limits::Exceeded::Size(_)) => {
                Self::too_large(crate::limits::MAX_OBJECT_BYTES)
            }
            StoreError::Unstorable(e) => Self::bad_request(e.to_string()),
        }
    }
}

fn join_errors(errs: &[String]) -> String {
    if errs.len() == 1 { errs[0].clone() } else { format!("[{}]", errs.join(", ")) }
}

/// The kind of a field error, as kube-apiserver names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// A required field is missing.
    Required,
    /// A value is malformed or out of range.
    Invalid,
    /// A value is not one of the allowed ones.
    NotSupported,
    /// A value may not be set or changed.
    Forbidden,
    /// A value is duplicated.
    Duplicate,
    /// A value names something that does not exist.
    NotFound,
    /// A value is too long or has too many items.
    TooLong,
    /// A field is not allowed by the schema.
    Unknown,
}

impl FieldErrorKind {
    fn reason(self) -> &'static str {
        match self {
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::Invalid => "FieldValueInvalid",
            FieldErrorKind::NotSupported => "FieldValueNotSupported",
            FieldErrorKind::Forbidden => "FieldValueForbidden",
            FieldErrorKind::Duplicate => "FieldValueDuplicate",
            FieldErrorKind::NotFound => "FieldValueNotFound",
            FieldErrorKind::TooLong => "FieldValueTooLong",
            FieldErrorKind::Unknown => "FieldValueInvalid",
        }
    }
}

/// One validation failure at a field path.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// What kind of failure.
    pub kind: FieldErrorKind,
    /// The field path, e.g. `spec.replicas`.
    pub field: String,
    /// The offending value, rendered, if any.
    pub value: Option<String>,
    /// Detail.
    pub detail: String,
}

impl FieldError {
    /// A new field error.
    pub fn new(
        kind: FieldErrorKind,
        field: impl Into<String>,
        value: Option<String>,
        detail: impl Into<String>,
    ) -> Self {
        Self { kind, field: field.into(), value, detail: detail.into() }
    }

    /// A `Required value` error.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Required, field, None, detail)
    }

    /// An `Invalid value` error.
    pub fn invalid(field: impl Into<String>, value: &serde_json::Value, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Invalid, field, Some(render(value)), detail)
    }

    /// A `Forbidden` error.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Forbidden, field, None, detail)
    }
}

fn render(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => format!("{s:?}"),
        other => {
            let s = other.to_string();
            if s.len() > 80 { format!("{}...", s.chars().take(80).collect::<String>()) } else { s }
        }
    }
}

impl FieldError {
    /// The error without its field, as a StatusCause's message carries it (the field is beside it):
    /// `Invalid value: 1: must be a string`.
    pub fn body(&self) -> String {
        let text = self.to_string();
        text.strip_prefix(&format!("{}: ", self.field)).map(str::to_string).unwrap_or(text)
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let head = match self.kind {
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::Invalid => "Invalid value",
            FieldErrorKind::NotSupported => "Unsupported value",
            FieldErrorKind::Forbidden => "Forbidden",
            FieldErrorKind::Duplicate => "Duplicate value",
            FieldErrorKind::NotFound => "Not found",
            FieldErrorKind::TooLong => "Too long",
            FieldErrorKind::Unknown => "Unknown field",
        };
        write!(f, "{}: {head}", self.field)?;
        if let Some(v) = &self.value {
            write!(f, ": {v}")?;
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// The field errors a validation has found so far, with the checks every kind's validation shares
/// (`builtin_networking`, `builtin_autoscaling` add their kinds' own in `impl` blocks of theirs).
pub(crate) struct FieldErrors(pub(crate) Vec<FieldError>);

impl FieldErrors {
    pub(crate) fn new() -> Self {
        FieldErrors(Vec::new())
    }

    pub(crate) fn invalid(
        &mut self,
        field: impl Into<String>,
        value: impl Into<serde_json::Value>,
        why: impl Into<String>,
    ) {
        self.0.push(FieldError::invalid(field, &value.into(), why));
    }

    pub(crate) fn required(&mut self, field: impl Into<String>, why: &str) {
        self.0.push(FieldError::required(field, why));
    }

    pub(crate) fn forbidden(&mut self, field: impl Into<String>, why: &str) {
        self.0.push(FieldError::forbidden(field, why));
    }

    /// A value not among `supported`, listed as kube lists them (quoted, comma-separated).
    pub(crate) fn not_supported(&mut self, field: String, value: &str, supported: &[&str]) {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        let why = format!("supported values: {}", list.join(", "));
        self.0.push(FieldError::new(FieldErrorKind::NotSupported, field, Some(format!("{value:?}")), why));
    }

    /// `name` checked by a name rule (a subdomain, a DNS-1035 label, a path segment).
    pub(crate) fn name(&mut self, field: String, name: &str, rule: uc_api::names::NameRule) {
        for why in rule.errors(name, false) {
            self.invalid(field.clone(), name, why);
        }
    }
}
