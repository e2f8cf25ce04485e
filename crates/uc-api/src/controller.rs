//! The `UniversalController` resource (`universalcontroller.njuics.cn/v1alpha1`): what a user writes to
//! register a controller. The thesis's YAML listings parse as they are.

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// API group of uc's own resources.
pub const GROUP: &str = "universalcontroller.njuics.cn";
/// Version of uc's own resources.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` of uc's own resources.
pub const API_VERSION: &str = "universalcontroller.njuics.cn/v1alpha1";

/// The parent type, child types and hooks of a controller (`spec` of a UniversalController; the CRD,
/// `crds::universal_controller_crd`, is derived from these types and their doc comments).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "universalcontroller.njuics.cn",
    version = "v1alpha1",
    kind = "UniversalController",
    doc = "A controller of a parent resource type, written as hooks.",
    plural = "universalcontrollers",
    shortname = "uc",
    shortname = "uctl",
    status = "UniversalControllerStatus",
    printcolumn = r#"{"name": "Parent", "type": "string", "jsonPath": ".spec.parentResource.resource"}"#,
    printcolumn = r#"{"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name": "Synced", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Synced\")].status"}"#,
    printcolumn = r#"{"name": "Parents", "type": "integer", "jsonPath": ".status.parents"}"#,
    printcolumn = r#"{"name": "Failing", "type": "integer", "jsonPath": ".status.failing"}"#,
    printcolumn = r#"{"name": "Reason", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct UniversalControllerSpec {
    /// The parent type this controller manages.
    pub parent_resource: ParentResource,
    /// The child types it creates.
    #[serde(default)]
    pub child_resources: Vec<ChildResource>,
    /// Periodic resync of every parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resync_period_seconds: Option<f64>,
    /// Generate a unique selector per parent instead of using `spec.selector`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate_selector: Option<bool>,
    /// The hooks.
    #[serde(default)]
    pub hooks: Hooks,
    /// Connection settings (CA bundle, client TLS, authorization) for webhooks by host, as
    /// Metacontroller's `endpointConfigs`; a hook's own settings win over its host's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoint_configs: Vec<crate::webhook_auth::EndpointConfig>,
    /// The service account the engine acts as for this controller: its children are written, and its
    /// hooks' sources and credentials read, as that account (kube impersonation), so the controller
    /// can do no more than the account may. Unset: the engine's `--default-service-account`, else the
    /// engine's own identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// The namespace of `serviceAccountName` (default `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_namespace: Option<String>,
    /// The finalizer kept on parents while a finalize hook exists (default
    /// `universalcontroller.njuics.cn/<name>`): an operator taking over resources another one
    /// finalized (an Operator SDK project's `cache.example.com/finalizer`) names that one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finalizer_name: Option<String>,
    /// At most this many parents reconciled at once (default: the engine's `--workers`), as the
    /// Operator SDK's `maxConcurrentReconciles`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_reconciles: Option<u32>,
}

/// The parent resource rule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParentResource {
    /// `group/version` or `v1`.
    pub api_version: String,
    /// Plural resource name.
    pub resource: String,
    /// Fields whose change rolls children (rolling update strategies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history: Option<RevisionHistory>,
    /// Only parents whose labels this selector selects are reconciled (`matchLabels`,
    /// `matchExpressions`); two controllers of one parent type may run when their selectors are
    /// disjoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "free_form_object")]
    pub label_selector: Option<Value>,
    /// Only parents whose annotations this selects (`matchAnnotations`, `matchExpressions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "free_form_object")]
    pub annotation_selector: Option<Value>,
    /// A change of a parent's status alone does not sync it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_status_changes: Option<bool>,
}

/// Which parent fields belong to a revision.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevisionHistory {
    /// Dotted field paths, default `[spec]`.
    #[serde(default)]
    pub field_paths: Vec<String>,
}

/// A child resource rule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChildResource {
    /// `group/version` or `v1`.
    pub api_version: String,
    /// Plural resource name.
    pub resource: String,
    /// How existing children are updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,
}

