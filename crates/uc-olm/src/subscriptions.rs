//! Subscriptions: resolve the package on its channel (with its dependencies) into an InstallPlan, follow
//! that plan, and once its CSV succeeded, plan the next bundle of the channel — the Subscription's
//! status says where it is (`state`, `currentCSV`, `installedCSV`, `installPlanRef`) and why it waits
//! (OLM's conditions).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::context::Olm;
use crate::csv::Csv;
use crate::error::LifecycleError;
use crate::fbc::Catalog;
use crate::graph;
use crate::installplan::InstallPlan;
use crate::installplans::plan_status;
use crate::plan::{dependency_subscription, steps};
use crate::resolve::{Choice, Installed, Source, Target, bundle_of, resolve};
use crate::subscription::{Subscription, SubscriptionCondition as Condition, SubscriptionStatus, condition};
use crate::versions::parse_version;

/// A catalog the lifecycle manager read: its CatalogSource (`namespace/name`), priority and contents.
pub type Loaded = (String, i64, Arc<Catalog>);

/// The name of the InstallPlan that installs `bundle` for a Subscription: stable, so that a pass
/// repeated after a crash finds the plan it made.
pub fn plan_name(subscription_uid: &str, bundle: &str) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in subscription_uid.bytes().chain([b'/']).chain(bundle.bytes()) {
        h = (h ^ b as u64).wrapping_mul(0x100000001b3);
    }
    let alphabet = b"bcdfghjklmnpqrstvwxz2456789";
    let tail: String = (0..5).map(|i| alphabet[((h >> (i * 8)) % alphabet.len() as u64) as usize] as char).collect();
    format!("install-{tail}")
}

/// The target of a Subscription.
pub fn target(sub: &Subscription) -> Target {
    let given = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
    let spec = &sub.spec;
    Target {
        package: spec.name.clone(),
        channel: given(&spec.channel),
        starting_csv: given(&spec.starting_csv),
        source: given(&spec.source).map(|s| format!("{}/{s}", spec.source_namespace.as_deref().unwrap_or_default())),
    }
}

/// The CSVs of `namespace` that count as installed: not being replaced, not copies.
fn installed_here<'a>(csvs: &'a [Csv], namespace: &'a str) -> impl Iterator<Item = &'a Csv> {
    csvs.iter().filter(move |c| c.namespace() == namespace && c.phase() != "Replacing" && !c.is_copy())
}

/// What is installed in a namespace: its CSVs that are not being replaced.
fn installed_in(csvs: &[Csv], namespace: &str, sources: &[Source]) -> Vec<Installed> {
    installed_here(csvs, namespace)
        .filter_map(|csv| {
            let version = parse_version(csv.spec.version.as_deref()?).ok()?;
            let package = sources
                .iter()
                .flat_map(|s| s.catalog.packages.values())
                .find(|p| p.bundles.contains_key(csv.name()))
                .map(|p| p.name.clone())
                .unwrap_or_default();
            Some(Installed { package, version, provides: csv.owned() })
        })
        .collect()
}

/// The CSV of `package` installed in `namespace` (not being replaced), if any.
fn installed_csv_of(csvs: &[Csv], namespace: &str, sources: &[Source], package: &str) -> Option<String> {
    let bundles: Vec<&crate::fbc::Package> = sources.iter().filter_map(|s| s.catalog.packages.get(package)).collect();
    installed_here(csvs, namespace)
        .map(Csv::name)
        .find(|name| bundles.iter().any(|p| p.bundles.contains_key(*name)))
        .map(str::to_string)
}

