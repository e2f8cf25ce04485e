//! Hook sources kept in a ConfigMap or a Secret: read when the controller starts, then followed.
//!
//! Hot reload: a JavaScript hook whose source is in a ConfigMap or a Secret follows it. A watch of that
//! one object hands each new version to the hook, which takes it if it loads (every parent is then
//! queued behind news, as a resync, so an edit shows at once) and keeps the old one otherwise; what
//! went wrong — a version that does not load, an object or key that is gone — is the controller's to
//! report (`Running::source_problem`).
//!
//! The object is read by the watch's own initial list (the watch then goes on from it), and hooks that
//! share an object (a sync and a finalize hook in one ConfigMap, each its own key or the same one)
//! share that watch: the object is sent once when the controller starts, not once per hook and again
//! for the watch.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fmt;
use std::sync::Arc;

use futures::stream::BoxStream;
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

/// Why a hook's source could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SourceError(pub String);

impl From<String> for SourceError {
    fn from(message: String) -> Self {
        SourceError(message)
    }
}

impl From<&str> for SourceError {
    fn from(message: &str) -> Self {
        SourceError(message.to_string())
    }
}

impl From<SourceError> for String {
    fn from(e: SourceError) -> String {
        e.0
    }
}

/// An object's data (a Secret's values as text).
type Data = BTreeMap<String, String>;

/// A watch of a source object.
type Watch = BoxStream<'static, Result<Seen, watcher::Error>>;

/// What a watch of a source object saw.
enum Seen {
    /// A version of the object (listed or changed).
    Object(Data),
    /// The object was deleted.
    Deleted,
    /// The (re)list is complete.
    Listed,
    /// The start of a (re)list.
    Relisting,
}

/// The object a hook's source is kept in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct SourceObject {
    secret: bool,
    namespace: String,
    name: String,
}

impl SourceObject {
    /// The object and key of a JavaScript hook's source, unless it is inline.
    fn of(js: &JavaScript) -> Option<(SourceObject, &str)> {
        let (secret, r) = match (&js.secret_ref, &js.config_map_ref) {
            (Some(r), _) => (true, r),
            (None, Some(r)) => (false, r),
            (None, None) => return None,
        };
        Some((SourceObject { secret, namespace: r.namespace.clone(), name: r.name.clone() }, &r.key))
    }

    /// A watch of the object (a list of it, then its changes), without retries.
    fn watch(&self, client: Client) -> Watch {
        let config = watcher::Config::default().fields(&format!("metadata.name={}", self.name));
        if self.secret {
            watcher(Api::<Secret>::namespaced(client, &self.namespace), config).map(|ev| seen(ev, secret_data)).boxed()
        } else {
            let api = Api::<ConfigMap>::namespaced(client, &self.namespace);
            watcher(api, config).map(|ev| seen(ev, configmap_data)).boxed()
        }
    }

    /// Reads the object through the first list of a new watch of it; returns its data and the watch,
    /// which goes on from that list.
    async fn read(&self, client: Client) -> Result<(Data, Watch), SourceError> {
        let mut watch = self.watch(client);
        let mut data = None;
        loop {
            match watch.next().await {
                Some(Ok(Seen::Object(d))) => data = Some(d),
                Some(Ok(Seen::Listed)) => break,
                Some(Ok(Seen::Deleted | Seen::Relisting)) => {}
                Some(Err(e)) => return Err(SourceError::from(format!("{self}: {}", crate::dynamic::watch_error(&e)))),
                None => return Err(SourceError::from(format!("{self}: the watch ended before its first list"))),
            }
        }
        let data = data.ok_or_else(|| format!("{self} not found"))?;
        Ok((data, watch))
    }
}

impl fmt::Display for SourceObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.secret { "secret" } else { "configMap" };
        write!(f, "{kind} {}/{}", self.namespace, self.name)
    }
}

fn seen<K>(ev: Result<watcher::Event<K>, watcher::Error>, data: fn(K) -> Data) -> Result<Seen, watcher::Error> {
    Ok(match ev? {
        watcher::Event::Apply(o) | watcher::Event::InitApply(o) => Seen::Object(data(o)),
        watcher::Event::Delete(_) => Seen::Deleted,
        watcher::Event::Init => Seen::Relisting,
        watcher::Event::InitDone => Seen::Listed,
    })
}

fn configmap_data(cm: ConfigMap) -> Data {
    cm.data.unwrap_or_default()
}

fn secret_data(secret: Secret) -> Data {
    (secret.data.unwrap_or_default().into_iter())
        .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
        .collect()
}

/// A source object read while the controller starts, and its watch until a hook follows it.
struct Read {
    data: Data,
    watch: Option<Watch>,
}

/// The source objects read while a controller starts, each read once.
#[derive(Default)]
pub(super) struct SourceObjects(BTreeMap<SourceObject, Read>);

impl SourceObjects {
    /// The source of a JavaScript hook kept in an object: `Ok(None)` when it is inline; an error
    /// names the object that cannot be read or the key it lacks.
    pub(super) async fn source(&mut self, client: &Client, js: &JavaScript) -> Result<Option<String>, SourceError> {
        let Some((object, key)) = SourceObject::of(js) else { return Ok(None) };
        let what = object.to_string();
        let read = match self.0.entry(object) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let (data, watch) = e.key().read(client.clone()).await?;
                e.insert(Read { data, watch: Some(watch) })
            }
        };
        read.data.get(key).cloned().map(Some).ok_or_else(|| SourceError(format!("{what} has no key {key:?}")))
    }
}

