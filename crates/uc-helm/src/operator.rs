//! One reconcile of a Helm operator's custom resource, as the Operator SDK's helm-operator does it —
//! decided here as a pure function, applied by uc's engine: the chart rendered with the resource's
//! `spec` (and the watch's `overrideValues`) as values; a new revision when the manifest or the values
//! changed (install at revision 1, upgrade after), the releases kept as Helm keeps them (the new one
//! `deployed`, earlier ones `superseded`); the status the SDK writes (`Initialized`, `Deployed` with the
//! chart's notes, `deployedRelease`).

use std::collections::BTreeMap;

use serde_json::Value as Json;

use crate::chart::Chart;
use crate::error::HelmError;
use crate::gotemplate::Value;
use crate::release::{self, Info, Release};
use crate::status::{HelmAppRelease, HelmAppStatus};
use crate::watches::Watch;
use crate::{Options, Release as ReleaseOptions};

/// The SDK's finalizer: the release is uninstalled before the resource goes.
pub const UNINSTALL_FINALIZER: &str = "helm.sdk.operatorframework.io/uninstall-release";

/// How many revisions are kept (`helm-operator --max-history` default: every one; Helm's own is 10).
pub const MAX_HISTORY: usize = 10;

/// What one reconcile wants.
#[derive(Debug, Clone, PartialEq)]
pub struct Desired {
    /// The release's objects (namespaced ones in the resource's namespace) and its release Secrets.
    pub objects: Vec<Json>,
    /// The resource's `status`.
    pub status: HelmAppStatus,
    /// The release now deployed.
    pub release: Release,
}

/// A reconcile that cannot render: reported as the SDK does (`ReleaseFailed`), the last deployed
/// release left as it is (its objects and its Secrets still wanted).
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub status: HelmAppStatus,
    pub message: String,
    pub objects: Vec<Json>,
}

/// The objects of the release last deployed and every kept release Secret: what stays when a new
/// revision cannot be made.
fn last_deployed(history: &[Release], namespace: &str) -> Vec<Json> {
    let deployed =
        history.iter().rev().find(|r| r.info.as_ref().is_some_and(|i| i.status == release::status::DEPLOYED));
    let mut out = Vec::new();
    if let Some(r) = deployed {
        let hook_docs = r.hooks.iter().map(|h| h.manifest.clone());
        for doc in crate::manifests::split(&r.manifest).into_iter().chain(hook_docs) {
            if let Ok(obj) = object_in(&doc, &r.name, namespace) {
                out.push(obj);
            }
        }
    }
    out.extend(history.iter().rev().take(MAX_HISTORY).rev().map(release::to_secret));
    out
}

/// The values a resource gives its chart: its `spec` (integers kept as integers), then the watch's
/// overrides (`a.b: value`, typed as `--set` types them).
pub fn values_of(cr: &Json, watch: &Watch) -> Json {
    let mut values =
        cr.get("spec").cloned().filter(Json::is_object).unwrap_or_else(|| Json::Object(Default::default()));
    for (path, raw) in &watch.override_values {
        set_path(&mut values, path, crate::strvals::typed(raw));
    }
    values
}

fn set_path(v: &mut Json, path: &str, value: Json) {
    let mut cur = v;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, p) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = Json::Object(Default::default());
        }
        let Some(map) = cur.as_object_mut() else { return };
        if i == parts.len() - 1 {
            map.insert(p.to_string(), value);
            return;
        }
        cur = map.entry(p.to_string()).or_insert_with(|| Json::Object(Default::default()));
    }
}

/// Hook events that mean "exists once installed or upgraded": such hooks are kept as objects of the
/// release (a declarative engine applies them with the rest; `test` and delete hooks are not run).
const KEPT_HOOK_EVENTS: &[&str] = &["pre-install", "post-install", "pre-upgrade", "post-upgrade"];

fn kept_hooks(rendering: &crate::Rendering) -> impl Iterator<Item = &crate::manifests::Manifest> {
    rendering.hooks.iter().filter(|h| h.hooks.iter().any(|e| KEPT_HOOK_EVENTS.contains(&e.as_str())))
}

