//! Writes: create, update (also of the status subresource), patch, and the commit of an update.

use std::sync::Arc;

use http::Response;
use serde_json::{Value, json};
use uc_api::{GroupResource, Pointer};

use crate::app::{App, Body, Req};
use crate::error::{ApiError, FieldError, FieldErrorKind, Result, Subject};
use crate::handlers::admission::{
    admit_crd, check_object_meta, check_type_meta, invalid, namespace_check, spec_changed, sync_crd, validate_body,
};
use crate::handlers::managed::track_update;
use crate::handlers::meta::{
    CRD_CLEANUP, finalizers, init_namespace, is_deleting, meta_str, ready_to_vanish, set_finalizers, stamp_new,
};
use crate::node_restriction::Operation;
use crate::patch;
use crate::registry::ResourceInfo;
use crate::request::{Target, dry_run, parse_body, parse_rv, respond_object, respond_stored, to_version};
use crate::storage::{Obj, Op, StoreError, object_key, rv_of};

fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5).map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char).collect()
}

/// The ServiceAccount admission plugin ([`crate::service_account`]) with the pod's account as stored.
fn mount_account_token(app: &App, t: &Target, pod: &mut Value) {
    let ns = t.namespace.as_deref().unwrap_or_default();
    let account = pod.pointer("/spec/serviceAccountName").and_then(Value::as_str).filter(|s| !s.is_empty());
    let key = object_key(ns, account.unwrap_or("default"));
    let stored = app.store.get(&GroupResource::new("", "serviceaccounts"), &key);
    let automount = stored.and_then(|a| a.at("/automountServiceAccountToken").and_then(Value::as_bool));
    crate::service_account::admit(pod, automount, &random_suffix());
}

/// What kube's strategies and mutating admission plugins add to a new object before it is validated:
/// a Job's generated selector, a CertificateSigningRequest's requester, an Ingress's and a claim's
/// default class.
fn prepare_new(app: &App, req: &Req, info: &ResourceInfo, obj: &mut Value, errs: &mut Vec<FieldError>) {
    match (info.group.as_str(), info.resource.as_str()) {
        ("batch", "jobs") => errs.extend(crate::builtin_job::generate_selector(obj)),
        ("certificates.k8s.io", "certificatesigningrequests") => crate::certificates::stamp_requester(obj, &req.user),
        ("networking.k8s.io", "ingresses") => {
            let classes = (GroupResource::new("networking.k8s.io", "ingressclasses"), "ingressClassName");
            give_default_class(app, obj, classes, |o, c| {
                crate::builtin_networking::default_class(o, c.iter().copied())
            });
        }
        // kube's PriorityClass strategy: generation 1, never moved (the class has no spec).
        ("scheduling.k8s.io", "priorityclasses") => obj["metadata"]["generation"] = json!(1),
        ("", "persistentvolumeclaims") => {
            let classes = (GroupResource::new("storage.k8s.io", "storageclasses"), "storageClassName");
            give_default_class(app, obj, classes, |o, c| {
                crate::builtin_storage::default_for_claim(o, c.iter().copied())
            });
        }
        _ => {}
    }
}

/// The stored PriorityClasses, as kube's Priority admission plugin reads them.
fn priority_classes(app: &App) -> Vec<k8s_openapi::api::scheduling::v1::PriorityClass> {
    let classes = GroupResource::new("scheduling.k8s.io", "priorityclasses");
    let Ok((stored, _)) = app.store.list(&classes, None, None) else { return Vec::new() };
    stored.iter().filter_map(|(_, c)| serde_json::from_value(c.as_ref().clone()).ok()).collect()
}

/// kube's mutating admission plugins on a new pod: ServiceAccount, Priority, LimitRanger.
fn mutate_new_pod(app: &App, req: &mut Req, t: &Target, name: &str, pod: &mut Value) -> Result<()> {
    mount_account_token(app, t, pod);
    admit_priority(app, t, name, pod)?;
    if crate::handlers::limit_admission::default_pod(app, t, pod) {
        // A default limit may now sit below a request the pod made: validated again, as kube
        // validates after its mutating admission.
        revalidate(req, t, name, pod)?;
    }
    Ok(())
}

