//! A ClusterServiceVersion's phase, as OLM moves it: Pending until its requirements (its OperatorGroup,
//! the CRDs it owns and needs) are met, InstallReady, Installing while its Deployments come up,
//! Succeeded once they are available; Failed with OLM's reason when the group is wrong or a component
//! breaks; Replacing while a newer CSV installs. A pure function of what was observed.

use crate::group::GroupProblem;

/// What a CSV's phase depends on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// The phase it has.
    pub phase: String,
    /// Its OperatorGroup, or why it has none usable.
    pub group: Option<GroupProblem>,
    /// CRDs it owns or needs that are not served yet.
    pub missing_crds: Vec<String>,
    /// Whether its Deployments exist.
    pub deployments_created: bool,
    /// Deployments not available yet, by name.
    pub unavailable: Vec<String>,
    /// A newer CSV that replaces it, if one exists.
    pub replaced_by: Option<String>,
}

/// The phase to set, with its reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    /// `Pending`, `InstallReady`, `Installing`, `Succeeded`, `Failed`, `Replacing`.
    pub phase: &'static str,
    /// OLM's reason.
    pub reason: &'static str,
    /// For people.
    pub message: String,
}

fn phase(phase: &'static str, reason: &'static str, message: impl Into<String>) -> Phase {
    Phase { phase, reason, message: message.into() }
}

/// The next phase of a CSV.
pub fn next(o: &Observed) -> Phase {
    if let Some(by) = &o.replaced_by {
        return phase("Replacing", "BeingReplaced", format!("being replaced by csv: {by}"));
    }
    if let Some(problem) = &o.group {
        return phase("Failed", problem.reason(), problem.message());
    }
    if !o.missing_crds.is_empty() {
        return phase(
            "Pending",
            "RequirementsNotMet",
            format!("one or more requirements couldn't be found: {}", o.missing_crds.join(", ")),
        );
    }
    match (o.phase.as_str(), o.deployments_created, o.unavailable.is_empty()) {
        ("" | "Pending", _, _) => {
            phase("InstallReady", "AllRequirementsMet", "all requirements found, attempting install")
        }
        // The install strategy ran at InstallReady: as OLM, always through Installing.
        ("InstallReady", _, _) => {
            phase("Installing", "InstallWaiting", "installing: waiting for the operator's deployments")
        }
        (_, false, _) => {
            phase("Installing", "InstallWaiting", "installing: the operator's deployments are being created")
        }
        (_, true, false) if o.phase == "Succeeded" || o.phase == "Failed" => phase(
            "Failed",
            "ComponentUnhealthy",
            format!("installing: deployment {} not available", o.unavailable.join(", ")),
        ),
        (_, true, false) => phase(
            "Installing",
            "InstallWaiting",
            format!("installing: waiting for deployment {} to become ready", o.unavailable.join(", ")),
        ),
        (_, true, true) => phase("Succeeded", "InstallSucceeded", "install strategy completed with no errors"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(mut o: Observed, steps: usize) -> Vec<&'static str> {
        let mut seen = Vec::new();
        for _ in 0..steps {
            let p = next(&o);
            seen.push(p.phase);
            o.phase = p.phase.to_string();
            if p.phase == "InstallReady" {
                o.deployments_created = true; // the install strategy ran
            }
        }
        seen
    }

    #[test]
    fn a_csv_walks_olms_phases() {
        let o = Observed { unavailable: vec!["op".into()], ..Default::default() };
        assert_eq!(walk(o.clone(), 3), ["InstallReady", "Installing", "Installing"]);
        let ready = Observed { unavailable: vec![], ..o };
        assert_eq!(walk(ready, 4), ["InstallReady", "Installing", "Succeeded", "Succeeded"]);
    }

    #[test]
    fn requirements_groups_health_and_replacement() {
        let missing =
            Observed { missing_crds: vec!["etcdclusters.etcd.database.coreos.com".into()], ..Default::default() };
        let p = next(&missing);
        assert_eq!((p.phase, p.reason), ("Pending", "RequirementsNotMet"));
        assert!(p.message.contains("etcdclusters"));
        let grouped = Observed {
            group: Some(GroupProblem::TooManyOperatorGroups(vec!["a".into(), "b".into()])),
            ..Default::default()
        };
        assert_eq!(next(&grouped).reason, "TooManyOperatorGroups");
        let broken = Observed {
            phase: "Succeeded".into(),
            deployments_created: true,
            unavailable: vec!["op".into()],
            ..Default::default()
        };
        assert_eq!((next(&broken).phase, next(&broken).reason), ("Failed", "ComponentUnhealthy"));
        let healed = Observed { unavailable: vec![], phase: "Failed".into(), ..broken };
        assert_eq!(next(&healed).phase, "Succeeded");
        let old = Observed { replaced_by: Some("etcdoperator.v0.9.4".into()), ..Default::default() };
        assert_eq!((next(&old).phase, next(&old).reason), ("Replacing", "BeingReplaced"));
    }
}
