//! A typed object written against the body it was read from, instead of into a new tree that is then
//! compared with it (issue 58: the round trip was a tenth of a Deployment's write). A
//! [`serde::Serializer`] walks what `serde_json::to_value` would write alongside the body and notes what
//! [`super::compare`] would: the zero scalars the type writes where the body has nothing. Whether the
//! body has members the type does not write is counted, not named: an object with unknown fields (rare)
//! — or a shape this walk does not follow (an enum variant, a map key that is not a string) — is
//! answered None, and its caller takes the round trip, which names them.

use serde::Serialize;
use serde::ser::{self, Impossible};
use serde_json::{Map, Value};

use super::path::{Step, is_zero, json_pointer};

/// The zero scalars `typed` writes that `sent` lacks, as [`super::Decoded::zeros`]; None if `sent`
/// has a member `typed` does not write, or has a shape this walk does not follow.
pub fn zeros<T: Serialize>(typed: &T, sent: &Value) -> Option<Vec<(String, Value)>> {
    let mut found = Found::default();
    let mut path = Vec::new();
    typed.serialize(Against { sent: Some(sent), path: &mut path, found: &mut found }).ok()?;
    (!found.inexact).then_some(found.zeros)
}

#[derive(Default)]
struct Found {
    zeros: Vec<(String, Value)>,
    /// An unknown member, or a shape not followed: the round trip must answer.
    inexact: bool,
}

/// Where the walk is: the body's value there (None once they part: nothing below is compared).
struct Against<'s, 'w> {
    sent: Option<&'s Value>,
    path: &'w mut Vec<Step<'s>>,
    found: &'w mut Found,
}

/// Nothing to note for a scalar (the body's value there is whatever it is, as in `compare`).
type Done = Result<(), serde_json::Error>;

impl<'s, 'w> ser::Serializer for Against<'s, 'w> {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = Items<'s, 'w>;
    type SerializeTuple = Items<'s, 'w>;
    type SerializeTupleStruct = Items<'s, 'w>;
    type SerializeTupleVariant = Impossible<(), serde_json::Error>;
    type SerializeMap = Members<'s, 'w>;
    type SerializeStruct = Members<'s, 'w>;
    type SerializeStructVariant = Impossible<(), serde_json::Error>;

