//! What one REST request addresses and asks for: the target resource and object, selectors,
//! resourceVersion, the body, and how an object is rendered back (JSON, metadata only, Table).

use std::sync::Arc;

use http::Response;
use serde_json::{Value, json};
use uc_api::{FieldSelector, LabelSelector, Pointer};

use crate::app::{Body, Params, Render, Req, json_response};
use crate::error::{ApiError, Result, Subject};
use crate::handlers::meta::meta_str;
use crate::registry::ResourceInfo;
use crate::storage::{Obj, object_key};
use crate::table;

/// A request for a resource path.
#[derive(Debug, Clone)]
pub struct Target {
    /// The resource.
    pub info: Arc<ResourceInfo>,
    /// Requested version.
    pub version: String,
    /// Namespace from the path.
    pub namespace: Option<String>,
    /// Object name from the path.
    pub name: Option<String>,
    /// Subresource.
    pub sub: Option<String>,
    /// Legacy `/watch/` path prefix.
    pub watch_prefix: bool,
}

impl Target {
    /// The storage key of the named object.
    pub fn key(&self) -> String {
        object_key(self.namespace.as_deref().unwrap_or_default(), self.name.as_deref().unwrap_or_default())
    }

    /// Error subject.
    pub fn subject(&self) -> Subject {
        Subject {
            group: self.info.group.clone(),
            resource: self.info.resource.clone(),
            name: self.name.clone().unwrap_or_default(),
        }
    }
}

pub(crate) fn parse_body(req: &Req) -> Result<Value> {
    if req.body.is_empty() {
        return Err(ApiError::bad_request("the request body is empty"));
    }
    let v: Value = match req.content_type.as_str() {
        "application/yaml" | "application/x-yaml" | "text/yaml" => serde_yaml_ng::from_slice(&req.body)
            .map_err(|e| ApiError::bad_request(format!("the body is not valid YAML: {e}")))?,
        "application/vnd.kubernetes.protobuf" => {
            crate::proto::decode(&req.body).map_err(|e| ApiError::bad_request(e.to_string()))?
        }
        "" | "application/json" | "*/*" => serde_json::from_slice(&req.body)
            .map_err(|e| ApiError::bad_request(format!("the body is not valid JSON: {e}")))?,
        other => {
            return Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format ({other}) - accepted media types include: application/json, application/yaml"
            )));
        }
    };
    if !v.is_object() {
        return Err(ApiError::bad_request("the request body must be a JSON object"));
    }
    Ok(v)
}

pub(crate) fn dry_run(req: &Req) -> bool {
    req.params.get("dryRun").is_some_and(|v| v == "All")
}

/// Whether an object stored at `api_version` is served at `version` as it is stored: what [`to_version`]
/// returns unchanged, so that its stored JSON can be sent as it is.
pub fn served_as_stored(info: &ResourceInfo, version: &str, api_version: &str) -> bool {
    !crate::views::has_view(&info.group, &info.resource, version) && info.is_api_version(version, api_version)
}

/// The object as served at `version` (conversion strategy None: only apiVersion changes).
pub fn to_version(info: &ResourceInfo, version: &str, obj: &Obj) -> Obj {
    if let Some(view) = crate::views::to_view(&info.group, &info.resource, version, obj) {
        return Arc::new(view);
    }
    if obj.get("apiVersion").and_then(Value::as_str).is_some_and(|av| info.is_api_version(version, av)) {
        return obj.clone();
    }
    let mut v = (**obj).clone();
    v["apiVersion"] = Value::String(info.api_version(version));
    Arc::new(v)
}

/// An object as `PartialObjectMetadata`, serialized from its metadata where it lies (not copied into
/// a new value first: the metadata holds the managed fields, most of a small object's bytes).
#[derive(serde::Serialize)]
pub(crate) struct PartialMetadata<'a> {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    metadata: Option<crate::wire::Member<'a>>,
}