/// kube's Priority admission plugin on a new pod ([`crate::builtin_scheduling::admit_pod`]).
fn admit_priority(app: &App, t: &Target, name: &str, pod: &mut Value) -> Result<()> {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(()) };
    crate::builtin_scheduling::admit_pod(spec, &priority_classes(app))
        .map_err(|why| ApiError::forbidden(&Subject { name: name.to_string(), ..t.subject() }, why.to_string()))
}

/// kube's Priority admission plugin on a PriorityClass created or updated: one default at most.
fn admit_priority_class(app: &App, t: &Target, name: &str, class: &Value) -> Result<()> {
    if t.info.group != "scheduling.k8s.io" || t.info.resource != "priorityclasses" || t.sub.is_some() {
        return Ok(());
    }
    crate::builtin_scheduling::admit_class(class, &priority_classes(app))
        .map_err(|why| ApiError::forbidden(&Subject { name: name.to_string(), ..t.subject() }, why.to_string()))
}

/// A default class admission plugin (kube's DefaultIngressClass, DefaultStorageClass): `choose` picks,
/// of the stored objects of `classes`, the class a new object gets, written to its `spec.<field>`.
fn give_default_class(
    app: &App,
    obj: &mut Value,
    (classes, field): (GroupResource, &str),
    choose: impl Fn(&Value, &[&Value]) -> Option<String>,
) {
    let Ok((stored, _)) = app.store.list(&classes, None, None) else { return };
    let stored: Vec<&Value> = stored.iter().map(|(_, c)| c.as_ref()).collect();
    if let Some(class) = choose(obj, &stored)
        && let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.insert(field.into(), Value::String(class));
    }
}

pub(crate) async fn create(app: &Arc<App>, req: &mut Req, t: &Target) -> Result<Response<Body>> {
    let obj = parse_body(req)?;
    create_object(app, req, t, obj, true).await
}

