//! The lifecycle manager's loop: every pass reads the CatalogSources' catalogs, the OperatorGroups, and
//! moves each Subscription, InstallPlan and ClusterServiceVersion on — level-triggered from what the API
//! holds, so a pass that fails half-way is made good by the next one. A pass runs when a watched
//! object changed, and at the latest every `RESYNC`.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use crate::context::{Olm, V1, V1ALPHA1, beside, now, str_at, typed};
use crate::csv::Csv;
use crate::error::LifecycleError;
use crate::group::{Group, OperatorGroup, OperatorGroupStatus};
use crate::installplan::InstallPlan;
use crate::plan::{LABELLED_KINDS, OWNER_KIND_LABEL, OWNER_LABEL, OWNER_NAMESPACE_LABEL};
use crate::sources::{CatalogSource, CatalogSourceStatus, ConnectionState};
use crate::subscription::Subscription;
use crate::subscriptions::Loaded;
use crate::{csvs, installplans, packages, subscriptions};

/// The shortest time between two passes after one failed.
const RETRY: Duration = Duration::from_millis(700);

/// The longest time between two passes while something is in flight (a catalog unreadable, a plan
/// running): what no watched event may announce.
const IN_FLIGHT: Duration = Duration::from_secs(5);

/// The longest time between two passes when everything is settled (catalogs read from a directory or
/// over HTTP are read again then).
const RESYNC: Duration = Duration::from_secs(30);

/// How long a wake-up waits for the events that come with it, so one pass answers them all.
const SETTLE: Duration = Duration::from_millis(30);

