//! Fields a JSON body sets twice (`{"a": 1, "a": 2}`): serde_json keeps the last silently; kube's strict
//! decoding reports each as `duplicate field "path"`. Found in one pass over the body's text.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// The paths (`data.a`, `spec.containers[0].name`) of the fields `body` sets more than once; empty
/// when it sets none twice, or is not JSON (its decoder says so elsewhere).
pub fn duplicate_fields(body: &[u8]) -> Vec<String> {
    let found = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(body);
    if (Walk { path: String::new(), found: &found }).deserialize(&mut de).is_err() {
        return Vec::new();
    }
    found.into_inner()
}

struct Walk<'a> {
    path: String,
    found: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() { key.clone() } else { format!("{}.{key}", self.path) };
            if !seen.insert(key) {
                self.found.borrow_mut().push(path.clone());
            }
            map.next_value_seed(Walk { path, found: self.found })?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq.next_element_seed(Walk { path: format!("{}[{i}]", self.path), found: self.found })?.is_some() {
            i += 1;
        }
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_field_set_twice_is_named_by_its_path() {
        assert!(duplicate_fields(br#"{"a": 1, "b": {"c": [1, 2]}}"#).is_empty());
        assert_eq!(duplicate_fields(br#"{"data": {"a": "1", "a": "2"}}"#), ["data.a"]);
        assert_eq!(
            duplicate_fields(br#"{"spec": {"containers": [{"name": "a", "name": "b"}]}, "kind": "x", "kind": "y"}"#),
            ["spec.containers[0].name", "kind"]
        );
        assert!(duplicate_fields(b"not json").is_empty());
    }
}