/// Creates `obj` (as the client sent it, or as a server-side apply made it); `track`: record the
/// creation in managed fields as an update (an apply has recorded itself).
pub(crate) async fn create_object(
    app: &Arc<App>,
    req: &mut Req,
    t: &Target,
    mut obj: Value,
    track: bool,
) -> Result<Response<Body>> {
    let info = t.info.clone();
    if let Some(crd) = &info.crd {
        let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
        // A CRD is large: what its kept JSON's facts say, not a tree decoded on every create (issue 58).
        if app.store.get_kept(&crds, &object_key("", crd)).is_some_and(|c| c.deleting()) {
            return Err(ApiError::method_not_allowed(format!(
                "create not allowed while custom resource definition {crd} is terminating"
            )));
        }
    }
    check_type_meta(req, &info, &t.version, &mut obj)?;
    let mut errs = check_object_meta(&info, &mut obj, true)?;
    let name = place(&info, t.namespace.as_deref(), &mut obj, &mut errs, &random_suffix())?;
    stamp_new(&mut obj);
    prepare_new(app, req, &info, &mut obj, &mut errs);
    if info.namespaced && !dry_run(req) {
        namespace_check(app, t, t.namespace.as_deref().unwrap_or_default())?;
    }
    validate_body(req, &info, &t.version, &mut obj, &mut errs)?;
    if !errs.is_empty() {
        return Err(invalid(&info, &name, &errs));
    }
    if info.group == "apps" && info.resource == "deployments" {
        crate::builtin::deployment_revision(None, &mut obj);
    }
    start_status(&info, &t.version, &mut obj);
    let crd_info = if info.resource == "customresourcedefinitions" && info.group == "apiextensions.k8s.io" {
        Some(admit_new_crd(&mut obj)?)
    } else {
        None
    };
    if info.group == "rbac.authorization.k8s.io" {
        let ns = t.namespace.as_deref().unwrap_or_default();
        crate::auth::check_escalation(&app.store, &req.user, &info.resource, ns, &obj, None)?;
    }
    if info.group.is_empty() && info.resource == "pods" {
        mutate_new_pod(app, req, t, &name, &mut obj)?;
    }
    if info.group == "certificates.k8s.io"
        && let Some(why) = crate::certificates::subject_restriction(&obj)
    {
        return Err(ApiError::forbidden(&Subject { name: name.clone(), ..t.subject() }, why));
    }
    restrict_node(req, t, Operation::Create, &name, Some(&obj), None)?;
    if crate::webhooks::admit(app, req, t, "CREATE", Some(&mut obj), None).await?.patched {
        revalidate(req, t, &name, &mut obj)?;
    }
    crate::handlers::pod_admission::admit(app, req, t, &name, &obj, None)?;
    admit_priority_class(app, t, &name, &obj)?;
    crate::handlers::limit_admission::check(app, t, &name, &mut obj)?;
    // Held until the object is stored: another object checked meanwhile counts this one.
    let _quota = crate::handlers::quota_admission::admit_new(app, t, &name, &obj).await?;
    if track {
        track_update(req, t, None, &mut obj)?;
    }
    obj["apiVersion"] = Value::String(info.storage_api_version());
    let subject = Subject { name: name.clone(), ..t.subject() };
    // A Service's cluster IP and node ports are chosen under a lock held until it is stored, so two
    // never share one.
    let _allocating = if info.group.is_empty() && info.resource == "services" {
        Some(allocate_service_addresses(app, &info, &subject, &mut obj).await?)
    } else {
        None
    };
    if dry_run(req) {
        return Ok(respond_object(req, t, 201, &Arc::new(obj)));
    }
    let key = object_key(t.namespace.as_deref().unwrap_or_default(), &name);
    let stored = app
        .store
        .write(Op::Create { gr: info.gr(), key, object: obj })
        .await
        .map_err(|e| ApiError::from_store(e, &subject))?;
    if let Some(ci) = crd_info {
        app.registry.install_crd(ci);
    }
    if info.group.is_empty() && info.resource == "namespaces" {
        populate_namespace(app, &name).await;
    }
    Ok(respond_stored(&app.store, req, t, 201, &stored))
}

/// A new CRD checked (its resource described) and given the finalizer that deletes its instances.
fn admit_new_crd(obj: &mut Value) -> Result<ResourceInfo> {
    let ci = admit_crd(obj, None)?;
    let mut f = finalizers(obj);
    if !f.iter().any(|x| x == CRD_CLEANUP) {
        f.push(CRD_CLEANUP.into());
    }
    set_finalizers(obj, f);
    Ok(ci)
}

/// Every namespace gets the cluster CA and a default ServiceAccount, as kube's controllers do.
async fn populate_namespace(app: &Arc<App>, name: &str) {
    if let Err(e) = crate::cluster_objects::ensure_namespace_objects(app, name).await {
        tracing::warn!(namespace = %name, error = %e, "could not create kube-root-ca.crt or the default ServiceAccount");
    }
}

/// A new object's namespace (the path's; the body may repeat it, not contradict it) and name (given, or
/// `generateName` + `suffix`); the name, or an empty one with its error in `errs`.
fn place(
    info: &ResourceInfo,
    path_namespace: Option<&str>,
    obj: &mut Value,
    errs: &mut Vec<FieldError>,
    suffix: &str,
) -> Result<String> {
    let meta = obj["metadata"].as_object_mut().ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
    if info.namespaced {
        let ns = path_namespace.unwrap_or_default();
        match meta.get("namespace").and_then(Value::as_str) {
            Some(n) if !n.is_empty() && n != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {
                meta.insert("namespace".into(), Value::String(ns.to_string()));
            }
        }
    } else {
        meta.remove("namespace");
    }
    if meta.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
        match meta.get("generateName").and_then(Value::as_str).filter(|g| !g.is_empty()) {
            Some(prefix) => {
                let prefix: String = prefix.chars().take(58).collect();
                meta.insert("name".into(), Value::String(format!("{prefix}{suffix}")));
            }
            None => errs.push(FieldError::required("metadata.name", "name or generateName is required")),
        }
    }
    Ok(meta.get("name").and_then(Value::as_str).unwrap_or_default().to_string())
}

