//! How each place of an object merges and is owned in server-side apply: granular objects (each field
//! its own), atomic values (owned and replaced whole), keyed lists (items merged by their keys), sets.
//! Custom resources say it in their schema (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`,
//! `x-kubernetes-map-type`); the built-in kinds by their merge keys, as kube's OpenAPI publishes them.

use serde_json::Value;

use crate::patch::{ListStrategy, list_strategy};
use crate::schema::{Additional, Schema};

/// The marker of a list item in a place's path.
pub const ITEM: &str = "[]";

/// How a value merges and is owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An object whose fields are owned one by one.
    Granular,
    /// A value owned and replaced whole: scalars, atomic objects and lists.
    Atomic,
    /// A list whose items are objects identified by these key fields.
    Keyed(Vec<String>),
    /// A list of distinct scalars, each owned on its own.
    Set,
}

/// The shape of one resource's objects.
pub trait Shape {
    /// The kind of `value` at `path` (field names from the root; `ITEM` for a list's item).
    fn kind(&self, path: &[String], value: &Value) -> Kind;
}

/// The default of a kind by the value alone: objects granular, everything else atomic.
fn by_value(value: &Value) -> Kind {
    if value.is_object() { Kind::Granular } else { Kind::Atomic }
}

/// The built-in kinds: lists by kube's merge keys (list-map keys where SSA's differ from strategic merge
/// patch's), label selectors atomic.
pub struct Builtin;

impl Shape for Builtin {
    fn kind(&self, path: &[String], value: &Value) -> Kind {
        match value {
            Value::Object(m) => {
                let selector = path.last().is_some_and(|p| p == "selector" || p == "labelSelector");
                if selector && (m.contains_key("matchLabels") || m.contains_key("matchExpressions")) {
                    Kind::Atomic
                } else {
                    Kind::Granular
                }
            }
            Value::Array(_) => {
                let names: Vec<&str> = path.iter().map(String::as_str).filter(|p| *p != ITEM).collect();
                let last = names.last().copied().unwrap_or_default();
                match list_strategy(&names) {
                    ListStrategy::Key("containerPort") => Kind::Keyed(vec!["containerPort".into(), "protocol".into()]),
                    ListStrategy::Key("port") => Kind::Keyed(vec!["port".into(), "protocol".into()]),
                    ListStrategy::Key("topologyKey") => {
                        Kind::Keyed(vec!["topologyKey".into(), "whenUnsatisfiable".into()])
                    }
                    ListStrategy::Key(k) => Kind::Keyed(vec![k.to_string()]),
                    ListStrategy::Primitives => Kind::Set,
                    ListStrategy::Replace if last == "finalizers" => Kind::Set,
                    ListStrategy::Replace => Kind::Atomic,
                }
            }
            _ => Kind::Atomic,
        }
    }
}

/// A custom resource: its structural schema.
pub struct Structural<'a>(pub &'a Schema);

impl Structural<'_> {
    fn at(&self, path: &[String]) -> Option<&Schema> {
        let mut s = self.0;
        for p in path {
            s = if p == ITEM {
                s.items.as_deref()?
            } else {
                match s.properties.get(p) {
                    Some(child) => child,
                    None => match &s.additional {
                        Some(Additional::Schema(a)) => a,
                        _ => return None,
                    },
                }
            };
        }
        Some(s)
    }
}

impl Shape for Structural<'_> {
    fn kind(&self, path: &[String], value: &Value) -> Kind {
        // metadata is the same in every resource.
        if path.first().is_some_and(|p| p == "metadata") {
            return Builtin.kind(path, value);
        }
        let Some(s) = self.at(path) else { return by_value(value) };
        match value {
            Value::Object(_) if s.map_type.as_deref() == Some("atomic") => Kind::Atomic,
            Value::Object(_) => Kind::Granular,
            Value::Array(_) => match s.list_type.as_deref() {
                Some("map") if !s.list_map_keys.is_empty() => Kind::Keyed(s.list_map_keys.clone()),
                Some("set") => Kind::Set,
                _ => Kind::Atomic,
            },
            _ => Kind::Atomic,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn p(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn builtin_kinds_follow_kubes_merge_keys() {
        let list = json!([]);
        assert_eq!(
            Builtin.kind(&p(&["spec", "template", "spec", "containers"]), &list),
            Kind::Keyed(vec!["name".into()])
        );
        assert_eq!(
            Builtin.kind(&p(&["spec", "template", "spec", "containers", ITEM, "ports"]), &list),
            Kind::Keyed(vec!["containerPort".into(), "protocol".into()])
        );
        assert_eq!(Builtin.kind(&p(&["spec", "ports"]), &list), Kind::Keyed(vec!["port".into(), "protocol".into()]));
        assert_eq!(Builtin.kind(&p(&["metadata", "finalizers"]), &list), Kind::Set);
        assert_eq!(Builtin.kind(&p(&["spec", "template", "spec", "containers", ITEM, "args"]), &list), Kind::Atomic);
        assert_eq!(Builtin.kind(&p(&["spec", "selector"]), &json!({"matchLabels": {}})), Kind::Atomic);
        assert_eq!(Builtin.kind(&p(&["spec", "selector"]), &json!({"app": "a"})), Kind::Granular, "a Service's");
    }

    #[test]
    fn custom_resources_follow_their_schema() {
        let schema = Schema::parse(
            &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"],
                          "items": {"type": "object", "properties": {"id": {"type": "string"}, "tags": {
                              "type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}},
                "ref": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {"name": {"type": "string"}}},
                "args": {"type": "array", "items": {"type": "string"}}}}}}),
            "schema",
        )
        .unwrap();
        let s = Structural(&schema);
        assert_eq!(s.kind(&p(&["spec", "items"]), &json!([])), Kind::Keyed(vec!["id".into()]));
        assert_eq!(s.kind(&p(&["spec", "items", ITEM, "tags"]), &json!([])), Kind::Set);
        assert_eq!(s.kind(&p(&["spec", "ref"]), &json!({})), Kind::Atomic);
        assert_eq!(s.kind(&p(&["spec", "args"]), &json!([])), Kind::Atomic, "lists are atomic unless the schema says");
        assert_eq!(s.kind(&p(&["spec", "unknown"]), &json!({})), Kind::Granular);
        assert_eq!(s.kind(&p(&["metadata", "finalizers"]), &json!([])), Kind::Set);
    }
}
