//! An object as the store keeps it: its JSON, written once when it is committed, and the few facts
//! the store's indexes and the garbage collector read without decoding it (issue 58).
//!
//! A `serde_json::Value` tree costs ~6 times its JSON (a B-tree node per object, a `String` per key):
//! a store of trees needed ~8 KB for a 1.3 KB Deployment (docs/benchmarks.md, "Where the bytes go").
//! kube-apiserver keeps its watch cache as decoded Go structs and etcd's bytes; uc keeps the bytes only.
//! The store, its revision log and every watcher share one [`Kept`]: a watcher of the stored form sends
//! its JSON as it is, a list writes the JSON of its items in place, and a request that edits an object
//! gets a tree decoded from it ([`Kept::tree`]). The objects written last also keep their tree
//! ([`Kept::cool`] lets it go, once their event is no longer among the newest), so that the reads that
//! follow a write (the next reconcile's read-modify-write, the watchers' selectors, the garbage
//! collector) do not decode what was just encoded. Once cooled, the store's compactor packs the JSON
//! ([`Kept::pack`], [`uc_api::packed`]): the store at rest holds compressed JSON, unpacked per read.
//!
//! The bytes are the wire form ([`crate::wire`]): `fieldsV1` as the JSON object it is. Decoding puts back
//! the exact text the store held, so that a decoded object equals the tree it was written from.

use std::sync::Arc;

use parking_lot::Mutex;
use serde::Deserializer;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;
use uc_api::Pointer;
use uc_api::packed::Packed;

use crate::stored::Obj;

/// An object as the store keeps it.
#[derive(Debug)]
pub struct Kept {
    body: Mutex<Body>,
    /// The length of its JSON.
    len: u32,
    /// Where its `metadata` lies in its JSON.
    metadata: Option<(u32, u32)>,
    rv: u64,
    uid: Option<Box<str>>,
    owners: Box<[Box<str>]>,
    api_version: Box<str>,
    deleting: bool,
}

/// The bytes of a kept object.
#[derive(Debug)]
enum Body {
    /// Its JSON, and its tree while it is among the objects written last.
    Plain { json: bytes::Bytes, tree: Option<Obj> },
    /// Its JSON compressed: an object at rest, packed by the store's compactor ([`Kept::pack`]).
    Packed(Packed),
}

impl Kept {
    /// `tree` as the store keeps it, the tree kept too (an object just written).
    pub fn new(tree: Obj) -> Self {
        let mut kept = Self::cold(&tree);
        if let Body::Plain { tree: kept_tree, .. } = kept.body.get_mut() {
            *kept_tree = Some(tree);
        }
        kept
    }

    /// `tree` as the store keeps it, bytes only (an object read back from the log).
    pub fn cold(tree: &Value) -> Self {
        let text = |p: &str| tree.at(p).and_then(Value::as_str);
        let owners = tree
            .at("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| r.get("uid").and_then(Value::as_str).map(Box::from))
            .collect();
        let Encoded { json, metadata } = Encoded::of(tree);
        Self {
            len: json.len() as u32,
            metadata: metadata.map(|r| (r.start as u32, r.end as u32)),
            body: Mutex::new(Body::Plain { json, tree: None }),
            rv: rv_of(tree),
            uid: text("/metadata/uid").map(Box::from),
            owners,
            api_version: text("/apiVersion").unwrap_or_default().into(),
            deleting: uc_api::meta::is_deleting(tree),
        }
    }

    /// The object as a tree: the one kept, else decoded from its JSON.
    pub fn tree(&self) -> Obj {
        if let Some(tree) = self.kept_tree() {
            return tree;
        }
        // The store wrote these bytes from a tree; they decode (a failure would be a bug, and yields null).
        Arc::new(decode(&self.json()).unwrap_or(Value::Null))
    }

    /// The tree, if it is kept.
    pub fn kept_tree(&self) -> Option<Obj> {
        match &*self.body.lock() {
            Body::Plain { tree, .. } => tree.clone(),
            Body::Packed(_) => None,
        }
    }

    /// Lets the tree go: only the JSON stays. The tree is handed back, to be dropped where no lock is
    /// held (freeing a tree that left the caches long ago is most of cooling's cost).
    #[must_use = "the tree is returned to be dropped outside the store's lock"]
    pub fn cool(&self) -> Option<Obj> {
        match &mut *self.body.lock() {
            Body::Plain { tree, .. } => tree.take(),
            Body::Packed(_) => None,
        }
    }

    /// Compresses the JSON of an object that has cooled, if that saves enough ([`Packed::of`]); true if
    /// it is packed now. The compressing happens outside the lock, so readers wait only for the swap.
    pub fn pack(&self) -> bool {
        let json = match &*self.body.lock() {
            Body::Plain { json, tree: None } => json.clone(),
            _ => return false,
        };
        let Some(packed) = Packed::of(&json) else { return false };
        let mut body = self.body.lock();
        if matches!(&*body, Body::Plain { tree: None, .. }) {
            *body = Body::Packed(packed);
            return true;
        }
        false
    }

    /// Whether its JSON is kept compressed.
    pub fn packed(&self) -> bool {
        matches!(&*self.body.lock(), Body::Packed(_))
    }

    /// The object as a typed value, read from its JSON.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_slice(&self.json())
    }