/// Update strategy of a child type.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStrategy {
    /// `OnDelete` (default), `Recreate` (alias `ReCreate`), `InPlace`, `RollingRecreate`, `RollingInPlace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "method_schema")]
    pub method: Option<UpdateMethod>,
    /// Checks an updated child must pass before the next one moves (rolling methods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_checks: Option<StatusChecks>,
}

/// Status checks of rolling updates.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StatusChecks {
    /// Conditions that must hold.
    #[serde(default)]
    pub conditions: Vec<ConditionCheck>,
}

/// One condition check.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConditionCheck {
    /// Condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// Required status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Required reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The schema of `updateStrategy.method`: the methods' names, the thesis's `ReCreate` spelling too.
fn method_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "description": "How existing children are updated (default OnDelete).",
        "enum": ["OnDelete", "Recreate", "ReCreate", "InPlace", "RollingRecreate", "RollingInPlace"]
    })
}

/// The schema of free-form conditions: objects with any fields.
fn conditions_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
    })
}

impl ParentResource {
    /// The parent type `resource` of `api_version`.
    pub fn new(api_version: &str, resource: &str) -> ParentResource {
        ParentResource { api_version: api_version.into(), resource: resource.into(), ..Default::default() }
    }
}

impl ChildResource {
    /// The child type `resource` of `api_version`, updated by `method`.
    pub fn new(api_version: &str, resource: &str, method: UpdateMethod) -> ChildResource {
        let update_strategy = Some(UpdateStrategy { method: Some(method), status_checks: None });
        ChildResource { api_version: api_version.into(), resource: resource.into(), update_strategy }
    }
}

impl Hook {
    /// The native hook registered as `name`.
    pub fn native(name: &str) -> Hook {
        Hook { native: Some(Native { name: name.into(), config: None }), ..Default::default() }
    }
}

/// Update methods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum UpdateMethod {
    /// Never update existing children.
    #[default]
    OnDelete,
    /// Delete a differing child; it is created anew on a later sync.
    #[serde(alias = "ReCreate")]
    Recreate,
    /// Update a differing child in place.
    InPlace,
    /// One child at a time, by delete and create.
    RollingRecreate,
    /// One child at a time, in place.
    RollingInPlace,
}

impl UpdateStrategy {
    /// The method of a child type's strategy (OnDelete when none is given).
    pub fn method_of(s: Option<&UpdateStrategy>) -> UpdateMethod {
        s.and_then(|s| s.method).unwrap_or_default()
    }
}

/// The hooks of a controller.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Hooks {
    /// Required: computes status and desired children.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<Hook>,
    /// Called while a parent is deleted; it goes once this answers `finalized: true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finalize: Option<Hook>,
    /// Names related resources that are passed to sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub customize: Option<Hook>,
}

/// One hook: exactly one of webhook, javascript, exec, native.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Hook {
    /// The request layout (Metacontroller's hook versions): `v1` keys a namespaced parent's children
    /// by name, `v2` keys every namespaced object by `namespace/name` and lets the customize hook
    /// relate objects of any namespace. Default v1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<HookVersion>,
    /// An HTTP(S) endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<Webhook>,
    /// JavaScript run in-process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub javascript: Option<JavaScript>,
    /// A program run for each call: the request JSON on its stdin, the response on its stdout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<Exec>,
    /// A native hook compiled into uc (operators shipped with uc).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<Native>,
}

/// A hook's request layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum HookVersion {
    /// Children of a namespaced parent keyed by name (`namespace/name` under a cluster-scoped parent).
    #[default]
    #[serde(rename = "v1")]
    V1,
    /// Namespaced objects always keyed `namespace/name`.
    #[serde(rename = "v2")]
    V2,
}

/// An executable hook, run on the machine (or in the container) that runs the engine, as the engine's
/// user: the request JSON on stdin, the response JSON on stdout, stderr to uc's log; a non-zero exit,
/// a timeout or an answer that is not JSON fails the call (nothing changes). `UC_HOOK` says which
/// hook is called (`sync`, `finalize`, `customize`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Exec {
    /// The program and its arguments (the program looked up on `PATH` unless it is a path).
    pub command: Vec<String>,
    /// Timeout as a duration (`10s`, `500ms`); default 10s. The process is killed when it passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// Address-space limit of the process in MiB (`ulimit -v`); default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_mi_b: Option<u64>,
    /// Working directory; default the engine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
}