/// Appends a `PartialObjectMetadata` whose metadata is already JSON (None: the object has none): the
/// bytes [`PartialMetadata`] writes.
pub(crate) fn write_partial_metadata(out: &mut Vec<u8>, metadata: Option<&[u8]>) {
    out.extend_from_slice(br#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":"#);
    out.extend_from_slice(metadata.unwrap_or(b"null"));
    out.push(b'}');
}

impl<'a> PartialMetadata<'a> {
    pub(crate) fn of(obj: &'a Value) -> Self {
        PartialMetadata {
            kind: "PartialObjectMetadata",
            api_version: "meta.k8s.io/v1",
            metadata: obj.get("metadata").map(|m| crate::wire::Member("metadata", m)),
        }
    }
}

/// The answer to a write: the object the store kept, its JSON shared with the watch events of the write
/// when it is sent as stored.
pub(crate) fn respond_stored(
    store: &crate::storage::Store,
    req: &Req,
    t: &Target,
    code: u16,
    stored: &Obj,
) -> Response<Body> {
    let as_stored =
        matches!(req.negotiated.render, Render::Json) && Arc::ptr_eq(&to_version(&t.info, &t.version, stored), stored);
    match store.encoded(stored).filter(|_| as_stored) {
        Some(json) => crate::app::bytes_response(code, json, "application/json"),
        None => respond_object(req, t, code, stored),
    }
}

pub(crate) fn respond_object(req: &Req, t: &Target, code: u16, obj: &Obj) -> Response<Body> {
    let obj = to_version(&t.info, &t.version, obj);
    match req.negotiated.render {
        Render::Json => json_response(code, &crate::app::KubeOrder(&obj)),
        Render::Metadata => json_response(code, &PartialMetadata::of(&obj)),
        Render::Table => {
            let include = include_object(req);
            let table = json!({
                "kind": "Table", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": meta_str(&obj, "resourceVersion").unwrap_or_default()},
                "columnDefinitions": table::column_definitions(&t.info, &t.version),
                "rows": [table::row(&t.info, &t.version, &obj, include)],
            });
            json_response(code, &crate::app::KubeOrder(&table))
        }
    }
}

/// `?includeObject=` for tables.
pub fn include_object(req: &Req) -> table::IncludeObject {
    match req.params.get("includeObject").map(String::as_str) {
        Some("None") => table::IncludeObject::None,
        Some("Object") => table::IncludeObject::Object,
        _ => table::IncludeObject::Metadata,
    }
}

/// Parsed label and field selectors of a request.
pub struct Selectors {
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
}

impl Selectors {
    /// From the query parameters.
    pub fn from_req(req: &Req) -> Result<Self> {
        let labels = LabelSelector::parse(req.params.get("labelSelector").map(String::as_str).unwrap_or_default())
            .map_err(|e| ApiError::bad_request(format!("invalid labelSelector: {e}")))?;
        let fields = FieldSelector::parse(req.params.get("fieldSelector").map(String::as_str).unwrap_or_default())
            .map_err(|e| ApiError::bad_request(format!("invalid fieldSelector: {e}")))?;
        Ok(Self { labels, fields })
    }

    /// Whether the selectors select everything (no object needs reading).
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.terms.is_empty()
    }

    /// Whether a kept object matches both selectors, decoding it only if there is a selector.
    pub fn matches_kept(&self, kept: &crate::kept::Kept) -> bool {
        self.is_empty() || self.matches(&kept.tree())
    }

    /// Whether an object matches both selectors.
    pub fn matches(&self, obj: &Value) -> bool {
        self.labels.matches_value(obj.at("/metadata/labels"))
            && self.fields.matches(|f| {
                let pointer = format!("/{}", f.replace('.', "/"));
                obj.at(&pointer)
                    .map(|v| match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .or_else(|| unset_field(f).map(String::from))
            })
    }
}

/// The value kube's field selectors see in a field the object leaves unset: the zero value of its Go
/// type, for the selectable fields that are not strings (`spec.unschedulable=false` matches a node that
/// was never cordoned).
pub fn unset_field(field: &str) -> Option<&'static str> {
    match field {
        "spec.unschedulable" | "spec.hostNetwork" => Some("false"),
        "status.replicas" | "status.successful" => Some("0"),
        _ => None,
    }
}

/// Parses a resourceVersion parameter; one that is not a revision is refused in kube-apiserver's words.
pub fn parse_rv(rv: &str) -> Result<u64> {
    rv.parse().map_err(|e: std::num::ParseIntError| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow => "value out of range",
            _ => "invalid syntax",
        };
        ApiError::bad_request(format!(
            "resourceVersion: Invalid value: {rv:?}: strconv.ParseUint: parsing {rv:?}: {why}"
        ))
    })
}

