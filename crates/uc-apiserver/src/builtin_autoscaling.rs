//! HorizontalPodAutoscalers (autoscaling/v2) as kube-apiserver keeps them (`pkg/apis/autoscaling`):
//! stored with kube's defaults (`SetDefaults_HorizontalPodAutoscaler`: one replica at least, a CPU
//! utilization of 80 % when no metric is named, the scale-up and scale-down rules a `behavior` leaves
//! out) and refused in kube's words (`ValidateHorizontalPodAutoscaler`). uc's built-in controller
//! (`uc_operators::workloads::autoscaler`) keeps the target's replicas between the bounds.

use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HPAScalingRules, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec,
    MetricIdentifier, MetricSpec, MetricTarget,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::{Value, json};
use uc_api::Pointer;
use uc_api::names::NameRule;

use crate::error::{FieldError, FieldErrors};

/// kube's `MaxPeriodSeconds`: the longest period of a scaling policy.
const MAX_PERIOD_SECONDS: i32 = 1800;
/// kube's `MaxStabilizationWindowSeconds`.
const MAX_STABILIZATION_WINDOW_SECONDS: i32 = 3600;

/// Applies kube's defaults to a HorizontalPodAutoscaler (autoscaling/v2's `SetDefaults_…`).
pub(crate) fn apply_defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
    if spec.get("minReplicas").is_none_or(Value::is_null) {
        spec.insert("minReplicas".into(), json!(1));
    }
    if spec.get("metrics").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        let cpu = json!({"type": "Resource",
                         "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}});
        spec.insert("metrics".into(), json!([cpu]));
    }
    // A behavior given has every rule it leaves out filled in; none given stays none.
    let Some(behavior) = spec.get_mut("behavior").and_then(Value::as_object_mut) else { return };
    let up = json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                 {"type": "Percent", "value": 100, "periodSeconds": 15}]});
    let down = json!({"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]});
    for (direction, defaults) in [("scaleUp", up), ("scaleDown", down)] {
        let Value::Object(mut rules) = defaults else { continue };
        if let Some(given) = behavior.get(direction).and_then(Value::as_object) {
            rules.extend(given.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), v.clone())));
        }
        behavior.insert(direction.into(), Value::Object(rules));
    }
}

/// What kube refuses in a HorizontalPodAutoscaler (`ValidateHorizontalPodAutoscaler`, the
/// scale-to-zero feature gate off: at least one replica).
pub(crate) fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = FieldErrors::new();
    if let Ok(hpa) = serde_json::from_value::<HorizontalPodAutoscaler>(obj.clone())
        && let Some(spec) = &hpa.spec
    {
        errs.spec(spec);
    }
    errs.0
}

/// What kube refuses in a status write beyond what a create is checked for: negative replica counts.
pub(crate) fn status_errors(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for field in ["currentReplicas", "desiredReplicas"] {
        if let Some(n) = obj.at(&format!("/status/{field}")).and_then(Value::as_i64).filter(|n| *n < 0) {
            errs.push(FieldError::invalid(format!("status.{field}"), &json!(n), "must be greater than or equal to 0"));
        }
    }
    errs
}

/// Whether a quantity is above zero (`Quantity.Sign() == 1`).
fn positive(q: &Quantity) -> bool {
    uc_api::quantity::parse(&q.0).is_ok_and(|v| v > 0.0)
}

impl FieldErrors {
    /// A name kube checks as a path segment (a reference's kind and name, a metric's name).
    fn path_segment(&mut self, field: String, name: &str, what: &str) {
        if name.is_empty() {
            return self.required(field, what);
        }
        self.name(field, name, NameRule::PathSegment);
    }