/// A webhook.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    /// Full URL; wins over service+path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Timeout as a duration (`10s`, `500ms`); default 10s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// Path appended to the service address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A Service to call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceReference>,
    /// CA bundle for https: PEM (or base64 PEM) as a string, or Metacontroller's
    /// `{inline | secretRef | configMapRef}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::webhook_auth::ca_bundle_schema")]
    pub ca_bundle: Option<crate::webhook_auth::CaBundle>,
    /// A bearer token sent with every call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token: Option<String>,
    /// An `Authorization` header from a Secret (`type` default Bearer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<crate::webhook_auth::Authorization>,
    /// HTTP basic authentication from a Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic_auth: Option<crate::webhook_auth::BasicAuth>,
    /// A client certificate from a Secret (mutual TLS).
    #[serde(default, rename = "clientTLS", skip_serializing_if = "Option::is_none")]
    pub client_tls: Option<crate::webhook_auth::ClientTls>,
    /// ETag caching: the last answer per parent is kept and `If-None-Match` sent; a 304 (or 412)
    /// reuses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<crate::webhook_auth::Etag>,
    /// `loose` (unknown response fields ignored, a missing list read as empty) or `strict`. Default:
    /// strict for UniversalControllers; for Metacontroller's controllers loose with v1 hooks, strict
    /// with v2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_un_marshall_mode: Option<String>,
}

/// A Service address for a webhook.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServiceReference {
    /// Service name.
    pub name: String,
    /// Service namespace.
    pub namespace: String,
    /// Port (default 80).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// `http` (default) or `https`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
}

/// JavaScript source, inline or from a ConfigMap or Secret.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JavaScript {
    /// Inline source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Source in a ConfigMap key (followed: an edit is used by the next sync).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_ref: Option<ConfigMapKeyRef>,
    /// Source in a Secret key (followed like a ConfigMap's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<ConfigMapKeyRef>,
    /// Wall-clock limit per call (duration, default 2s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// Memory limit in MiB (default 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_mi_b: Option<u64>,
}

/// A key of a ConfigMap (or of a Secret).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigMapKeyRef {
    /// The object's name.
    pub name: String,
    /// The object's namespace.
    pub namespace: String,
    /// Key holding the source.
    pub key: String,
}

/// A native hook by name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Native {
    /// Registered name.
    pub name: String,
    /// For a hook made from a description (`helm`: a chart and its watch; `ansible`: a project and its
    /// watch, as `uc package` writes them): what it is made from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "free_form_object")]
    pub config: Option<Value>,
}

/// A duration that does not parse: what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DurationError(pub String);

/// Parses a duration as Kubernetes writes one — Go's `time.ParseDuration` grammar (`10s`, `500ms`,
/// `1m30s`, `2h`, `1.5h`, `300us`), read by [`parse_go_duration`] — or a bare number of seconds (`2.5`,
/// as Metacontroller's hook timeouts and uc's flags take them); never negative. With
/// [`parse_go_duration`], the one duration parser of uc: hook timeouts, the engine's flags.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, DurationError> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<f64>() {
        return duration_from_secs(secs, s);
    }
    parse_go_duration(s)
}

/// Go's `time.ParseDuration`, in (signed) nanoseconds: `1h30m`, `-1.5s`, `+300ms`, `2µs`, read by
/// `kube::core::Duration`, with Go's refusals kube-core lacks (no number — `""`, `-`, a second sign —
/// and past an int64 of nanoseconds, about 292 years). Sprig's `dateModify` and `durationRound` read it.
pub fn parse_go_nanos(s: &str) -> Result<i64, DurationError> {
    let unsigned = s.strip_prefix(['-', '+']).unwrap_or(s);
    // Go refuses a duration without a number; kube-core reads `""` and `-` as zero.
    if !unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return Err(DurationError(format!("invalid duration {s:?}")));
    }
    let d: kube_core::Duration = s.parse().map_err(|e| DurationError(format!("invalid duration {s:?}: {e}")))?;
    let negative = d.is_negative();
    let nanos = std::time::Duration::from(d).as_nanos();
    let limit = if negative { 1u128 << 63 } else { (1u128 << 63) - 1 };
    if nanos > limit {
        return Err(DurationError(format!("invalid duration {s:?}: past Go's 2^63 nanoseconds")));
    }
    // In range by the check above: i64::MIN's magnitude wraps to itself.
    let n = nanos as u64 as i64;
    Ok(if negative { n.wrapping_neg() } else { n })
}