/// A hook following its source.
struct Follower {
    which: &'static str,
    js: Arc<JsHook>,
    key: String,
}

/// A task per object holding the source of one or more of the controller's hooks, following the
/// watch that read it (or a new one).
pub(super) fn watch(shared: &Arc<Shared>, read: &mut SourceObjects) -> Vec<JoinHandle<()>> {
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
            let watch = read.0.get_mut(&object).and_then(|r| r.watch.take());
            let watch = watch.unwrap_or_else(|| object.watch(shared.writer.clone()));
            let versions = watch.default_backoff().filter_map(|seen| {
                std::future::ready(match seen {
                    Ok(Seen::Object(data)) => Some(Some(data)),
                    Ok(Seen::Deleted) => Some(None),
                    _ => None,
                })
            });
            tokio::spawn(follow(shared.clone(), object, followers, versions))
        })
        .collect()
}

/// Hands each version the watch sees to every hook kept in the object, and records what is wrong.
async fn follow(
    s: Arc<Shared>,
    object: SourceObject,
    followers: Vec<Follower>,
    versions: impl Stream<Item = Option<Data>>,
) {
    let mut versions = std::pin::pin!(versions);
    while let Some(data) = versions.next().await {
        for f in &followers {
            let what = format!("hooks.{}: {object}", f.which);
            let problem = match data.as_ref().map(|d| d.get(&f.key)) {
                None => Some(SourceProblem::Gone(format!("{what} was deleted"))),
                Some(None) => Some(SourceProblem::Gone(format!("{what} has no key {:?}", f.key))),
                Some(Some(source)) => match f.js.reload(source).await {
                    Ok(true) => {
                        tracing::info!(controller = %s.name, hook = f.which, "hook reloaded from its source; resyncing");
                        s.resync();
                        None
                    }
                    Ok(false) => None,
                    Err(e) => Some(SourceProblem::Broken(format!(
                        "{what}: the new version does not load ({e}); the previous version runs"
                    ))),
                },
            };
            if let Some(p) = &problem {
                tracing::warn!(controller = %s.name, hook = f.which, problem = %p, "hook source problem");
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

    use super::*;
    use crate::testing::Cluster;

    fn js(config_map: &str, key: &str) -> JavaScript {
        let r = uc_api::controller::ConfigMapKeyRef {
            name: config_map.into(),
            namespace: "default".into(),
            key: key.into(),
        };
        JavaScript { config_map_ref: Some(r), ..Default::default() }
    }

    #[tokio::test]
    async fn hooks_sharing_an_object_read_it_once_by_the_watch_that_follows_it() {
        let cluster = Cluster::start().await;
        let (reader, client) = (cluster.reader.clone(), cluster.counted.clone());
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "hooks"}, "data": {"sync.js": "var sync;", "finalize.js": "var finalize;"}
        }))
        .unwrap();
        let configmaps = Api::<ConfigMap>::namespaced(reader.clone(), "default");
        configmaps.create(&PostParams::default(), &cm).await.unwrap();

        let mut objects = SourceObjects::default();
        let source = async |objects: &mut SourceObjects, name, key| objects.source(&client, &js(name, key)).await;
        assert_eq!(source(&mut objects, "hooks", "sync.js").await.unwrap().as_deref(), Some("var sync;"));
        assert_eq!(source(&mut objects, "hooks", "finalize.js").await.unwrap().as_deref(), Some("var finalize;"));
        assert_eq!(source(&mut objects, "hooks", "sync.js").await.unwrap().as_deref(), Some("var sync;"));
        let missing_key = source(&mut objects, "hooks", "customize.js").await.unwrap_err();
        assert_eq!(missing_key.0, "configMap default/hooks has no key \"customize.js\"");
        assert_eq!(cluster.requests().await, 1, "one list for the four hooks kept in one ConfigMap");

        let missing = source(&mut objects, "elsewhere", "sync.js").await.unwrap_err();
        assert_eq!(missing.0, "configMap default/elsewhere not found");
        assert_eq!(cluster.requests().await, 2);
        let inline = JavaScript { source: Some("x".into()), ..Default::default() };
        assert_eq!(objects.source(&client, &inline).await, Ok(None));

        // The watch that read the object goes on from its list: the next thing it sees is the edit.
        let (object, _) = SourceObject::of(&js("hooks", "sync.js")).unwrap();
        let mut watch = objects.0.get_mut(&object).and_then(|r| r.watch.take()).expect("the read's watch");
        let edit = serde_json::json!({"data": {"sync.js": "var edited;"}});
        let patch = kube::api::Patch::Merge(&edit);
        configmaps.patch("hooks", &kube::api::PatchParams::default(), &patch).await.unwrap();
        let next = tokio::time::timeout(std::time::Duration::from_secs(30), watch.next()).await.expect("an event");
        let Some(Ok(Seen::Object(data))) = next else { panic!("not a version of the object") };
        assert_eq!(data.get("sync.js").map(String::as_str), Some("var edited;"));
        assert_eq!(cluster.requests().await, 3, "the list, the missing one's list, one watch");
    }
}