/// A new object's status and generation: status is owned by the status subresource, so creation starts
/// it afresh (a pod Pending, a namespace Active, a custom resource without one); generation 1.
fn start_status(info: &ResourceInfo, version: &str, obj: &mut Value) {
    if info.version(version).is_some_and(|v| v.status) {
        match info.resource.as_str() {
            // Its QoS class follows from its resources once admission has set them (`limit_admission`).
            "pods" => obj["status"] = json!({"phase": "Pending", "qosClass": "BestEffort"}),
            "namespaces" => init_namespace(obj),
            "customresourcedefinitions" => {}
            _ if info.crd.is_some() => {
                if let Some(m) = obj.as_object_mut() {
                    m.remove("status");
                }
            }
            _ => obj["status"] = crate::typed::fresh_status(&info.group, version, &info.kind),
        }
    }
    if info.generation {
        obj["metadata"]["generation"] = json!(1);
    }
}

/// Chooses a new Service's cluster IP and node ports; the guard returned keeps others from choosing
/// until this one is stored.
async fn allocate_service_addresses<'a>(
    app: &'a App,
    info: &ResourceInfo,
    subject: &Subject,
    obj: &mut Value,
) -> Result<tokio::sync::MutexGuard<'a, ()>> {
    let guard = app.ip_lock.lock().await;
    let (services, _) = app.store.list(&info.gr(), None, None).map_err(|e| ApiError::from_store(e, subject))?;
    if let Some(range) = &app.service_range {
        let used = crate::service_ips::in_use(services.iter().map(|(_, o)| o.as_ref()));
        crate::service_ips::assign(range, obj, &used, rand::random())
            .map_err(|e| invalid(info, &subject.name, &[e]))?;
    }
    let used = crate::node_ports::in_use(services.iter().map(|(k, o)| (k.as_str(), o.as_ref())), "");
    crate::node_ports::assign(obj, None, &used, rand::random()).map_err(|e| invalid(info, &subject.name, &[e]))?;
    Ok(guard)
}

/// Validates again an object a mutating webhook changed.
fn revalidate(req: &mut Req, t: &Target, name: &str, obj: &mut Value) -> Result<()> {
    let mut errs = Vec::new();
    validate_body(req, &t.info, &t.version, obj, &mut errs)?;
    if errs.is_empty() { Ok(()) } else { Err(invalid(&t.info, name, &errs)) }
}