    fn spec(&mut self, spec: &HorizontalPodAutoscalerSpec) {
        if let Some(min) = spec.min_replicas.filter(|m| *m < 1) {
            self.invalid("spec.minReplicas", min, "must be greater than or equal to 1");
        }
        if spec.max_replicas < 1 {
            self.invalid("spec.maxReplicas", spec.max_replicas, "must be greater than 0");
        }
        if spec.min_replicas.is_some_and(|min| spec.max_replicas < min) {
            self.invalid("spec.maxReplicas", spec.max_replicas, "must be greater than or equal to `minReplicas`");
        }
        self.reference("spec.scaleTargetRef", &spec.scale_target_ref);
        for (i, metric) in spec.metrics.iter().flatten().enumerate() {
            self.metric(&format!("spec.metrics[{i}]"), metric);
        }
        if let Some(behavior) = &spec.behavior {
            self.rules("spec.behavior.scaleUp", behavior.scale_up.as_ref());
            self.rules("spec.behavior.scaleDown", behavior.scale_down.as_ref());
        }
    }

    fn reference(&mut self, at: &str, r: &CrossVersionObjectReference) {
        self.path_segment(format!("{at}.kind"), &r.kind, "");
        self.path_segment(format!("{at}.name"), &r.name, "");
    }

    fn rules(&mut self, at: &str, rules: Option<&HPAScalingRules>) {
        let Some(rules) = rules else { return };
        match rules.stabilization_window_seconds {
            Some(w) if w < 0 => {
                self.invalid(format!("{at}.stabilizationWindowSeconds"), w, "must be greater than or equal to zero")
            }
            Some(w) if w > MAX_STABILIZATION_WINDOW_SECONDS => self.invalid(
                format!("{at}.stabilizationWindowSeconds"),
                w,
                format!("must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"),
            ),
            _ => {}
        }
        if let Some(select) = rules.select_policy.as_deref().filter(|s| !["Disabled", "Max", "Min"].contains(s)) {
            self.not_supported(format!("{at}.selectPolicy"), select, &["Disabled", "Max", "Min"]);
        }
        if rules.policies.as_ref().is_none_or(Vec::is_empty) {
            self.required(format!("{at}.policies"), "must specify at least one Policy");
        }
        for (i, policy) in rules.policies.iter().flatten().enumerate() {
            let at = format!("{at}.policies[{i}]");
            if !["Percent", "Pods"].contains(&policy.type_.as_str()) {
                self.not_supported(format!("{at}.type"), &policy.type_, &["Percent", "Pods"]);
            }
            if policy.value <= 0 {
                self.invalid(format!("{at}.value"), policy.value, "must be greater than zero");
            }
            if policy.period_seconds <= 0 {
                self.invalid(format!("{at}.periodSeconds"), policy.period_seconds, "must be greater than zero");
            } else if policy.period_seconds > MAX_PERIOD_SECONDS {
                let why = format!("must be less than or equal to {MAX_PERIOD_SECONDS}");
                self.invalid(format!("{at}.periodSeconds"), policy.period_seconds, why);
            }
        }
    }

