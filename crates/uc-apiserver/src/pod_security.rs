//! Pod Security admission as kube-apiserver has it: a namespace's labels
//! `pod-security.kubernetes.io/{enforce,audit,warn}` (and `-version`) pick a level — privileged,
//! baseline or restricted — per mode, over the cluster's defaults; a pod that violates the enforce
//! level is refused with kube's words (`violates PodSecurity "baseline:latest": host namespaces
//! (hostNetwork), hostPath volumes (volume "root")`), the warn level answers with a `Warning`, and pod
//! templates of workloads are warned about. The checks, their order and their messages follow the
//! Pod Security Standards' reference implementation; every function here is pure.

use std::borrow::Cow;
use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Container, PodSpec};

pub mod memo;

/// Why a Pod Security level or version does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PolicyError(pub String);

impl From<String> for PolicyError {
    fn from(message: String) -> Self {
        PolicyError(message)
    }
}

impl From<&str> for PolicyError {
    fn from(message: &str) -> Self {
        PolicyError(message.to_string())
    }
}

impl From<PolicyError> for String {
    fn from(e: PolicyError) -> String {
        e.0
    }
}

/// A Pod Security Standards level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    /// A level's name as labels and messages spell it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }

    fn parse(s: &str) -> Option<Level> {
        match s {
            "privileged" => Some(Level::Privileged),
            "baseline" => Some(Level::Baseline),
            "restricted" => Some(Level::Restricted),
            _ => None,
        }
    }
}

/// A level at a version of the standards (`latest` or `v1.N`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versioned {
    pub level: Level,
    pub version: String,
}

impl Versioned {
    fn new(level: Level) -> Self {
        Versioned { level, version: "latest".into() }
    }

    /// `baseline:latest`, as messages name it.
    pub fn label(&self) -> String {
        format!("{}:{}", self.level.name(), self.version)
    }
}

/// The three modes' levels for one namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    pub enforce: Versioned,
    pub audit: Versioned,
    pub warn: Versioned,
}

impl Default for Policy {
    /// uc's out-of-the-box cluster default: baseline enforced, restricted warned about.
    fn default() -> Self {
        Policy {
            enforce: Versioned::new(Level::Baseline),
            audit: Versioned::new(Level::Privileged),
            warn: Versioned::new(Level::Restricted),
        }
    }
}

/// The label prefix.
pub const LABEL: &str = "pod-security.kubernetes.io/";

/// Namespaces uc's own system parts live in: privileged whatever their labels say.
pub const EXEMPT_NAMESPACES: &[&str] = &["kube-system"];

impl Policy {
    /// All privileged: nothing checked.
    pub fn privileged() -> Self {
        let p = Versioned::new(Level::Privileged);
        Policy { enforce: p.clone(), audit: p.clone(), warn: p }
    }

    /// A cluster default written as `enforce=baseline,warn=restricted[:v1.30],audit=...`; modes left
    /// out are privileged.
    pub fn parse(s: &str) -> Result<Policy, PolicyError> {
        let mut p = Policy::privileged();
        for part in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            let (mode, value) = part.split_once('=').ok_or_else(|| format!("{part:?}: write mode=level"))?;
            let (level, version) = value.split_once(':').unwrap_or((value, "latest"));
            let level = Level::parse(level)
                .ok_or_else(|| format!("{part:?}: the level is one of privileged, baseline, restricted"))?;
            check_version(version).map_err(|e| format!("{part:?}: {e}"))?;
            let v = Versioned { level, version: version.to_string() };
            match mode {
                "enforce" => p.enforce = v,
                "audit" => p.audit = v,
                "warn" => p.warn = v,
                _ => return Err(PolicyError::from(format!("{part:?}: the mode is one of enforce, audit, warn"))),
            }
        }
        Ok(p)
    }

    /// The policy of a namespace whose labels are `labels`, over the cluster's `defaults`.
    pub fn of_namespace<'a>(
        defaults: &Policy,
        labels: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<Policy, Vec<(String, String)>> {
        let mut p = defaults.clone();
        let mut errors = Vec::new();
        for (mode, slot) in [("enforce", &mut p.enforce), ("audit", &mut p.audit), ("warn", &mut p.warn)] {
            let key = format!("{LABEL}{mode}");
            if let Some(v) = labels(&key) {
                match Level::parse(v) {
                    Some(l) => slot.level = l,
                    None => {
                        errors.push((key.clone(), format!("{v:?}: must be one of privileged, baseline, restricted")))
                    }
                }
            }
            if let Some(v) = labels(&format!("{key}-version")) {
                match check_version(v) {
                    Ok(()) => slot.version = v.to_string(),
                    Err(e) => errors.push((format!("{key}-version"), format!("{v:?}: {e}"))),
                }
            }
        }
        if errors.is_empty() { Ok(p) } else { Err(errors) }
    }
}

