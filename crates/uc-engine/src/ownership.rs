//! One controller per parent type: two UniversalControllers reconciling the same parents would fight
//! (each writing its children and status over the other's), so the younger one is refused, naming the
//! one that holds the type — unless their parent label selectors are disjoint. CompositeControllers
//! count as UniversalControllers; DecoratorControllers claim nothing.

use serde_json::Value;
use uc_api::meta::str_at;
use uc_api::{LabelSelector, Pointer};

use crate::flavor::Flavor;

/// The parent type a UniversalController claims: its group and plural (any version: the objects are
/// the same).
fn parent_type(uc: &Value) -> (String, String) {
    let api_version = str_at(uc, "/spec/parentResource/apiVersion");
    let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
    (group.to_string(), str_at(uc, "/spec/parentResource/resource").to_string())
}

/// Which of two controllers came first: creation time, then name.
fn age_key(uc: &Value) -> (String, String) {
    (str_at(uc, "/metadata/creationTimestamp").to_string(), str_at(uc, "/metadata/name").to_string())
}

/// A controller object's kind (UniversalController when unsaid) and name.
fn identity(uc: &Value) -> (&str, &str) {
    let kind = uc.get("kind").and_then(Value::as_str).unwrap_or("UniversalController");
    (kind, str_at(uc, "/metadata/name"))
}

/// The parents' label selector, if it has one that parses.
fn selector(uc: &Value) -> Option<LabelSelector> {
    uc.at("/spec/parentResource/labelSelector").filter(|v| !v.is_null()).and_then(|v| LabelSelector::from_value(v).ok())
}

/// Whether two controllers would fight over parents: both claim their parent type (a
/// DecoratorController only adds to objects), the same type, and selectors that may overlap.
fn rivals(a: &Value, b: &Value) -> bool {
    let claims = |uc: &Value| Flavor::of_kind(identity(uc).0).unwrap_or(Flavor::Universal).claims_parent_type();
    if identity(a) == identity(b) || !claims(a) || !claims(b) || parent_type(a) != parent_type(b) {
        return false;
    }
    !matches!((selector(a), selector(b)), (Some(x), Some(y)) if x.disjoint(&y))
}

/// The controller among `others` (each with whether it runs) that controls `uc`'s parents, as
/// `Kind "name"`, if any: one that runs holds them whatever its age (creation times have one-second
/// resolution, so two made in one second are ordered by name); otherwise the oldest older one.
pub fn claimed_by<'a>(uc: &Value, others: impl IntoIterator<Item = (&'a Value, bool)>) -> Option<String> {
    let rivals: Vec<(&Value, bool)> = others.into_iter().filter(|(o, _)| rivals(uc, o)).collect();
    let holder = rivals
        .iter()
        .find(|(_, running)| *running)
        .map(|(o, _)| *o)
        .or_else(|| rivals.iter().map(|(o, _)| *o).filter(|o| age_key(o) < age_key(uc)).min_by_key(|o| age_key(o)));
    holder.map(|o| {
        let (kind, name) = identity(o);
        format!("{kind} {name:?}")
    })
}

/// The refusal's message.
pub fn message(uc: &Value, holder: &str) -> String {
    let (group, resource) = parent_type(uc);
    let kind = if group.is_empty() { resource } else { format!("{resource}.{group}") };
    format!(
        "{kind} is controlled by {holder}; two controllers of one parent type would overwrite each other's children and status (delete one of them, or give both disjoint parentResource.labelSelectors)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn uc(name: &str, created: &str, api: &str, resource: &str) -> Value {
        json!({"metadata": {"name": name, "creationTimestamp": created},
               "spec": {"parentResource": {"apiVersion": api, "resource": resource}}})
    }

    #[test]
    fn the_younger_of_two_on_one_parent_type_is_refused() {
        let a = uc("a", "2026-01-01T00:00:00Z", "njuics.cn/v1alpha1", "foos");
        let b = uc("b", "2026-01-02T00:00:00Z", "njuics.cn/v1beta1", "foos");
        let other = uc("c", "2025-01-01T00:00:00Z", "njuics.cn/v1alpha1", "bars");
        let all = [(&a, false), (&b, false), (&other, false)];
        assert_eq!(claimed_by(&b, all), Some("UniversalController \"a\"".to_string()), "any version of the type");
        assert_eq!(claimed_by(&a, all), None);
        assert_eq!(claimed_by(&other, all), None);
        // Created in the same second: the name decides, unless the other one runs already.
        let a2 = uc("a2", "2026-01-02T00:00:00Z", "njuics.cn/v1alpha1", "foos");
        let named = |n: &str| Some(format!("UniversalController {n:?}"));
        assert_eq!(claimed_by(&b, [(&a2, false)]), named("a2"));
        assert_eq!(claimed_by(&a2, [(&b, false)]), None);
        assert_eq!(claimed_by(&a2, [(&b, true)]), named("b"), "a running controller keeps its type");
        assert_eq!(claimed_by(&a, [(&b, true)]), named("b"));
        assert!(
            message(&b, "UniversalController \"a\"")
                .starts_with("foos.njuics.cn is controlled by UniversalController \"a\"")
        );
    }

    #[test]
    fn composites_claim_decorators_do_not_and_disjoint_selectors_share() {
        let a = uc("a", "2026-01-01T00:00:00Z", "njuics.cn/v1alpha1", "foos");
        let mut cc = uc("a", "2026-01-02T00:00:00Z", "njuics.cn/v1alpha1", "foos");
        cc["kind"] = json!("CompositeController");
        assert_eq!(
            claimed_by(&cc, [(&a, true)]),
            Some("UniversalController \"a\"".to_string()),
            "same name, other kind"
        );
        let mut dc = cc.clone();
        dc["kind"] = json!("DecoratorController");
        assert_eq!(claimed_by(&dc, [(&a, true)]), None);
        assert_eq!(claimed_by(&a, [(&dc, true)]), None);
        let with = |mut o: Value, tier: &str| {
            o["spec"]["parentResource"]["labelSelector"] = json!({"matchLabels": {"tier": tier}});
            o
        };
        let (x, y) = (with(a.clone(), "x"), with(cc.clone(), "y"));
        assert_eq!(claimed_by(&y, [(&x, true)]), None, "disjoint selectors");
        assert!(claimed_by(&with(cc.clone(), "x"), [(&x, true)]).is_some(), "the same selector");
        assert!(claimed_by(&cc, [(&x, true)]).is_some(), "no selector overlaps every selector");
    }
}
