//! `pods/<name>/eviction` (policy/v1 Eviction): deletes a pod unless that would leave a
//! PodDisruptionBudget short of healthy pods — what `kubectl drain` uses. The budget's status (kept by
//! the PodDisruptionBudget controller) says how many disruptions it allows; an eviction takes one at
//! once, in the budget's status, before the pod goes, so that two evictions cannot both take the last.

use std::sync::Arc;

use http::Response;
use serde_json::{Value, json};
use uc_api::{GroupResource, LabelSelector, Pointer, Status, StatusCause, StatusDetails};

use crate::app::{App, Body, Req, status_response};
use crate::error::{ApiError, Result};
use crate::handlers::delete::{delete_object, options_from};
use crate::handlers::meta::{is_deleting, meta_str};
use crate::request::{Target, parse_body};
use crate::storage::{Op, StoreError, object_key, rv_of};

/// Why a budget refuses an eviction, if it does: its name, and the desired and current healthy pods. A
/// budget its controller has not counted yet allows nothing, as in kube.
pub fn refusal(pdb: &Value) -> Option<(String, i64, i64)> {
    let n = |k: &str| pdb.at(&format!("/status/{k}")).and_then(Value::as_i64).unwrap_or(0);
    if n("disruptionsAllowed") > 0 {
        return None;
    }
    Some((meta_str(pdb, "name").unwrap_or_default().to_string(), n("desiredHealthy"), n("currentHealthy")))
}

/// Whether a budget's selector picks the pod (an empty selector picks every pod of the namespace, as
/// in policy/v1).
fn selects(pdb: &Value, pod: &Value) -> bool {
    let selector = pdb.at("/spec/selector").cloned().unwrap_or_else(|| json!({}));
    LabelSelector::from_value(&selector).is_ok_and(|s| s.matches_value(pod.at("/metadata/labels")))
}

fn too_many_requests(message: &str, causes: Vec<StatusCause>) -> ApiError {
    let details = StatusDetails { causes, ..Default::default() };
    ApiError::new(Status::failure(429, "TooManyRequests", message).with_details(details))
}

/// `POST pods/<name>/eviction`.
pub(crate) async fn evict(app: &Arc<App>, req: &mut Req, t: &Target) -> Result<Response<Body>> {
    let body = parse_body(req)?;
    let name = t.name.clone().unwrap_or_default();
    if let Some(n) = meta_str(&body, "name").filter(|n| *n != name) {
        return Err(ApiError::bad_request(format!("name in URL does not match name in Eviction object: {n}")));
    }
    let opts = options_from(body.get("deleteOptions").unwrap_or(&json!({})), req)?;
    let ns = t.namespace.clone().unwrap_or_default();
    let subject = t.subject();
    let pods = t.info.gr();
    let budgets = GroupResource::new("policy", "poddisruptionbudgets");
    for _ in 0..16 {
        let pod = app.store.get(&pods, &t.key()).ok_or_else(|| ApiError::not_found(&subject))?;
        let create = crate::node_restriction::Operation::Create;
        crate::handlers::write::restrict_node(req, t, create, &name, Some(&body), Some(&pod))?;
        let finished = matches!(pod.at("/status/phase").and_then(Value::as_str), Some("Succeeded" | "Failed"));
        if !is_deleting(&pod) && !finished {
            let (all, _) = app.store.list(&budgets, Some(&ns), None).map_err(|e| ApiError::from_store(e, &subject))?;
            let mine: Vec<_> = all.into_iter().map(|(_, b)| b).filter(|b| selects(b, &pod)).collect();
            if mine.len() > 1 {
                return Err(ApiError::internal(
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                ));
            }
            if let Some(pdb) = mine.first() {
                if let Some((budget, desired, current)) = refusal(pdb) {
                    let cause = StatusCause {
                        reason: "DisruptionBudget".into(),
                        message: format!(
                            "The disruption budget {budget} needs {desired} healthy pods and has {current} currently"
                        ),
                        field: String::new(),
                    };
                    return Err(too_many_requests(
                        "Cannot evict pod as it would violate the pod's disruption budget.",
                        vec![cause],
                    ));
                }
                if !opts.dry_run {
                    // Take the disruption first: a second eviction sees it gone.
                    let mut taken = (**pdb).clone();
                    let allowed = taken.at("/status/disruptionsAllowed").and_then(Value::as_i64).unwrap_or(0);
                    taken["status"]["disruptionsAllowed"] = json!(allowed - 1);
                    // Until the pod is seen going, the budget's controller does not count it healthy.
                    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                    if !taken["status"]["disruptedPods"].is_object() {
                        taken["status"]["disruptedPods"] = json!({});
                    }
                    taken["status"]["disruptedPods"][name.as_str()] = json!(now);
                    let key = object_key(&ns, meta_str(pdb, "name").unwrap_or_default());
                    let write = Op::Update { gr: budgets.clone(), key, object: taken, expect_rv: rv_of(pdb) };
                    match app.store.write(write).await {
                        Ok(_) => {}
                        Err(StoreError::Conflict { .. }) => continue,
                        Err(e) => return Err(ApiError::from_store(e, &subject)),
                    }
                }
            }
        }
        if !opts.dry_run {
            delete_object(app, &t.info, &t.key(), &subject, &opts).await?;
        }
        let mut done = Status::success(StatusDetails::default());
        done.code = 201;
        return Ok(status_response(201, &done));
    }
    Err(ApiError::conflict(&subject, "too many concurrent evictions; try again"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_refuse_when_no_disruption_is_left() {
        let pdb = |allowed: i64| {
            json!({"metadata": {"name": "db"}, "spec": {"selector": {"matchLabels": {"app": "db"}}},
                                        "status": {"disruptionsAllowed": allowed, "desiredHealthy": 2, "currentHealthy": 2}})
        };
        assert_eq!(refusal(&pdb(0)), Some(("db".into(), 2, 2)));
        assert_eq!(refusal(&pdb(1)), None);
        assert_eq!(
            refusal(&json!({"metadata": {"name": "new"}})),
            Some(("new".into(), 0, 0)),
            "not yet counted: no disruption"
        );
        let pod = json!({"metadata": {"labels": {"app": "db"}}});
        assert!(selects(&pdb(0), &pod));
        assert!(!selects(&pdb(0), &json!({"metadata": {"labels": {"app": "web"}}})));
        assert!(selects(&json!({"spec": {"selector": {}}}), &pod), "an empty selector picks every pod");
    }
}