/// Admits an update of `old` to `new` (both in the storage version): RBAC escalation prevention,
/// then the admission webhooks (which see the version the request used).
pub(crate) async fn admit_update(app: &Arc<App>, req: &mut Req, t: &Target, old: &Obj, new: &mut Value) -> Result<()> {
    restrict_node(req, t, Operation::Update, meta_str(old, "name").unwrap_or_default(), Some(new), Some(old))?;
    if t.info.group == "rbac.authorization.k8s.io" {
        let ns = t.namespace.as_deref().unwrap_or_default();
        crate::auth::check_escalation(&app.store, &req.user, &t.info.resource, ns, new, Some(old))?;
    }
    if t.info.group == "certificates.k8s.io" {
        authorize_signer(app, req, t, old, new)?;
    }
    if t.info.group.is_empty() && t.info.resource == "services" && t.sub.is_none() {
        // Node ports the update adds (a port, or the type NodePort) come free; those it leaves out stay.
        let _allocating = app.ip_lock.lock().await;
        let (services, _) =
            app.store.list(&t.info.gr(), None, None).map_err(|e| ApiError::from_store(e, &t.subject()))?;
        let name = meta_str(new, "name").unwrap_or_default().to_string();
        let key = object_key(t.namespace.as_deref().unwrap_or_default(), &name);
        let used = crate::node_ports::in_use(services.iter().map(|(k, o)| (k.as_str(), o.as_ref())), &key);
        crate::node_ports::assign(new, Some(old), &used, rand::random()).map_err(|e| invalid(&t.info, &name, &[e]))?;
    }
    admit_priority_class(app, t, meta_str(new, "name").unwrap_or_default(), new)?;
    if t.info.resource == "persistentvolumeclaims" {
        // A claim's resize is held to its namespace's LimitRanges (a pod's resources do not change).
        let name = meta_str(new, "name").unwrap_or_default().to_string();
        crate::handlers::limit_admission::check(app, t, &name, new)?;
    }
    if t.info.group.is_empty() && matches!(t.info.resource.as_str(), "persistentvolumeclaims" | "services") {
        let name = meta_str(new, "name").unwrap_or_default().to_string();
        crate::handlers::quota_admission::admit_change(app, t, &name, new, old)?;
    }
    // Namespaces' labels and workloads' templates (a pod's spec barely changes after creation).
    if !(t.info.group.is_empty() && t.info.resource == "pods") && t.sub.is_none() {
        let name = meta_str(new, "name").unwrap_or_default().to_string();
        crate::handlers::pod_admission::admit(app, req, t, &name, new, Some(old))?;
    }
    if !crate::webhooks::configured(&app.store) {
        return Ok(());
    }
    let storage_version = new.get("apiVersion").cloned();
    new["apiVersion"] = json!(t.info.api_version(&t.version));
    let old = to_version(&t.info, &t.version, old);
    let name = meta_str(&old, "name").unwrap_or_default().to_string();
    if crate::webhooks::admit(app, req, t, "UPDATE", Some(new), Some(&old)).await?.patched {
        revalidate(req, t, &name, new)?;
    }
    if let Some(v) = storage_version {
        new["apiVersion"] = v;
    }
    Ok(())
}

