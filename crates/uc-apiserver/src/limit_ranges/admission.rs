//! kube's LimitRanger admission plugin over the LimitRanges of a namespace: the defaults a new pod's
//! containers get (`PodMutateLimitFunc`), then the bounds a pod (`PodValidateLimitFunc`) or a claim
//! (`PersistentVolumeClaim` items) must keep, refused in the plugin's words.

use k8s_openapi::api::core::v1::Container;
use serde_json::Map;

use super::*;

/// What the plugin refuses: its constraints' messages as apimachinery's `NewAggregate` prints them
/// (repeats dropped; one alone, several in brackets).
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("{}", aggregate(.0))]
pub(crate) struct Refusal(pub(crate) Vec<String>);

fn aggregate(messages: &[String]) -> String {
    let mut seen = Vec::new();
    for m in messages {
        if !seen.contains(&m.as_str()) {
            seen.push(m.as_str());
        }
    }
    if seen.len() == 1 { seen[0].to_string() } else { format!("[{}]", seen.join(", ")) }
}

/// A request or limit as the plugin compares it (thousandths) and names it.
type Observed = BTreeMap<String, (i128, String)>;

fn observed(list: Option<&List>) -> Observed {
    list.into_iter().flatten().map(|(name, q)| (name.clone(), (milli(q), q.0.clone()))).collect()
}

/// The plugin's defaulting of a new pod (`mergePodResourceRequirements`), one LimitRange at a time: a
/// container's missing requests and limits from the range's Container items, what was set named in the
/// `kubernetes.io/limit-ranger` annotation (the last range that set anything names it).
pub(crate) fn default_pod(pod: &mut Value, ranges: &[LimitRange]) {
    for range in ranges {
        let items = range.spec.iter().flat_map(|s| s.limits.iter()).filter(|i| i.type_ == CONTAINER);
        let (mut requests, mut limits) = (List::new(), List::new());
        for item in items {
            requests.extend(item.default_request.clone().unwrap_or_default());
            limits.extend(item.default.clone().unwrap_or_default());
        }
        if requests.is_empty() && limits.is_empty() {
            continue;
        }
        let mut said = Vec::new();
        for (list, what) in [("containers", "container"), ("initContainers", "init container")] {
            let containers = pod.pointer_mut(&format!("/spec/{list}")).and_then(Value::as_array_mut);
            for c in containers.into_iter().flatten().filter_map(Value::as_object_mut) {
                let name = c.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
                let resources = c.entry("resources").or_insert_with(|| Value::Object(Map::new()));
                for (key, defaults, noun) in [("requests", &requests, "request"), ("limits", &limits, "limit")] {
                    let set = merge(resources, key, defaults);
                    if !set.is_empty() {
                        said.push(format!("{} {noun} for {what} {name}", set.join(", ")));
                    }
                }
            }
        }
        if !said.is_empty() {
            let said = format!("LimitRanger plugin set: {}", said.join("; "));
            // A pod whose metadata is not a map was refused before admission.
            let _ = uc_api::meta::set_annotation(pod, ANNOTATION, &said);
        }
    }
}

/// Adds to `resources[key]` the defaults it lacks; the names set, sorted.
fn merge(resources: &mut Value, key: &str, defaults: &List) -> Vec<String> {
    if !resources.is_object() {
        *resources = Value::Object(Map::new());
    }
    if !resources.get(key).is_some_and(Value::is_object) {
        resources[key] = Value::Object(Map::new());
    }
    let Some(list) = resources[key].as_object_mut() else { return Vec::new() };
    let mut set = Vec::new();
    for (name, q) in defaults {
        if !list.contains_key(name) {
            list.insert(name.clone(), Value::String(q.0.clone()));
            set.push(name.clone());
        }
    }
    set
}

/// The plugin's check of a new pod against every range: each container (Container items) and the pod
/// as a whole (Pod items: its containers' sum, or an init container's figure where larger).
pub(crate) fn check_pod(spec: &PodSpec, ranges: &[LimitRange]) -> Result<(), Refusal> {
    let mut errs = Vec::new();
    let all: Vec<&Container> = spec.containers.iter().chain(spec.init_containers.iter().flatten()).collect();
    let lists = |c: &Container| {
        let r = c.resources.as_ref();
        (observed(r.and_then(|r| r.requests.as_ref())), observed(r.and_then(|r| r.limits.as_ref())))
    };
    for item in ranges.iter().flat_map(|r| r.spec.iter().flat_map(|s| s.limits.iter())) {
        if item.type_ == CONTAINER {
            for c in &all {
                let (requests, limits) = lists(c);
                errs.extend(violations(CONTAINER, item, &requests, &limits));
            }
        } else if item.type_ == POD {
            let (requests, limits) = pod_totals(spec, &lists);
            errs.extend(violations(POD, item, &requests, &limits));
        }
    }
    if errs.is_empty() { Ok(()) } else { Err(Refusal(errs)) }
}

