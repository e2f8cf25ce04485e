//! One controller per parent type: two UniversalControllers reconciling the same parents would fight
//! (each writing its children and status over the other's), so the younger one is refused, naming the
//! one that holds the type.

use serde_json::Value;
use uc_api::meta::str_at;

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

/// The UniversalController among `others` (each with whether it runs) that controls `uc`'s parent
/// type, if any: one that runs holds it whatever its age (creation times have one-second resolution,
/// so two made in one second are ordered by name); otherwise the oldest older one.
pub fn claimed_by<'a>(uc: &Value, others: impl IntoIterator<Item = (&'a Value, bool)>) -> Option<String> {
    let mine = parent_type(uc);
    let name = str_at(uc, "/metadata/name");
    let rivals: Vec<(&Value, bool)> =
        others.into_iter().filter(|(o, _)| str_at(o, "/metadata/name") != name && parent_type(o) == mine).collect();
    let holder = rivals
        .iter()
        .find(|(_, running)| *running)
        .map(|(o, _)| *o)
        .or_else(|| rivals.iter().map(|(o, _)| *o).filter(|o| age_key(o) < age_key(uc)).min_by_key(|o| age_key(o)));
    holder.map(|o| str_at(o, "/metadata/name").to_string())
}

/// The refusal's message.
pub fn message(uc: &Value, holder: &str) -> String {
    let (group, resource) = parent_type(uc);
    let kind = if group.is_empty() { resource } else { format!("{resource}.{group}") };
    format!(
        "{kind} is controlled by UniversalController {holder:?}; two controllers of one parent type would overwrite each other's children and status (delete one of them)"
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
        assert_eq!(claimed_by(&b, all), Some("a".to_string()), "any version of the type");
        assert_eq!(claimed_by(&a, all), None);
        assert_eq!(claimed_by(&other, all), None);
        // Created in the same second: the name decides, unless the other one runs already.
        let a2 = uc("a2", "2026-01-02T00:00:00Z", "njuics.cn/v1alpha1", "foos");
        assert_eq!(claimed_by(&b, [(&a2, false)]), Some("a2".to_string()));
        assert_eq!(claimed_by(&a2, [(&b, false)]), None);
        assert_eq!(claimed_by(&a2, [(&b, true)]), Some("b".to_string()), "a running controller keeps its type");
        assert_eq!(claimed_by(&a, [(&b, true)]), Some("b".to_string()));
        assert!(message(&b, "a").starts_with("foos.njuics.cn is controlled by UniversalController \"a\""));
    }
}
