//! `uc run|up --watches-file` with an Ansible operator's `watches.yaml`: each entry becomes a
//! UniversalController of its custom resource whose sync (and, with a finalizer, finalize) hook runs the
//! entry's role or playbook with `ansible-runner`, as the SDK's `ansible-operator` does: the SDK's extra
//! vars, a kubeconfig pointing at uc's API proxy (owner references injected, dependents remembered),
//! the SDK's status conditions, a Warning Event per failed task. The hook writes the status itself
//! (as the SDK does, around the run) and returns no children: what the run creates, it creates. The
//! dependents the proxy saw are the hook's related resources, so a change to one runs the role again.
//! A bundle `uc package` made carries the project instead (`native: {name: ansible, config}`).

mod collection;
mod factory;
mod proxy;
mod reconcile;
mod run;
mod runtime;

use std::path::Path;

use anyhow::Context as _;
use uc_ansible::watches::Watch;
use uc_api::controller::{Hook, UniversalController};

pub use factory::{Config, pack, register_factory};
pub use runtime::Runtime;
pub(crate) use runtime::parse_watches;

/// The label on the UniversalControllers made from a watches file.
const LABEL: &str = "uc.njuics.cn/operator";

/// The UniversalController of a watch: `parent` is its (`apiVersion`, plural), `hook` the native hook
/// every call goes to.
pub(crate) fn controller(w: &Watch, parent: (&str, &str), hook: Hook) -> UniversalController {
    use uc_api::controller::{Hooks, ParentResource, UniversalController, UniversalControllerSpec};
    let parent_resource = ParentResource {
        label_selector: w.selector.clone(),
        ignore_status_changes: Some(true),
        ..ParentResource::new(parent.0, parent.1)
    };
    let hooks = Hooks {
        sync: Some(hook.clone()),
        finalize: w.finalizer.as_ref().map(|_| hook.clone()),
        customize: w.watch_dependent_resources.then_some(hook),
    };
    let spec = UniversalControllerSpec {
        parent_resource,
        hooks,
        finalizer_name: w.finalizer.as_ref().map(|f| f.name.clone()),
        max_concurrent_reconciles: Some(w.max_concurrent_reconciles.unwrap_or_else(crate::sdk_project::cpus)),
        ..Default::default()
    };
    let name = format!("ansible-{}-{}", w.kind.to_lowercase(), if w.group.is_empty() { "core" } else { &w.group });
    let mut uc = UniversalController::new(&name, spec);
    uc.metadata.labels = Some([(LABEL.to_string(), "ansible".to_string())].into());
    uc
}

/// Reads an Ansible operator's watches file, registers a native hook per entry, and answers the
/// UniversalControllers to install.
pub async fn setup(
    runtime: &Runtime,
    installer: &kube::Client,
    watches_file: &Path,
    text: &str,
    options: &mut uc_engine::EngineOptions,
) -> anyhow::Result<Vec<UniversalController>> {
    let dir = watches_file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dir = std::fs::canonicalize(dir).with_context(|| format!("reading {}", dir.display()))?;
    let watches = parse_watches(&dir, text)?;
    runtime::check_runner().await?;
    for w in &watches {
        for crd in crate::sdk_project::project_crds(&dir, &w.group, &w.kind)? {
            uc_engine::manager::install_crd(installer, crd).await?;
        }
    }
    let mut controllers = Vec::new();
    for w in watches {
        let hook_name = format!("ansible/{}/{}/{}", w.group, w.version, w.kind);
        let (hook, parent) = runtime.hook(&dir, w.clone()).await?;
        controllers.push(controller(&w, (&parent.api_version, &parent.plural), Hook::native(&hook_name)));
        options.natives.register(&hook_name, hook);
    }
    Ok(controllers)
}
