//! LimitRanges (core/v1) as kube-apiserver keeps them and kube's LimitRanger admission plugin applies
//! them (`pkg/apis/core/validation`, `plugin/pkg/admission/limitranger`): stored with kube's defaults
//! (`SetDefaults_LimitRangeItem`), refused in kube's words (`ValidateLimitRange`); a new pod's containers
//! get the default requests and limits they leave out (named in the `kubernetes.io/limit-ranger`
//! annotation) and a pod or claim outside a range's bounds is refused (docs/apiserver.md). Pure.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{LimitRange, LimitRangeItem, PersistentVolumeClaimSpec, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::Value;

use crate::error::{FieldError, FieldErrors};

const CONTAINER: &str = "Container";
const POD: &str = "Pod";
const CLAIM: &str = "PersistentVolumeClaim";
/// The annotation that names what the plugin set (`limitRangerAnnotation`).
pub(crate) const ANNOTATION: &str = "kubernetes.io/limit-ranger";

type List = BTreeMap<String, Quantity>;

/// A quantity in thousandths (0 for one that is not a quantity: validation refuses those first).
fn milli(q: &Quantity) -> i128 {
    uc_api::quantity::milli(&q.0).unwrap_or(0)
}

/// kube's `SetDefaults_LimitRangeItem`: a Container item's default limit is its max, its default
/// request its default limit or else its min.
pub(crate) fn apply_defaults(obj: &mut Value) {
    let Some(items) = obj.pointer_mut("/spec/limits").and_then(Value::as_array_mut) else { return };
    for item in items.iter_mut().filter(|i| i.get("type").and_then(Value::as_str) == Some(CONTAINER)) {
        let list = |item: &Value, key: &str| item.get(key).and_then(Value::as_object).cloned().unwrap_or_default();
        let mut default = list(item, "default");
        for (k, v) in list(item, "max") {
            default.entry(k).or_insert(v);
        }
        let mut request = list(item, "defaultRequest");
        for (k, v) in default.iter().chain(list(item, "min").iter()) {
            request.entry(k.clone()).or_insert_with(|| v.clone());
        }
        // Empty lists are left out, as Go's `omitempty` leaves them.
        for (key, list) in [("default", default), ("defaultRequest", request)] {
            if !list.is_empty() {
                item[key] = Value::Object(list);
            }
        }
    }
}

/// What kube refuses in a LimitRange (`ValidateLimitRange`; its metadata is checked with every kind's).
pub(crate) fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = FieldErrors::new();
    if let Ok(range) = serde_json::from_value::<LimitRange>(obj.clone()) {
        let mut types = BTreeSet::new();
        for (i, item) in range.spec.iter().flat_map(|s| s.limits.iter()).enumerate() {
            let at = format!("spec.limits[{i}]");
            errs.limit_type(&format!("{at}.type"), &item.type_);
            if !types.insert(item.type_.as_str()) {
                errs.0.push(FieldError::new(
                    crate::error::FieldErrorKind::Duplicate,
                    format!("{at}.type"),
                    Some(format!("{:?}", item.type_)),
                    "",
                ));
            }
            errs.limit_item(&at, item);
        }
    }
    errs.0
}

/// Which resources may not be overcommitted (`IsOvercommitAllowed` false): huge pages and extended resources.
fn overcommit_allowed(name: &str) -> bool {
    (!name.contains('/') || name.contains("kubernetes.io/")) && !name.starts_with("hugepages-")
}

impl FieldErrors {
    fn limit_type(&mut self, field: &str, name: &str) {
        let errors = uc_api::names::qualified_name_errors(name);
        for why in &errors {
            self.invalid(field, name, why.as_str());
        }
        if errors.is_empty() && !name.contains('/') && ![POD, CONTAINER, CLAIM].contains(&name) {
            self.invalid(field, name, "must be a standard limit type or fully qualified");
        }
    }

    fn limit_resource(&mut self, kind: &str, field: String, name: &str) {
        let why = if kind == POD || kind == CONTAINER {
            crate::builtin_container::resource_name_error(name)
        } else {
            uc_api::names::qualified_name_errors(name).into_iter().next().or_else(|| {
                let standard = matches!(name, "cpu" | "memory" | "storage" | "ephemeral-storage");
                (!name.contains('/') && !standard).then(|| "must be a standard resource type or fully qualified".into())
            })
        };
        if let Some(why) = why {
            self.invalid(field, name, why);
        }
    }

