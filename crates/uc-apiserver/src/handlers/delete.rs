//! Deletes: options (propagation, preconditions, grace), finalizers, graceful pod deletion, collections.

use std::sync::Arc;

use chrono::{SecondsFormat, Utc};
use http::Response;
use serde_json::{Value, json};
use uc_api::{Pointer, StatusDetails};

use crate::app::{App, Body, Req};
use crate::error::{ApiError, Result, Subject};
use crate::handlers::admission::sync_crd;
pub use crate::handlers::meta::{CRD_CLEANUP, FOREGROUND, ORPHAN};
use crate::handlers::meta::{finalizers, is_deleting, meta_str, now, precondition_failure, set_finalizers};
use crate::registry::ResourceInfo;
use crate::request::{Selectors, Target, dry_run, parse_rv, respond_object, to_version};
use crate::storage::{Obj, Op, StoreError, rv_of};

/// How dependents are treated when their owner is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Delete the owner now; the GC deletes dependents afterwards.
    Background,
    /// Delete dependents first, then the owner.
    Foreground,
    /// Leave dependents, removing their owner references.
    Orphan,
}

/// Parsed DeleteOptions.
#[derive(Debug, Clone)]
pub struct DeleteOptions {
    /// Propagation policy.
    pub propagation: Propagation,
    /// Precondition on uid.
    pub uid: Option<String>,
    /// Precondition on resourceVersion.
    pub resource_version: Option<u64>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `gracePeriodSeconds` (pods): None uses the pod's terminationGracePeriodSeconds.
    pub grace_period: Option<i64>,
}

impl Default for DeleteOptions {
    fn default() -> Self {
        Self {
            propagation: Propagation::Background,
            uid: None,
            resource_version: None,
            dry_run: false,
            grace_period: None,
        }
    }
}

fn delete_options(req: &Req) -> Result<DeleteOptions> {
    // JSON, or what a typed client sends (client-go's protobuf, as `helm uninstall` deletes its release).
    let body = if req.body.is_empty() { json!({}) } else { crate::request::parse_body(req)? };
    options_from(&body, req)
}

/// DeleteOptions from a body (a DELETE's, or an Eviction's `deleteOptions`) and the query.
pub(crate) fn options_from(body: &Value, req: &Req) -> Result<DeleteOptions> {
    let policy = body
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .map(String::from)
        .or_else(|| req.params.get("propagationPolicy").cloned());
    let orphan = body
        .get("orphanDependents")
        .and_then(Value::as_bool)
        .or_else(|| req.params.get("orphanDependents").and_then(|v| crate::request::parse_bool(v)));
    let propagation = match (policy.as_deref(), orphan) {
        (Some("Foreground"), _) => Propagation::Foreground,
        (Some("Orphan"), _) => Propagation::Orphan,
        (Some("Background"), _) => Propagation::Background,
        (Some(other), _) => {
            return Err(ApiError::bad_request(format!(
                "propagationPolicy: unsupported value {other:?}: must be Foreground, Background or Orphan"
            )));
        }
        (None, Some(true)) => Propagation::Orphan,
        (None, _) => Propagation::Background,
    };
    let uid = body.at("/preconditions/uid").and_then(Value::as_str).map(String::from);
    let resource_version =
        body.at("/preconditions/resourceVersion").and_then(Value::as_str).map(parse_rv).transpose()?;
    let dry_run =
        dry_run(req) || body.get("dryRun").and_then(Value::as_array).is_some_and(|a| a.iter().any(|x| x == "All"));
    let grace_period = match body.get("gracePeriodSeconds").and_then(Value::as_i64) {
        Some(g) => Some(g),
        None => req
            .params
            .get("gracePeriodSeconds")
            .map(|g| g.parse::<i64>().map_err(|_| ApiError::bad_request(format!("invalid gracePeriodSeconds {g:?}"))))
            .transpose()?,
    };
    Ok(DeleteOptions { propagation, uid, resource_version, dry_run, grace_period })
}

