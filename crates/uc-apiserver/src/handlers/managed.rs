//! The managed fields every write keeps (creates, updates, patches, scale), and what a write's field
//! manager, scope and shape are: shared by the write handlers and server-side apply.

use serde_json::Value;

use crate::app::Req;
use crate::error::{ApiError, FieldError, Result};
use crate::request::Target;
use crate::ssa::{self, Builtin, Scope, Shape, Structural};

pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// What part of the object a write to `t` may change.
pub(crate) fn scope(t: &Target) -> Scope {
    match t.sub.as_deref() {
        Some("status") => Scope::Status,
        _ if t.info.version(&t.version).is_some_and(|v| v.status) => Scope::AllButStatus,
        _ => Scope::Object,
    }
}

/// The shape of the target's objects: its schema for a custom resource, merge keys for the built-ins.
pub(crate) fn with_shape<T>(t: &Target, f: impl FnOnce(&dyn Shape) -> T) -> T {
    match t.info.version(&t.version).and_then(|v| v.schema.clone()) {
        Some(schema) => f(&Structural(&schema)),
        None => f(&Builtin),
    }
}

/// The request's field manager: `fieldManager`, else kube's default from the user agent.
fn manager(req: &Req) -> String {
    match req.params.get("fieldManager").filter(|m| !m.is_empty()) {
        Some(m) => m.clone(),
        None => ssa::default_manager(&req.user_agent),
    }
}

pub(crate) fn invalid_managed_fields(t: &Target, message: String) -> ApiError {
    let name = t.name.clone().unwrap_or_default();
    ApiError::invalid(
        &t.info.kind,
        &t.info.group,
        &name,
        &[FieldError::invalid("metadata.managedFields", &Value::Null, message)],
    )
}

/// What a write by `manager` to `t` records, at `now`.
pub(crate) fn write_of<'a>(t: &'a Target, manager: &'a str, api_version: &'a str, now: &'a str) -> ssa::Write<'a> {
    ssa::Write { manager, api_version, subresource: t.sub.as_deref(), scope: scope(t), now }
}

/// Records a create, update or non-apply patch in `new`'s managed fields (objects that have them).
pub(crate) fn track_update(req: &Req, t: &Target, old: Option<&Value>, new: &mut Value) -> Result<()> {
    let manager = manager(req);
    let api_version = t.info.api_version(&t.version);
    let now = now();
    let w = write_of(t, &manager, &api_version, &now);
    with_shape(t, |shape| ssa::update(old, new, shape, &w)).map_err(|e| invalid_managed_fields(t, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    #[test]
    fn the_field_manager_is_the_parameter_else_the_user_agents_program() {
        let named = Req::for_test(Method::PUT, "application/json", "", &[("fieldManager", "my-controller")]);
        assert_eq!(manager(&named), "my-controller");
        let unnamed = Req::for_test(Method::PUT, "application/json", "", &[("fieldManager", "")]);
        assert_eq!(manager(&unnamed), "kubectl", "kube's default: the user agent's program name");
    }
}
