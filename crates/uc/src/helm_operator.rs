//! `uc run --watches-file`: the Operator SDK's Helm operators on the engine. Each `watches.yaml` entry
//! becomes a UniversalController of its custom resource whose sync and finalize hooks are the chart,
//! rendered in-process (`uc-helm`): the release's objects and its Helm 3 release Secrets are the
//! children (applied in place), the SDK's conditions the status.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use kube::discovery::Discovery;
use serde_json::Value;
use uc_api::controller::{Hook, UniversalController, UpdateMethod};
use uc_api::hook::{SyncRequest, SyncResponse};
use uc_engine::hooks::native::{self, AsyncSyncFn, NativeRegistry};

use crate::helm_lookup::ClusterLookup;
use uc_helm::objects::Capabilities;
use uc_helm::watches::Watch;
use uc_helm::{Chart, operator, release};

/// The label on the UniversalControllers made from a watches file.
const LABEL: &str = "uc.njuics.cn/operator";

/// The SDK's finalizer on the custom resources of a Helm operator.
const FINALIZER: &str = "helm.sdk.operatorframework.io/uninstall-release";

/// Loads a chart from a directory or a packaged `.tgz`.
fn load_chart(path: &Path) -> anyhow::Result<Chart> {
    if path.extension().is_some_and(|e| e == "tgz") {
        let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        return Ok(Chart::from_archive(&path.display().to_string(), &data)?);
    }
    Chart::load_dir(path).with_context(|| format!("invalid chart {}", path.display()))
}

/// What the cluster serves, as charts see it: its version, and every `group/version` and
/// `group/version/Kind`.
async fn capabilities(client: &kube::Client, discovery: &Discovery) -> Capabilities {
    let mut versions = BTreeSet::new();
    for group in discovery.groups() {
        for (ar, _) in group.recommended_resources() {
            versions.insert(ar.api_version.clone());
            versions.insert(format!("{}/{}", ar.api_version, ar.kind));
        }
    }
    let kube_version = match client.apiserver_version().await {
        Ok(v) => v.git_version,
        Err(_) => Capabilities::default().kube_version,
    };
    Capabilities { kube_version, api_versions: versions.into_iter().collect() }
}