    /// One item's lists: known resources, no defaults for a Pod item, storage bounds for a claim item,
    /// and bounds in order (min ≤ default request ≤ default ≤ max, a ratio of at least 1 within max/min).
    fn limit_item(&mut self, at: &str, item: &LimitRangeItem) {
        let kind = item.type_.as_str();
        let empty = List::new();
        let get = |l: &Option<List>| l.as_ref().unwrap_or(&empty).clone();
        let (min, max, ratio) = (get(&item.min), get(&item.max), get(&item.max_limit_request_ratio));
        let (default, request) = if kind == POD {
            for (key, list) in [("default", &item.default), ("defaultRequest", &item.default_request)] {
                if list.as_ref().is_some_and(|l| !l.is_empty()) {
                    self.forbidden(format!("{at}.{key}"), "may not be specified when `type` is 'Pod'");
                }
            }
            (List::new(), List::new())
        } else {
            (get(&item.default), get(&item.default_request))
        };
        let lists = [("max", &max), ("min", &min), ("default", &default), ("defaultRequest", &request)];
        for (key, list) in lists.into_iter().chain([("maxLimitRequestRatio", &ratio)]) {
            for name in list.keys() {
                self.limit_resource(kind, format!("{at}.{key}[{name}]"), name);
            }
        }
        if kind == CLAIM && !min.contains_key("storage") && !max.contains_key("storage") {
            self.required(
                format!("{at}.limits"),
                "either minimum or maximum storage value is required, but neither was provided",
            );
        }
        let names: BTreeSet<&String> = lists.iter().chain([&("", &ratio)]).flat_map(|(_, l)| l.keys()).collect();
        for name in names {
            let bounds = Bounds {
                min: min.get(name),
                max: max.get(name),
                default: default.get(name),
                request: request.get(name),
                ratio: ratio.get(name),
            };
            self.bounds(at, name, &bounds);
        }
    }

    fn bounds(&mut self, at: &str, name: &str, b: &Bounds) {
        fn over<'q>(a: Option<&'q Quantity>, b: Option<&'q Quantity>) -> Option<(&'q Quantity, &'q Quantity)> {
            a.zip(b).filter(|(a, b)| milli(a) > milli(b))
        }
        let field = |key: &str| format!("{at}.{key}[{name}]");
        if let Some((min, max)) = over(b.min, b.max) {
            self.invalid(
                field("min"),
                min.0.as_str(),
                format!("min value {} is greater than max value {}", min.0, max.0),
            );
        }
        if let Some((min, req)) = over(b.min, b.request) {
            let why = format!("min value {} is greater than default request value {}", min.0, req.0);
            self.invalid(field("defaultRequest"), req.0.as_str(), why);
        }
        if let Some((req, max)) = over(b.request, b.max) {
            let why = format!("default request value {} is greater than max value {}", req.0, max.0);
            self.invalid(field("defaultRequest"), req.0.as_str(), why);
        }
        if let Some((req, def)) = over(b.request, b.default) {
            let why = format!("default request value {} is greater than default limit value {}", req.0, def.0);
            self.invalid(field("defaultRequest"), req.0.as_str(), why);
        }
        if let Some((min, def)) = over(b.min, b.default) {
            self.invalid(
                field("default"),
                min.0.as_str(),
                format!("min value {} is greater than default value {}", min.0, def.0),
            );
        }
        if let Some((def, max)) = over(b.default, b.max) {
            self.invalid(
                field("default"),
                max.0.as_str(),
                format!("default value {} is greater than max value {}", def.0, max.0),
            );
        }
        self.ratio_bounds(&field("maxLimitRequestRatio"), b);
        if let (Some(def), Some(req)) = (b.default, b.request)
            && !overcommit_allowed(name)
            && milli(def) != milli(req)
        {
            let why = format!("default value {} must equal to defaultRequest value {} in {name}", def.0, req.0);
            self.invalid(field("defaultRequest"), req.0.as_str(), why);
        }
    }

    fn ratio_bounds(&mut self, field: &str, b: &Bounds) {
        let Some(ratio) = b.ratio else { return };
        if milli(ratio) < 1000 {
            self.invalid(field, ratio.0.as_str(), format!("ratio {} is less than 1", ratio.0));
        }
        if let (Some(min), Some(max)) = (b.min, b.max) {
            let most = milli(max) as f64 / milli(min) as f64;
            if milli(ratio) as f64 / 1000.0 > most {
                self.invalid(field, ratio.0.as_str(), format!("ratio {} is greater than max/min = {most:.6}", ratio.0));
            }
        }
    }
}

/// One resource's figures in an item.
struct Bounds<'a> {
    min: Option<&'a Quantity>,
    max: Option<&'a Quantity>,
    default: Option<&'a Quantity>,
    request: Option<&'a Quantity>,
    ratio: Option<&'a Quantity>,
}

pub(crate) mod admission;

#[cfg(test)]
mod tests;