/// NodeRestriction ([`crate::node_restriction`]) for a request made with a node's credential; `old` is
/// the object stored, or the pod a subresource acts on.
pub(crate) fn restrict_node(
    req: &Req,
    t: &Target,
    operation: Operation,
    name: &str,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Result<()> {
    let Some(node) = crate::node_restriction::node_of(&req.user) else { return Ok(()) };
    let write = crate::node_restriction::Write {
        operation,
        group: &t.info.group,
        resource: &t.info.resource,
        subresource: t.sub.as_deref(),
        namespace: t.namespace.as_deref().unwrap_or_default(),
        name,
        object,
        old,
    };
    crate::node_restriction::check(node, &write)
        .map_err(|why| ApiError::forbidden(&Subject { name: name.to_string(), ..t.subject() }, why.0))
}

/// kube-apiserver's CertificateApproval and CertificateSigning admission: approving or denying a
/// request (`/approval`) takes `approve` on its signer, and writing its certificate (`/status`) `sign`
/// (on `certificates.k8s.io` `signers` named the signer or `<domain>/*`).
fn authorize_signer(app: &App, req: &Req, t: &Target, old: &Obj, new: &Value) -> Result<()> {
    let (verb, action) = match t.sub.as_deref() {
        Some("approval") => ("approve", "approve"),
        Some("status") if old.at("/status/certificate") != new.at("/status/certificate") => ("sign", "sign"),
        _ => return Ok(()),
    };
    let signer = old.at("/spec/signerName").and_then(Value::as_str).unwrap_or_default();
    if crate::auth::signer_allowed(&app.store, &req.user, verb, signer) {
        return Ok(());
    }
    let name = meta_str(old, "name").unwrap_or_default().to_string();
    let why = format!("user not permitted to {action} requests with signerName {signer:?}");
    Err(ApiError::forbidden(&Subject { name, ..t.subject() }, why))
}

/// Prepares an update of `old` to `new` through the main resource or a subresource; returns the
/// object to store (in the storage version).
pub(crate) fn prepare_update(req: &mut Req, t: &Target, old: &Obj, mut new: Value) -> Result<Value> {
    let info = &t.info;
    let name = t.name.clone().unwrap_or_default();
    check_type_meta(req, info, &t.version, &mut new)?;
    let mut errs = check_object_meta(info, &mut new, false)?;
    check_identity(t, old, &mut new)?;
    let has_status = info.version(&t.version).is_some_and(|v| v.status);
    let mut result = match t.sub.as_deref() {
        Some(sub @ ("status" | "ephemeralcontainers" | "approval" | "finalize")) => {
            subresource_update(sub, old, &new, &mut errs)
        }
        _ => main_update(info, has_status, old, new, &mut errs)?,
    };
    if info.group.is_empty() && info.resource == "pods" && t.sub.is_none() {
        crate::builtin_scheduling::keep_priority(old, &mut result);
    }
    errs.extend(unchangeable_errors(info, old, &result));
    validate_body(req, info, &t.version, &mut result, &mut errs)?;
    if t.sub.is_none() && info.crd.is_none() {
        // What a built-in kind's strategy lets an update change (compared defaulted, as stored).
        errs.extend(crate::builtin_update::update_errors(&info.group, &info.resource, old, &result));
    }
    if !errs.is_empty() {
        return Err(invalid(info, &name, &errs));
    }
    if info.group == "apps" && info.resource == "deployments" && t.sub.is_none() {
        crate::builtin::deployment_revision(Some(old), &mut result);
    }
    if info.generation {
        let g = old.at("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
        let g = if spec_changed(info, &t.version, old, &result) { g + 1 } else { g };
        result["metadata"]["generation"] = json!(g);
    }
    if info.resource == "customresourcedefinitions" && info.group == "apiextensions.k8s.io" && t.sub.is_none() {
        admit_crd(&mut result, Some(old))?;
    }
    result["apiVersion"] = Value::String(info.storage_api_version());
    Ok(result)
}

/// An update's name and namespace are the URL's (the body may repeat them, not contradict them), and a
/// uid in the body is a precondition.
fn check_identity(t: &Target, old: &Value, new: &mut Value) -> Result<()> {
    let name = t.name.clone().unwrap_or_default();
    match meta_str(new, "name") {
        Some(n) if n != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        _ => new["metadata"]["name"] = Value::String(name),
    }
    if let Some(ns) = &t.namespace {
        match meta_str(new, "namespace") {
            Some(n) if !n.is_empty() && n != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => new["metadata"]["namespace"] = Value::String(ns.clone()),
        }
    }
    match (meta_str(new, "uid"), meta_str(old, "uid").unwrap_or_default()) {
        (Some(uid), was) if uid != was => Err(ApiError::conflict(
            &t.subject(),
            &format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {was}"),
        )),
        _ => Ok(()),
    }
}

/// An update through a subresource: only what that subresource owns changes.
fn subresource_update(sub: &str, old: &Value, new: &Value, errs: &mut Vec<FieldError>) -> Value {
    let mut merged = old.clone();
    match sub {
        "status" => match new.get("status") {
            Some(s) => merged["status"] = s.clone(),
            None => {
                if let Some(m) = merged.as_object_mut() {
                    m.remove("status");
                }
            }
        },
        "ephemeralcontainers" => match crate::ephemeral::update(old, new) {
            Ok(pod) => merged = pod,
            Err(e) => errs.extend(e),
        },
        "approval" => merged["status"]["conditions"] = new.at("/status/conditions").cloned().unwrap_or(json!([])),
        "finalize" => merged["spec"]["finalizers"] = new.at("/spec/finalizers").cloned().unwrap_or(json!([])),
        _ => {}
    }
    merged
}

/// An update of the main resource: the system's metadata and (with a status subresource) the status
/// stay as stored; a namespace's spec belongs to /finalize; a Service keeps its cluster IP.
fn main_update(
    info: &ResourceInfo,
    has_status: bool,
    old: &Value,
    mut new: Value,
    errs: &mut Vec<FieldError>,
) -> Result<Value> {
    let meta = new["metadata"].as_object_mut().ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
    for f in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"] {
        match old.at(&format!("/metadata/{f}")) {
            Some(v) => meta.insert(f.into(), v.clone()),
            None => meta.remove(f),
        };
    }
    if has_status {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    }
    if info.resource == "namespaces" {
        new["spec"] = old.get("spec").cloned().unwrap_or(json!({}));
    }
    if info.resource == "services"
        && info.group.is_empty()
        && let Err(e) = crate::service_ips::keep(old, &mut new)
    {
        errs.push(e);
    }
    Ok(new)
}

/// What an update may not change: a CSR's spec, a binding's roleRef, and no finalizer is added to an
/// object being deleted.
fn unchangeable_errors(info: &ResourceInfo, old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if info.resource == "certificatesigningrequests"
        && let Some(e) = crate::certificates::spec_unchanged(old, new)
    {
        errs.push(e);
    }
    if info.group == "rbac.authorization.k8s.io"
        && info.resource.ends_with("bindings")
        && let Some(e) = crate::auth::validate::role_ref_unchanged(old, new)
    {
        errs.push(e);
    }
    if is_deleting(old) {
        let before = finalizers(old);
        if let Some(added) = finalizers(new).into_iter().find(|f| !before.contains(f)) {
            errs.push(FieldError::forbidden(
                "metadata.finalizers",
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers [{added:?}]"
                ),
            ));
        }
    }
    errs
}

