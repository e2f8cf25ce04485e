//! The scalar arms of a `serde` visitor that builds a `serde_json::Value` with its own handling of
//! objects and lists — the API server's one-pass decode of a kept object (each `fieldsV1` taken as text)
//! and the engine's decode of watched objects without their managed fields — so that both build numbers,
//! strings and the rest exactly as `serde_json::Value` does.

/// Expands, inside an `impl serde::de::Visitor<'de> for … { type Value = serde_json::Value; … }`, to its
/// `visit_unit`, `visit_bool`, `visit_i64`, `visit_u64`, `visit_f64`, `visit_str` and `visit_string`.
#[macro_export]
macro_rules! json_scalar_visits {
    () => {
        fn visit_unit<E>(self) -> Result<::serde_json::Value, E> {
            Ok(::serde_json::Value::Null)
        }

        fn visit_bool<E>(self, v: bool) -> Result<::serde_json::Value, E> {
            Ok(::serde_json::Value::Bool(v))
        }

        fn visit_i64<E>(self, v: i64) -> Result<::serde_json::Value, E> {
            Ok(v.into())
        }

        fn visit_u64<E>(self, v: u64) -> Result<::serde_json::Value, E> {
            Ok(v.into())
        }

        fn visit_f64<E>(self, v: f64) -> Result<::serde_json::Value, E> {
            Ok(::serde_json::Number::from_f64(v).map_or(::serde_json::Value::Null, ::serde_json::Value::Number))
        }

        fn visit_str<E>(self, v: &str) -> Result<::serde_json::Value, E> {
            Ok(::serde_json::Value::String(v.to_string()))
        }

        fn visit_string<E>(self, v: String) -> Result<::serde_json::Value, E> {
            Ok(::serde_json::Value::String(v))
        }
    };
}

#[cfg(test)]
mod tests {
    use serde::de::Deserializer;
    use serde_json::{Value, json};

    /// Scalars only: what the macro gives a visitor.
    struct Scalars;

    impl<'de> serde::de::Visitor<'de> for Scalars {
        type Value = Value;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a scalar")
        }

        crate::json_scalar_visits!();
    }

    #[test]
    fn scalars_decode_as_serde_jsons_value_does() {
        for v in [json!(null), json!(true), json!(-3), json!(12345678901234_u64), json!(0.5), json!("é\"\n")] {
            let text = v.to_string();
            let mut de = serde_json::Deserializer::from_str(&text);
            assert_eq!(de.deserialize_any(Scalars).unwrap(), v, "{text}");
        }
        let mut de = serde_json::Deserializer::from_str("[1]");
        assert!(de.deserialize_any(Scalars).is_err(), "a list is the visitor's own to handle");
    }
}