/// Parses Go's `time.ParseDuration` grammar only (`0`, `30s`, `1h30m`; a bare `30` is refused, as Go
/// refuses it, [`parse_go_nanos`]); never negative. What the Operator SDK's watches files and
/// annotations hold (`reconcilePeriod`, `reconcile-period`).
pub fn parse_go_duration(s: &str) -> Result<std::time::Duration, DurationError> {
    let nanos = parse_go_nanos(s)?;
    let nanos = u64::try_from(nanos).map_err(|_| DurationError(format!("invalid duration {s:?}: negative")))?;
    Ok(std::time::Duration::from_nanos(nanos))
}

/// Seconds of a Go duration ([`parse_go_duration`]), or none where it does not read.
pub fn go_seconds(s: &str) -> Option<f64> {
    parse_go_duration(s).ok().map(|d| d.as_secs_f64())
}

fn duration_from_secs(secs: f64, s: &str) -> Result<std::time::Duration, DurationError> {
    // Negative, NaN and past what a Duration holds (`1e30`) are refused, never a panic.
    std::time::Duration::try_from_secs_f64(secs).map_err(|_| DurationError(format!("invalid duration {s:?}")))
}

/// What a ControllerRevision of uc records (thesis listing 4.7): top-level fields, as apps/v1's
/// ControllerRevision has, not a `spec`. The CRD (`crds::controller_revision_crd`) is derived from it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(description = "One revision of a parent's rolling-update fields, and the children that belong to it.")]
pub struct ControllerRevisionFields {
    /// The parent's revision fields at this revision.
    #[schemars(schema_with = "free_form_object")]
    pub parent_patch: Value,
    /// Its number: higher is newer.
    pub revision: i64,
    /// The children that belong to this revision, per child group and kind.
    #[serde(default)]
    pub children: Vec<RevisionChildren>,
}

/// The children of one group and kind that belong to a revision.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevisionChildren {
    /// API group of the children ("" for the core group).
    pub api_group: String,
    /// Their kind.
    pub kind: String,
    /// Their names.
    #[serde(default)]
    pub names: Vec<String>,
}

/// The schema of an object with any fields (kept as written by the API server), for `schema_with`.
pub fn free_form_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