/// A hook as a release records it (`release.Hook`), not run yet.
fn hook_record(h: &crate::manifests::Manifest) -> release::Hook {
    release::Hook {
        name: h.name.clone(),
        kind: h.kind.clone(),
        path: h.source.clone(),
        manifest: h.content.clone(),
        events: h.hooks.clone(),
        last_run: release::HookExecution::default(),
        weight: h.hook_weight,
        delete_policies: h.hook_delete_policies.clone(),
    }
}

/// Helm's ownership marks on what a release applies (`helm upgrade` and `helm uninstall` by hand find
/// their release's objects by them).
const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
const RELEASE_NAME: &str = "meta.helm.sh/release-name";
const RELEASE_NAMESPACE: &str = "meta.helm.sh/release-namespace";

/// A manifest's document as an object, in the release's namespace unless it names one, with Helm's
/// ownership label and annotations.
fn object_in(doc: &str, release: &str, namespace: &str) -> Result<Json, HelmError> {
    let mut obj: Json = serde_yaml_ng::from_str(doc).map_err(|e| HelmError::from(e.to_string()))?;
    let Some(meta) = obj.get_mut("metadata").and_then(Json::as_object_mut) else { return Ok(obj) };
    if !meta.contains_key("namespace") {
        meta.insert("namespace".into(), namespace.into());
    }
    for (field, key, value) in [
        ("labels", MANAGED_BY, "Helm"),
        ("annotations", RELEASE_NAME, release),
        ("annotations", RELEASE_NAMESPACE, namespace),
    ] {
        let entry = meta.entry(field).or_insert_with(|| Json::Object(Default::default()));
        if !entry.is_object() {
            *entry = Json::Object(Default::default());
        }
        if let Some(m) = entry.as_object_mut() {
            m.insert(key.into(), value.into());
        }
    }
    Ok(obj)
}

/// Whether `obj` carries the ownership marks of `release` in `namespace`.
pub fn owned_by_release(obj: &Json, release: &str, namespace: &str) -> bool {
    let annotation = |k: &str| obj.pointer("/metadata/annotations").and_then(|a| a.get(k)).and_then(Json::as_str);
    annotation(RELEASE_NAME) == Some(release) && annotation(RELEASE_NAMESPACE) == Some(namespace)
}

/// What a chart's `lookup` answers on uc: only the release's own objects (its namespace, its
/// ownership marks), so a resource's author who writes templates (`tpl`) reads nothing else through
/// the operator; `found` is what the cluster holds (an object or a list), `None` when nothing.
pub fn lookup_answer(found: Option<Json>, release: &str, namespace: &str) -> Json {
    let empty = || Json::Object(Default::default());
    let Some(mut found) = found else { return empty() };
    if let Some(items) = found.get_mut("items").and_then(Json::as_array_mut) {
        items.retain(|o| owned_by_release(o, release, namespace));
        return found;
    }
    if owned_by_release(&found, release, namespace) { found } else { empty() }
}

/// The resource's objects from the release's manifests and kept hooks, namespaced in the release's
/// namespace.
fn objects_of(rendering: &crate::Rendering, release: &str, namespace: &str) -> Result<Vec<Json>, HelmError> {
    let mut out = Vec::new();
    for m in rendering.objects.iter().chain(kept_hooks(rendering)) {
        out.push(object_in(&m.content, release, namespace).map_err(|e| HelmError::from(format!("{}: {e}", m.source)))?);
    }
    Ok(out)
}

/// The release a changed rendering makes: revision `options.release.revision`, deployed `now`.
fn new_release(
    chart: &Chart,
    rendering: &crate::Rendering,
    options: &Options,
    installed: Option<&Release>,
    config: Json,
    now: &str,
) -> Release {
    let first = installed.and_then(|r| r.info.as_ref()).map(|i| i.first_deployed.clone());
    Release {
        name: options.release.name.clone(),
        info: Some(Info {
            first_deployed: first.unwrap_or_else(|| now.to_string()),
            last_deployed: now.to_string(),
            deleted: release::ZERO_TIME.into(),
            description: if installed.is_some() { "Upgrade complete" } else { "Install complete" }.into(),
            status: release::status::DEPLOYED.into(),
            notes: rendering.notes.clone(),
        }),
        chart: release::chart_json(chart),
        config,
        manifest: rendering.manifest.clone(),
        hooks: kept_hooks(rendering).map(hook_record).collect(),
        version: options.release.revision,
        namespace: options.release.namespace.clone(),
    }
}