fn check_version(v: &str) -> Result<(), PolicyError> {
    let ok = v == "latest"
        || v.strip_prefix("v1.")
            .is_some_and(|m| !m.is_empty() && m.len() <= 3 && m.bytes().all(|b| b.is_ascii_digit()));
    if ok { Ok(()) } else { Err(PolicyError::from("must be \"latest\" or \"v1.x\"")) }
}

/// One failed check: kube's reason and its detail.
pub type Violation = (String, String);

/// The checks of `level` that `spec` fails, in kube's order (baseline's, then restricted's, each by
/// check name; a restricted check replaces the baseline check it tightens).
pub fn check(level: Level, spec: &PodSpec) -> Vec<Violation> {
    let mut out = Vec::new();
    if level == Level::Privileged {
        return out;
    }
    let baseline: [fn(&PodSpec) -> Option<Violation>; 10] = [
        app_armor,
        capabilities_baseline,
        host_namespaces,
        host_path_volumes,
        host_ports,
        privileged,
        proc_mount,
        se_linux_options,
        seccomp_baseline,
        sysctls,
    ];
    for (i, c) in baseline.iter().enumerate() {
        // capabilities and seccomp are tightened by restricted's own checks.
        if level == Level::Restricted && (i == 1 || i == 8) {
            continue;
        }
        out.extend(c(spec));
    }
    out.extend(windows_host_process(spec));
    if level == Level::Restricted {
        let restricted: [fn(&PodSpec) -> Option<Violation>; 6] = [
            allow_privilege_escalation,
            capabilities_restricted,
            restricted_volumes,
            run_as_non_root,
            run_as_user,
            seccomp_restricted,
        ];
        out.extend(restricted.iter().filter_map(|c| c(spec)));
    }
    out
}

/// `reason (detail), reason (detail)`, as kube joins them.
pub fn describe(violations: &[Violation]) -> String {
    violations.iter().map(|(r, d)| format!("{r} ({d})")).collect::<Vec<_>>().join(", ")
}

/// Every container of a pod: init, regular and ephemeral (as a `Container` each; the pod's own borrowed,
/// an ephemeral one made into a `Container` of what the checks read).
fn containers(spec: &PodSpec) -> Vec<Cow<'_, Container>> {
    let mut all: Vec<Cow<'_, Container>> = spec.init_containers.iter().flatten().map(Cow::Borrowed).collect();
    all.extend(spec.containers.iter().map(Cow::Borrowed));
    for e in spec.ephemeral_containers.iter().flatten() {
        all.push(Cow::Owned(Container {
            name: e.name.clone(),
            ports: e.ports.clone(),
            security_context: e.security_context.clone(),
            ..Default::default()
        }));
    }
    all
}

fn pluralize(one: &'static str, many: &'static str, n: usize) -> &'static str {
    if n == 1 { one } else { many }
}

