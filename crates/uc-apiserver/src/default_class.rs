//! What kube's DefaultIngressClass and DefaultStorageClass admission plugins share: of the classes
//! annotated as the default, the one a new object gets is the newest (by name when two are as new).

use serde_json::Value;
use uc_api::Pointer;

/// The name of the newest of `classes` that one of `annotations` (JSON pointers under
/// `/metadata/annotations`, `~1` for `/`) marks `"true"`.
pub(crate) fn newest_default<'a>(classes: impl IntoIterator<Item = &'a Value>, annotations: &[&str]) -> Option<String> {
    let field = |c: &'a Value, p: &str| c.at(p).and_then(Value::as_str).unwrap_or_default();
    let default = |c: &&'a Value| annotations.iter().any(|a| field(c, &format!("/metadata/annotations/{a}")) == "true");
    let created = |c: &'a Value| {
        let at = field(c, "/metadata/creationTimestamp");
        chrono::DateTime::parse_from_rfc3339(at).map(|t| t.timestamp_nanos_opt().unwrap_or(i64::MAX)).unwrap_or(0)
    };
    let newest = classes.into_iter().filter(default).max_by(|a, b| {
        created(a).cmp(&created(b)).then_with(|| field(b, "/metadata/name").cmp(field(a, "/metadata/name")))
    })?;
    Some(field(newest, "/metadata/name").to_string())
}