/// Stores an update prepared from `old`: a CAS on its resourceVersion. An object being deleted
/// whose last finalizer is gone is removed instead.
pub async fn commit_update(
    app: &App,
    info: &ResourceInfo,
    key: &str,
    old: &Obj,
    new: Value,
) -> Result<Obj, StoreError> {
    let gr = info.gr();
    let expect_rv = rv_of(old);
    let stored = if ready_to_vanish(info, &new) {
        app.store.write(Op::Delete { gr, key: key.to_string(), expect_rv }).await?
    } else if crate::ssa::managed::same_but_times(old, &new) {
        // Nothing changes: nothing is stored, the resourceVersion stays (as kube-apiserver does).
        return Ok(old.clone());
    } else {
        app.store.write(Op::Update { gr, key: key.to_string(), object: new, expect_rv }).await?
    };
    sync_crd(app, info, &stored, key);
    Ok(stored)
}

pub(crate) async fn update(app: &Arc<App>, req: &mut Req, t: &Target) -> Result<Response<Body>> {
    let body = parse_body(req)?;
    // A malformed resourceVersion is refused before anything is read.
    resource_version(&body)?;
    update_with(app, req, t, |_, _| Ok(body.clone())).await
}

/// The resourceVersion an object names as its precondition (none when empty or absent).
fn resource_version(object: &Value) -> Result<Option<u64>> {
    meta_str(object, "resourceVersion").filter(|s| !s.is_empty()).map(parse_rv).transpose()
}

/// A write from `old` whose object (the resource's, or a subresource's view of it) names a
/// resourceVersion holds only if `old` is at that version: a Conflict otherwise, as kube-apiserver's
/// optimistic concurrency answers.
pub(crate) fn precondition(object: &Value, old: &Obj, t: &Target) -> Result<()> {
    match resource_version(object)? {
        Some(rv) if rv != rv_of(old) => {
            Err(ApiError::from_store(StoreError::Conflict { expected: rv, found: rv_of(old) }, &t.subject()))
        }
        _ => Ok(()),
    }
}

