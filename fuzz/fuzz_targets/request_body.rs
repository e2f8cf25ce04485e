//! A request body as the API server reads it: JSON (with duplicate fields found), YAML and protobuf,
//! then, when it reads as an object, decoded as each of a few built-in kinds and measured against the
//! store's limits. Nothing may panic or overflow the stack.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = uc_apiserver::json_duplicates::duplicate_fields(data);
    let mut values = Vec::new();
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
        values.push(v);
    }
    if let Ok(v) = serde_yaml::from_slice::<serde_json::Value>(data) {
        values.push(v);
    }
    if let Ok(v) = uc_apiserver::proto::decode(data) {
        values.push(v);
    }
    for v in values {
        let _ = uc_apiserver::limits::check(&v);
        for (group, kind) in [("", "Pod"), ("", "ConfigMap"), ("", "Secret"), ("apps", "Deployment"), ("", "Service")] {
            let _ = uc_apiserver::typed::decode(group, "v1", kind, &v);
        }
    }
});