    /// One metric (`validateMetricSpec`): a known type, its source given and no other.
    fn metric(&mut self, at: &str, m: &MetricSpec) {
        const TYPES: &[&str] = &["ContainerResource", "External", "Object", "Pods", "Resource"];
        if m.type_.is_empty() {
            self.required(format!("{at}.type"), "must specify a metric source type");
        }
        if !TYPES.contains(&m.type_.as_str()) {
            self.not_supported(format!("{at}.type"), &m.type_, TYPES);
        }
        let present: Vec<&str> = [
            ("object", m.object.is_some()),
            ("external", m.external.is_some()),
            ("pods", m.pods.is_some()),
            ("resource", m.resource.is_some()),
            ("containerResource", m.container_resource.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect();
        self.sources(at, m);
        let expected = if m.type_ == "ContainerResource" { "containerResource".into() } else { m.type_.to_lowercase() };
        if TYPES.contains(&m.type_.as_str()) && !present.contains(&expected.as_str()) {
            self.required(format!("{at}.{expected}"), "must populate information for the given metric source");
        }
        if present.len() != 1 {
            for other in present.iter().filter(|p| **p != expected) {
                self.forbidden(format!("{at}.{other}"), "must populate the given metric source only");
            }
        }
    }

    /// The first source given, checked (kube checks only the first, in this order).
    fn sources(&mut self, at: &str, m: &MetricSpec) {
        if let Some(o) = &m.object {
            let at = format!("{at}.object");
            self.reference(&format!("{at}.describedObject"), &o.described_object);
            self.identifier(&format!("{at}.metric"), &o.metric);
            self.target(&format!("{at}.target"), &o.target);
            if o.target.value.is_none() && o.target.average_value.is_none() {
                self.required(format!("{at}.target.averageValue"), "must set either a target value or averageValue");
            }
        } else if let Some(e) = &m.external {
            self.external(&format!("{at}.external"), &e.metric, &e.target);
        } else if let Some(p) = &m.pods {
            let at = format!("{at}.pods");
            self.identifier(&format!("{at}.metric"), &p.metric);
            self.target(&format!("{at}.target"), &p.target);
            if p.target.average_value.is_none() {
                self.required(format!("{at}.target.averageValue"), "must specify a positive target averageValue");
            }
        } else if let Some(r) = &m.resource {
            let at = format!("{at}.resource");
            if r.name.is_empty() {
                self.required(format!("{at}.name"), "must specify a resource name");
            }
            self.resource_target(&at, &r.target);
        } else if let Some(c) = &m.container_resource {
            let at = format!("{at}.containerResource");
            if c.name.is_empty() {
                self.required(format!("{at}.name"), "must specify a resource name");
            }
            if c.container.is_empty() {
                self.required(format!("{at}.container"), "must specify a container");
            } else {
                for why in NameRule::Dns1123Label.errors(&c.container, false) {
                    self.invalid(format!("{at}.container"), c.container.as_str(), why);
                }
            }
            self.resource_target(&at, &c.target);
        }
    }

    fn external(&mut self, at: &str, metric: &MetricIdentifier, target: &MetricTarget) {
        self.identifier(&format!("{at}.metric"), metric);
        self.target(&format!("{at}.target"), target);
        match (&target.value, &target.average_value) {
            (None, None) => self.required(
                format!("{at}.target.averageValue"),
                "must set either a target value for metric or a per-pod target",
            ),
            (Some(_), Some(_)) => self.forbidden(
                format!("{at}.target.value"),
                "may not set both a target value for metric and a per-pod target",
            ),
            _ => {}
        }
    }

    fn resource_target(&mut self, at: &str, target: &MetricTarget) {
        self.target(&format!("{at}.target"), target);
        match (target.average_utilization, &target.average_value) {
            (None, None) => self.required(
                format!("{at}.target.averageUtilization"),
                "must set either a target raw value or a target utilization",
            ),
            (Some(_), Some(_)) => self.forbidden(
                format!("{at}.target.averageValue"),
                "may not set both a target raw value and a target utilization",
            ),
            _ => {}
        }
    }

    fn identifier(&mut self, at: &str, id: &MetricIdentifier) {
        self.path_segment(format!("{at}.name"), &id.name, "must specify a metric name");
    }

    fn target(&mut self, at: &str, t: &MetricTarget) {
        if t.type_.is_empty() {
            self.required(format!("{at}.type"), "must specify a metric target type");
        }
        if !["Utilization", "Value", "AverageValue"].contains(&t.type_.as_str()) {
            self.invalid(format!("{at}.type"), t.type_.as_str(), "must be either Utilization, Value, or AverageValue");
        }
        for (field, q) in [("value", &t.value), ("averageValue", &t.average_value)] {
            if let Some(q) = q.as_ref().filter(|q| !positive(q)) {
                self.invalid(format!("{at}.{field}"), q.0.as_str(), "must be positive");
            }
        }
        if let Some(u) = t.average_utilization.filter(|u| *u < 1) {
            self.invalid(format!("{at}.averageUtilization"), u, "must be greater than 0");
        }
    }
}

#[cfg(test)]
mod tests;
