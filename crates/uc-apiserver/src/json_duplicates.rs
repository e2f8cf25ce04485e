//! Fields a JSON body sets twice (`{"a": 1, "a": 2}`): serde_json keeps the last silently; kube's strict
//! decoding reports each as `duplicate field "path"`. Found in one pass over the body's text.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// The paths (`data.a`, `spec.containers[0].name`) of the fields `body` sets more than once; empty
/// when it sets none twice, or is not JSON (its decoder says so elsewhere).
pub fn duplicate_fields(body: &[u8]) -> Vec<String> {
    let found = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(body);
    if (Walk { at: &At::Root, found: &found }).deserialize(&mut de).is_err() {
        return Vec::new();
    }
    found.into_inner()
}

/// Where the walk is, as a chain up to the root on the walk's stack: a path is written out only for a
/// field found twice (every body is walked; almost none has one).
enum At<'p> {
    Root,
    Key(&'p At<'p>, &'p str),
    Index(&'p At<'p>, usize),
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            At::Root => Ok(()),
            At::Key(At::Root, key) => f.write_str(key),
            At::Key(up, key) => write!(f, "{up}.{key}"),
            At::Index(up, i) => write!(f, "{up}[{i}]"),
        }
    }
}

struct Walk<'a, 'p> {
    at: &'p At<'p>,
    found: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// A key as the body spells it: borrowed from the body unless it has escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_string()))
    }
}

impl<'de> Visitor<'de> for Walk<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // An object has a few fields: a list searched beats hashing each key.
        let mut seen: Vec<Cow<'de, str>> = Vec::new();
        while let Some(key) = map.next_key_seed(Key)? {
            let at = At::Key(self.at, &key);
            if seen.contains(&key) {
                self.found.borrow_mut().push(at.to_string());
            }
            map.next_value_seed(Walk { at: &at, found: self.found })?;
            seen.push(key);
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq.next_element_seed(Walk { at: &At::Index(self.at, i), found: self.found })?.is_some() {
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
        assert_eq!(
            duplicate_fields(br#"{"a\u0062": [{"x": 1}, {"x": 2, "x": 3}], "ab": 0}"#),
            ["ab[1].x", "ab"],
            "escaped keys compare as what they spell; indexes count from 0"
        );
    }
}
