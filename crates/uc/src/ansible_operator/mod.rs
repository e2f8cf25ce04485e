//! `uc run|up --watches-file` with an Ansible operator's `watches.yaml`: each entry becomes a
//! UniversalController of its custom resource whose sync (and, with a finalizer, finalize) hook runs the
//! entry's role or playbook with `ansible-runner`, as the SDK's `ansible-operator` does: the SDK's extra
//! vars, a kubeconfig pointing at uc's API proxy (owner references injected, dependents remembered),
//! the SDK's status conditions, a Warning Event per failed task. The hook writes the status itself
//! (as the SDK does, around the run) and returns no children: what the run creates, it creates. The
//! dependents the proxy saw are the hook's related resources, so a change to one runs the role again.

mod collection;
mod proxy;
mod reconcile;
mod run;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use serde_json::{Value, json};
use uc_ansible::watches::{Paths, Watch};

pub use proxy::Proxy;

/// The label on the UniversalControllers made from a watches file.
const LABEL: &str = "uc.njuics.cn/operator";

/// The environment every run gets: the project's roles first on the roles path, uc's
/// `operator_sdk.util` last on the collections path (an installed one wins), the metrics address.
fn run_env(project: &Path, collections: &Path, proxy: &Proxy) -> Vec<(String, String)> {
    let join = |first: String, rest: Option<String>| match rest.filter(|r| !r.is_empty()) {
        Some(r) => format!("{first}:{r}"),
        None => first,
    };
    let roles = join(project.join("roles").display().to_string(), std::env::var("ANSIBLE_ROLES_PATH").ok());
    let installed = std::env::var("ANSIBLE_COLLECTIONS_PATH")
        .unwrap_or_else(|_| "~/.ansible/collections:/usr/share/ansible/collections".to_string());
    vec![
        ("ANSIBLE_ROLES_PATH".into(), roles),
        ("ANSIBLE_COLLECTIONS_PATH".into(), format!("{installed}:{}", collections.display())),
        ("UC_OSDK_METRICS_URL".into(), format!("{}{}", proxy.url, proxy::METRICS_PATH)),
        ("UC_OSDK_METRICS_TOKEN".into(), proxy.token.clone()),
        ("ANSIBLE_STDOUT_CALLBACK".into(), "default".into()),
    ]
}

fn controller(w: &Watch, parent: &kube::discovery::ApiResource, hook_name: &str) -> Value {
    let mut parent_rule =
        json!({"apiVersion": parent.api_version, "resource": parent.plural, "ignoreStatusChanges": true});
    if let Some(sel) = &w.selector {
        parent_rule["labelSelector"] = sel.clone();
    }
    let hook = json!({"native": {"name": hook_name}});
    let mut hooks = json!({"sync": hook});
    let mut spec = json!({"parentResource": parent_rule, "childResources": [], "hooks": {}});
    if let Some(f) = &w.finalizer {
        hooks["finalize"] = hook.clone();
        spec["finalizerName"] = json!(f.name);
    }
    if w.watch_dependent_resources {
        hooks["customize"] = hook.clone();
    }
    spec["hooks"] = hooks;
    let name = format!("ansible-{}-{}", w.kind.to_lowercase(), if w.group.is_empty() { "core" } else { &w.group });
    json!({
        "apiVersion": uc_api::controller::API_VERSION, "kind": "UniversalController",
        "metadata": {"name": name, "labels": {LABEL: "ansible"}},
        "spec": spec
    })
}

/// Reads an Ansible operator's watches file, starts the API proxy, registers a native hook per entry,
/// and answers the UniversalControllers to install.
pub async fn setup(
    client: &kube::Client,
    installer: &kube::Client,
    watches_file: &Path,
    text: &str,
    options: &mut uc_engine::EngineOptions,
) -> anyhow::Result<Vec<Value>> {
    let dir = watches_file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dir = std::fs::canonicalize(dir).with_context(|| format!("reading {}", dir.display()))?;
    let exists = |p: &Path| p.exists();
    let paths = Paths {
        dir: &dir,
        roles_path: std::env::var("ANSIBLE_ROLES_PATH")
            .map(|v| v.split(':').map(PathBuf::from).collect())
            .unwrap_or_default(),
        home: std::env::var_os("HOME").map(PathBuf::from),
        exists: &exists,
    };
    let watches = uc_ansible::watches::parse(text, &paths).map_err(anyhow::Error::msg)?;
    let runner = tokio::process::Command::new("ansible-runner").arg("--version").output().await;
    if !runner.is_ok_and(|o| o.status.success()) {
        anyhow::bail!(
            "ansible-runner is not installed: `pip install ansible-runner ansible` (ansible-core with kubernetes.core)"
        );
    }
    for w in &watches {
        for crd in crate::helm_operator::project_crds(&dir, &w.group, &w.kind) {
            uc_engine::manager::install_crd(installer, crd).await?;
        }
    }
    let gvks: Vec<_> = watches.iter().map(|w| (w.group.clone(), w.version.clone(), w.kind.clone())).collect();
    let discovery = crate::helm_operator::served(client, &gvks).await?;
    let proxy = Proxy::start(client.clone()).await.context("starting the ansible proxy")?;
    let work = std::env::temp_dir().join(format!("uc-ansible-{}", std::process::id()));
    let collections = collection::install(&work.join("collections"))?;
    let env = run_env(&dir, &collections, &proxy);
    options.collectors.push(Arc::new(proxy::PlaybookMetrics(proxy.clone())));
    let mut controllers = Vec::new();
    for w in watches {
        let gvk = kube::api::GroupVersionKind::gvk(&w.group, &w.version, &w.kind);
        let (parent, caps) = discovery.resolve_gvk(&gvk).context("served")?;
        let hook_name = format!("ansible/{}/{}/{}", w.group, w.version, w.kind);
        controllers.push(controller(&w, &parent, &hook_name));
        let hook = reconcile::AnsibleHook::hook(reconcile::Context {
            client: client.clone(),
            parent,
            namespaced: caps.scope == kube::discovery::Scope::Namespaced,
            status_subresource: caps.subresources.iter().any(|(ar, _)| ar.plural == "status"),
            watch: w,
            proxy: proxy.clone(),
            work: work.join("runner"),
            env: env.clone(),
        });
        options.natives.register(&hook_name, hook);
    }
    Ok(controllers)
}
