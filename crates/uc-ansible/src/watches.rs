//! The Operator SDK's `watches.yaml` for Ansible operators: one entry per custom resource kind, naming
//! the role or playbook that reconciles it, with the SDK's defaults
//! (`internal/ansible/watches/watches.go`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value as Json;

/// What is wrong with a watches file: the field and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct WatchesError(pub String);

impl From<String> for WatchesError {
    fn from(message: String) -> Self {
        WatchesError(message)
    }
}

impl From<&str> for WatchesError {
    fn from(message: &str) -> Self {
        WatchesError(message.to_string())
    }
}

impl From<WatchesError> for String {
    fn from(e: WatchesError) -> String {
        e.0
    }
}

/// What reconciles a kind: a role (its directory) or a playbook (its file).
#[derive(Clone, Debug, PartialEq)]
pub enum Runnable {
    Role(PathBuf),
    Playbook(PathBuf),
}

/// A finalizer: its name, and what runs when a resource carrying it is deleted (`None`: the watch's
/// own role or playbook, with the finalizer's `vars`).
#[derive(Clone, Debug, PartialEq)]
pub struct Finalizer {
    pub name: String,
    pub run: Option<Runnable>,
    pub vars: BTreeMap<String, Json>,
}

/// A `group/version/kind` a watch does not follow as a dependent.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct Gvk {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
}

/// One entry, as the SDK reads it (defaults applied).
#[derive(Clone, Debug, PartialEq)]
pub struct Watch {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub run: Runnable,
    pub vars: BTreeMap<String, Json>,
    /// Seconds between reconciles without a change (0: none, the SDK's default).
    pub reconcile_period: f64,
    pub manage_status: bool,
    pub watch_dependent_resources: bool,
    pub watch_cluster_scoped_resources: bool,
    pub max_runner_artifacts: u32,
    pub finalizer: Option<Finalizer>,
    pub blacklist: Vec<Gvk>,
    pub selector: Option<Json>,
    pub snake_case_parameters: bool,
    pub mark_unsafe: bool,
    pub watch_annotations_changes: bool,
    pub max_concurrent_reconciles: Option<u32>,
    pub ansible_verbosity: u32,
}