    /// The object's JSON, in kube's member order ([`Encoded::of`]).
    pub fn json(&self) -> bytes::Bytes {
        match &*self.body.lock() {
            Body::Plain { json, .. } => json.clone(),
            Body::Packed(packed) => packed.unpack().into(),
        }
    }

    /// Appends the object's JSON to `out` (a list's body), unpacking it in place if it is packed.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match &*self.body.lock() {
            Body::Plain { json, .. } => out.extend_from_slice(json),
            Body::Packed(packed) => {
                if !packed.unpack_onto(out) {
                    out.extend_from_slice(b"null");
                }
            }
        }
    }

    /// The length of the object's JSON.
    pub fn json_len(&self) -> usize {
        self.len as usize
    }

    /// The JSON of the object's `metadata` (None if it has none).
    pub fn metadata_json(&self) -> Option<bytes::Bytes> {
        let (start, end) = self.metadata?;
        Some(self.json().slice(start as usize..end as usize))
    }

    /// Its resourceVersion.
    pub fn rv(&self) -> u64 {
        self.rv
    }

    /// Its uid.
    pub fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    /// The uids its ownerReferences name.
    pub fn owners(&self) -> impl Iterator<Item = &str> {
        self.owners.iter().map(|o| &**o)
    }

    /// Its `apiVersion`.
    pub fn api_version(&self) -> &str {
        &self.api_version
    }

    /// Whether it has a deletionTimestamp.
    pub fn deleting(&self) -> bool {
        self.deleting
    }
}

/// An object written as JSON, and where its `metadata` lies in those bytes: a watcher of metadata alone
/// (`as=PartialObjectMetadata`, as garbage collectors and metadata informers watch) sends that slice
/// instead of writing the metadata again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    /// The object's JSON, as `serde_json::to_vec` writes it.
    pub json: bytes::Bytes,
    metadata: Option<std::ops::Range<usize>>,
}

/// The top-level members of an object in the order kube-apiserver writes them: `kind`, `apiVersion`,
/// `metadata` (its Go types start with TypeMeta and ObjectMeta), then the rest as stored.
pub fn in_kube_order(members: &serde_json::Map<String, Value>) -> impl Iterator<Item = (&String, &Value)> {
    const FIRST: [&str; 3] = ["kind", "apiVersion", "metadata"];
    FIRST
        .iter()
        .filter_map(|k| members.get_key_value(*k))
        .chain(members.iter().filter(|(k, _)| !FIRST.contains(&k.as_str())))
}

impl Encoded {
    /// `object` as JSON in kube's member order ([`in_kube_order`]), managed fields as JSON
    /// ([`crate::wire`]), noting where its top-level `metadata` is.
    pub fn of(object: &Value) -> Self {
        let Value::Object(members) = object else {
            return Self { json: crate::wire::to_vec(object).into(), metadata: None };
        };
        let mut out = Vec::with_capacity(json_size(object) + 16);
        let mut metadata = None;
        out.push(b'{');
        for (i, (key, value)) in in_kube_order(members).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            // Writing to a vector fails only for a value serde_json cannot write, which a Value is not.
            let _ = serde_json::to_writer(&mut out, key);
            out.push(b':');
            let start = out.len();
            let _ = serde_json::to_writer(&mut out, &crate::wire::Member(key, value));
            if key == "metadata" {
                metadata = Some(start..out.len());
            }
        }
        out.push(b'}');
        // The store keeps these bytes for the object's life: not the spare room a growing vector left.
        out.shrink_to_fit();
        Self { json: out.into(), metadata }
    }

    /// The JSON of the object's `metadata` (None if it has none), sharing the object's bytes.
    pub fn metadata(&self) -> Option<bytes::Bytes> {
        self.metadata.clone().map(|r| self.json.slice(r))
    }
}