/// Makes the InstallPlan of `choices` in the Subscription's namespace; its name and uid.
async fn make_plan(
    olm: &Olm,
    sub: &Subscription,
    sources: &[Source<'_>],
    choices: &[Choice],
) -> Result<(String, String), LifecycleError> {
    let (ns, uid) = (sub.namespace(), sub.metadata.uid.as_deref().unwrap_or_default());
    let name = plan_name(uid, &choices[0].bundle);
    let mut all = Vec::new();
    for c in choices {
        let b = bundle_of(sources, c).ok_or_else(|| LifecycleError::Vanished(c.bundle.clone()))?;
        let (source_ns, source_name) = c.source.split_once('/').unwrap_or(("", c.source.as_str()));
        for s in steps(b, ns)? {
            all.push((s, source_ns.to_string(), source_name.to_string()));
        }
    }
    let approval = sub.spec.install_plan_approval.as_deref().filter(|a| !a.is_empty()).unwrap_or("Automatic");
    // Each dependency of another package is subscribed to, as OLM does.
    for c in choices.iter().skip(1).filter(|c| c.package != choices[0].package) {
        let (source_ns, source_name) = c.source.split_once('/').unwrap_or(("", c.source.as_str()));
        all.push((dependency_subscription(c, ns, approval), source_ns.to_string(), source_name.to_string()));
    }
    let csvs: Vec<String> = choices.iter().map(|c| c.bundle.clone()).collect();
    let (source_ns, source_name) = choices[0].source.split_once('/').unwrap_or(("", ""));
    let owner = (sub.name(), uid);
    let new = InstallPlan::new(&name, ns, &csvs, approval, (source_ns, source_name), owner);
    let plan = olm.apply(&serde_json::to_value(new).map_err(crate::plan::PlanError::Encode)?).await?;
    let made = InstallPlan::deserialize(&plan).map_err(crate::plan::PlanError::Encode)?;
    if made.status.is_none() {
        let phase = if approval == "Automatic" { "Installing" } else { "RequiresApproval" };
        let mut catalogs: Vec<String> = choices.iter().map(|c| c.source.clone()).collect();
        catalogs.dedup();
        let steps: Vec<(crate::plan::Step, &str, &str)> =
            all.iter().map(|(s, ns, n)| (s.clone(), ns.as_str(), n.as_str())).collect();
        let status = plan_status(phase, &steps, "Unknown", &catalogs);
        olm.write_status(&plan, &status).await?;
    }
    tracing::info!(subscription = %sub.name(), plan = %name, ?csvs, "install plan made");
    Ok((name, made.metadata.uid.unwrap_or_default()))
}

/// Moves one Subscription on.
/// The catalogs (`namespace/name`) a Subscription in `ns` resolves from, as OLM scopes them: those of
/// its own namespace and of the global catalog namespace. A broken catalog elsewhere is not its concern.
pub fn visible_to<'a>(ns: &str, catalogs: &'a [String]) -> Vec<&'a str> {
    catalogs
        .iter()
        .map(String::as_str)
        .filter(|c| c.split_once('/').is_some_and(|(n, _)| n == ns || n == crate::context::GLOBAL_CATALOG_NAMESPACE))
        .collect()
}

/// The `CatalogSourcesUnhealthy` condition of a Subscription seeing these unhealthy catalogs.
fn catalog_health(unhealthy: &[&str]) -> Condition {
    if unhealthy.is_empty() {
        condition(
            "CatalogSourcesUnhealthy",
            false,
            "AllCatalogSourcesHealthy",
            "all available catalogsources are healthy",
        )
    } else {
        let message = format!("targeted catalogsource(s) unhealthy: {}", unhealthy.join(", "));
        condition("CatalogSourcesUnhealthy", true, "UnhealthyCatalogSourceFound", &message)
    }
}

/// Where a Subscription's install plan is.
#[derive(Debug, PartialEq)]
enum PlanProgress<'a> {
    /// Done: its CSV is installed.
    Complete,
    /// Not done: the Subscription's state, the plan to name (none when it is gone), and why.
    Waiting { state: &'static str, plan: Option<(&'a str, &'a str)>, condition: Condition },
}

/// The progress of the plan `plan_ref` in `ns`, as OLM reports it on the Subscription: a missing plan
/// is resolved again, a failed one is `UpgradeFailed` until deleted, others are pending.
fn plan_progress<'a>(plans: &'a [InstallPlan], ns: &str, plan_ref: &'a str) -> PlanProgress<'a> {
    let Some(plan) = find_plan(plans, ns, plan_ref) else {
        let message = format!("the install plan {plan_ref} is gone; resolving again");
        let condition = condition("InstallPlanMissing", true, "ReferencedInstallPlanNotFound", &message);
        return PlanProgress::Waiting { state: "", plan: None, condition };
    };
    let named = Some((plan_ref, plan.metadata.uid.as_deref().unwrap_or_default()));
    let status = plan.status.as_ref();
    match status.map(|s| s.phase.as_str()).unwrap_or_default() {
        "Complete" => PlanProgress::Complete,
        "Failed" => {
            let message = status.and_then(|s| s.message.as_deref()).unwrap_or_default();
            let condition = condition("InstallPlanFailed", true, "InstallComponentFailed", message);
            PlanProgress::Waiting { state: "UpgradeFailed", plan: named, condition }
        }
        phase => {
            let reason = if phase == "RequiresApproval" { "RequiresApproval" } else { "Installing" };
            let condition = condition("InstallPlanPending", true, reason, "");
            PlanProgress::Waiting { state: "UpgradePending", plan: named, condition }
        }
    }
}

