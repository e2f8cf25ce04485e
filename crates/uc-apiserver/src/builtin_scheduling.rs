//! PriorityClasses (scheduling.k8s.io/v1) as kube-apiserver keeps them (`pkg/apis/scheduling`,
//! `pkg/registry/scheduling`): stored with kube's default (`preemptionPolicy: PreemptLowerPriority`) and
//! generation 1, refused in kube's words (`ValidatePriorityClass`, `ValidatePriorityClassUpdate`), the two
//! system classes made at start and never deleted; and kube's Priority admission plugin: one default
//! class at most, and a new pod's priority and preemption policy resolved from its class (docs/apiserver.md).

use k8s_openapi::api::scheduling::v1::PriorityClass;
use serde_json::{Map, Value, json};

use crate::error::{FieldError, FieldErrors};

/// Names starting so are kube's own (`SystemPriorityClassPrefix`).
const SYSTEM_PREFIX: &str = "system-";
/// kube's `HighestUserDefinablePriority`.
const HIGHEST_USER_DEFINABLE: i32 = 1_000_000_000;
const PREEMPTION_POLICIES: &[&str] = &["PreemptLowerPriority", "Never"];
const DEFAULT_PREEMPTION: &str = "PreemptLowerPriority";

/// kube's system classes: name, value, description.
const SYSTEM_CLASSES: &[(&str, i32, &str)] = &[
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// The system classes as kube-apiserver makes them at start (not global defaults).
pub(crate) fn system_classes() -> impl Iterator<Item = (&'static str, Value)> {
    SYSTEM_CLASSES.iter().map(|(name, value, description)| {
        let class = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name, "generation": 1}, "value": value, "description": description,
            "preemptionPolicy": DEFAULT_PREEMPTION});
        (*name, class)
    })
}

/// Why a class may not be deleted: the system ones (kube's registry refuses them).
pub(crate) fn delete_refusal(name: &str) -> Option<&'static str> {
    SYSTEM_CLASSES.iter().any(|(n, _, _)| *n == name).then_some("this is a system priority class and cannot be deleted")
}

/// Applies kube's default to a PriorityClass (`SetDefaults_PriorityClass`).
pub(crate) fn apply_defaults(obj: &mut Value) {
    if let Some(class) = obj.as_object_mut()
        && class.get("preemptionPolicy").is_none_or(Value::is_null)
    {
        class.insert("preemptionPolicy".into(), json!(DEFAULT_PREEMPTION));
    }
}

/// What kube refuses in a PriorityClass (`ValidatePriorityClass`; its metadata is checked with every kind's).
pub(crate) fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = FieldErrors::new();
    if let Ok(class) = serde_json::from_value::<PriorityClass>(obj.clone()) {
        errs.priority_class(&class);
    }
    errs.0
}

/// What kube refuses in an update of a PriorityClass: its value and preemption policy are set once.
pub(crate) fn update_errors(old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let field = |v: &Value, f: &str| v.get(f).filter(|x| !x.is_null()).cloned();
    if field(old, "value") != field(new, "value") {
        errs.push(FieldError::forbidden("value", "may not be changed in an update."));
    }
    if field(old, "preemptionPolicy") != field(new, "preemptionPolicy") {
        let now = field(new, "preemptionPolicy").unwrap_or(Value::Null);
        errs.push(FieldError::invalid("preemptionPolicy", &now, "field is immutable"));
    }
    errs
}

/// What kube's Priority admission plugin refuses, in its words.
#[derive(Debug, PartialEq, thiserror::Error)]
pub(crate) enum Refusal {
    #[error("PriorityClass {0} is already marked as default. Only one default can exist")]
    SecondDefault(String),
    #[error("no PriorityClass with name {0} was found")]
    NoClass(String),
    #[error(
        "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {computed} from the given PriorityClass name"
    )]
    Priority { given: i64, computed: i32 },
    #[error(
        "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {computed} from the given PriorityClass name"
    )]
    Policy { given: String, computed: String },
}

/// The Priority plugin's check of a class being created or updated: a second global default is refused.
pub(crate) fn admit_class(class: &Value, stored: &[PriorityClass]) -> Result<(), Refusal> {
    if class.get("globalDefault").and_then(Value::as_bool) != Some(true) {
        return Ok(());
    }
    let name = class.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    match global_default(stored).and_then(|d| d.metadata.name.as_deref()) {
        Some(other) if other != name => Err(Refusal::SecondDefault(other.to_string())),
        _ => Ok(()),
    }
}

