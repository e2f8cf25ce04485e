//! kube-rs against the real `uc up` binary over HTTPS: discovery, CRUD, and a `watcher` + `reflector`
//! that stays consistent with a stream of writes.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Client, Config, ResourceExt};

struct Uc {
    child: Child,
    _dir: tempfile::TempDir,
    kubeconfig: String,
}

impl Uc {
    fn start() -> Uc {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut child = Command::new(env!("CARGO_BIN_EXE_uc"))
            .args(["up", "--port", "0", "--data-dir"])
            .arg(dir.path())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.path().join("uc.log")).expect("log file"))
            .spawn()
            .expect("uc up starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("export line");
        let Some(kubeconfig) = line.trim().strip_prefix("export KUBECONFIG=").map(str::to_string) else {
            let log = std::fs::read_to_string(dir.path().join("uc.log")).unwrap_or_default();
            panic!("uc up printed {line:?}; its log:\n{log}");
        };
        Uc { child, _dir: dir, kubeconfig }
    }

    async fn client(&self) -> Client {
        let kc = Kubeconfig::read_from(&self.kubeconfig).expect("kubeconfig");
        let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await.expect("config");
        Client::try_from(config).expect("client")
    }
}

impl Drop for Uc {
    /// As Ctrl-C stops it, so that what it made on the machine (the pod network's bridge) goes too.
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-INT", &self.child.id().to_string()]).status();
        for _ in 0..600 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn cm(name: &str, value: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.data = Some(BTreeMap::from([("v".to_string(), value.to_string())]));
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflector_stays_consistent_with_a_stream_of_writes() {
    let uc = Uc::start();
    let client = uc.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    // Objects that exist before the watch starts arrive through the paginated initial list.
    for i in 0..25 {
        api.create(&PostParams::default(), &cm(&format!("pre-{i}"), "0")).await.expect("create");
    }
    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream = watcher(api.clone(), watcher::Config::default().page_size(7))
        .default_backoff()
        .reflect(writer)
        .applied_objects();
    // Errors are counted as they arrive: the stream never ends, so the task is aborted, not awaited.
    let errors = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = errors.clone();
    let watching = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            if let Err(e) = ev {
                eprintln!("watcher error: {e}");
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
    });
    reader.wait_until_ready().await.expect("reflector ready");

    // A deterministic mix of creates, updates and deletes from two concurrent writers.
    let mut tasks = Vec::new();
    for w in 0..2 {
        let api = api.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..60 {
                let name = format!("w{w}-{}", i % 20);
                match i / 20 {
                    0 => drop(api.create(&PostParams::default(), &cm(&name, "created")).await.expect("create")),
                    1 => {
                        let patch = serde_json::json!({"data": {"v": format!("updated-{i}")}});
                        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.expect("patch");
                    }
                    _ if i % 2 == 0 => drop(api.delete(&name, &DeleteParams::default()).await.expect("delete")),
                    _ => {}
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("writer");
    }
    api.delete("pre-3", &DeleteParams::default()).await.expect("delete pre-3");

    let expected: BTreeMap<String, (String, Option<BTreeMap<String, String>>)> = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter(|c| c.name_any() != "kube-root-ca.crt")
        .map(|c| (c.name_any(), (c.resource_version().unwrap_or_default(), c.data.clone())))
        .collect();
    assert_eq!(expected.len(), 25 - 1 + 2 * 10, "server state after the writes (the namespace's CA aside)");
    let mut cached = BTreeMap::new();
    for _ in 0..100 {
        cached = reader
            .state()
            .iter()
            .filter(|c| c.name_any() != "kube-root-ca.crt")
            .map(|c| (c.name_any(), (c.resource_version().unwrap_or_default(), c.data.clone())))
            .collect::<BTreeMap<_, _>>();
        if cached == expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(cached, expected, "the reflector's cache matches the server");
    watching.abort();
    assert_eq!(errors.load(std::sync::atomic::Ordering::SeqCst), 0, "the watcher reported errors");
}

#[tokio::test]
async fn discovery_and_dynamic_api() {
    let uc = Uc::start();
    let client = uc.client().await;
    let version = client.apiserver_version().await.expect("version");
    assert_eq!(version.major, "1");
    let discovery = kube::Discovery::new(client.clone()).run_aggregated().await.expect("aggregated discovery");
    let apps = discovery.groups().find(|g| g.name() == "apps").expect("apps group");
    let kinds: Vec<String> = apps.recommended_resources().into_iter().map(|(r, _)| r.kind).collect();
    assert!(kinds.contains(&"Deployment".to_string()), "{kinds:?}");
    let legacy = kube::Discovery::new(client).run().await.expect("legacy discovery");
    assert!(legacy.groups().any(|g| g.name() == "apiextensions.k8s.io"));
}

/// Server-side apply the way kube-rs controllers write: `Patch::Apply` with a field manager creates,
/// a second manager changing the same field gets 409 naming the first, `force` takes the field over.
#[tokio::test]
async fn server_side_apply_with_field_managers() {
    let uc = Uc::start();
    let client = uc.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let intent = |value: &str| serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"v": value}});
    let alice = PatchParams::apply("alice");
    let created = api.patch("ssa", &alice, &Patch::Apply(intent("1"))).await.expect("apply creates");
    assert_eq!(created.data.as_ref().and_then(|d| d.get("v")).map(String::as_str), Some("1"));
    let fields = created.metadata.managed_fields.clone().unwrap_or_default();
    assert_eq!(
        fields.iter().map(|f| (f.manager.clone(), f.operation.clone())).collect::<Vec<_>>(),
        vec![(Some("alice".to_string()), Some("Apply".to_string()))]
    );
    let bob = PatchParams::apply("bob");
    let err = api.patch("ssa", &bob, &Patch::Apply(intent("2"))).await.expect_err("a conflict");
    match err {
        kube::Error::Api(s) => {
            assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
            assert!(s.message.contains("conflict with \"alice\"") && s.message.contains(".data.v"), "{}", s.message);
        }
        other => panic!("expected a 409, got {other}"),
    }
    assert_eq!(api.get("ssa").await.expect("get").data.unwrap_or_default()["v"], "1", "a conflict changes nothing");
    let forced = api.patch("ssa", &bob.force(), &Patch::Apply(intent("2"))).await.expect("forced apply");
    assert_eq!(forced.data.unwrap_or_default()["v"], "2");
    let owners: Vec<Option<String>> =
        forced.metadata.managed_fields.unwrap_or_default().into_iter().map(|f| f.manager).collect();
    assert_eq!(owners, vec![Some("bob".to_string())], "ownership moved to bob; alice owns nothing left");
}