/// A boolean query parameter as Go's `strconv.ParseBool` reads it.
pub fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// Checks a list's or a watch's options as kube-apiserver decodes and validates them: numbers and
/// booleans that do not read are a 400, `resourceVersionMatch` without a `resourceVersion` (or `Exact`
/// at `0`) a 422 naming the field.
pub fn check_list_options(params: &Params) -> Result<()> {
    for name in ["limit", "timeoutSeconds"] {
        if let Some(v) = params.get(name)
            && v.parse::<u64>().is_err()
        {
            return Err(ApiError::bad_request(format!("invalid {name} {v:?}: must be a non-negative integer")));
        }
    }
    for name in ["watch", "allowWatchBookmarks", "sendInitialEvents"] {
        if let Some(v) = params.get(name)
            && !v.is_empty()
            && parse_bool(v).is_none()
        {
            return Err(ApiError::bad_request(format!("{name}: strconv.ParseBool: parsing {v:?}: invalid syntax")));
        }
    }
    if let Some(rv) = params.get("resourceVersion").filter(|rv| !rv.is_empty()) {
        parse_rv(rv)?;
    }
    // A watch's options are checked with the watch (`sendInitialEvents` takes NotOlderThan without a
    // resourceVersion), as kube checks them apart.
    if params.get("watch").and_then(|w| parse_bool(w)) == Some(true) {
        return Ok(());
    }
    let rv = params.get("resourceVersion").map(String::as_str).unwrap_or_default();
    let forbidden = match params.get("resourceVersionMatch").map(String::as_str) {
        Some(m) if !m.is_empty() && rv.is_empty() => {
            "resourceVersionMatch is forbidden unless resourceVersion is provided"
        }
        Some("Exact") if rv == "0" => "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        _ => return Ok(()),
    };
    Err(ApiError::invalid(
        "ListOptions",
        "meta.k8s.io",
        "",
        &[crate::error::FieldError::forbidden("resourceVersionMatch", forbidden)],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_is_served_as_stored_exactly_where_to_version_returns_it_unchanged() {
        use uc_api::GroupResource;
        let registry = crate::registry::Registry::new();
        let cases = [
            ("apps", "deployments", "v1", "apps/v1"),
            ("apps", "deployments", "v1", "v1"),
            ("", "configmaps", "v1", "v1"),
            ("", "configmaps", "v1", "apps/v1"),
            ("", "events", "v1", "v1"),
            ("events.k8s.io", "events", "v1", "v1"),
            ("apiextensions.k8s.io", "customresourcedefinitions", "v1", "apiextensions.k8s.io/v1"),
            ("apiextensions.k8s.io", "customresourcedefinitions", "v1beta1", "apiextensions.k8s.io/v1"),
        ];
        for (group, resource, version, stored_at) in cases {
            let info = registry.get(&GroupResource::new(group, resource)).expect("a built-in resource");
            let obj: Obj = Arc::new(serde_json::json!({"apiVersion": stored_at, "metadata": {"name": "a"}}));
            let unchanged = Arc::ptr_eq(&to_version(&info, version, &obj), &obj);
            assert_eq!(served_as_stored(&info, version, stored_at), unchanged, "{group}/{resource} {version}");
        }
    }

    #[test]
    fn a_kept_object_is_decoded_for_selectors_only_when_there_are_some() {
        let kept = crate::kept::Kept::cold(&serde_json::json!({"metadata": {"name": "n", "labels": {"a": "b"}}}));
        let sel = |l: &str, f: &str| Selectors {
            labels: LabelSelector::parse(l).unwrap(),
            fields: FieldSelector::parse(f).unwrap(),
        };
        assert!(sel("", "").is_empty() && sel("", "").matches_kept(&kept));
        assert!(!sel("a=b", "").is_empty() && sel("a=b", "").matches_kept(&kept));
        assert!(!sel("a=c", "").matches_kept(&kept) && !sel("", "metadata.name=m").matches_kept(&kept));
        assert!(sel("", "metadata.name=n").matches_kept(&kept));
    }

    #[test]
    fn unset_boolean_and_number_fields_select_as_their_zero_value() {
        let sel =
            |s: &str| Selectors { labels: LabelSelector::parse("").unwrap(), fields: FieldSelector::parse(s).unwrap() };
        let node = serde_json::json!({"metadata": {"name": "n"}, "spec": {}});
        assert!(sel("spec.unschedulable=false").matches(&node));
        assert!(!sel("spec.unschedulable=true").matches(&node));
        let cordoned = serde_json::json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true}});
        assert!(
            sel("spec.unschedulable=true").matches(&cordoned) && sel("spec.unschedulable!=false").matches(&cordoned)
        );
        assert!(sel("status.phase!=Running").matches(&node), "strings are empty when unset");
    }

    #[test]
    fn list_options_are_checked_as_kube_decodes_them() {
        let params =
            |pairs: &[(&str, &str)]| -> Params { pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() };
        assert!(check_list_options(&params(&[("limit", "5"), ("resourceVersion", "7"), ("watch", "true")])).is_ok());
        let e = check_list_options(&params(&[("resourceVersion", "abc")])).unwrap_err();
        assert_eq!(
            (e.code(), e.0.message.as_str()),
            (400, r#"resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax"#)
        );
        assert!(parse_rv("99999999999999999999").unwrap_err().0.message.ends_with("value out of range"));
        assert_eq!(check_list_options(&params(&[("timeoutSeconds", "-1")])).unwrap_err().code(), 400);
        let e = check_list_options(&params(&[("allowWatchBookmarks", "maybe")])).unwrap_err();
        assert_eq!(e.0.message, r#"allowWatchBookmarks: strconv.ParseBool: parsing "maybe": invalid syntax"#);
        assert!(
            check_list_options(&params(&[("watch", "true"), ("resourceVersionMatch", "NotOlderThan")])).is_ok(),
            "a watch's are the watch's"
        );
        let e = check_list_options(&params(&[("resourceVersionMatch", "Exact")])).unwrap_err();
        assert_eq!(e.code(), 422);
        assert!(
            e.0.message.contains(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
            ),
            "{}",
            e.0.message
        );
        let e =
            check_list_options(&params(&[("resourceVersionMatch", "Exact"), ("resourceVersion", "0")])).unwrap_err();
        assert!(
            e.0.message.contains(r#"resourceVersionMatch "exact" is forbidden for resourceVersion "0""#),
            "{}",
            e.0.message
        );
    }
}
