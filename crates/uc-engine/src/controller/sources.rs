//! Hot reload: a JavaScript hook whose source is in a ConfigMap follows it. A watch of that one
//! ConfigMap hands each new version to the hook, which takes it if it loads (the next sync runs it)
//! and keeps the old one otherwise; what went wrong — a version that does not load, a ConfigMap or key
//! that is gone — is the controller's to report (`Running::source_problem`).

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::task::JoinHandle;

use super::errors::SourceProblem;
use super::shared::Shared;
use crate::hooks::HookImpl;

/// A task per hook that has its source in a ConfigMap.
pub(super) fn watch(shared: &Arc<Shared>) -> Vec<JoinHandle<()>> {
    let hooks = [
        ("sync", shared.spec.hooks.sync.as_ref(), Some(&shared.sync)),
        ("finalize", shared.spec.hooks.finalize.as_ref(), shared.finalize.as_ref()),
        ("customize", shared.spec.hooks.customize.as_ref(), shared.customize.as_ref()),
    ];
    let mut tasks = Vec::new();
    for (which, spec, hook) in hooks {
        let (Some(spec), Some(HookImpl::JavaScript(js))) = (spec, hook) else { continue };
        let Some(r) = spec.javascript.as_ref().and_then(|j| j.config_map_ref.clone()) else { continue };
        let (s, js) = (shared.clone(), js.clone());
        tasks.push(tokio::spawn(async move {
            let api: Api<ConfigMap> = Api::namespaced(s.ctx.client.clone(), &r.namespace);
            let config = watcher::Config::default().fields(&format!("metadata.name={}", r.name));
            let mut events = std::pin::pin!(watcher(api, config).default_backoff());
            let what = format!("hooks.{which}: configMap {}/{}", r.namespace, r.name);
            while let Some(ev) = events.next().await {
                let problem = match ev {
                    Ok(watcher::Event::Apply(cm) | watcher::Event::InitApply(cm)) => {
                        match cm.data.as_ref().and_then(|d| d.get(&r.key)) {
                            None => Some(SourceProblem::Gone(format!("{what} has no key {:?}", r.key))),
                            Some(source) => match js.reload(source) {
                                Ok(true) => {
                                    tracing::info!(controller = %s.name, hook = which, "hook reloaded from its ConfigMap");
                                    None
                                }
                                Ok(false) => None,
                                Err(e) => Some(SourceProblem::Broken(format!(
                                    "{what}: the new version does not load ({e}); the previous version runs"
                                ))),
                            },
                        }
                    }
                    Ok(watcher::Event::Delete(_)) => Some(SourceProblem::Gone(format!("{what} was deleted"))),
                    _ => continue,
                };
                if let Some(p) = &problem {
                    tracing::warn!(controller = %s.name, hook = which, problem = ?p, "hook source problem");
                }
                let mut problems = s.source_problems.lock();
                match problem {
                    Some(p) => problems.insert(which, p),
                    None => problems.remove(which),
                };
            }
        }));
    }
    tasks
}
