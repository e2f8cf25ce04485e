//! Fields read as Go's readers of `map[string]interface{}` read them (`v, ok := m["k"].(string)`): a
//! field of another type than the one wanted is its default, not an error that loses the whole object.

use serde::Deserializer;
use serde::de::{Deserialize, DeserializeOwned};
use serde_json::Value;

/// For `#[serde(default, deserialize_with = "uc_api::lenient::or_default")]`: the field as `T`, or
/// `T::default()` when it is of another type (for an `Option`, `None`).
pub fn or_default<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(d: D) -> Result<T, D::Error> {
    Ok(T::deserialize(Value::deserialize(d)?).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Default, PartialEq, Deserialize)]
    struct Seen {
        #[serde(default, deserialize_with = "super::or_default")]
        count: i64,
        #[serde(default, deserialize_with = "super::or_default")]
        name: Option<String>,
    }

    #[test]
    fn a_field_of_another_type_is_its_default() {
        let read = |v| Seen::deserialize(v).unwrap();
        assert_eq!(read(json!({"count": 3, "name": "a"})), Seen { count: 3, name: Some("a".into()) });
        assert_eq!(read(json!({"count": "3", "name": 5})), Seen::default());
        assert_eq!(read(json!({})), Seen::default());
    }
}