/// The approximate size of a value written as JSON, without writing it.
pub fn json_size(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(_) => 5,
        Value::Number(_) => 4,
        Value::String(s) => s.len() + 2,
        Value::Array(a) => 2 + a.iter().map(|x| json_size(x) + 1).sum::<usize>(),
        Value::Object(m) => 2 + m.iter().map(|(k, x)| k.len() + 4 + json_size(x)).sum::<usize>(),
    }
}

/// The resourceVersion of a stored object.
pub fn rv_of(obj: &Value) -> u64 {
    obj.at("/metadata/resourceVersion").and_then(Value::as_str).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// The tree of an encoded object, each `fieldsV1` back as the exact text it was kept as — in one pass: a
/// `fieldsV1` object is taken as its text and never built into a tree (a status write decodes the object
/// it replaces; its managed fields are most of the nodes a tree of it would have).
pub fn decode(json: &[u8]) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let tree = Level::Object.deserialize(&mut de)?;
    de.end()?;
    Ok(tree)
}

/// Where a value lies on the way to a `fieldsV1`: the object, its metadata, its managed-field entries,
/// one entry; anything else is decoded as a plain `Value`.
#[derive(Clone, Copy, PartialEq)]
enum Level {
    Object,
    Metadata,
    Entries,
    Entry,
}