fn join_quote(items: &[String]) -> String {
    items.iter().map(|i| format!("{i:?}")).collect::<Vec<_>>().join(", ")
}

/// `containers "a", "b"`.
fn named(names: &[String]) -> String {
    format!("{} {}", pluralize("container", "containers", names.len()), join_quote(names))
}

fn failing(spec: &PodSpec, mut bad: impl FnMut(&Container) -> bool) -> Vec<String> {
    containers(spec).into_iter().filter(|c| bad(c)).map(|c| c.name.clone()).collect()
}

fn host_namespaces(spec: &PodSpec) -> Option<Violation> {
    let set: Vec<&str> = [("hostIPC", spec.host_ipc), ("hostNetwork", spec.host_network), ("hostPID", spec.host_pid)]
        .into_iter()
        .filter(|(_, on)| on.unwrap_or(false))
        .map(|(n, _)| n)
        .collect();
    (!set.is_empty()).then(|| ("host namespaces".into(), set.join(", ")))
}

fn host_path_volumes(spec: &PodSpec) -> Option<Violation> {
    let names: Vec<String> =
        spec.volumes.iter().flatten().filter(|v| v.host_path.is_some()).map(|v| v.name.clone()).collect();
    (!names.is_empty()).then(|| {
        ("hostPath volumes".into(), format!("{} {}", pluralize("volume", "volumes", names.len()), join_quote(&names)))
    })
}

fn privileged(spec: &PodSpec) -> Option<Violation> {
    let bad = failing(spec, |c| c.security_context.as_ref().and_then(|s| s.privileged).unwrap_or(false));
    (!bad.is_empty())
        .then(|| ("privileged".into(), format!("{} must not set securityContext.privileged=true", named(&bad))))
}

const BASELINE_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

fn added(c: &Container) -> Vec<String> {
    c.security_context.as_ref().and_then(|s| s.capabilities.as_ref()).and_then(|c| c.add.clone()).unwrap_or_default()
}

fn capabilities_baseline(spec: &PodSpec) -> Option<Violation> {
    let mut caps = BTreeSet::new();
    let bad = failing(spec, |c| {
        let extra: Vec<String> =
            added(c).into_iter().filter(|a| !BASELINE_CAPABILITIES.contains(&a.as_str())).collect();
        let any = !extra.is_empty();
        caps.extend(extra);
        any
    });
    (!bad.is_empty()).then(|| {
        let caps: Vec<String> = caps.into_iter().collect();
        (
            "non-default capabilities".into(),
            format!("{} must not include {} in securityContext.capabilities.add", named(&bad), join_quote(&caps)),
        )
    })
}