/// The hook of one watch: a reconcile decided by `uc_helm::operator` on a render thread (the engine's
/// workers stay free: `lookup` reads the cluster from there), a finalize that uninstalls.
fn hook(
    chart: Arc<Chart>,
    watch: Watch,
    caps: Capabilities,
    resync: Option<f64>,
    lookup: Arc<ClusterLookup>,
) -> Arc<AsyncSyncFn> {
    Arc::new(move |request: SyncRequest| {
        let (chart, watch, caps, lookup) = (chart.clone(), watch.clone(), caps.clone(), lookup.clone());
        Box::pin(async move {
            let meta = |f: &str| {
                request
                    .parent
                    .pointer(&format!("/metadata/{f}"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let (name, namespace) = (meta("name"), meta("namespace"));
            if request.finalizing {
                // Uninstall: every object of the release and its history go.
                return Ok(SyncResponse {
                    status: None,
                    children: Vec::new(),
                    resync_after_seconds: None,
                    finalized: Some(true),
                });
            }
            let secrets = request.children.get("Secret.v1").into_iter().flat_map(|m| m.values().map(|o| &**o));
            let stored = operator::stored_releases(secrets, &name);
            let (handle, parent, kind) =
                (tokio::runtime::Handle::current(), request.parent.clone(), watch.kind.clone());
            let release = name.clone();
            // On a thread of its own: a chart (or a resource's `tpl` input) nesting templates as deep as
            // Helm allows needs more stack than the engine's threads have.
            let decided = tokio::task::spawn_blocking(move || {
                uc_helm::on_render_thread(move || {
                    let lookup = lookup.for_release(handle, release, namespace);
                    operator::sync(&chart, &watch, &parent, &stored, &release::now(), &caps, Some(lookup))
                })
            })
            .await
            .map_err(|e| uc_engine::hooks::HookError::Failed(e.to_string()))?
            .map_err(|e| uc_engine::hooks::HookError::Failed(e.0))?;
            let answer = match decided {
                Ok(d) => (d.status, d.objects),
                Err(f) => {
                    tracing::warn!(%kind, parent = %name, error = %f.message, "release failed");
                    (f.status, f.objects)
                }
            };
            let status = serde_json::to_value(&answer.0)
                .map_err(|e| uc_engine::hooks::HookError::Failed(format!("status: {e}")))?;
            Ok(SyncResponse { status: Some(status), children: answer.1, resync_after_seconds: resync, finalized: None })
        })
    })
}

/// Reads the watches file, registers a native hook per entry, and answers the UniversalControllers to
/// install.
pub async fn setup(
    client: &kube::Client,
    installer: &kube::Client,
    watches_file: &Path,
    text: &str,
    natives: &mut NativeRegistry,
) -> anyhow::Result<Vec<UniversalController>> {
    let dir = watches_file.parent().unwrap_or(Path::new("."));
    let watches = uc_helm::watches::parse(text, dir, &|k| std::env::var(k).ok()).map_err(anyhow::Error::msg)?;
    // The project's own CRDs (`config/crd/bases/`, as `operator-sdk init` lays it out), installed as
    // `make install` would, for the kinds the file watches.
    for w in &watches {
        for crd in crate::sdk_project::project_crds(dir, &w.group, &w.kind)? {
            uc_engine::manager::install_crd(installer, crd).await?;
        }
    }
    let gvks: Vec<_> = watches.iter().map(|w| (w.group.clone(), w.version.clone(), w.kind.clone())).collect();
    let discovery = crate::sdk_project::served(client, &gvks).await?;
    let caps = capabilities(client, &discovery).await;
    let mut controllers = Vec::new();
    for w in watches {
        let chart = load_chart(&w.chart)?;
        let gvk = kube::api::GroupVersionKind::gvk(&w.group, &w.version, &w.kind);
        let (parent, _) = discovery.resolve_gvk(&gvk).with_context(|| {
            format!("{}/{} {} is not served: install its CustomResourceDefinition first", w.group, w.version, w.kind)
        })?;
        let mut children = Vec::new();
        for (api_version, kind) in
            child_kinds(&chart).map_err(|e| anyhow::anyhow!("chart {}: {e}", w.chart.display()))?
        {
            let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
            match discovery.resolve_gvk(&kube::api::GroupVersionKind::gvk(group, version, &kind)) {
                Some((ar, _)) => children.push((ar.api_version, ar.plural)),
                _ => {
                    tracing::warn!(%api_version, %kind, chart = %w.chart.display(), "the chart makes a kind the cluster does not serve")
                }
            }
        }
        let hook_name = format!("helm/{}/{}/{}", w.group, w.version, w.kind);
        let lookup = ClusterLookup::new(client.clone(), &discovery);
        let sync = hook(Arc::new(chart), w.clone(), caps.clone(), resync_of(&w), lookup);
        natives.register(&hook_name, native::typed_async(sync));
        controllers.push(controller(&w, (&parent.api_version, &parent.plural), &children, Hook::native(&hook_name)));
    }
    Ok(controllers)
}

/// Why the kinds a chart makes could not be found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ChildKindsError(pub String);

/// The kinds a chart makes (`apiVersion`, `kind`): with its defaults, those written literally in its
/// templates (objects made only for some values, `{{ if .Values.pdb }}`), and the release Secrets.
pub(crate) fn child_kinds(chart: &Chart) -> Result<BTreeSet<(String, String)>, ChildKindsError> {
    let probe = uc_helm::manifest(chart, &uc_helm::gotemplate::Value::Nil, &uc_helm::Options::default())
        .map_err(|e| ChildKindsError(e.to_string()))?;
    let mut kinds: BTreeSet<(String, String)> =
        probe.objects.iter().map(|m| (api_version_of(&m.content), m.kind.clone())).collect();
    kinds.extend(literal_kinds(chart));
    kinds.insert(("v1".into(), "Secret".into()));
    Ok(kinds)
}

/// A watch's resync period: its `reconcilePeriod`, else the SDK's minute.
fn resync_of(w: &Watch) -> Option<f64> {
    w.reconcile_period.as_deref().and_then(uc_api::controller::go_seconds).or(Some(60.0))
}

/// The UniversalController of a watch: its parent (`apiVersion`, plural), the chart's child types
/// (`apiVersion`, plural), applied in place, and the hook (`{"native": …}`) for sync and finalize.
pub(crate) fn controller(
    w: &Watch,
    parent: (&str, &str),
    children: &[(String, String)],
    hook: Hook,
) -> UniversalController {
    use uc_api::controller::{ChildResource, Hooks, ParentResource, UniversalController, UniversalControllerSpec};
    let parent_resource =
        ParentResource { label_selector: w.selector.clone(), ..ParentResource::new(parent.0, parent.1) };
    let children =
        children.iter().map(|(api_version, plural)| ChildResource::new(api_version, plural, UpdateMethod::InPlace));
    let name = format!("helm-{}-{}", w.kind.to_lowercase(), if w.group.is_empty() { "core" } else { &w.group });
    let spec = UniversalControllerSpec {
        generate_selector: Some(true),
        parent_resource,
        child_resources: children.collect(),
        hooks: Hooks { sync: Some(hook.clone()), finalize: Some(hook), customize: None },
        finalizer_name: Some(FINALIZER.into()),
        max_concurrent_reconciles: Some(w.max_concurrent_reconciles.unwrap_or_else(crate::sdk_project::cpus)),
        ..Default::default()
    };
    let mut uc = UniversalController::new(&name, spec);
    uc.metadata.labels = Some([(LABEL.to_string(), "helm".to_string())].into());
    uc
}

/// A `helm` hook's config as `uc package` writes it.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct HookConfig {
    /// A packaged chart, base64.
    pub chart: String,
    /// Its watches.yaml entry, as written but for `chart`.
    pub watch: serde_json::Map<String, Value>,
}

/// The factory of `native: {name: helm, config: {chart, watch}}` hooks (what `uc package` writes for a
/// Helm project): `chart` a packaged chart in base64, `watch` its watches.yaml entry.
pub fn register_factory(natives: &mut NativeRegistry, client: kube::Client) {
    let factory: Arc<native::NativeFactory> = Arc::new(move |config: Value| {
        let client = client.clone();
        Box::pin(async move {
            let bad = |m: String| uc_engine::hooks::HookError::Config(format!("helm hook: {m}"));
            let config: HookConfig = serde_json::from_value(config).map_err(|e| bad(format!("config: {e}")))?;
            if config.chart.is_empty() {
                return Err(bad("config.chart is required".into()));
            }
            use base64::Engine as _;
            let tgz = base64::engine::general_purpose::STANDARD
                .decode(&config.chart)
                .map_err(|e| bad(format!("config.chart: {e}")))?;
            let chart = Chart::from_archive("config.chart", &tgz).map_err(|e| bad(e.to_string()))?;
            let mut entry = config.watch;
            entry.insert("chart".into(), "config.chart".into());
            let text = serde_json::to_string(&[entry]).unwrap_or_default();
            let w = uc_helm::watches::parse(&text, Path::new("/"), &|k| std::env::var(k).ok())
                .map_err(|e| bad(format!("config.watch: {e}")))?
                .remove(0);
            let discovery = Discovery::new(client.clone()).run().await.map_err(|e| bad(format!("discovery: {e}")))?;
            let caps = capabilities(&client, &discovery).await;
            let resync = resync_of(&w);
            let lookup = ClusterLookup::new(client.clone(), &discovery);
            Ok(native::typed_async(hook(Arc::new(chart), w, caps, resync, lookup)))
        })
    });
    natives.register_factory("helm", factory);
}

/// The `apiVersion`/`kind` pairs written literally in a chart's templates (and its subcharts'), one per
/// YAML document.
fn literal_kinds(chart: &Chart) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for t in &chart.templates {
        for doc in String::from_utf8_lossy(&t.data).split("\n---") {
            let field = |key: &str| {
                doc.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .map(|v| v.trim().trim_matches('"').to_string())
                    .filter(|v| !v.is_empty() && !v.contains("{{"))
            };
            if let (Some(api_version), Some(kind)) = (field("apiVersion:"), field("kind:")) {
                out.insert((api_version, kind));
            }
        }
    }
    for sub in &chart.dependencies {
        out.extend(literal_kinds(sub));
    }
    out
}

/// A manifest's `apiVersion`.
fn api_version_of(doc: &str) -> String {
    serde_yaml_ng::from_str::<Value>(doc)
        .ok()
        .and_then(|v| v.get("apiVersion").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_default()
}