impl Level {
    /// The level of member `key` of a map at this level, if it is on the way.
    fn member(self, key: &str) -> Option<Level> {
        match (self, key) {
            (Level::Object, "metadata") => Some(Level::Metadata),
            (Level::Metadata, "managedFields") => Some(Level::Entries),
            _ => None,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Level {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Level {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = a.next_key::<String>()? {
            let value = match self.member(&key) {
                Some(level) => a.next_value_seed(level)?,
                None if self == Level::Entry && key == "fieldsV1" => {
                    let raw: Box<RawValue> = a.next_value()?;
                    match raw.get() {
                        text if text.starts_with('{') => Value::String(text.to_string()),
                        text => serde_json::from_str(text).map_err(serde::de::Error::custom)?,
                    }
                }
                None => a.next_value()?,
            };
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(a.size_hint().unwrap_or(0));
        if self == Level::Entries {
            while let Some(v) = a.next_element_seed(Level::Entry)? {
                out.push(v);
            }
        } else {
            while let Some(v) = a.next_element::<Value>()? {
                out.push(v);
            }
        }
        Ok(Value::Array(out))
    }

    uc_api::json_scalar_visits!();
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn stored(mut v: Value) -> Value {
        crate::wire::compact(&mut v);
        v
    }

    #[test]
    fn an_object_decodes_to_the_tree_it_was_kept_from() {
        let objects = [
            stored(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d", "uid": "u1", "resourceVersion": "7", "labels": {"a": "b"},
                    "ownerReferences": [{"uid": "p1", "name": "p"}, {"name": "no uid"}],
                    "managedFields": [
                        {"manager": "m", "fieldsV1": {"f:spec": {"f:replicas": {}}, "f:metadata": {".": {}}}},
                        {"manager": "n"}]},
                "spec": {"replicas": 2, "ratio": 0.5, "big": 12345678901234_u64, "neg": -3, "s": "é\"\n"}})),
            // Text written in another order than a tree's keys is kept byte for byte.
            json!({"metadata": {"managedFields": [{"fieldsV1": "{\"k:{\\\"x\\\":1}\":{},\"f:a\":{\".\":{}}}"}]}}),
            // Strings that are no JSON object, and other odd entries, stay what they are.
            json!({"metadata": {"managedFields": [{"fieldsV1": "[1]"}, {"fieldsV1": "x"}, 7, {"fieldsV1": null},
                {"fieldsV1": "{\"f:b\":{},\"f:a\":{}}"}]}}),
            json!({"metadata": {"managedFields": "not a list"}}),
            json!({"kind": "Pod"}),
        ];
        for v in objects {
            let kept = Kept::cold(&v);
            assert!(kept.kept_tree().is_none());
            assert_eq!(*kept.tree(), v, "{v}");
            let mut wire = v.clone();
            crate::wire::expand(&mut wire);
            assert_eq!(serde_json::from_slice::<Value>(&kept.json()).unwrap(), wire, "the JSON is the wire form");
        }
    }

    #[test]
    fn a_packed_object_reads_as_the_json_it_was() {
        let v = stored(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "uid": "u",
            "resourceVersion": "4", "managedFields": [{"manager": "m", "fieldsV1": {"f:data": {"f:k": {}}}}]},
            "data": {"k": "0123456789".repeat(50)}}));
        let kept = Kept::new(Arc::new(v.clone()));
        let (json, metadata) = (kept.json(), kept.metadata_json());
        assert!(!kept.pack(), "an object that keeps its tree is not packed");
        drop(kept.cool());
        assert!(kept.pack() && kept.packed(), "cooled, it is");
        assert!(!kept.pack(), "once");
        assert_eq!((kept.json(), kept.metadata_json(), kept.json_len()), (json.clone(), metadata, json.len()));
        let mut out = b"[".to_vec();
        kept.write_json(&mut out);
        assert_eq!(&out[1..], &json[..], "written in place after what was there");
        assert_eq!(*kept.tree(), v, "and decodes to its tree");
        assert_eq!(kept.decode::<k8s_openapi::api::core::v1::ConfigMap>().unwrap().data.unwrap()["k"].len(), 500);
        // What hardly compresses stays plain.
        let small = Kept::cold(&json!({"metadata": {"name": "x"}}));
        assert!(!small.pack() && !small.packed());
        assert_eq!(&small.json()[..], br#"{"metadata":{"name":"x"}}"#);
    }

    #[test]
    fn what_the_indexes_read_is_kept_beside_the_json() {
        let v = json!({"apiVersion": "v1", "metadata": {"uid": "u", "resourceVersion": "9", "deletionTimestamp": "t",
            "ownerReferences": [{"uid": "a"}, {"uid": "b"}]}});
        let kept = Kept::new(Arc::new(v.clone()));
        assert_eq!((kept.uid(), kept.rv(), kept.api_version(), kept.deleting()), (Some("u"), 9, "v1", true));
        assert_eq!(kept.owners().collect::<Vec<_>>(), ["a", "b"]);
        let tree = kept.tree();
        assert!(Arc::ptr_eq(&tree, &kept.tree()), "a kept tree is shared, not decoded");
        drop(kept.cool());
        assert!(!Arc::ptr_eq(&tree, &kept.tree()) && *kept.tree() == v, "decoded once let go");
        let bare = Kept::cold(&json!({"metadata": {}}));
        assert_eq!((bare.uid(), bare.rv(), bare.owners().count(), bare.deleting()), (None, 0, 0, false));
    }

    #[test]
    fn an_encoded_object_is_in_kubes_order_and_its_metadata_a_slice_of_it() {
        let cm = json!({"apiVersion": "v1", "data": {"k": "v"}, "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(
            String::from_utf8(Encoded::of(&cm).json.to_vec()).unwrap(),
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"},"data":{"k":"v"}}"#
        );
        let values = [
            json!({"apiVersion": "v1", "metadata": {"name": "a\"b", "labels": {"é": "\u{1}"}}, "spec": {"n": [1, 2.5, null]}}),
            json!({"spec": {"metadata": {"name": "nested, not the object's"}}}),
            json!({}),
            json!({"metadata": {}}),
            json!([1, {"metadata": {}}]),
            json!("text"),
        ];
        for v in values {
            let e = Encoded::of(&v);
            assert_eq!(serde_json::from_slice::<Value>(&e.json).unwrap(), v, "the same JSON: {v}");
            let metadata = v.as_object().and_then(|m| m.get("metadata")).map(|m| serde_json::to_vec(m).unwrap());
            assert_eq!(e.metadata().map(|b| b.to_vec()), metadata, "{v}");
        }
    }

    #[test]
    fn typed_reads_come_from_the_json() {
        let v = stored(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
            "managedFields": [{"manager": "m", "fieldsV1": {"f:data": {}}}]}, "data": {"k": "v"}}));
        let cm: k8s_openapi::api::core::v1::ConfigMap = Kept::cold(&v).decode().unwrap();
        assert_eq!(cm.data.unwrap()["k"], "v");
        let entry = &cm.metadata.managed_fields.unwrap()[0];
        assert_eq!(entry.fields_v1.as_ref().map(|f| f.0.clone()), Some(json!({"f:data": {}})));
    }

    #[test]
    fn json_sizes_are_close_to_the_written_length() {
        let v =
            json!({"metadata": {"name": "a", "labels": {"x": "y"}}, "spec": {"n": [1, 2, 3], "ok": true, "s": null}});
        let written = serde_json::to_vec(&v).unwrap().len();
        let estimate = json_size(&v);
        assert!(estimate.abs_diff(written) * 5 <= written, "{estimate} vs {written}");
    }
}