fn host_ports(spec: &PodSpec) -> Option<Violation> {
    let mut ports = BTreeSet::new();
    let bad = failing(spec, |c| {
        let used: Vec<String> =
            c.ports.iter().flatten().filter_map(|p| p.host_port.filter(|h| *h != 0)).map(|h| h.to_string()).collect();
        let any = !used.is_empty();
        ports.extend(used);
        any
    });
    (!bad.is_empty()).then(|| {
        let ports: Vec<String> = ports.into_iter().collect();
        let detail = format!(
            "{} {} {} {}",
            named(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize("hostPort", "hostPorts", ports.len()),
            ports.join(", ")
        );
        ("hostPort".into(), detail)
    })
}

fn proc_mount(spec: &PodSpec) -> Option<Violation> {
    let mut values = BTreeSet::new();
    let bad = failing(spec, |c| match c.security_context.as_ref().and_then(|s| s.proc_mount.clone()) {
        Some(m) if m != "Default" => {
            values.insert(m);
            true
        }
        _ => false,
    });
    (!bad.is_empty()).then(|| {
        let values: Vec<String> = values.into_iter().collect();
        (
            "procMount".into(),
            format!("{} must not set securityContext.procMount to {}", named(&bad), join_quote(&values)),
        )
    })
}

/// Who of the pod and its containers sets a field to a bad value: `pod and containers "a"`.
fn setters(pod: bool, bad: &[String]) -> String {
    let mut who = Vec::new();
    if pod {
        who.push("pod".to_string());
    }
    if !bad.is_empty() {
        who.push(named(bad));
    }
    who.join(" and ")
}

fn seccomp_baseline(spec: &PodSpec) -> Option<Violation> {
    let unconfined = |t: Option<&str>| t == Some("Unconfined");
    let pod =
        unconfined(spec.security_context.as_ref().and_then(|s| s.seccomp_profile.as_ref()).map(|p| p.type_.as_str()));
    let bad = failing(spec, |c| {
        unconfined(c.security_context.as_ref().and_then(|s| s.seccomp_profile.as_ref()).map(|p| p.type_.as_str()))
    });
    (pod || !bad.is_empty()).then(|| {
        (
            "seccompProfile".into(),
            format!("{} must not set securityContext.seccompProfile.type to \"Unconfined\"", setters(pod, &bad)),
        )
    })
}

fn seccomp_restricted(spec: &PodSpec) -> Option<Violation> {
    let valid = |t: &str| t == "RuntimeDefault" || t == "Localhost";
    let mut values = BTreeSet::new();
    let pod_type = spec.security_context.as_ref().and_then(|s| s.seccomp_profile.as_ref()).map(|p| p.type_.clone());
    let pod_bad = pod_type.as_deref().is_some_and(|t| !valid(t));
    if let Some(t) = pod_type.as_ref().filter(|_| pod_bad) {
        values.insert(t.clone());
    }
    let pod_set = pod_type.as_deref().is_some_and(valid);
    let (mut explicit, mut implicit) = (Vec::new(), Vec::new());
    for c in containers(spec) {
        match c.security_context.as_ref().and_then(|s| s.seccomp_profile.as_ref()) {
            Some(p) if !valid(&p.type_) => {
                values.insert(p.type_.clone());
                explicit.push(c.name.clone());
            }
            Some(_) => {}
            None if !pod_set => implicit.push(c.name.clone()),
            None => {}
        }
    }
    if pod_bad || !explicit.is_empty() {
        let values: Vec<String> = values.into_iter().collect();
        let detail = format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            setters(pod_bad, &explicit),
            join_quote(&values)
        );
        return Some(("seccompProfile".into(), detail));
    }
    (!implicit.is_empty()).then(|| {
        let detail = format!(
            "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
            named(&implicit)
        );
        ("seccompProfile".into(), detail)
    })
}

fn se_linux_options(spec: &PodSpec) -> Option<Violation> {
    const TYPES: &[&str] = &["", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"];
    let mut problems = BTreeSet::new();
    let mut judge = |o: Option<&k8s_openapi::api::core::v1::SELinuxOptions>| -> bool {
        let Some(o) = o else { return false };
        let mut bad = false;
        if let Some(t) = o.type_.as_deref().filter(|t| !TYPES.contains(t)) {
            problems.insert(format!("type {t:?}"));
            bad = true;
        }
        if let Some(u) = o.user.as_deref().filter(|u| !u.is_empty()) {
            problems.insert(format!("user {u:?}"));
            bad = true;
        }
        if let Some(r) = o.role.as_deref().filter(|r| !r.is_empty()) {
            problems.insert(format!("role {r:?}"));
            bad = true;
        }
        bad
    };
    let pod = judge(spec.security_context.as_ref().and_then(|s| s.se_linux_options.as_ref()));
    let bad: Vec<String> = containers(spec)
        .into_iter()
        .filter(|c| judge(c.security_context.as_ref().and_then(|s| s.se_linux_options.as_ref())))
        .map(|c| c.name.clone())
        .collect();
    (pod || !bad.is_empty()).then(|| {
        let problems: Vec<String> = problems.into_iter().collect();
        let detail =
            format!("{} set forbidden securityContext.seLinuxOptions: {}", setters(pod, &bad), problems.join(", "));
        ("seLinuxOptions".into(), detail)
    })
}

fn app_armor(spec: &PodSpec) -> Option<Violation> {
    let unconfined = |t: Option<&str>| t == Some("Unconfined");
    let pod =
        unconfined(spec.security_context.as_ref().and_then(|s| s.app_armor_profile.as_ref()).map(|p| p.type_.as_str()));
    let bad = failing(spec, |c| {
        unconfined(c.security_context.as_ref().and_then(|s| s.app_armor_profile.as_ref()).map(|p| p.type_.as_str()))
    });
    (pod || !bad.is_empty()).then(|| {
        (
            "forbidden AppArmor profile".into(),
            format!("{} must not set securityContext.appArmorProfile.type to \"Unconfined\"", setters(pod, &bad)),
        )
    })
}

const SAFE_SYSCTLS: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];