/// A pod's requests and limits: its containers' sums, raised to any init container's own figure.
fn pod_totals(spec: &PodSpec, lists: &dyn Fn(&Container) -> (Observed, Observed)) -> (Observed, Observed) {
    let (mut requests, mut limits) = (Observed::new(), Observed::new());
    for c in &spec.containers {
        let (r, l) = lists(c);
        for (total, list) in [(&mut requests, r), (&mut limits, l)] {
            for (name, (m, text)) in list {
                total
                    .entry(name)
                    .and_modify(|(sum, shown)| (*sum, *shown) = (*sum + m, show(*sum + m)))
                    .or_insert((m, text));
            }
        }
    }
    for c in spec.init_containers.iter().flatten() {
        let (r, l) = lists(c);
        for (total, list) in [(&mut requests, r), (&mut limits, l)] {
            for (name, figure) in list {
                if total.get(&name).is_none_or(|(sum, _)| figure.0 > *sum) {
                    total.insert(name, figure);
                }
            }
        }
    }
    (requests, limits)
}

/// A sum of quantities as a quantity's text (whole units, else thousandths).
fn show(m: i128) -> String {
    if m % 1000 == 0 { (m / 1000).to_string() } else { format!("{m}m") }
}

/// One item's min, max and ratio constraints on one container's or pod's figures, in key order.
fn violations(kind: &str, item: &LimitRangeItem, requests: &Observed, limits: &Observed) -> Vec<String> {
    let each = |l: &Option<List>| l.clone().unwrap_or_default().into_iter();
    let min = each(&item.min).filter_map(|(name, q)| below_min(kind, &name, &q, requests, Some(limits)));
    let max = each(&item.max).filter_map(|(name, q)| above_max(kind, &name, &q, requests, limits));
    let ratio =
        each(&item.max_limit_request_ratio).filter_map(|(name, q)| over_ratio(kind, &name, &q, requests, limits));
    min.chain(max).chain(ratio).collect()
}

/// `minConstraint` (a claim's limits are not read: `None`).
fn below_min(kind: &str, name: &str, min: &Quantity, requests: &Observed, limits: Option<&Observed>) -> Option<String> {
    let Some((req, req_text)) = requests.get(name) else {
        return Some(format!("minimum {name} usage per {kind} is {}.  No request is specified", min.0));
    };
    if *req < milli(min) {
        return Some(format!("minimum {name} usage per {kind} is {}, but request is {req_text}", min.0));
    }
    let (lim, lim_text) = limits.and_then(|l| l.get(name))?;
    (*lim < milli(min)).then(|| format!("minimum {name} usage per {kind} is {}, but limit is {lim_text}", min.0))
}

/// `maxConstraint`.
fn above_max(kind: &str, name: &str, max: &Quantity, requests: &Observed, limits: &Observed) -> Option<String> {
    let Some((lim, lim_text)) = limits.get(name) else {
        return Some(format!("maximum {name} usage per {kind} is {}.  No limit is specified", max.0));
    };
    if *lim > milli(max) {
        return Some(format!("maximum {name} usage per {kind} is {}, but limit is {lim_text}", max.0));
    }
    let (req, req_text) = requests.get(name)?;
    (*req > milli(max)).then(|| format!("maximum {name} usage per {kind} is {}, but request is {req_text}", max.0))
}

/// `limitRequestRatioConstraint`.
fn over_ratio(kind: &str, name: &str, ratio: &Quantity, requests: &Observed, limits: &Observed) -> Option<String> {
    let start = format!("{name} max limit to request ratio per {kind} is {}", ratio.0);
    let Some(req) = requests.get(name).map(|r| r.0).filter(|r| *r != 0) else {
        return Some(format!("{start}, but no request is specified or request is 0"));
    };
    let Some(lim) = limits.get(name).map(|l| l.0).filter(|l| *l != 0) else {
        return Some(format!("{start}, but no limit is specified or limit is 0"));
    };
    let seen = lim as f64 / req as f64;
    (seen > milli(ratio) as f64 / 1000.0).then(|| format!("{start}, but provided ratio is {seen:.6}"))
}

/// The plugin's check of a claim: its requested storage within each PersistentVolumeClaim item's bounds.
pub(crate) fn check_claim(spec: &PersistentVolumeClaimSpec, ranges: &[LimitRange]) -> Result<(), Refusal> {
    let requests = observed(spec.resources.as_ref().and_then(|r| r.requests.as_ref()));
    let mut errs = Vec::new();
    for item in ranges.iter().flat_map(|r| r.spec.iter().flat_map(|s| s.limits.iter())).filter(|i| i.type_ == CLAIM) {
        for (name, min) in item.min.iter().flatten() {
            errs.extend(below_min(CLAIM, name, min, &requests, None));
        }
        for (name, max) in item.max.iter().flatten() {
            // `maxRequestConstraint`: a claim's request against the max.
            match requests.get(name) {
                None => errs.push(format!("maximum {name} usage per {CLAIM} is {}.  No request is specified", max.0)),
                Some((req, text)) if *req > milli(max) => {
                    errs.push(format!("maximum {name} usage per {CLAIM} is {}, but request is {text}", max.0))
                }
                Some(_) => {}
            }
        }
    }
    if errs.is_empty() { Ok(()) } else { Err(Refusal(errs)) }
}
