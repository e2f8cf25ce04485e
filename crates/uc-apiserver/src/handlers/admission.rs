//! Admission: the checks and defaults create and update share (type and object metadata, schema
//! validation, field validation modes, namespaces, CRD admission).

use serde_json::{Map, Value, json};
use uc_api::{GroupResource, Pointer};

use crate::app::{App, Req};
use crate::builtin;
use crate::error::{ApiError, FieldError, Result, Subject};
use crate::handlers::meta::{meta_str, now};
use crate::registry::{ResourceInfo, crd_to_resource};
use crate::request::Target;
use crate::storage::{Obj, object_key};
use uc_api::selector::is_label_value;

pub(crate) fn check_type_meta(req: &mut Req, info: &ResourceInfo, version: &str, obj: &mut Value) -> Result<()> {
    match obj.get("apiVersion") {
        None => obj["apiVersion"] = Value::String(info.api_version(version)),
        Some(Value::String(av)) if info.is_api_version(version, av) => {}
        Some(Value::String(av))
            if info.version(uc_api::resource::split_api_version(av).1).is_some()
                && uc_api::resource::split_api_version(av).0 == info.group => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({}) does not match the expected API version ({})",
                other.as_str().map(String::from).unwrap_or_else(|| other.to_string()),
                info.api_version(version)
            )));
        }
    }
    match obj.get("kind") {
        None => obj["kind"] = Value::String(info.kind.clone()),
        Some(Value::String(k)) if *k == info.kind => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({}) does not match the kind of the resource {} ({})",
                other.as_str().map(String::from).unwrap_or_else(|| other.to_string()),
                info.gr(),
                info.kind
            )));
        }
    }
    // A version served in another shape is converted to the stored one here, before anything reads it;
    // its unknown fields are found first, in the shape they were written in (converted, they would be
    // dropped without a word).
    let body_version =
        obj.get("apiVersion").and_then(Value::as_str).map(|av| uc_api::resource::split_api_version(av).1.to_string());
    let Some(body_version) = body_version.filter(|v| crate::views::has_view(&info.group, &info.resource, v)) else {
        return Ok(());
    };
    if info.crd.is_none() {
        let (group, kind) = (info.group.clone(), info.kind.clone());
        let cannot = |why: String| {
            ApiError::bad_request(format!("{kind} in version {body_version:?} cannot be handled as a {kind}: {why}"))
        };
        match crate::typed::decode(&group, &body_version, &kind, obj) {
            Some(Err(why)) => return Err(cannot(why.0)),
            Some(Ok(decoded)) => unknown_fields(req, field_validation(req)?, obj, &decoded.unknown, cannot)?,
            None => {}
        }
    }
    if let Some(stored) = crate::views::from_view(&info.group, &info.resource, &body_version, obj) {
        *obj = stored;
    }
    Ok(())
}

/// Checks an object's metadata as kube's `ValidateObjectMeta` does; the name only when `creating` (it
/// cannot change afterwards, and an object stored under older rules stays writable).
pub(crate) fn check_object_meta(info: &ResourceInfo, obj: &mut Value, creating: bool) -> Result<Vec<FieldError>> {
    if obj.get("metadata").is_none() || obj["metadata"].is_null() {
        obj["metadata"] = json!({});
    }
    let Some(meta) = obj["metadata"].as_object_mut() else {
        return Err(ApiError::bad_request("metadata: must be an object"));
    };
    let mut errs = Vec::new();
    for field in ["labels", "annotations"] {
        match meta.get(field) {
            None | Some(Value::Null) => {
                meta.remove(field);
            }
            Some(Value::Object(m)) => {
                for (k, v) in m {
                    if !v.is_string() {
                        return Err(ApiError::bad_request(format!("metadata.{field}.{k}: must be a string, not {v}")));
                    }
                    if field == "labels" && !is_label_value(v.as_str().unwrap_or_default()) {
                        errs.push(FieldError::invalid("metadata.labels", v, "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"));
                    }
                    for why in uc_api::names::qualified_name_errors(k) {
                        errs.push(FieldError::invalid(format!("metadata.{field}"), &Value::from(k.clone()), why));
                    }
                }
            }
            Some(other) => {
                return Err(ApiError::bad_request(format!("metadata.{field}: must be a map of strings, not {other}")));
            }
        }
    }
    match meta.get("finalizers") {
        None => {}
        Some(Value::Null) => {
            meta.remove("finalizers");
        }
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!("metadata.finalizers: must be a list of strings, not {other}")));
        }
    }
    check_owner_references(meta, &mut errs)?;
    for f in ["name", "generateName", "namespace", "resourceVersion", "uid"] {
        if let Some(v) = meta.get(f)
            && !v.is_string()
            && !v.is_null()
        {
            return Err(ApiError::bad_request(format!("metadata.{f}: must be a string, not {v}")));
        }
    }
    let rule = uc_api::names::NameRule::of(&info.group, &info.resource);
    for (field, prefix) in [("name", false), ("generateName", true)].into_iter().filter(|_| creating) {
        if let Some(name) = meta.get(field).and_then(Value::as_str).filter(|n| !n.is_empty()) {
            for why in rule.errors(name, prefix) {
                errs.push(FieldError::invalid(format!("metadata.{field}"), &Value::from(name), why));
            }
        }
    }
    Ok(errs)
}

