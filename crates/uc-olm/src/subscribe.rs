//! Installing operators the way a user would, for `uc up`'s own: a Subscription per package in the
//! `operators` namespace (its default channel, Automatic), then waiting until each one's CSV has
//! Succeeded — so that, when `uc up` says it is ready, the operators' kinds are served.

use std::time::{Duration, Instant};

use crate::context::{MANAGER, V1ALPHA1, str_at};
use crate::error::LifecycleError;
use crate::fbc::Catalog;
use crate::fbc::CatalogError;
use crate::subscription::{Subscription, SubscriptionSpec};

/// The Subscription to `package` of `catalog` (a CatalogSource in `catalog_namespace`), in `namespace`.
pub fn subscription(
    catalog: &Catalog,
    catalog_name: &str,
    catalog_namespace: &str,
    package: &str,
    namespace: &str,
) -> Result<Subscription, LifecycleError> {
    let p = catalog.packages.get(package).ok_or_else(|| {
        let known: Vec<&str> = catalog.packages.keys().map(String::as_str).collect();
        CatalogError::at(catalog_name, format!("no package {package:?} (it has {})", known.join(", ")))
    })?;
    let spec = SubscriptionSpec {
        name: package.into(),
        channel: Some(p.default_channel.clone()),
        source: Some(catalog_name.into()),
        source_namespace: Some(catalog_namespace.into()),
        install_plan_approval: Some("Automatic".into()),
        ..Default::default()
    };
    Ok(Subscription::new(namespace, package, spec))
}

/// Creates the Subscriptions (those that exist are left as they are).
pub async fn create(client: &kube::Client, subscriptions: &[Subscription]) -> Result<(), LifecycleError> {
    let kinds = uc_engine::dynamic::Kinds::default();
    for s in subscriptions {
        let (ns, name) = (s.namespace(), s.name());
        if uc_engine::dynamic::get(client, &kinds, V1ALPHA1, "Subscription", ns, name).await?.is_none() {
            uc_engine::dynamic::apply(client, &kinds, &uc_api::meta::json_of(s), MANAGER).await?;
        }
    }
    Ok(())
}

/// Waits until every Subscription's installed CSV has Succeeded; those that have not by `timeout`,
/// with the phase or condition they are in.
pub async fn wait_installed(
    client: &kube::Client,
    subscriptions: &[Subscription],
    timeout: Duration,
) -> Result<(), Vec<String>> {
    let kinds = uc_engine::dynamic::Kinds::default();
    let deadline = Instant::now() + timeout;
    loop {
        let mut waiting = Vec::new();
        for s in subscriptions {
            let (ns, name) = (s.namespace(), s.name());
            let sub = uc_engine::dynamic::get(client, &kinds, V1ALPHA1, "Subscription", ns, name).await;
            let installed = sub.ok().flatten().map(|s| str_at(&s, "/status/installedCSV").to_string());
            let csv = match installed.as_deref() {
                Some(csv) if !csv.is_empty() => {
                    uc_engine::dynamic::get(client, &kinds, V1ALPHA1, "ClusterServiceVersion", ns, csv).await
                }
                _ => Ok(None),
            };
            let phase = csv.ok().flatten().map(|c| str_at(&c, "/status/phase").to_string());
            if phase.as_deref() != Some("Succeeded") {
                waiting.push(format!("{ns}/{name}: {}", phase.unwrap_or_else(|| "no CSV installed yet".into())));
            }
        }
        if waiting.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(waiting);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscription_follows_the_packages_default_channel() {
        let blobs = crate::fbc::parse_blobs(
            r#"{"schema": "olm.package", "name": "etcd", "defaultChannel": "stable"}
{"schema": "olm.channel", "package": "etcd", "name": "stable", "entries": [{"name": "etcd.v1.0.0"}]}
{"schema": "olm.bundle", "package": "etcd", "name": "etcd.v1.0.0", "image": "",
 "properties": [{"type": "olm.package", "value": {"packageName": "etcd", "version": "1.0.0"}}]}"#,
        )
        .unwrap();
        let catalog = Catalog::from_blobs(&blobs).unwrap();
        let s = uc_api::meta::json_of(&subscription(&catalog, "uc-operators", "olm", "etcd", "operators").unwrap());
        assert_eq!(s["spec"]["channel"], "stable");
        assert_eq!(
            (s["metadata"]["namespace"].as_str(), s["spec"]["source"].as_str()),
            (Some("operators"), Some("uc-operators"))
        );
        let e = subscription(&catalog, "uc-operators", "olm", "nope", "operators").unwrap_err().to_string();
        assert!(e.contains("no package \"nope\"") && e.contains("etcd"), "{e}");
    }
}