fn sysctls(spec: &PodSpec) -> Option<Violation> {
    let bad: Vec<String> = spec
        .security_context
        .as_ref()
        .and_then(|s| s.sysctls.as_ref())
        .into_iter()
        .flatten()
        .filter(|s| !SAFE_SYSCTLS.contains(&s.name.as_str()))
        .map(|s| s.name.clone())
        .collect();
    (!bad.is_empty()).then(|| ("forbidden sysctls".into(), bad.join(", ")))
}

fn windows_host_process(spec: &PodSpec) -> Option<Violation> {
    let host = |w: Option<&k8s_openapi::api::core::v1::WindowsSecurityContextOptions>| {
        w.and_then(|w| w.host_process).unwrap_or(false)
    };
    let pod = host(spec.security_context.as_ref().and_then(|s| s.windows_options.as_ref()));
    let bad = failing(spec, |c| host(c.security_context.as_ref().and_then(|s| s.windows_options.as_ref())));
    (pod || !bad.is_empty()).then(|| {
        (
            "hostProcess".into(),
            format!("{} must not set securityContext.windowsOptions.hostProcess=true", setters(pod, &bad)),
        )
    })
}

fn allow_privilege_escalation(spec: &PodSpec) -> Option<Violation> {
    let bad = failing(spec, |c| c.security_context.as_ref().and_then(|s| s.allow_privilege_escalation) != Some(false));
    (!bad.is_empty()).then(|| {
        (
            "allowPrivilegeEscalation != false".into(),
            format!("{} must set securityContext.allowPrivilegeEscalation=false", named(&bad)),
        )
    })
}

fn capabilities_restricted(spec: &PodSpec) -> Option<Violation> {
    let (mut missing_drop, mut adding, mut caps) = (Vec::new(), Vec::new(), BTreeSet::new());
    for c in containers(spec) {
        let capabilities = c.security_context.as_ref().and_then(|s| s.capabilities.as_ref());
        if !capabilities.and_then(|k| k.drop.as_ref()).is_some_and(|d| d.iter().any(|x| x == "ALL")) {
            missing_drop.push(c.name.clone());
        }
        let extra: Vec<String> = added(&c).into_iter().filter(|a| a != "NET_BIND_SERVICE").collect();
        if !extra.is_empty() {
            caps.extend(extra);
            adding.push(c.name.clone());
        }
    }
    let mut details = Vec::new();
    if !missing_drop.is_empty() {
        details.push(format!("{} must set securityContext.capabilities.drop=[\"ALL\"]", named(&missing_drop)));
    }
    if !adding.is_empty() {
        let caps: Vec<String> = caps.into_iter().collect();
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            named(&adding),
            join_quote(&caps)
        ));
    }
    (!details.is_empty()).then(|| ("unrestricted capabilities".into(), details.join("; ")))
}