impl Watch {
    /// `group/version` (or `version` for the core group).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// Whether objects of `api_version`/`kind` are excluded from the dependents followed.
    pub fn blacklisted(&self, api_version: &str, kind: &str) -> bool {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        self.blacklist.iter().any(|b| b.group == group && b.version == version && b.kind == kind)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Entry {
    #[serde(default)]
    group: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    role: String,
    #[serde(default)]
    playbook: String,
    #[serde(default)]
    vars: BTreeMap<String, Json>,
    reconcile_period: Option<String>,
    manage_status: Option<bool>,
    watch_dependent_resources: Option<bool>,
    watch_cluster_scoped_resources: Option<bool>,
    max_runner_artifacts: Option<u32>,
    finalizer: Option<FinalizerEntry>,
    #[serde(default)]
    blacklist: Vec<Gvk>,
    selector: Option<Json>,
    snake_case_parameters: Option<bool>,
    mark_unsafe: Option<bool>,
    watch_annotations_changes: Option<bool>,
    max_concurrent_reconciles: Option<u32>,
    ansible_verbosity: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FinalizerEntry {
    #[serde(default)]
    name: String,
    #[serde(default)]
    role: String,
    #[serde(default)]
    playbook: String,
    #[serde(default)]
    vars: BTreeMap<String, Json>,
}

/// Where relative paths are found: the watches file's directory (the project, the SDK image's working
/// directory), the roles path (`ANSIBLE_ROLES_PATH`) and the home directory's `roles/`.
pub struct Paths<'a> {
    pub dir: &'a Path,
    pub roles_path: Vec<PathBuf>,
    pub home: Option<PathBuf>,
    pub exists: &'a dyn Fn(&Path) -> bool,
}

impl Paths<'_> {
    fn role(&self, role: &str, at: &str) -> Result<PathBuf, WatchesError> {
        let r = Path::new(role);
        if r.is_absolute() {
            return if (self.exists)(r) {
                Ok(r.to_path_buf())
            } else {
                Err(WatchesError::from(format!("{at}: role {role} not found")))
            };
        }
        let mut candidates = vec![self.dir.join("roles").join(role)];
        candidates.extend(self.roles_path.iter().map(|p| p.join(role)));
        candidates.extend(self.home.iter().map(|h| h.join("roles").join(role)));
        candidates.into_iter().find(|c| (self.exists)(c)).ok_or_else(|| {
            WatchesError(format!(
                "{at}: role {role} not found in {}/roles, ANSIBLE_ROLES_PATH or ~/roles",
                self.dir.display()
            ))
        })
    }

    fn playbook(&self, playbook: &str, at: &str) -> Result<PathBuf, WatchesError> {
        let p = if Path::new(playbook).is_absolute() { PathBuf::from(playbook) } else { self.dir.join(playbook) };
        if (self.exists)(&p) {
            Ok(p)
        } else {
            Err(WatchesError::from(format!("{at}: playbook {} not found", p.display())))
        }
    }

    fn runnable(&self, role: &str, playbook: &str, at: &str) -> Result<Option<Runnable>, WatchesError> {
        match (role.is_empty(), playbook.is_empty()) {
            (false, false) => Err(WatchesError::from(format!("{at}: set only one of role and playbook"))),
            (false, true) => Ok(Some(Runnable::Role(self.role(role, &format!("{at}.role"))?))),
            (true, false) => Ok(Some(Runnable::Playbook(self.playbook(playbook, &format!("{at}.playbook"))?))),
            (true, true) => Ok(None),
        }
    }
}

/// Whether a watches file is an Ansible operator's (an entry names a role or a playbook).
pub fn is_ansible(text: &str) -> bool {
    serde_yaml_ng::from_str::<Vec<Json>>(text)
        .is_ok_and(|entries| entries.iter().any(|e| e.get("role").is_some() || e.get("playbook").is_some()))
}

/// The entries of a watches file's text.
pub fn parse(text: &str, paths: &Paths) -> Result<Vec<Watch>, WatchesError> {
    let entries: Vec<Entry> = serde_yaml_ng::from_str(text).map_err(|e| format!("invalid watches file: {e}"))?;
    let mut out: Vec<Watch> = Vec::new();
    for (i, e) in entries.into_iter().enumerate() {
        let gvk = format!("{}/{}, Kind={}", e.group, e.version, e.kind);
        let at = format!("watches[{i}]");
        if e.version.is_empty() || e.kind.is_empty() {
            return Err(WatchesError::from(format!("invalid GVK: {gvk}: version and kind must not be empty")));
        }
        if out.iter().any(|w| w.group == e.group && w.version == e.version && w.kind == e.kind) {
            return Err(WatchesError::from(format!("duplicate GVK: {gvk}")));
        }
        let run = paths
            .runnable(&e.role, &e.playbook, &at)?
            .ok_or_else(|| format!("{at}: a role or a playbook is required for {gvk}"))?;
        let finalizer = match e.finalizer {
            Some(f) if f.name.is_empty() => {
                return Err(WatchesError::from(format!("{at}.finalizer.name: a finalizer needs a name")));
            }
            Some(f) => Some(Finalizer {
                run: paths.runnable(&f.role, &f.playbook, &format!("{at}.finalizer"))?,
                name: f.name,
                vars: f.vars,
            }),
            None => None,
        };
        let reconcile_period = match e.reconcile_period.as_deref() {
            Some(p) => uc_api::controller::parse_go_duration(p)
                .map_err(|e| WatchesError::from(format!("{at}.reconcilePeriod: {e}")))?
                .as_secs_f64(),
            None => 0.0,
        };
        out.push(Watch {
            group: e.group,
            version: e.version,
            kind: e.kind,
            run,
            vars: e.vars,
            reconcile_period,
            manage_status: e.manage_status.unwrap_or(true),
            watch_dependent_resources: e.watch_dependent_resources.unwrap_or(true),
            watch_cluster_scoped_resources: e.watch_cluster_scoped_resources.unwrap_or(false),
            max_runner_artifacts: e.max_runner_artifacts.unwrap_or(20),
            finalizer,
            blacklist: e.blacklist,
            selector: e.selector,
            snake_case_parameters: e.snake_case_parameters.unwrap_or(true),
            // Unlike the SDK (false): a resource's author must not run templates (`lookup('pipe', …)`)
            // as the operator; a project that wants them says `markUnsafe: false`.
            mark_unsafe: e.mark_unsafe.unwrap_or(true),
            watch_annotations_changes: e.watch_annotations_changes.unwrap_or(false),
            max_concurrent_reconciles: e.max_concurrent_reconciles,
            ansible_verbosity: e.ansible_verbosity.unwrap_or(2),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SDK's memcached-molecule-operator watches file (ansible-operator-plugins testdata).
    const MOLECULE: &str = "---\n# Use the 'create api' subcommand to add watches to this file.\n- version: v1alpha1\n  group: cache.example.com\n  kind: Memcached\n  playbook: playbooks/memcached.yml\n  finalizer:\n    name: cache.example.com/finalizer\n    role: memfin\n  blacklist:\n    - group: \"\"\n      version: v1\n      kind: ConfigMap\n- version: v1\n  group: \"\"\n  kind: Secret\n  role: secret\n  manageStatus: false\n# +kubebuilder:scaffold:watch\n";

    fn paths(exists: &dyn Fn(&Path) -> bool) -> Paths<'_> {
        Paths { dir: Path::new("/op"), roles_path: vec![PathBuf::from("/etc/roles")], home: None, exists }
    }

    #[test]
    fn the_sdks_sample_with_its_defaults() {
        let all = |_: &Path| true;
        assert!(is_ansible(MOLECULE));
        assert!(!is_ansible("- {group: g, version: v1, kind: K, chart: c}"));
        let w = parse(MOLECULE, &paths(&all)).unwrap();
        assert_eq!(w[0].run, Runnable::Playbook("/op/playbooks/memcached.yml".into()));
        let f = w[0].finalizer.as_ref().unwrap();
        assert_eq!(
            (f.name.as_str(), &f.run),
            ("cache.example.com/finalizer", &Some(Runnable::Role("/op/roles/memfin".into())))
        );
        assert!(w[0].blacklisted("v1", "ConfigMap") && !w[0].blacklisted("apps/v1", "Deployment"));
        assert!(w[0].manage_status && w[0].watch_dependent_resources && w[0].snake_case_parameters);
        assert!(!w[0].watch_cluster_scoped_resources && w[0].mark_unsafe, "strings from resources are never templates");
        assert_eq!((w[0].reconcile_period, w[0].max_runner_artifacts, w[0].ansible_verbosity), (0.0, 20, 2));
        assert_eq!((w[1].api_version(), w[1].manage_status), ("v1".to_string(), false));
    }

    #[test]
    fn roles_are_found_where_the_sdk_looks_and_bad_entries_are_refused() {
        let only_etc = |p: &Path| p.starts_with("/etc/roles");
        let w = parse("- {version: v1, kind: K, role: r, reconcilePeriod: 1m30s}", &paths(&only_etc)).unwrap();
        assert_eq!((w[0].run.clone(), w[0].reconcile_period), (Runnable::Role("/etc/roles/r".into()), 90.0));
        let none = |_: &Path| false;
        let e = parse("- {version: v1, kind: K, role: r}", &paths(&none)).unwrap_err();
        assert!(e.0.starts_with("watches[0].role: role r not found"), "{e}");
        let all = |_: &Path| true;
        let refused = [
            ("- {version: v1, kind: K}", "watches[0]: a role or a playbook is required"),
            ("- {version: v1, kind: K, role: r, playbook: p}", "set only one of role and playbook"),
            ("- {version: v1, kind: K, role: r, reconcilePeriod: soon}", "reconcilePeriod: invalid duration"),
            ("- {version: v1, kind: K, role: r, finalizer: {role: x}}", "finalizer.name: a finalizer needs a name"),
            ("- {version: v1, kind: K, role: r, chart: c}", "unknown field `chart`"),
            ("- {kind: K, role: r}", "version and kind must not be empty"),
            ("- {version: v1, kind: K, role: r}\n- {version: v1, kind: K, role: s}", "duplicate GVK: /v1, Kind=K"),
        ];
        for (text, want) in refused {
            let e = parse(text, &paths(&all)).unwrap_err();
            assert!(e.0.contains(want), "{text}: {e}");
        }
    }
}
