//! kube's ResourceQuota admission at the API server's edge: an object made or changed in a namespace
//! with quotas is checked against what the namespace's objects use of each now (read from the store:
//! exact, never a status a moment behind), the decisions in [`crate::resource_quotas::evaluate`].

use serde_json::Value;
use tokio::sync::{Mutex, MutexGuard};

use crate::app::App;
use crate::error::{ApiError, Result, Subject};
use crate::request::Target;
use crate::resource_quotas::controller::with_usage;
use crate::resource_quotas::evaluate::{self, Refusal};

/// Held from a new object's check until it is stored, so that two objects cannot both take the last of a quota.
static ADMITTING: Mutex<()> = Mutex::const_new(());

fn refused(t: &Target, name: &str, why: &Refusal) -> ApiError {
    ApiError::forbidden(&Subject { name: name.to_string(), ..t.subject() }, why.to_string())
}

/// Checks a new object against its namespace's quotas; the guard returned (when the namespace has
/// any) is to be held until the object is stored.
pub(crate) async fn admit_new(
    app: &App,
    t: &Target,
    name: &str,
    obj: &Value,
) -> Result<Option<MutexGuard<'static, ()>>> {
    let Some(namespace) = t.namespace.as_deref().filter(|n| !n.is_empty() && t.sub.is_none()) else {
        return Ok(None);
    };
    if !crate::resource_quotas::controller::any(app, namespace) {
        return Ok(None);
    }
    let guard = ADMITTING.lock().await;
    let quotas: Vec<_> = with_usage(app, namespace).into_iter().map(|(_, q, used)| (q, used)).collect();
    evaluate::admit(&quotas, &t.info.gr(), obj, None).map_err(|why| refused(t, name, &why))?;
    Ok(Some(guard))
}

/// Checks a change of `old` to `new` (a claim that asks for more storage, a Service that becomes a
/// load balancer) against the namespace's quotas.
pub(crate) fn admit_change(app: &App, t: &Target, name: &str, new: &Value, old: &Value) -> Result<()> {
    let Some(namespace) = t.namespace.as_deref().filter(|n| !n.is_empty() && t.sub.is_none()) else { return Ok(()) };
    let quotas: Vec<_> = with_usage(app, namespace).into_iter().map(|(_, q, used)| (q, used)).collect();
    evaluate::admit(&quotas, &t.info.gr(), new, Some(old)).map_err(|why| refused(t, name, &why))
}

#[cfg(test)]
mod tests;