/// An update of the stored object to what `new_from` makes of it (a PUT's body, the object patched),
/// tried again from the object stored then while other writes come between (16 times at most).
async fn update_with(
    app: &Arc<App>,
    req: &mut Req,
    t: &Target,
    mut new_from: impl FnMut(&Req, &Obj) -> Result<Value>,
) -> Result<Response<Body>> {
    let key = t.key();
    for _ in 0..16 {
        let old = app.store.get(&t.info.gr(), &key).ok_or_else(|| ApiError::not_found(&t.subject()))?;
        let new = new_from(req, &old)?;
        if let Some(answer) = try_update(app, req, t, &old, new).await? {
            return Ok(answer);
        }
    }
    Err(ApiError::conflict(&t.subject(), "too many concurrent updates; try again"))
}

/// One try of an update from `old` to `new`: the resourceVersion `new` names a precondition, then the
/// object prepared, admitted, its fields' managers tracked and committed (or only answered, on a dry
/// run). `None`: another write came first; the caller tries again from what is stored now.
async fn try_update(
    app: &Arc<App>,
    req: &mut Req,
    t: &Target,
    old: &Obj,
    new: Value,
) -> Result<Option<Response<Body>>> {
    precondition(&new, old, t)?;
    let mut new = prepare_update(req, t, old, new)?;
    admit_update(app, req, t, old, &mut new).await?;
    track_update(req, t, Some(old), &mut new)?;
    if dry_run(req) {
        return Ok(Some(respond_object(req, t, 200, &Arc::new(new))));
    }
    match commit_update(app, &t.info, &t.key(), old, new).await {
        Ok(stored) => Ok(Some(respond_stored(&app.store, req, t, 200, &stored))),
        Err(StoreError::Conflict { .. }) => Ok(None),
        Err(e) => Err(ApiError::from_store(e, &t.subject())),
    }
}

pub(crate) fn apply_patch(req: &Req, t: &Target, target: &mut Value) -> Result<()> {
    // The client patches the object it sees: managed fields as JSON, not as the store keeps them.
    crate::wire::expand(target);
    let r = match req.content_type.as_str() {
        "application/json-patch+json" => patch::json_patch(target, &req.body),
        "application/merge-patch+json" => patch::merge_patch(target, &req.body),
        "application/strategic-merge-patch+json" if t.info.crd.is_none() => {
            patch::strategic_merge_patch(target, &req.body)
        }
        "application/strategic-merge-patch+json" => {
            return Err(ApiError::unsupported_media_type(
                "strategic merge patch is not supported for custom resources; use application/merge-patch+json or application/json-patch+json",
            ));
        }
        other => {
            return Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format ({other}) - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
            )));
        }
    };
    // What a patch made is refused before anything walks it if the store could not keep it.
    let r = r.and_then(|()| {
        crate::limits::check(target).map_err(|e| {
            crate::limits::drop_deep(std::mem::take(target));
            match e {
                crate::limits::Exceeded::Size(_) => {
                    patch::PatchError::TooLarge(format!("limit is {}", crate::limits::MAX_OBJECT_BYTES))
                }
                depth => patch::PatchError::Failed(depth.to_string()),
            }
        })
    });
    r.map_err(|e| match e {
        patch::PatchError::TooLarge(m) => ApiError::too_large_because(m),
        patch::PatchError::Malformed(m) => ApiError::bad_request(m),
        patch::PatchError::Failed(m) => ApiError::invalid(
            &t.info.kind,
            &t.info.group,
            t.name.as_deref().unwrap_or_default(),
            &[FieldError::new(FieldErrorKind::Invalid, "", None, m)],
        ),
    })
}

pub(crate) async fn patch_object(app: &Arc<App>, req: &mut Req, t: &Target) -> Result<Response<Body>> {
    if req.params.contains_key("force") {
        return Err(ApiError::invalid(
            "PatchOptions",
            "meta.k8s.io",
            "",
            &[FieldError::forbidden("force", "may not be specified for non-apply patch")],
        ));
    }
    update_with(app, req, t, |req, old| {
        let mut working = (*to_version(&t.info, &t.version, old)).clone();
        apply_patch(req, t, &mut working)?;
        Ok(working)
    })
    .await
}

#[cfg(test)]
mod tests;