/// The releases kept after `current`: older deployed ones superseded, at most `MAX_HISTORY`, oldest first.
fn history_with(history: Vec<Release>, current: &Release) -> Vec<Release> {
    let mut kept: Vec<Release> = history.into_iter().filter(|r| r.version != current.version).collect();
    for r in &mut kept {
        if let Some(info) = r.info.as_mut()
            && info.status == release::status::DEPLOYED
        {
            info.status = release::status::SUPERSEDED.into();
        }
    }
    kept.push(current.clone());
    let keep_from = kept.len().saturating_sub(MAX_HISTORY);
    kept.split_off(keep_from)
}

/// One reconcile: `cr` the resource, `stored` the releases of it found (any order), `now` the time.
pub fn sync(
    chart: &Chart,
    watch: &Watch,
    cr: &Json,
    stored: &[Release],
    now: &str,
    capabilities: &crate::objects::Capabilities,
    lookup: Option<crate::render::Lookup>,
) -> Result<Desired, Failure> {
    let name = cr.pointer("/metadata/name").and_then(Json::as_str).unwrap_or_default().to_string();
    let namespace = cr.pointer("/metadata/namespace").and_then(Json::as_str).unwrap_or("default").to_string();
    let old_status = HelmAppStatus::of(cr.get("status"));
    let config = values_of(cr, watch);
    let mut history: Vec<Release> = stored.to_vec();
    history.sort_by_key(|r| r.version);
    let latest = history.last().cloned();
    let installed =
        latest.as_ref().filter(|r| r.info.as_ref().is_some_and(|i| i.status != release::status::UNINSTALLED));
    let options = Options {
        release: ReleaseOptions {
            name: name.clone(),
            namespace: namespace.clone(),
            revision: latest.as_ref().map(|r| r.version + 1).unwrap_or(1),
            is_install: installed.is_none(),
            is_upgrade: installed.is_some(),
        },
        capabilities: capabilities.clone(),
        lookup,
    };
    let failed = |reason: &str, message: String| {
        let status = HelmAppStatus {
            conditions: vec![
                old_status.condition("Initialized", "True", "", "", now),
                old_status.condition("ReleaseFailed", "True", reason, &message, now),
            ],
            deployed_release: old_status.deployed_release.clone(),
        };
        Failure { status, message, objects: last_deployed(&history, &namespace) }
    };
    let reason_on_failure = if installed.is_some() { "UpgradeError" } else { "InstallError" };
    let rendering = crate::manifest(chart, &Value::from_json(&config, true), &options)
        .map_err(|e| failed(reason_on_failure, e.0))?;
    let objects = objects_of(&rendering, &name, &namespace).map_err(|e| failed(reason_on_failure, e.0))?;
    let unchanged = installed.is_some_and(|r| r.manifest == rendering.manifest && r.config == config);
    let current = match (installed, unchanged) {
        (Some(r), true) => r.clone(),
        _ => new_release(chart, &rendering, &options, installed, config, now),
    };
    let mut all = objects;
    all.extend(history_with(history, &current).iter().map(release::to_secret));
    let reason = if current.version == 1 { "InstallSuccessful" } else { "UpgradeSuccessful" };
    let notes = current.info.as_ref().map(|i| i.notes.clone()).unwrap_or_default();
    let status = HelmAppStatus {
        conditions: vec![
            old_status.condition("Initialized", "True", "", "", now),
            old_status.condition("Deployed", "True", reason, &notes, now),
        ],
        deployed_release: Some(HelmAppRelease { name: current.name.clone(), manifest: current.manifest.clone() }),
    };
    Ok(Desired { objects: all, status, release: current })
}

/// The releases among a resource's observed Secrets.
pub fn stored_releases<'a>(secrets: impl Iterator<Item = &'a Json>, name: &str) -> Vec<Release> {
    secrets.filter(|s| release::is_release_of(s, name)).filter_map(|s| release::from_secret(s).ok()).collect()
}

/// The kinds among objects, with their API versions: the child types a chart makes.
pub fn kinds(objects: &[Json]) -> BTreeMap<String, String> {
    objects
        .iter()
        .filter_map(|o| Some((o.get("kind")?.as_str()?.to_string(), o.get("apiVersion")?.as_str()?.to_string())))
        .collect()
}

#[cfg(test)]
mod tests;
