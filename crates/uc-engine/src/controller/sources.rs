//! Hook sources kept in a ConfigMap or a Secret: read once when the controller starts, then followed.
//!
//! Hot reload: a JavaScript hook whose source is in a ConfigMap or a Secret follows it. A watch of that
//! one object hands each new version to the hook, which takes it if it loads (the next sync runs it)
//! and keeps the old one otherwise; what went wrong — a version that does not load, an object or key
//! that is gone — is the controller's to report (`Running::source_problem`).
//!
//! Hooks that share an object (a sync and a finalize hook in one ConfigMap, each its own key or the
//! same one) share its read and its watch: the object is sent once, not once per hook.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fmt;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::task::JoinHandle;
use uc_api::controller::JavaScript;

use super::errors::SourceProblem;
use super::shared::Shared;
use crate::hooks::HookImpl;
use crate::hooks::javascript::JsHook;

/// An object's data (a Secret's values as text).
type Data = BTreeMap<String, String>;

/// The object a hook's source is kept in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct SourceObject {
    secret: bool,
    namespace: String,
    name: String,
}

impl SourceObject {
    /// The object and key of a JavaScript hook's source, unless it is inline.
    pub(super) fn of(js: &JavaScript) -> Option<(SourceObject, &str)> {
        let (secret, r) = match (&js.secret_ref, &js.config_map_ref) {
            (Some(r), _) => (true, r),
            (None, Some(r)) => (false, r),
            (None, None) => return None,
        };
        Some((SourceObject { secret, namespace: r.namespace.clone(), name: r.name.clone() }, &r.key))
    }

    /// Reads the object's data (a Secret's values as text).
    async fn read(&self, client: Client) -> Result<BTreeMap<String, String>, kube::Error> {
        Ok(if self.secret {
            let secret = Api::<Secret>::namespaced(client, &self.namespace).get(&self.name).await?;
            secret_data(secret)
        } else {
            configmap_data(Api::<ConfigMap>::namespaced(client, &self.namespace).get(&self.name).await?)
        })
    }

    /// The object's versions as a watch sees them: its data, or `None` once it is deleted.
    fn versions(&self, client: Client) -> futures::stream::BoxStream<'static, Option<Data>> {
        let config = watcher::Config::default().fields(&format!("metadata.name={}", self.name));
        if self.secret {
            let api = Api::<Secret>::namespaced(client, &self.namespace);
            watcher(api, config).default_backoff().filter_map(|ev| seen(ev, secret_data)).boxed()
        } else {
            let api = Api::<ConfigMap>::namespaced(client, &self.namespace);
            watcher(api, config).default_backoff().filter_map(|ev| seen(ev, configmap_data)).boxed()
        }
    }
}

impl fmt::Display for SourceObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.secret { "secret" } else { "configMap" };
        write!(f, "{kind} {}/{}", self.namespace, self.name)
    }
}

/// A watch event as a version of the object (its data, `None` once deleted); nothing for the rest.
fn seen<K>(
    ev: Result<watcher::Event<K>, watcher::Error>,
    data: fn(K) -> BTreeMap<String, String>,
) -> std::future::Ready<Option<Option<BTreeMap<String, String>>>> {
    std::future::ready(match ev {
        Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => Some(Some(data(o))),
        Ok(watcher::Event::Delete(_)) => Some(None),
        _ => None,
    })
}

fn configmap_data(cm: ConfigMap) -> BTreeMap<String, String> {
    cm.data.unwrap_or_default()
}

fn secret_data(secret: Secret) -> BTreeMap<String, String> {
    (secret.data.unwrap_or_default().into_iter())
        .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
        .collect()
}

/// The source objects read while a controller starts, each read once.
#[derive(Default)]
pub(super) struct SourceObjects(BTreeMap<SourceObject, BTreeMap<String, String>>);

impl SourceObjects {
    /// The source of a JavaScript hook kept in an object: `Ok(None)` when it is inline; an error
    /// names the object that cannot be read or the key it lacks.
    pub(super) async fn source(&mut self, client: &Client, js: &JavaScript) -> Result<Option<String>, String> {
        let Some((object, key)) = SourceObject::of(js) else { return Ok(None) };
        let what = object.to_string();
        let data = match self.0.entry(object) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let data = e.key().read(client.clone()).await.map_err(|err| format!("{what}: {err}"))?;
                e.insert(data)
            }
        };
        data.get(key).cloned().map(Some).ok_or_else(|| format!("{what} has no key {key:?}"))
    }
}

/// A hook following its source.
struct Follower {
    which: &'static str,
    js: Arc<JsHook>,
    key: String,
}

