//! The UniversalControllers uc installs, and the built-in workload controllers `uc up` runs (UniversalControllers labelled
//! `uc.njuics.cn/builtin`): which are on (`--disable-controllers`), and keeping them: one deleted by
//! accident is made again at once (as kube-controller-manager's controllers cannot be deleted at all).

use anyhow::Context;
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};
use uc_api::controller::UniversalController;

/// Every built-in controller, by the name `--disable-controllers` takes (its object is `builtin-<name>`).
pub const NAMES: &[&str] = &[
    "deployment",
    "replicaset",
    "statefulset",
    "daemonset",
    "job",
    "cronjob",
    "replicationcontroller",
    "poddisruptionbudget",
    "horizontalpodautoscaler",
    "endpoints",
    "persistentvolumeclaim",
];

/// The label of built-in controllers.
pub const LABEL: &str = "uc.njuics.cn/builtin";

/// The built-in controllers not disabled, annotated as built in.
pub fn enabled(disabled: &[String]) -> Vec<UniversalController> {
    let short = |c: &UniversalController| {
        let name = c.metadata.name.as_deref().unwrap_or_default();
        name.strip_prefix("builtin-").unwrap_or(name).to_string()
    };
    uc_operators::workloads::controllers()
        .into_iter()
        .filter(|c| !disabled.contains(&short(c)))
        .map(|mut c| {
            let description = format!(
                "built into uc up; deleted, it is made again; run `uc up --disable-controllers {}` to go without it",
                short(&c)
            );
            c.metadata.annotations = Some([("uc.njuics.cn/description".to_string(), description)].into());
            c
        })
        .collect()
}

/// The UniversalController resource.
pub fn resource() -> ApiResource {
    uc_engine::flavor::Flavor::Universal.resource()
}

/// Makes a deleted built-in controller again, for as long as `uc up` runs.
pub async fn keep(client: kube::Client, controllers: Vec<UniversalController>) {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource());
    let config = watcher::Config::default().labels(&format!("{LABEL}=true"));
    let mut events = std::pin::pin!(watcher(api, config).default_backoff());
    while let Some(ev) = events.next().await {
        let Ok(watcher::Event::Delete(o)) = ev else { continue };
        let name = o.metadata.name.clone().unwrap_or_default();
        let Some(c) = controllers.iter().find(|c| c.metadata.name.as_ref() == Some(&name)) else {
            continue;
        };
        tracing::warn!(controller = %name, "a built-in controller was deleted; making it again (uc up --disable-controllers turns one off)");
        if let Err(e) = install_controllers(&client, vec![c.clone()]).await {
            tracing::warn!(controller = %name, error = %e, "making the built-in controller again failed");
        }
    }
}

/// Creates UniversalController objects uc ships (built-in, operators'), or brings them up to date.
pub(crate) async fn install_controllers(
    client: &kube::Client,
    controllers: Vec<UniversalController>,
) -> anyhow::Result<()> {
    use kube::api::PostParams;
    // Read as they are stored, whatever an edit left in them.
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource());
    for c in controllers {
        let mut obj: DynamicObject = serde_json::from_value(uc_api::meta::json_of(&c))?;
        let name = obj.metadata.name.clone().unwrap_or_default();
        match api.get_opt(&name).await? {
            None => {
                api.create(&PostParams::default(), &obj)
                    .await
                    .with_context(|| format!("creating controller {name}"))?;
            }
            Some(current) if current.data.get("spec") != obj.data.get("spec") => {
                obj.metadata.resource_version = current.metadata.resource_version;
                api.replace(&name, &PostParams::default(), &obj)
                    .await
                    .with_context(|| format!("updating controller {name}"))?;
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Deletes the built-in controllers `disabled` names (made by an earlier start).
pub(crate) async fn remove_disabled(client: &kube::Client, disabled: &[String]) -> anyhow::Result<()> {
    use kube::api::{Api, DeleteParams, DynamicObject};
    let ar = resource();
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    for name in disabled {
        match api.delete(&format!("builtin-{name}"), &DeleteParams::default()).await {
            Ok(_) | Err(kube::Error::Api(_)) => {}
            Err(e) => return Err(anyhow::anyhow!("removing the disabled controller {name}: {e}")),
        }
    }
    Ok(())
}

/// The provisioner of the StorageClass `uc up` makes: the node, a directory per claim.
pub const PROVISIONER: &str = "uc.njuics.cn/node-directory";

/// Makes `standard`, the default StorageClass, naming what the claim controller and the node do (every
/// claim a directory of the node's, bound at once), when the cluster has no class — as kind makes its
/// `standard` class once: classes a user made, or changed this one into, are left alone.
pub(crate) async fn ensure_storage_class(client: &kube::Client) -> anyhow::Result<()> {
    use k8s_openapi::api::storage::v1::StorageClass;
    use kube::api::{ListParams, ObjectMeta, PostParams};
    let api: Api<StorageClass> = Api::all(client.clone());
    if !api.list(&ListParams::default().limit(1)).await.context("listing StorageClasses")?.items.is_empty() {
        return Ok(());
    }
    let class = StorageClass {
        metadata: ObjectMeta {
            name: Some("standard".into()),
            annotations: Some([("storageclass.kubernetes.io/is-default-class".to_string(), "true".to_string())].into()),
            ..Default::default()
        },
        provisioner: PROVISIONER.into(),
        reclaim_policy: Some("Delete".into()),
        volume_binding_mode: Some("Immediate".into()),
        ..Default::default()
    };
    match api.create(&PostParams::default(), &class).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(anyhow::anyhow!("making the default StorageClass: {e}")),
    }
}

/// The engine's options with the native hooks of uc's operators registered (workloads, etcd,
/// ZooKeeper), and one table of the cluster's names for every client uc runs (webhooks, the operators').
pub(crate) fn engine_options(client: &kube::Client, mut options: uc_engine::EngineOptions) -> uc_engine::EngineOptions {
    let names = uc_engine::names::ClusterNames::start(client.clone());
    options.names = Some(names.clone());
    uc_operators::workloads::register(&mut options.natives);
    uc_operators::workloads::autoscaler::register(&mut options.natives, client.clone());
    uc_operators::etcd::register(&mut options.natives, client.clone(), Some(names.clone()));
    uc_operators::zookeeper::register(&mut options.natives, client.clone(), Some(names));
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_are_every_built_in_controller() {
        let mut all: Vec<String> = enabled(&[])
            .iter()
            .map(|c| c.metadata.name.as_deref().unwrap().strip_prefix("builtin-").unwrap().to_string())
            .collect();
        let mut names: Vec<String> = NAMES.iter().map(|s| s.to_string()).collect();
        all.sort();
        names.sort();
        assert_eq!(all, names);
    }

    #[test]
    fn disabled_ones_are_left_out_and_the_rest_say_they_are_built_in() {
        let on = enabled(&["job".into(), "daemonset".into()]);
        assert_eq!(on.len(), NAMES.len() - 2);
        let labelled = |c: &UniversalController| c.metadata.labels.as_ref().is_some_and(|l| l[LABEL] == "true");
        assert!(on.iter().all(|c| c.metadata.name.as_deref() != Some("builtin-job") && labelled(c)));
        let description = &on[0].metadata.annotations.as_ref().unwrap()["uc.njuics.cn/description"];
        assert!(description.contains("--disable-controllers"), "{description}");
    }
}