/// `metadata.ownerReferences`: a list, each naming its owner fully, at most one of them the controller.
fn check_owner_references(meta: &mut Map<String, Value>, errs: &mut Vec<FieldError>) -> Result<()> {
    match meta.get("ownerReferences") {
        None => {}
        Some(Value::Null) => {
            meta.remove("ownerReferences");
        }
        Some(Value::Array(refs)) => {
            let mut controllers = 0;
            for (i, r) in refs.iter().enumerate() {
                for f in ["apiVersion", "kind", "name", "uid"] {
                    if r.get(f).and_then(Value::as_str).is_none_or(str::is_empty) {
                        errs.push(FieldError::required(format!("metadata.ownerReferences[{i}].{f}"), ""));
                    }
                }
                if r.get("controller") == Some(&Value::Bool(true)) {
                    controllers += 1;
                }
            }
            if controllers > 1 {
                errs.push(FieldError::invalid(
                    "metadata.ownerReferences",
                    &Value::Null,
                    "Only one reference can have Controller set to true",
                ));
            }
        }
        Some(other) => {
            return Err(ApiError::bad_request(format!("metadata.ownerReferences: must be a list, not {other}")));
        }
    }
    Ok(())
}

/// Field validation mode (`?fieldValidation=`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FieldValidation {
    /// Unknown fields are an error.
    Strict,
    /// Unknown fields are dropped with a warning.
    Warn,
    /// Unknown fields are dropped silently.
    Ignore,
}

fn field_validation(req: &Req) -> Result<FieldValidation> {
    match req.params.get("fieldValidation").map(String::as_str) {
        None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
        Some("Strict") => Ok(FieldValidation::Strict),
        Some("Ignore") => Ok(FieldValidation::Ignore),
        Some(other) => Err(ApiError::bad_request(format!(
            "fieldValidation: unsupported value {other:?}: must be Ignore, Warn or Strict"
        ))),
    }
}

/// Runs schema defaulting, pruning and validation (CRDs) or built-in defaulting and validation.
pub(crate) fn validate_body(
    req: &mut Req,
    info: &ResourceInfo,
    version: &str,
    obj: &mut Value,
    errs: &mut Vec<FieldError>,
) -> Result<()> {
    let mode = field_validation(req)?;
    match info.version(version).and_then(|v| v.schema.clone()) {
        Some(schema) => {
            let Some(map) = obj.as_object_mut() else {
                return Ok(());
            };
            let kept: Vec<(String, Value)> = ["apiVersion", "kind", "metadata"]
                .iter()
                .filter_map(|k| map.remove(*k).map(|v| (k.to_string(), v)))
                .collect();
            schema.apply_defaults(obj);
            let mut pruned = Vec::new();
            schema.prune(obj, "", &mut pruned);
            // Validated with its type and metadata back (a schema may require them, as controller-gen's do).
            if let Some(map) = obj.as_object_mut() {
                for (k, v) in kept {
                    map.insert(k, v);
                }
            }
            schema.validate(obj, "", errs);
            if !pruned.is_empty() {
                match mode {
                    FieldValidation::Strict => {
                        let list: Vec<String> = pruned.iter().map(|p| format!("unknown field {p:?}")).collect();
                        return Err(ApiError::bad_request(format!(
                            "{} in version {:?} cannot be handled as a {}: strict decoding error: {}",
                            info.kind,
                            version,
                            info.kind,
                            list.join(", ")
                        )));
                    }
                    FieldValidation::Warn => req.warnings.extend(pruned.iter().map(|p| format!("unknown field {p:?}"))),
                    FieldValidation::Ignore => {}
                }
            }
        }
        None if info.crd.is_none() => {
            decode_builtin(req, info, version, mode, obj)?;
            builtin::apply_defaults(&info.resource, obj);
            errs.extend(builtin::validate(&info.resource, obj));
        }
        None => {}
    }
    Ok(())
}