/// The plan `name` in `ns`.
fn find_plan<'a>(plans: &'a [InstallPlan], ns: &str, name: &str) -> Option<&'a InstallPlan> {
    plans.iter().find(|p| p.metadata.namespace.as_deref() == Some(ns) && p.metadata.name.as_deref() == Some(name))
}

/// The bundle after `from` in the Subscription's channel (of its source, when it names one).
fn next_bundle(sources: &[Source], target: &Target, from: &str) -> Option<String> {
    let pkg = sources
        .iter()
        .filter(|s| target.source.as_deref().is_none_or(|n| n == s.name))
        .find_map(|s| s.catalog.packages.get(&target.package))?;
    let channel = pkg.channels.get(target.channel.as_deref().unwrap_or(&pkg.default_channel))?;
    let version = pkg.bundles.get(from).map(|b| b.version.clone());
    graph::next(pkg, channel, from, version.as_ref()).map(|e| e.name.clone())
}

pub async fn sync(
    olm: &Olm,
    object: &Value,
    catalogs: &[Loaded],
    unhealthy: &[String],
    plans: &[InstallPlan],
    csvs: &[Csv],
) -> Result<(), LifecycleError> {
    let Some(sub) = Subscription::read(object) else { return Ok(()) };
    let ns = sub.namespace();
    let sources: Vec<Source> =
        catalogs.iter().map(|(n, p, c)| Source { name: n.as_str(), priority: *p, catalog: c.as_ref() }).collect();
    let unhealthy = visible_to(ns, unhealthy);
    let mut conditions = vec![catalog_health(&unhealthy)];
    let was = sub.status();
    let mut installed = was.installed_csv.clone().filter(|s| !s.is_empty());
    let current = was.current_csv.clone();
    let plan_ref = was.install_plan_ref.and_then(|r| r.name).unwrap_or_default();
    let status = |state: &str, current: &str, installed: Option<&String>, plan, conditions| {
        let status = SubscriptionStatus::new(ns, state, current, installed, plan, conditions);
        async move { olm.write_status(object, &status).await }
    };
    if !plan_ref.is_empty() {
        match plan_progress(plans, ns, &plan_ref) {
            PlanProgress::Complete => installed = Some(current.clone()),
            PlanProgress::Waiting { state, plan, condition: c } => {
                conditions.push(c);
                return status(state, &current, installed.as_ref(), plan, conditions).await;
            }
        }
    }
    let target = target(&sub);
    if installed.is_none() && plan_ref.is_empty() {
        // A Subscription to a package already installed here (a dependency a plan subscribed to, or
        // one subscribed again) takes the installed CSV as its own.
        installed = installed_csv_of(csvs, ns, &sources, &target.package);
    }
    let Some(from) = installed.clone() else {
        // Nothing installed: resolve the package (and what it needs) and plan it.
        return match resolve(&sources, &target, &installed_in(csvs, ns, &sources)) {
            Ok(choices) => {
                let (plan, uid) = make_plan(olm, &sub, &sources, &choices).await?;
                conditions.push(condition("InstallPlanPending", true, "Installing", ""));
                status("UpgradePending", &choices[0].bundle, None, Some((&plan, &uid)), conditions).await
            }
            Err(e) => {
                conditions.push(condition("ResolutionFailed", true, "ConstraintsNotSatisfiable", &e.to_string()));
                status("", "", None, None, conditions).await
            }
        };
    };
    // Installed: the next bundle of the channel, once the installed CSV succeeded.
    let plan_uid = find_plan(plans, ns, &plan_ref).and_then(|p| p.metadata.uid.as_deref()).unwrap_or_default();
    let last_plan = (!plan_ref.is_empty()).then_some((plan_ref.as_str(), plan_uid));
    let succeeded = csvs.iter().any(|c| c.namespace() == ns && c.name() == from && c.phase() == "Succeeded");
    let next = next_bundle(&sources, &target, &from);
    match next {
        Some(next) if succeeded => {
            let upgrade = Target { starting_csv: Some(next.clone()), ..target };
            match resolve(&sources, &upgrade, &installed_in(csvs, ns, &sources)) {
                Ok(choices) => {
                    let (plan, uid) = make_plan(olm, &sub, &sources, &choices).await?;
                    conditions.push(condition("InstallPlanPending", true, "Installing", ""));
                    status("UpgradePending", &next, Some(&from), Some((&plan, &uid)), conditions).await
                }
                Err(e) => {
                    let message = e.to_string();
                    conditions.push(condition("ResolutionFailed", true, "ConstraintsNotSatisfiable", &message));
                    status("UpgradeAvailable", &from, Some(&from), last_plan, conditions).await
                }
            }
        }
        Some(_) => status("UpgradeAvailable", &from, Some(&from), last_plan, conditions).await,
        None => status("AtLatestKnown", &from, Some(&from), last_plan, conditions).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_subscription_follows_its_plan_as_olm_reports_it() {
        let plan = |phase: &str| {
            [serde_json::from_value::<InstallPlan>(
                json!({"metadata": {"namespace": "ns", "name": "install-1", "uid": "u1"},
                    "status": {"phase": phase, "message": "no room"}}),
            )
            .unwrap()]
        };
        assert_eq!(plan_progress(&plan("Complete"), "ns", "install-1"), PlanProgress::Complete);
        let failed = plan("Failed");
        let PlanProgress::Waiting { state, plan: named, condition } = plan_progress(&failed, "ns", "install-1") else {
            panic!("a failed plan does not complete")
        };
        assert_eq!((state, named), ("UpgradeFailed", Some(("install-1", "u1"))));
        assert_eq!((condition.type_.as_str(), condition.message.as_str()), ("InstallPlanFailed", "no room"));
        let waiting = plan("RequiresApproval");
        let PlanProgress::Waiting { state, condition, .. } = plan_progress(&waiting, "ns", "install-1") else {
            panic!("a plan awaiting approval does not complete")
        };
        assert_eq!((state, condition.reason.as_str()), ("UpgradePending", "RequiresApproval"));
        // A plan of the same name in another namespace is not this Subscription's.
        let complete = plan("Complete");
        let PlanProgress::Waiting { state, plan: named, condition } = plan_progress(&complete, "other", "install-1")
        else {
            panic!("a missing plan does not complete")
        };
        assert_eq!((state, named, condition.type_.as_str()), ("", None, "InstallPlanMissing"));
    }

    #[test]
    fn plan_names_are_stable_and_distinct() {
        let a = plan_name("uid-1", "etcd.v0.1.0");
        assert_eq!(a, plan_name("uid-1", "etcd.v0.1.0"));
        assert_ne!(a, plan_name("uid-1", "etcd.v0.2.0"));
        assert_ne!(a, plan_name("uid-2", "etcd.v0.1.0"));
        assert!(a.starts_with("install-") && a.len() == "install-".len() + 5, "{a}");
    }

    #[test]
    fn catalog_health_is_scoped_as_olm_scopes_it() {
        let unhealthy = vec!["team-a/broken".to_string(), "olm/global-broken".to_string(), "team-b/own".to_string()];
        assert_eq!(visible_to("team-b", &unhealthy), ["olm/global-broken", "team-b/own"]);
        assert_eq!(visible_to("team-c", &unhealthy), ["olm/global-broken"]);
    }

    #[test]
    fn a_subscriptions_target() {
        let read = |v: Value| Subscription::read(&v).unwrap();
        let sub = read(
            json!({"spec": {"name": "etcd", "channel": "alpha", "source": "uc-operators", "sourceNamespace": "olm"}}),
        );
        let t = target(&sub);
        assert_eq!(
            (t.package.as_str(), t.channel.as_deref(), t.source.as_deref()),
            ("etcd", Some("alpha"), Some("olm/uc-operators"))
        );
        assert_eq!(target(&read(json!({"spec": {"name": "etcd"}}))).starting_csv, None);
    }
}