/// `status` of a UniversalController.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UniversalControllerStatus {
    /// Generation of the spec the controller runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Conditions: `Ready`, `Synced`.
    #[serde(default)]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Vec<Value>,
    /// Parents the controller sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parents: Option<i64>,
    /// Parents whose last sync failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thesis_listing_5_1_parses() {
        let yaml = serde_json::json!({
            "generateSelector": true,
            "parentResource": {"apiVersion": "njuics.cn/v1alpha1", "resource": "foos"},
            "childResources": [{"apiVersion": "apps/v1", "resource": "deployments", "updateStrategy": {"method": "InPlace"}}],
            "hooks": {"sync": {"webhook": {"url": "http://sample-controller.universalcontroller:8080"}}}
        });
        let spec: UniversalControllerSpec = serde_json::from_value(yaml).unwrap();
        assert_eq!(spec.generate_selector, Some(true));
        assert_eq!(UpdateStrategy::method_of(spec.child_resources[0].update_strategy.as_ref()), UpdateMethod::InPlace);
        assert_eq!(
            spec.hooks.sync.unwrap().webhook.unwrap().url.as_deref(),
            Some("http://sample-controller.universalcontroller:8080")
        );
    }

    #[test]
    fn thesis_listing_4_2_parses() {
        let spec: UniversalControllerSpec = serde_json::from_value(serde_json::json!({
            "parentResource": {"apiVersion": "mlhub.njuics.cn/v1alpha1", "resource": "catsets"},
            "childResources": [
                {"apiVersion": "v1", "resource": "pods", "updateStrategy": {"method": "RollingRecreate",
                 "statusChecks": {"conditions": [{"type": "Ready", "status": "True"}]}}},
                {"apiVersion": "v1", "resource": "persistentvolumeclaims"}
            ],
            "hooks": {"sync": {"webhook": {"url": "http://catset-ctrl.universalcontroller:8080"}}}
        }))
        .unwrap();
        let pods = &spec.child_resources[0];
        assert_eq!(UpdateStrategy::method_of(pods.update_strategy.as_ref()), UpdateMethod::RollingRecreate);
        let checks = pods.update_strategy.as_ref().unwrap().status_checks.as_ref().unwrap();
        assert_eq!(
            (checks.conditions[0].type_.as_str(), checks.conditions[0].status.as_deref()),
            ("Ready", Some("True"))
        );
        assert_eq!(UpdateStrategy::method_of(spec.child_resources[1].update_strategy.as_ref()), UpdateMethod::OnDelete);
        let thesis: UpdateStrategy = serde_json::from_value(serde_json::json!({"method": "ReCreate"})).unwrap();
        assert_eq!(thesis.method, Some(UpdateMethod::Recreate), "the thesis's spelling");
        let bad = serde_json::from_value::<UpdateStrategy>(serde_json::json!({"method": "Sideways"})).unwrap_err();
        assert!(bad.to_string().contains("unknown variant `Sideways`"), "{bad}");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(std::time::Duration::from_secs(10)));
        assert_eq!(parse_duration("1m30s"), Ok(std::time::Duration::from_secs(90)));
        assert_eq!(parse_duration("250ms"), Ok(std::time::Duration::from_millis(250)));
        assert_eq!(parse_duration("2.5"), Ok(std::time::Duration::from_millis(2500)));
        assert!(parse_duration("10").is_ok());
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5x").is_err());
        // Go's grammar, as the engine's flags and the SDK operators' periods read it too.
        assert_eq!(parse_duration("1h30m"), Ok(std::time::Duration::from_secs(5400)));
        assert_eq!(parse_duration("300us"), Ok(std::time::Duration::from_micros(300)));
        assert!(parse_duration("-1s").is_err(), "negative");
        assert!(parse_duration("3d").is_err(), "no days in Go's grammar");
        assert!(parse_duration("10").is_ok() && parse_duration("0").is_ok());
        assert!(parse_duration("1e30").is_err() && parse_duration("NaN").is_err() && parse_duration("-0.5").is_err());
        assert_eq!(parse_go_duration("0"), Ok(std::time::Duration::ZERO));
        assert_eq!(parse_go_duration("1h30m"), Ok(std::time::Duration::from_secs(5400)));
        assert_eq!(parse_go_duration(".5s"), Ok(std::time::Duration::from_millis(500)), "Go reads a leading dot");
        for refused in
            ["30", "-1s", "soon", "", "-", "+", "s", ".", "-.", ".s", "+.s", "1d", "1.5.h", "9223372036854775810ns"]
        {
            assert!(parse_go_duration(refused).is_err(), "{refused:?} is not a Go duration uc takes");
        }
        assert_eq!((go_seconds("1m30s"), go_seconds("90")), (Some(90.0), None));
    }

    #[test]
    fn signed_durations_as_gos_parse_duration_reads_them() {
        let s = 1_000_000_000;
        for (text, nanos) in [
            ("1h30m", 5400 * s),
            ("-1.5s", -1_500_000_000),
            ("+300ms", 300_000_000),
            ("2µs", 2_000),
            ("2μs", 2_000),
            ("1h2m5.5s", 3725 * s + s / 2),
            ("0", 0),
            ("-0", 0),
            ("2562047h", 2_562_047 * 3600 * s),
            ("-2562047h", -2_562_047 * 3600 * s),
        ] {
            assert_eq!(parse_go_nanos(text), Ok(nanos), "{text}");
        }
        // time: invalid duration / missing unit / unknown unit / overflow, as Go refuses them.
        for text in ["", "-", "+", "+-5s", "--5s", "5", "1d", "s", "2562048h", "-2562048h"] {
            assert!(parse_go_nanos(text).is_err(), "{text:?}");
        }
    }
}