fn restricted_volumes(spec: &PodSpec) -> Option<Violation> {
    let names: BTreeSet<String> = spec
        .volumes
        .iter()
        .flatten()
        .filter(|v| {
            v.config_map.is_none()
                && v.csi.is_none()
                && v.downward_api.is_none()
                && v.empty_dir.is_none()
                && v.ephemeral.is_none()
                && v.persistent_volume_claim.is_none()
                && v.projected.is_none()
                && v.secret.is_none()
        })
        .map(|v| v.name.clone())
        .collect();
    (!names.is_empty()).then(|| {
        let list: Vec<String> = names.into_iter().map(|n| format!("{n:?}")).collect();
        ("restricted volume types".into(), format!("volumes [{}] have restricted types", list.join(" ")))
    })
}

fn run_as_non_root(spec: &PodSpec) -> Option<Violation> {
    let pod = spec.security_context.as_ref().and_then(|s| s.run_as_non_root);
    let (mut explicit, mut implicit) = (Vec::new(), Vec::new());
    for c in containers(spec) {
        match c.security_context.as_ref().and_then(|s| s.run_as_non_root) {
            Some(false) => explicit.push(c.name.clone()),
            Some(true) => {}
            None if pod != Some(true) => implicit.push(c.name.clone()),
            None => {}
        }
    }
    if pod == Some(false) || !explicit.is_empty() {
        let detail =
            format!("{} must not set securityContext.runAsNonRoot=false", setters(pod == Some(false), &explicit));
        return Some(("runAsNonRoot != true".into(), detail));
    }
    (!implicit.is_empty()).then(|| {
        (
            "runAsNonRoot != true".into(),
            format!("pod or {} must set securityContext.runAsNonRoot=true", named(&implicit)),
        )
    })
}

fn run_as_user(spec: &PodSpec) -> Option<Violation> {
    let pod = spec.security_context.as_ref().and_then(|s| s.run_as_user) == Some(0);
    let bad = failing(spec, |c| c.security_context.as_ref().and_then(|s| s.run_as_user) == Some(0));
    (pod || !bad.is_empty()).then(|| ("runAsUser=0".into(), format!("{} must not set runAsUser=0", setters(pod, &bad))))
}

/// kube-apiserver's warnings when a namespace's enforce level becomes `level`: a header line, then one
/// line per set of failed checks naming a pod and how many others share them (at most ten lines).
pub fn existing_pod_warnings(level: &Versioned, ns: &str, pods: &[(String, PodSpec)]) -> Vec<String> {
    let mut by_reasons: Vec<(String, Vec<&str>)> = Vec::new();
    for (name, spec) in pods {
        let found = check(level.level, spec);
        if found.is_empty() {
            continue;
        }
        let reasons = found.iter().map(|(r, _)| r.as_str()).collect::<Vec<_>>().join(", ");
        match by_reasons.iter_mut().find(|(r, _)| *r == reasons) {
            Some((_, names)) => names.push(name),
            None => by_reasons.push((reasons, vec![name])),
        }
    }
    if by_reasons.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!(
        "existing pods in namespace {ns:?} violate the new PodSecurity enforce level {:?}",
        level.label()
    )];
    for (reasons, names) in by_reasons.iter().take(10) {
        let who = match names.len() {
            1 => names[0].to_string(),
            2 => format!("{} (and 1 other pod)", names[0]),
            n => format!("{} (and {} other pods)", names[0], n - 1),
        };
        out.push(format!("{who}: {reasons}"));
    }
    out
}

/// The resources whose objects carry a pod template (warned about, never refused), and where.
pub fn template_pointer(group: &str, resource: &str) -> Option<&'static str> {
    match (group, resource) {
        ("", "replicationcontrollers") | ("", "podtemplates") => {
            Some(if resource == "podtemplates" { "/template/spec" } else { "/spec/template/spec" })
        }
        ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets") | ("batch", "jobs") => {
            Some("/spec/template/spec")
        }
        ("batch", "cronjobs") => Some("/spec/jobTemplate/spec/template/spec"),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