/// The default class: of those marked global default (two, after a race), the one of the lowest value.
fn global_default(classes: &[PriorityClass]) -> Option<&PriorityClass> {
    classes.iter().filter(|c| c.global_default == Some(true)).min_by_key(|c| c.value)
}

/// The Priority plugin on a new pod's `spec`: the class it names (or the default class) gives its
/// priority and preemption policy; a class that does not exist, or a priority or policy that is not the
/// class's, is refused in kube's words.
pub(crate) fn admit_pod(spec: &mut Map<String, Value>, classes: &[PriorityClass]) -> Result<(), Refusal> {
    let named = spec.get("priorityClassName").and_then(Value::as_str).unwrap_or_default().to_string();
    let (name, priority, policy) = if named.is_empty() {
        match global_default(classes) {
            Some(c) => (c.metadata.name.clone().unwrap_or_default(), c.value, c.preemption_policy.clone()),
            None => (String::new(), 0, Some(DEFAULT_PREEMPTION.to_string())),
        }
    } else {
        let class = classes.iter().find(|c| c.metadata.name.as_deref() == Some(named.as_str()));
        let class = class.ok_or_else(|| Refusal::NoClass(named.clone()))?;
        (named, class.value, class.preemption_policy.clone())
    };
    if let Some(given) = spec.get("priority").and_then(Value::as_i64).filter(|p| *p != i64::from(priority)) {
        return Err(Refusal::Priority { given, computed: priority });
    }
    if let Some(policy) = &policy
        && let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str).filter(|p| p != policy)
    {
        return Err(Refusal::Policy { given: given.to_string(), computed: policy.clone() });
    }
    if !name.is_empty() {
        spec.insert("priorityClassName".into(), Value::String(name));
    }
    spec.insert("priority".into(), json!(priority));
    if let Some(policy) = policy {
        spec.insert("preemptionPolicy".into(), Value::String(policy));
    }
    Ok(())
}

/// The Priority plugin on a pod's update: a priority the update leaves out is the stored one (which
/// the pod's update validation then holds unchanged).
pub(crate) fn keep_priority(old: &Value, new: &mut Value) {
    let kept = old.pointer("/spec/priority").filter(|p| !p.is_null());
    if let (Some(kept), Some(spec)) = (kept, new.get_mut("spec").and_then(Value::as_object_mut))
        && spec.get("priority").is_none_or(Value::is_null)
    {
        spec.insert("priority".into(), kept.clone());
    }
}

impl FieldErrors {
    fn priority_class(&mut self, class: &PriorityClass) {
        let name = class.metadata.name.as_deref().unwrap_or_default();
        if name.starts_with(SYSTEM_PREFIX) {
            if let Some(why) = unknown_system_class(name, class.value, class.global_default.unwrap_or(false)) {
                let why = format!(
                    "priority class names with '{SYSTEM_PREFIX}' prefix are reserved for system use only. error: {why}"
                );
                self.forbidden("metadata.name", &why);
            }
        } else if class.value > HIGHEST_USER_DEFINABLE {
            let why = format!("maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE}");
            self.forbidden("value", &why);
        }
        if let Some(policy) = class.preemption_policy.as_deref().filter(|p| !PREEMPTION_POLICIES.contains(p)) {
            self.not_supported("preemptionPolicy".into(), policy, PREEMPTION_POLICIES);
        }
    }
}

/// kube's `IsKnownSystemPriorityClass`, as the reason a class is not one: a system class has a system
/// class's name with its own value, and is never the default.
fn unknown_system_class(name: &str, value: i32, global_default: bool) -> Option<String> {
    let Some((_, own, _)) = SYSTEM_CLASSES.iter().find(|(n, _, _)| *n == name) else {
        return Some(format!("{name} is not a known system priority class"));
    };
    if *own != value {
        return Some(format!("value of {name} PriorityClass must be {own}"));
    }
    global_default.then(|| format!("globalDefault of {name} PriorityClass must be false"))
}

#[cfg(test)]
mod tests;