    fn serialize_bool(self, _: bool) -> Done {
        Ok(())
    }
    fn serialize_i8(self, _: i8) -> Done {
        Ok(())
    }
    fn serialize_i16(self, _: i16) -> Done {
        Ok(())
    }
    fn serialize_i32(self, _: i32) -> Done {
        Ok(())
    }
    fn serialize_i64(self, _: i64) -> Done {
        Ok(())
    }
    fn serialize_u8(self, _: u8) -> Done {
        Ok(())
    }
    fn serialize_u16(self, _: u16) -> Done {
        Ok(())
    }
    fn serialize_u32(self, _: u32) -> Done {
        Ok(())
    }
    fn serialize_u64(self, _: u64) -> Done {
        Ok(())
    }
    fn serialize_f32(self, _: f32) -> Done {
        Ok(())
    }
    fn serialize_f64(self, _: f64) -> Done {
        Ok(())
    }
    fn serialize_char(self, _: char) -> Done {
        Ok(())
    }
    fn serialize_str(self, _: &str) -> Done {
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Done {
        Ok(())
    }
    fn serialize_none(self) -> Done {
        Ok(())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Done {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Done {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Done {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Done {
        Ok(())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, value: &T) -> Done {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(self, _: &'static str, _: u32, _: &'static str, _: &T) -> Done {
        self.found.inexact = true;
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Items<'s, 'w>, serde_json::Error> {
        let sent = match self.sent {
            Some(Value::Array(items)) => Some(items.as_slice()),
            _ => None,
        };
        Ok(Items { sent, next: 0, path: self.path, found: self.found })
    }
    fn serialize_tuple(self, len: usize) -> Result<Items<'s, 'w>, serde_json::Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Items<'s, 'w>, serde_json::Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, serde_json::Error> {
        Err(ser::Error::custom("an enum variant: not followed"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Members<'s, 'w>, serde_json::Error> {
        let sent = match self.sent {
            Some(Value::Object(members)) => Some(members),
            _ => None,
        };
        Ok(Members { sent, matched: 0, key: None, path: self.path, found: self.found })
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Members<'s, 'w>, serde_json::Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, serde_json::Error> {
        Err(ser::Error::custom("an enum variant: not followed"))
    }
}

/// A list written against the body's list: item by item.
struct Items<'s, 'w> {
    sent: Option<&'s [Value]>,
    next: usize,
    path: &'w mut Vec<Step<'s>>,
    found: &'w mut Found,
}

impl Items<'_, '_> {
    fn item<T: ?Sized + Serialize>(&mut self, value: &T) -> Done {
        let i = self.next;
        self.next += 1;
        // Past the body's items, or against no list: nothing below is compared (as `zip` in `compare`).
        let Some(sent) = self.sent.and_then(|items| items.get(i)) else { return Ok(()) };
        self.path.push(Step::Item(i));
        let r = value.serialize(Against { sent: Some(sent), path: self.path, found: self.found });
        self.path.pop();
        r
    }
}

/// A sequence, tuple or tuple struct: each element an item of the list.
macro_rules! items {
    ($($trait:ident :: $element:ident),*) => {$(
        impl ser::$trait for Items<'_, '_> {
            type Ok = ();
            type Error = serde_json::Error;
            fn $element<T: ?Sized + Serialize>(&mut self, value: &T) -> Done {
                self.item(value)
            }
            fn end(self) -> Done {
                Ok(())
            }
        }
    )*};
}

items!(SerializeSeq::serialize_element, SerializeTuple::serialize_element, SerializeTupleStruct::serialize_field);

/// An object (a struct's fields or a map's entries) written against the body's object: each member
/// the type writes is followed into the body's member of that name, or, where the body has none, noted
/// if it is a zero scalar; the body's members met are counted.
struct Members<'s, 'w> {
    sent: Option<&'s Map<String, Value>>,
    /// The body's non-null members the type wrote.
    matched: usize,
    /// A map entry's key, between `serialize_key` and `serialize_value`.
    key: Option<String>,
    path: &'w mut Vec<Step<'s>>,
    found: &'w mut Found,
}

impl Members<'_, '_> {
    fn member<T: ?Sized + Serialize>(&mut self, key: &str, value: &T) -> Done {
        let Some(sent) = self.sent else { return Ok(()) };
        match sent.get_key_value(key) {
            Some((k, v)) => {
                self.matched += usize::from(!v.is_null());
                self.path.push(Step::Member(k));
                let r = value.serialize(Against { sent: Some(v), path: self.path, found: self.found });
                self.path.pop();
                r
            }
            None => {
                let kept = serde_json::to_value(value)?;
                if is_zero(&kept) {
                    let mut at = json_pointer(self.path);
                    at.push('/');
                    at.push_str(&key.replace('~', "~0").replace('/', "~1"));
                    self.found.zeros.push((at, kept));
                }
                Ok(())
            }
        }
    }

    fn finish(self) -> Done {
        if let Some(sent) = self.sent
            && self.matched < sent.values().filter(|v| !v.is_null()).count()
        {
            self.found.inexact = true;
        }
        Ok(())
    }
}

impl ser::SerializeStruct for Members<'_, '_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Done {
        self.member(key, value)
    }
    fn end(self) -> Done {
        self.finish()
    }
}

impl ser::SerializeMap for Members<'_, '_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Done {
        match serde_json::to_value(key)? {
            Value::String(key) => self.key = Some(key),
            _ => self.found.inexact = true,
        }
        Ok(())
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Done {
        match self.key.take() {
            Some(key) => self.member(&key, value),
            None => Ok(()),
        }
    }
    fn end(self) -> Done {
        self.finish()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
    use k8s_openapi::api::core::v1::{ConfigMap, Service};
    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::typed::{Decoded, compare};

    /// What the round trip finds: the typed form written into a tree and compared with the body.
    fn round_trip<T: Serialize>(typed: &T, sent: &Value) -> Decoded {
        let mut decoded = Decoded::default();
        compare(sent, &serde_json::to_value(typed).unwrap(), &mut Vec::new(), &mut decoded);
        decoded
    }

    fn check<T: Serialize + for<'de> Deserialize<'de>>(sent: Value) -> Option<Vec<(String, Value)>> {
        let typed = T::deserialize(&sent).unwrap();
        let walked = zeros(&typed, &sent);
        let whole = round_trip(&typed, &sent);
        match &walked {
            Some(z) => assert_eq!((z, whole.unknown.len()), (&whole.zeros, 0), "{sent}"),
            None => assert!(!whole.unknown.is_empty(), "None only where the round trip names unknowns: {sent}"),
        }
        walked
    }

    #[test]
    fn the_walk_finds_what_the_round_trip_finds() {
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"a": "b"},
            "ownerReferences": [{"apiVersion": "x/v1", "kind": "Foo", "name": "f", "uid": "u", "controller": true}],
            "managedFields": [{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}],
                "resources": {"limits": {"cpu": "1"}}, "env": [{"name": "E", "value": ""}]}]}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}},
            "status": {"replicas": 0, "conditions": [{"type": "Available", "status": "True"}]}});
        assert_eq!(check::<Deployment>(deployment), Some(vec![]));
        let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"},
            "spec": {"selector": {}, "template": {"spec": {"containers": [{"name": "c"}, {}]}}},
            "status": {"observedGeneration": 1}});
        let found = check::<DaemonSet>(ds).unwrap();
        let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert!(paths.contains(&"/status/numberReady") && paths.contains(&"/spec/template/spec/containers/1/name"));
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "annotations": {"a/b~c": "x"}},
            "data": {"k": "v", "empty": ""}, "binaryData": {"b": "AAEC"}, "immutable": false});
        assert_eq!(check::<ConfigMap>(cm), Some(vec![]));
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 80, "targetPort": "http"}, {"targetPort": 8080}], "selector": null}});
        assert_eq!(check::<Service>(svc).unwrap(), [("/spec/ports/1/port".to_string(), json!(0))]);
    }

    #[test]
    fn unknown_members_leave_the_naming_to_the_round_trip() {
        let unknown = [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "datas": {"k": "v"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labelz": {}}}),
        ];
        for sent in unknown {
            assert_eq!(check::<ConfigMap>(sent), None);
        }
        let nested = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {}, "template": {"spec": {"containers": [{"name": "c", "comand": ["x"]}]}}}});
        assert_eq!(check::<Deployment>(nested), None);
        let null = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "datas": null});
        assert_eq!(check::<ConfigMap>(null), Some(vec![]), "an unknown member that is null is nothing");
    }
}