/// Runs the lifecycle manager until the task is dropped: a pass whenever a watched object changed
/// (`triggers.rs`), and at the latest after `IN_FLIGHT` or `RESYNC`.
pub async fn run(mut olm: Olm, wake: std::sync::Arc<tokio::sync::Notify>) {
    loop {
        // A pass that panics (an input no check foresaw) is a failed pass: the next one runs.
        let wait = match uc_api::panics::unwound(pass(&mut olm)).await {
            Ok(Ok(true)) => IN_FLIGHT,
            Ok(Ok(false)) => RESYNC,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "lifecycle manager pass incomplete");
                olm.kinds.forget();
                RETRY
            }
            Err(panic) => {
                tracing::error!(%panic, "lifecycle manager pass panicked");
                olm.kinds.forget();
                RETRY
            }
        };
        tokio::select! {
            _ = wake.notified() => tokio::time::sleep(SETTLE).await,
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// Whether anything waits on the lifecycle manager: a Subscription not at its latest, a plan not
/// finished, a CSV not settled.
fn in_flight(subs: &[Subscription], plans: &[InstallPlan], csvs: &[Csv]) -> bool {
    let plan_phase = |p: &InstallPlan| p.status.as_ref().map(|s| s.phase.clone()).unwrap_or_default();
    subs.iter().any(|s| s.status().state != "AtLatestKnown")
        || plans.iter().any(|p| !matches!(plan_phase(p).as_str(), "Complete" | "Failed" | "RequiresApproval"))
        || csvs.iter().any(|c| c.phase() != "Succeeded")
}

/// Deletes what installs labelled as a CSV's when that CSV no longer exists (the operator's
/// controllers, RBAC, other objects; its CRDs and the user's objects stay).
async fn sweep(olm: &Olm, current: &BTreeSet<(String, String)>) {
    let selector = format!("{OWNER_KIND_LABEL}=ClusterServiceVersion");
    for (api_version, kind) in LABELLED_KINDS {
        let Ok(objects) =
            uc_engine::dynamic::list_selected(&olm.client, &olm.kinds, api_version, kind, &selector).await
        else {
            continue; // a kind this cluster does not serve
        };
        for o in objects {
            let label = |k: &str| {
                o.pointer("/metadata/labels").and_then(|l| l.get(k)).and_then(Value::as_str).unwrap_or_default()
            };
            let owner = (label(OWNER_NAMESPACE_LABEL).to_string(), label(OWNER_LABEL).to_string());
            if current.contains(&owner) {
                continue;
            }
            let (ns, name) = (str_at(&o, "/metadata/namespace"), str_at(&o, "/metadata/name"));
            tracing::info!(kind, namespace = ns, name, csv = %owner.1, "removing what an uninstalled operator left");
            if let Err(e) = uc_engine::dynamic::delete(&olm.client, &olm.kinds, api_version, kind, ns, name).await {
                tracing::warn!(kind, name, error = %e, "not removed");
            }
        }
    }
}

/// Writes a catalog's PackageManifests, and removes those of packages it no longer has.
async fn publish(olm: &Olm, source: &CatalogSource, catalog: &crate::fbc::Catalog) -> Result<(), LifecycleError> {
    let (ns, name) = (source.namespace(), source.name());
    for pkg in catalog.packages.values() {
        olm.apply(&uc_api::meta::json_of(&packages::manifest(source, pkg))).await?;
    }
    let selector = format!("{}={name},{}={ns}", packages::CATALOG_LABEL, packages::CATALOG_NAMESPACE_LABEL);
    for stale in
        uc_engine::dynamic::list_selected(&olm.client, &olm.kinds, packages::API_VERSION, "PackageManifest", &selector)
            .await?
            .iter()
            .filter(|m| !catalog.packages.contains_key(str_at(m, "/metadata/name")))
    {
        let stale_name = str_at(stale, "/metadata/name");
        uc_engine::dynamic::delete(&olm.client, &olm.kinds, packages::API_VERSION, "PackageManifest", ns, stale_name)
            .await?;
    }
    Ok(())
}

async fn catalogs(olm: &mut Olm) -> Result<(Vec<Loaded>, Vec<String>), LifecycleError> {
    let objects = olm.list(V1ALPHA1, "CatalogSource").await?;
    let sources: Vec<(&Value, CatalogSource)> = beside(&objects, "CatalogSource");
    let named: std::collections::BTreeSet<_> = sources
        .iter()
        .filter_map(|(_, s)| match crate::sources::origin(s) {
            Ok(crate::sources::Origin::ConfigMap(name)) => Some((s.namespace().to_string(), name)),
            _ => None,
        })
        .collect();
    olm.watched.send_if_modified(|w| {
        let changed = *w != named;
        *w = named;
        changed
    });
    let (mut loaded, mut unhealthy) = (Vec::new(), Vec::new());
    for (object, s) in &sources {
        let key = s.key();
        let priority = s.spec.priority;
        let (state, message) = match olm.sources.load(&olm.client, &olm.resolver, s).await {
            Ok(c) => {
                loaded.push((key.clone(), priority, c));
                ("READY", String::new())
            }
            Err(e) => {
                tracing::warn!(catalog = %key, error = %e, "catalog unreadable");
                unhealthy.push(key.clone());
                ("TRANSIENT_FAILURE", e.to_string())
            }
        };
        if let Some((_, _, catalog)) = loaded.last().filter(|(k, _, _)| *k == key) {
            let at = std::sync::Arc::as_ptr(catalog) as usize;
            if olm.published.get(&key) != Some(&at) {
                match publish(olm, s, catalog).await {
                    Ok(()) => {
                        olm.published.insert(key.clone(), at);
                    }
                    Err(e) => tracing::warn!(catalog = %key, error = %e, "package manifests not written"),
                }
            }
        }
        let was = s.status.clone().unwrap_or_default();
        if was.connection_state.last_observed_state != state || was.message != message {
            let address = Some(&s.spec.address).filter(|a| !a.is_empty()).unwrap_or(&s.spec.config_map);
            let status = CatalogSourceStatus {
                connection_state: ConnectionState {
                    address: address.clone(),
                    last_observed_state: state.into(),
                    last_connect: Some(now()),
                },
                reason: if message.is_empty() { "" } else { "CatalogUnreadable" }.into(),
                message,
            };
            olm.write_status(object, &status).await?;
        }
    }
    Ok((loaded, unhealthy))
}

/// One pass; whether something is in flight.
async fn pass(olm: &mut Olm) -> Result<bool, LifecycleError> {
    let (loaded, unhealthy) = catalogs(olm).await?;
    let group_objects = olm.list(V1, "OperatorGroup").await?;
    let read: Vec<(&Value, OperatorGroup)> = beside(&group_objects, "OperatorGroup");
    let groups: Vec<Group> = read.iter().map(|(_, og)| Group::from(og)).collect();
    for ((og, typed), g) in read.iter().zip(&groups) {
        let namespaces =
            if g.install_mode() == "AllNamespaces" { vec![String::new()] } else { g.target_namespaces.clone() };
        if typed.status.as_ref().and_then(|s| s.namespaces.as_ref()) != Some(&namespaces) {
            let status = OperatorGroupStatus { namespaces: Some(namespaces), last_updated: Some(now()) };
            if let Err(e) = olm.write_status(og, &status).await {
                tracing::warn!(group = %g.name, error = %e, "operator group status not written");
            }
        }
    }
    let plans: Vec<InstallPlan> = typed(&olm.list(V1ALPHA1, "InstallPlan").await?, "InstallPlan");
    let installed: Vec<Csv> = typed(&olm.list(V1ALPHA1, "ClusterServiceVersion").await?, "ClusterServiceVersion");
    let subs = olm.list(V1ALPHA1, "Subscription").await?;
    for sub in &subs {
        if let Err(e) = subscriptions::sync(olm, sub, &loaded, &unhealthy, &plans, &installed).await {
            tracing::warn!(subscription = %str_at(sub, "/metadata/name"), error = %e, "subscription not synced");
        }
    }
    let plan_objects = olm.list(V1ALPHA1, "InstallPlan").await?;
    for plan in &plan_objects {
        let operator_groups: Vec<OperatorGroup> = read.iter().map(|(_, og)| og.clone()).collect();
        let account = installplans::scoped_account(&operator_groups, str_at(plan, "/metadata/namespace"));
        if let Err(e) = installplans::sync(olm, plan, account.as_ref()).await {
            tracing::warn!(plan = %str_at(plan, "/metadata/name"), error = %e, "install plan not synced");
        }
    }
    let all_csvs = olm.list(V1ALPHA1, "ClusterServiceVersion").await?;
    let current: BTreeSet<(String, String)> = all_csvs
        .iter()
        .map(|c| (str_at(c, "/metadata/namespace").to_string(), str_at(c, "/metadata/name").to_string()))
        .collect();
    // What a CSV's install labelled goes with it: swept when a CSV went (and once at start, for
    // those that went while uc was down).
    if olm.csvs_seen.as_ref().is_none_or(|seen| seen.difference(&current).next().is_some()) {
        sweep(olm, &current).await;
    }
    olm.csvs_seen = Some(current);
    let plans: Vec<InstallPlan> = typed(&plan_objects, "InstallPlan");
    let typed_csvs: Vec<Csv> = typed(&all_csvs, "ClusterServiceVersion");
    if all_csvs.is_empty() {
        return Ok(in_flight(&typed(&subs, "Subscription"), &plans, &typed_csvs));
    }
    // The CRDs the CSVs own and need, read one by one (listing every CRD would read OLM's own, a
    // megabyte, on every pass).
    let descriptions = typed_csvs.iter().flat_map(|c| &c.spec.customresourcedefinitions);
    let wanted: BTreeSet<String> =
        descriptions.flat_map(|d| d.owned.iter().chain(&d.required)).map(|d| d.name.clone()).collect();
    let mut crds = Vec::new();
    for name in &wanted {
        let got = uc_engine::dynamic::get(
            &olm.client,
            &olm.kinds,
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            "",
            name,
        )
        .await?;
        crds.extend(got);
    }
    let crds = typed(&crds, "CustomResourceDefinition");
    let subs: Vec<Subscription> = typed(&olm.list(V1ALPHA1, "Subscription").await?, "Subscription");
    let world = csvs::World { csvs: &typed_csvs, groups: &groups, crds: &crds, subscriptions: &subs };
    for csv in &all_csvs {
        if let Err(e) = csvs::sync(olm, csv, &world).await {
            tracing::warn!(csv = %str_at(csv, "/metadata/name"), error = %e, "csv not synced");
        }
    }
    if let Err(e) = crate::copies::sync(olm, &all_csvs, &groups).await {
        tracing::warn!(error = %e, "copied csvs not synced");
    }
    Ok(in_flight(&subs, &plans, &typed_csvs))
}
