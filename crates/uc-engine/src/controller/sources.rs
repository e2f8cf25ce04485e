//! Hot reload: a JavaScript hook whose source is in a ConfigMap or a Secret follows it. A watch of that
//! one object hands each new version to the hook, which takes it if it loads (the next sync runs it)
//! and keeps the old one otherwise; what went wrong — a version that does not load, an object or key
//! that is gone — is the controller's to report (`Running::source_problem`).

use std::sync::Arc;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::task::JoinHandle;

use super::errors::SourceProblem;
use super::shared::Shared;
use crate::hooks::HookImpl;
use crate::hooks::javascript::JsHook;

/// What a watch of a hook's source saw: the key's content (None: the key is missing), or the object
/// deleted.
enum Seen {
    Content(Option<String>),
    Deleted,
}

/// A task per hook that has its source in a ConfigMap or a Secret.
pub(super) fn watch(shared: &Arc<Shared>) -> Vec<JoinHandle<()>> {
    let hooks = [
        ("sync", shared.spec.hooks.sync.as_ref(), Some(&shared.sync)),
        ("finalize", shared.spec.hooks.finalize.as_ref(), shared.finalize.as_ref()),
        ("customize", shared.spec.hooks.customize.as_ref(), shared.customize.as_ref()),
    ];
    let mut tasks = Vec::new();
    for (which, spec, hook) in hooks {
        let (Some(spec), Some(HookImpl::JavaScript(js))) = (spec, hook) else { continue };
        let Some(source) = spec.javascript.as_ref() else { continue };
        let client = shared.ctx.client.clone();
        let (s, js) = (shared.clone(), js.clone());
        if let Some(r) = source.secret_ref.clone() {
            let api: Api<Secret> = Api::namespaced(client, &r.namespace);
            let config = watcher::Config::default().fields(&format!("metadata.name={}", r.name));
            let key = r.key.clone();
            let events = watcher(api, config).default_backoff().filter_map(move |ev| {
                let seen = match ev {
                    Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => Some(Seen::Content(
                        o.data.as_ref().and_then(|d| d.get(&key)).map(|b| String::from_utf8_lossy(&b.0).into_owned()),
                    )),
                    Ok(watcher::Event::Delete(_)) => Some(Seen::Deleted),
                    _ => None,
                };
                std::future::ready(seen)
            });
            let what = format!("hooks.{which}: secret {}/{}", r.namespace, r.name);
            tasks.push(tokio::spawn(follow(s, js, which, what, r.key, events)));
        } else if let Some(r) = source.config_map_ref.clone() {
            let api: Api<ConfigMap> = Api::namespaced(client, &r.namespace);
            let config = watcher::Config::default().fields(&format!("metadata.name={}", r.name));
            let key = r.key.clone();
            let events = watcher(api, config).default_backoff().filter_map(move |ev| {
                let seen = match ev {
                    Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                        Some(Seen::Content(o.data.as_ref().and_then(|d| d.get(&key)).cloned()))
                    }
                    Ok(watcher::Event::Delete(_)) => Some(Seen::Deleted),
                    _ => None,
                };
                std::future::ready(seen)
            });
            let what = format!("hooks.{which}: configMap {}/{}", r.namespace, r.name);
            tasks.push(tokio::spawn(follow(s, js, which, what, r.key, events)));
        }
    }
    tasks
}

/// Hands each version the watch sees to the hook, and records what is wrong.
async fn follow(
    s: Arc<Shared>,
    js: Arc<JsHook>,
    which: &'static str,
    what: String,
    key: String,
    events: impl Stream<Item = Seen>,
) {
    let mut events = std::pin::pin!(events);
    while let Some(seen) = events.next().await {
        let problem = match seen {
            Seen::Content(None) => Some(SourceProblem::Gone(format!("{what} has no key {key:?}"))),
            Seen::Content(Some(source)) => match js.reload(&source) {
                Ok(true) => {
                    tracing::info!(controller = %s.name, hook = which, "hook reloaded from its source");
                    None
                }
                Ok(false) => None,
                Err(e) => Some(SourceProblem::Broken(format!(
                    "{what}: the new version does not load ({e}); the previous version runs"
                ))),
            },
            Seen::Deleted => Some(SourceProblem::Gone(format!("{what} was deleted"))),
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
}