/// A built-in object decoded as kube-apiserver decodes it ([`crate::typed`]): a field that does not read
/// is a 400 naming it; unknown fields are refused (Strict) or warned of (Warn) and dropped; the scalars
/// its Go type always writes are filled in with their zero values.
fn decode_builtin(
    req: &mut Req,
    info: &ResourceInfo,
    version: &str,
    mode: FieldValidation,
    obj: &mut Value,
) -> Result<()> {
    let kind = &info.kind;
    let cannot = |why: String| {
        ApiError::bad_request(format!("{kind} in version {version:?} cannot be handled as a {kind}: {why}"))
    };
    // Decoded as what it is by now: another group's version of the kind is already in this one's form
    // (events.k8s.io's Events are core Events).
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_string();
    let (group, own_version) = uc_api::resource::split_api_version(&api_version);
    let crate::typed::Decoded { unknown, zeros } = match crate::typed::decode(group, own_version, kind, obj) {
        None => return Ok(()),
        Some(Err(why)) => return Err(cannot(why.0)),
        Some(Ok(decoded)) => decoded,
    };
    crate::typed::fill(obj, &zeros);
    unknown_fields(req, mode, obj, &unknown, cannot)
}

/// A built-in object's `unknown` fields as the field validation `mode` treats them: refused (in the
/// words `cannot` puts the reason in), or warned of and dropped, or dropped.
fn unknown_fields(
    req: &mut Req,
    mode: FieldValidation,
    obj: &mut Value,
    unknown: &[String],
    cannot: impl Fn(String) -> ApiError,
) -> Result<()> {
    if unknown.is_empty() {
        return Ok(());
    }
    let named: Vec<String> = unknown.iter().map(|p| format!("unknown field {p:?}")).collect();
    match mode {
        FieldValidation::Strict => return Err(cannot(format!("strict decoding error: {}", named.join(", ")))),
        FieldValidation::Warn => req.warnings.extend(named),
        FieldValidation::Ignore => {}
    }
    crate::typed::remove(obj, unknown);
    Ok(())
}

pub(crate) fn invalid(info: &ResourceInfo, name: &str, errs: &[FieldError]) -> ApiError {
    ApiError::invalid(&info.kind, &info.group, name, errs)
}

/// Whether the parts of an object that `generation` tracks differ.
pub(crate) fn spec_changed(info: &ResourceInfo, version: &str, old: &Value, new: &Value) -> bool {
    let has_status = info.version(version).is_some_and(|v| v.status);
    // Compared in place, member by member (both in key order), not copied first.
    !tracked_members(old, has_status).eq(tracked_members(new, has_status))
}

/// The members of an object that `generation` tracks: all but metadata, the type and (with a status
/// subresource) the status.
fn tracked_members(v: &Value, has_status: bool) -> impl Iterator<Item = (&String, &Value)> {
    let untracked = move |k: &str| matches!(k, "metadata" | "apiVersion" | "kind") || (has_status && k == "status");
    v.as_object().into_iter().flatten().filter(move |(k, _)| !untracked(k))
}

pub(crate) fn namespace_check(app: &App, t: &Target, ns: &str) -> Result<()> {
    // What the kept namespace says beside its JSON: no decoding on every create (issue 58).
    let nso = app.store.get_kept(&GroupResource::new("", "namespaces"), &object_key("", ns));
    let subject = Subject { group: String::new(), resource: "namespaces".into(), name: ns.into() };
    match nso {
        None => Err(ApiError::not_found(&subject)),
        Some(o) if o.deleting() => Err(ApiError::forbidden(
            &Subject { name: ns.into(), ..t.subject() },
            format!("unable to create new content in namespace {ns} because it is being terminated"),
        )),
        Some(_) => Ok(()),
    }
}

/// Fills status and stored versions of a CRD, checking it first.
pub(crate) fn admit_crd(obj: &mut Value, old: Option<&Value>) -> Result<crate::registry::ResourceInfo> {
    let name = meta_str(obj, "name").unwrap_or_default().to_string();
    let info = crd_to_resource(obj)
        .map_err(|errs| ApiError::invalid("CustomResourceDefinition", "apiextensions.k8s.io", &name, &errs))?;
    let mut stored: Vec<String> = old
        .and_then(|o| o.at("/status/storedVersions"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
        .unwrap_or_default();
    if !stored.contains(&info.storage_version) {
        stored.push(info.storage_version.clone());
    }
    let ts = now();
    obj["status"] = json!({
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": ts},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": ts},
        ],
        "acceptedNames": obj.at("/spec/names").cloned().unwrap_or(Value::Null),
        "storedVersions": stored,
    });
    Ok(info)
}