/// The grace period a pod's deletion gets: graceful (a kubelet stops its containers, then deletes it
/// with grace 0) only for a pod bound to a node and not finished; kube deletes the others at once.
fn pod_grace(info: &ResourceInfo, pod: &Value, opts: &DeleteOptions) -> i64 {
    if info.resource != "pods" || !info.group.is_empty() {
        return 0;
    }
    let bound = pod.at("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    let finished = matches!(pod.at("/status/phase").and_then(Value::as_str), Some("Succeeded" | "Failed"));
    if !bound || finished {
        return 0;
    }
    let default = pod.at("/spec/terminationGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(30);
    let grace = opts.grace_period.unwrap_or(default).max(0);
    // A repeated delete may shorten the grace period, never lengthen it.
    match pod.at("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64) {
        Some(current) if is_deleting(pod) => grace.min(current),
        _ => grace,
    }
}

/// What a delete did.
pub enum Deleted {
    /// The object is gone.
    Gone(Obj),
    /// The object is marked for deletion and waits for finalizers.
    Pending(Obj),
}

/// The finalizers after a delete with this propagation: a repeated delete may switch between orphan and
/// foreground, as kube-apiserver allows; background leaves them as they are.
fn finalizers_after(mut f: Vec<String>, propagation: Propagation) -> Vec<String> {
    let wanted = match propagation {
        Propagation::Foreground => FOREGROUND,
        Propagation::Orphan => ORPHAN,
        Propagation::Background => return f,
    };
    f.retain(|x| !(x == FOREGROUND || x == ORPHAN) || x == wanted);
    if !f.iter().any(|x| x == wanted) {
        f.push(wanted.to_string());
    }
    f
}

/// The object a delete leaves behind, or `None` when it is removed now: no finalizers (a namespace's
/// `spec.finalizers` count), no grace period. Marked objects get a deletionTimestamp (now + grace for a
/// graceful pod), a namespace its Terminating phase, a CRD its Terminating condition.
fn marked_for_deletion(info: &ResourceInfo, cur: &Value, opts: &DeleteOptions) -> Option<Value> {
    let f = finalizers_after(finalizers(cur), opts.propagation);
    let spec_finalizers = info.resource == "namespaces"
        && cur.at("/spec/finalizers").and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    let grace = pod_grace(info, cur, opts);
    if f.is_empty() && !spec_finalizers && grace == 0 {
        return None;
    }
    let mut new = cur.clone();
    if grace > 0 {
        let at = Utc::now() + chrono::Duration::seconds(grace);
        new["metadata"]["deletionTimestamp"] = Value::String(at.to_rfc3339_opts(SecondsFormat::Secs, true));
        new["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
    } else if !is_deleting(&new) {
        new["metadata"]["deletionTimestamp"] = Value::String(now());
        new["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        if info.resource == "namespaces" {
            new["status"]["phase"] = json!("Terminating");
        }
        if info.crd.is_none()
            && info.resource == "customresourcedefinitions"
            && let Some(conds) = new.at_mut("/status/conditions").and_then(Value::as_array_mut)
        {
            conds.push(json!({"type": "Terminating", "status": "True", "reason": "InstanceDeletionPending", "message": "CustomResourceDefinition marked for deletion; instances are being deleted", "lastTransitionTime": now()}));
        }
    }
    set_finalizers(&mut new, f);
    Some(new)
}

/// Deletes an object by key, honouring preconditions, finalizers and propagation.
pub async fn delete_object(
    app: &App,
    info: &ResourceInfo,
    key: &str,
    subject: &Subject,
    opts: &DeleteOptions,
) -> Result<Deleted> {
    for _ in 0..16 {
        let cur = app.store.get(&info.gr(), key).ok_or_else(|| ApiError::not_found(subject))?;
        precondition_failure(opts.uid.as_deref(), opts.resource_version.map(|v| v.to_string()).as_deref(), &cur)
            .map_or(Ok(()), |why| Err(ApiError::conflict(subject, &why)))?;
        let Some(new) = marked_for_deletion(info, &cur, opts) else {
            if opts.dry_run {
                return Ok(Deleted::Gone(cur));
            }
            match app.store.write(Op::Delete { gr: info.gr(), key: key.to_string(), expect_rv: rv_of(&cur) }).await {
                Ok(gone) => {
                    sync_crd(app, info, &gone, key);
                    return Ok(Deleted::Gone(gone));
                }
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(ApiError::from_store(e, subject)),
            }
        };
        if new == *cur {
            return Ok(Deleted::Pending(cur));
        }
        if opts.dry_run {
            return Ok(Deleted::Pending(Arc::new(new)));
        }
        match app
            .store
            .write(Op::Update { gr: info.gr(), key: key.to_string(), object: new, expect_rv: rv_of(&cur) })
            .await
        {
            Ok(stored) => return Ok(Deleted::Pending(stored)),
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(ApiError::from_store(e, subject)),
        }
    }
    Err(ApiError::conflict(subject, "too many concurrent updates; try again"))
}

/// Whether a DELETE answers with the deleted object rather than a Status, per kind, as kube-apiserver's
/// registries are set up (`ReturnDeletedObject`): pods, services, service accounts.
fn returns_deleted_object(info: &crate::registry::ResourceInfo) -> bool {
    info.group.is_empty() && matches!(info.resource.as_str(), "pods" | "services" | "serviceaccounts")
}

/// Runs the validating webhooks that concern deleting the object at `key`.
async fn admit_delete(app: &Arc<App>, req: &mut Req, t: &Target, key: &str) -> Result<()> {
    if !crate::webhooks::configured(&app.store) {
        return Ok(());
    }
    if let Some(old) = app.store.get(&t.info.gr(), key) {
        let old = to_version(&t.info, &t.version, &old);
        crate::webhooks::admit(app, req, t, "DELETE", None, Some(&old)).await?;
    }
    Ok(())
}

pub(crate) async fn delete(app: &Arc<App>, req: &mut Req, t: &Target) -> Result<Response<Body>> {
    let opts = delete_options(req)?;
    let subject = t.subject();
    if crate::node_restriction::node_of(&req.user).is_some() {
        let old = app.store.get(&t.info.gr(), &t.key()).ok_or_else(|| ApiError::not_found(&subject))?;
        let name = t.name.as_deref().unwrap_or_default();
        let delete = crate::node_restriction::Operation::Delete;
        crate::handlers::write::restrict_node(req, t, delete, name, None, Some(&old))?;
    }
    if t.info.group == "scheduling.k8s.io"
        && t.info.resource == "priorityclasses"
        && let Some(why) = crate::builtin_scheduling::delete_refusal(&subject.name)
    {
        return Err(ApiError::forbidden(&subject, why));
    }
    admit_delete(app, req, t, &t.key()).await?;
    match delete_object(app, &t.info, &t.key(), &subject, &opts).await? {
        Deleted::Pending(obj) => Ok(respond_object(req, t, 200, &obj)),
        Deleted::Gone(obj) if returns_deleted_object(&t.info) => Ok(respond_object(req, t, 200, &obj)),
        Deleted::Gone(obj) => {
            let details = StatusDetails {
                name: subject.name.clone(),
                group: t.info.group.clone(),
                kind: t.info.resource.clone(),
                uid: meta_str(&obj, "uid").unwrap_or_default().to_string(),
                ..Default::default()
            };
            Ok(crate::app::status_response(200, &uc_api::Status::success(details)))
        }
    }
}

pub(crate) async fn delete_collection(app: &Arc<App>, req: &mut Req, t: &Target) -> Result<Response<Body>> {
    let opts = delete_options(req)?;
    let sel = Selectors::from_req(req)?;
    let (objects, _) = app
        .store
        .list(&t.info.gr(), t.namespace.as_deref(), None)
        .map_err(|e| ApiError::from_store(e, &t.subject()))?;
    let mut items = Vec::new();
    for (key, obj) in objects {
        if !sel.matches(&obj) {
            continue;
        }
        let subject = Subject { name: meta_str(&obj, "name").unwrap_or_default().into(), ..t.subject() };
        let delete = crate::node_restriction::Operation::Delete;
        crate::handlers::write::restrict_node(req, t, delete, &subject.name, None, Some(&obj))?;
        admit_delete(app, req, t, &key).await?;
        match delete_object(app, &t.info, &key, &subject, &opts).await {
            Ok(Deleted::Gone(o) | Deleted::Pending(o)) => items.push(to_version(&t.info, &t.version, &o)),
            Err(e) if e.code() == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(crate::handlers::read::objects_response(t, &items, &serde_json::Map::new()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use uc_api::GroupResource;

    fn info(group: &str, resource: &str) -> Arc<ResourceInfo> {
        Registry::new().get(&GroupResource::new(group, resource)).expect("a built-in resource")
    }

    fn opts(propagation: Propagation) -> DeleteOptions {
        DeleteOptions { propagation, ..Default::default() }
    }

    #[test]
    fn propagation_switches_between_orphan_and_foreground_and_keeps_other_finalizers() {
        let f = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(finalizers_after(f(&["a"]), Propagation::Background), f(&["a"]));
        assert_eq!(finalizers_after(f(&["a"]), Propagation::Orphan), f(&["a", ORPHAN]));
        assert_eq!(finalizers_after(f(&["a", ORPHAN]), Propagation::Foreground), f(&["a", FOREGROUND]));
        assert_eq!(finalizers_after(f(&[FOREGROUND]), Propagation::Foreground), f(&[FOREGROUND]));
    }

    #[test]
    fn an_object_without_finalizers_goes_at_once_and_one_with_them_is_marked() {
        let cm = info("", "configmaps");
        let plain = json!({"metadata": {"name": "c", "resourceVersion": "3"}});
        assert_eq!(marked_for_deletion(&cm, &plain, &opts(Propagation::Background)), None);
        let held = json!({"metadata": {"name": "c", "finalizers": ["x/y"]}});
        let marked = marked_for_deletion(&cm, &held, &opts(Propagation::Background)).expect("kept for its finalizer");
        assert!(is_deleting(&marked));
        assert_eq!(marked.at("/metadata/deletionGracePeriodSeconds"), Some(&json!(0)));
        assert_eq!(finalizers(&marked), vec!["x/y".to_string()]);
        // Foreground deletion is itself a finalizer the GC removes.
        let fg = marked_for_deletion(&cm, &plain, &opts(Propagation::Foreground)).expect("kept for the GC");
        assert_eq!(finalizers(&fg), vec![FOREGROUND.to_string()]);
        // A second delete of a marked object keeps its first deletionTimestamp.
        let again = marked_for_deletion(&cm, &marked, &opts(Propagation::Background)).expect("still held");
        assert_eq!(again, marked);
    }

    #[test]
    fn a_namespace_waits_for_its_spec_finalizers_and_terminates() {
        let ns = info("", "namespaces");
        let obj = json!({"metadata": {"name": "n"}, "spec": {"finalizers": ["kubernetes"]}});
        let marked = marked_for_deletion(&ns, &obj, &opts(Propagation::Background)).expect("held by spec.finalizers");
        assert_eq!(marked.at("/status/phase"), Some(&json!("Terminating")));
    }

    #[test]
    fn a_running_bound_pod_gets_its_grace_period_and_an_unbound_one_goes() {
        let pods = info("", "pods");
        let bound = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 5},
                           "status": {"phase": "Running"}});
        let marked = marked_for_deletion(&pods, &bound, &opts(Propagation::Background)).expect("graceful");
        assert_eq!(marked.at("/metadata/deletionGracePeriodSeconds"), Some(&json!(5)));
        let now_opts = DeleteOptions { grace_period: Some(0), ..Default::default() };
        assert_eq!(marked_for_deletion(&pods, &bound, &now_opts), None);
        let unbound = json!({"metadata": {"name": "p"}, "spec": {}});
        assert_eq!(marked_for_deletion(&pods, &unbound, &opts(Propagation::Background)), None);
        let done = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Succeeded"}});
        assert_eq!(marked_for_deletion(&pods, &done, &opts(Propagation::Background)), None);
    }
}