/// A task per object holding the source of one or more of the controller's hooks.
pub(super) fn watch(shared: &Arc<Shared>) -> Vec<JoinHandle<()>> {
    let hooks = [
        ("sync", shared.spec.hooks.sync.as_ref(), Some(&shared.sync)),
        ("finalize", shared.spec.hooks.finalize.as_ref(), shared.finalize.as_ref()),
        ("customize", shared.spec.hooks.customize.as_ref(), shared.customize.as_ref()),
    ];
    let mut objects: BTreeMap<SourceObject, Vec<Follower>> = BTreeMap::new();
    for (which, spec, hook) in hooks {
        let (Some(spec), Some(HookImpl::JavaScript(js))) = (spec, hook) else { continue };
        let Some((object, key)) = spec.javascript.as_ref().and_then(SourceObject::of) else { continue };
        objects.entry(object).or_default().push(Follower { which, js: js.clone(), key: key.to_string() });
    }
    objects
        .into_iter()
        .map(|(object, followers)| {
            let versions = object.versions(shared.ctx.client.clone());
            tokio::spawn(follow(shared.clone(), object, followers, versions))
        })
        .collect()
}

/// Hands each version the watch sees to every hook kept in the object, and records what is wrong.
async fn follow(
    s: Arc<Shared>,
    object: SourceObject,
    followers: Vec<Follower>,
    versions: impl Stream<Item = Option<BTreeMap<String, String>>>,
) {
    let mut versions = std::pin::pin!(versions);
    while let Some(data) = versions.next().await {
        for f in &followers {
            let what = format!("hooks.{}: {object}", f.which);
            let problem = match data.as_ref().map(|d| d.get(&f.key)) {
                None => Some(SourceProblem::Gone(format!("{what} was deleted"))),
                Some(None) => Some(SourceProblem::Gone(format!("{what} has no key {:?}", f.key))),
                Some(Some(source)) => match f.js.reload(source) {
                    Ok(true) => {
                        tracing::info!(controller = %s.name, hook = f.which, "hook reloaded from its source");
                        None
                    }
                    Ok(false) => None,
                    Err(e) => Some(SourceProblem::Broken(format!(
                        "{what}: the new version does not load ({e}); the previous version runs"
                    ))),
                },
            };
            if let Some(p) = &problem {
                tracing::warn!(controller = %s.name, hook = f.which, problem = ?p, "hook source problem");
            }
            let mut problems = s.source_problems.lock();
            match problem {
                Some(p) => problems.insert(f.which, p),
                None => problems.remove(f.which),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use kube::api::PostParams;
    use kube::config::{KubeConfigOptions, Kubeconfig};

    use super::*;

    fn js(config_map: &str, key: &str) -> JavaScript {
        let r = uc_api::controller::ConfigMapKeyRef {
            name: config_map.into(),
            namespace: "default".into(),
            key: key.into(),
        };
        JavaScript { config_map_ref: Some(r), ..Default::default() }
    }

    /// Requests the API server counted for a client (its `User-Agent`), read by another client.
    async fn requests_of(reader: &Client, agent: &str) -> u64 {
        let text = reader.request_text(http::Request::get("/metrics").body(Vec::new()).unwrap()).await.unwrap();
        let line = format!("apiserver_client_requests_total{{client=\"{agent}\"}} ");
        text.lines().find_map(|l| l.strip_prefix(&line)).map_or(0, |n| n.parse().unwrap())
    }

    #[tokio::test]
    async fn hooks_sharing_an_object_read_it_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = uc_apiserver::Config::new(dir.path());
        (config.port, config.durable) = (0, false);
        let server = uc_apiserver::start(config).await.expect("API server starts");
        let kc = Kubeconfig::read_from(&server.kubeconfig).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await.unwrap();
        let reader = Client::try_from(config.clone()).unwrap();
        let mut tagged = config;
        tagged.headers.push((http::header::USER_AGENT, http::HeaderValue::from_static("sources-test")));
        let client = Client::try_from(tagged).unwrap();
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "hooks"}, "data": {"sync.js": "var sync;", "finalize.js": "var finalize;"}
        }))
        .unwrap();
        Api::<ConfigMap>::namespaced(reader.clone(), "default").create(&PostParams::default(), &cm).await.unwrap();

        let mut objects = SourceObjects::default();
        assert_eq!(objects.source(&client, &js("hooks", "sync.js")).await.unwrap().as_deref(), Some("var sync;"));
        assert_eq!(
            objects.source(&client, &js("hooks", "finalize.js")).await.unwrap().as_deref(),
            Some("var finalize;")
        );
        assert_eq!(objects.source(&client, &js("hooks", "sync.js")).await.unwrap().as_deref(), Some("var sync;"));
        let missing_key = objects.source(&client, &js("hooks", "customize.js")).await.unwrap_err();
        assert_eq!(missing_key, "configMap default/hooks has no key \"customize.js\"");
        assert_eq!(requests_of(&reader, "sources-test").await, 1, "one GET for the four hooks kept in one ConfigMap");

        let missing = objects.source(&client, &js("elsewhere", "sync.js")).await.unwrap_err();
        assert!(missing.starts_with("configMap default/elsewhere: "), "{missing}");
        assert_eq!(requests_of(&reader, "sources-test").await, 2);
        assert_eq!(
            objects.source(&client, &JavaScript { source: Some("x".into()), ..Default::default() }).await,
            Ok(None)
        );
    }
}