/// Keeps the registry in step with a CRD write.
pub(crate) fn sync_crd(app: &App, info: &ResourceInfo, stored: &Obj, key: &str) {
    if info.resource != "customresourcedefinitions" || info.group != "apiextensions.k8s.io" {
        return;
    }
    let exists = app.store.get_kept(&info.gr(), key).is_some();
    match crd_to_resource(stored) {
        Ok(ci) if exists => app.registry.install_crd(ci),
        Ok(ci) => app.registry.remove_crd(&ci.gr()),
        Err(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn info(group: &str, resource: &str) -> std::sync::Arc<ResourceInfo> {
        Registry::new().get(&GroupResource::new(group, resource)).expect("a built-in resource")
    }

    #[test]
    fn object_metadata_is_checked_as_validate_object_meta_does() {
        let cm = info("", "configmaps");
        let mut ok = json!({"metadata": {"name": "a", "labels": {"app": "x"}, "annotations": null}});
        assert!(check_object_meta(&cm, &mut ok, true).unwrap().is_empty());
        assert!(ok["metadata"].get("annotations").is_none(), "a null map is dropped");
        let mut number = json!({"metadata": {"name": "a", "labels": {"n": 1}}});
        assert_eq!(check_object_meta(&cm, &mut number, true).unwrap_err().code(), 400);
        let mut bad_value = json!({"metadata": {"name": "a", "labels": {"app": "-x-"}}});
        let errs = check_object_meta(&cm, &mut bad_value, true).unwrap();
        assert_eq!(errs.iter().map(|e| e.field.as_str()).collect::<Vec<_>>(), ["metadata.labels"]);
        // The name is checked on creation only: an object stored under older rules stays writable.
        let mut bad_name = json!({"metadata": {"name": "Not_A_Name"}});
        assert_eq!(check_object_meta(&cm, &mut bad_name.clone(), true).unwrap().len(), 1);
        assert!(check_object_meta(&cm, &mut bad_name, false).unwrap().is_empty());
        let mut finalizers = json!({"metadata": {"name": "a", "finalizers": [1]}});
        assert_eq!(check_object_meta(&cm, &mut finalizers, true).unwrap_err().code(), 400);
    }

    #[test]
    fn owner_references_name_their_owner_and_one_controller_at_most() {
        let cm = info("", "configmaps");
        let owner = |uid: &str, controller: bool| json!({"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": uid, "controller": controller});
        let mut one = json!({"metadata": {"name": "a", "ownerReferences": [owner("1", true), owner("2", false)]}});
        assert!(check_object_meta(&cm, &mut one, true).unwrap().is_empty());
        let mut two = json!({"metadata": {"name": "a", "ownerReferences": [owner("1", true), owner("2", true)]}});
        let errs = check_object_meta(&cm, &mut two, true).unwrap();
        assert!(errs.iter().any(|e| e.field == "metadata.ownerReferences"), "{errs:?}");
        let mut nameless =
            json!({"metadata": {"name": "a", "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "uid": "1"}]}});
        let errs = check_object_meta(&cm, &mut nameless, true).unwrap();
        assert_eq!(errs.iter().map(|e| e.field.as_str()).collect::<Vec<_>>(), ["metadata.ownerReferences[0].name"]);
        let mut null = json!({"metadata": {"name": "a", "ownerReferences": null}});
        assert!(check_object_meta(&cm, &mut null, true).unwrap().is_empty());
        assert!(null["metadata"].get("ownerReferences").is_none());
    }

    #[test]
    fn generation_follows_everything_but_metadata_and_a_subresource_status() {
        let deploy = info("apps", "deployments");
        let old = json!({"metadata": {"name": "d", "labels": {"a": "1"}}, "spec": {"replicas": 1}, "status": {"replicas": 1}});
        let labels = json!({"metadata": {"name": "d", "labels": {"a": "2"}}, "spec": {"replicas": 1}, "status": {"replicas": 1}});
        let status = json!({"metadata": {"name": "d"}, "spec": {"replicas": 1}, "status": {"replicas": 3}});
        let spec = json!({"metadata": {"name": "d"}, "spec": {"replicas": 2}, "status": {"replicas": 1}});
        assert!(!spec_changed(&deploy, "v1", &old, &labels));
        assert!(!spec_changed(&deploy, "v1", &old, &status), "status is the subresource's");
        assert!(spec_changed(&deploy, "v1", &old, &spec));
    }
}
