//! Label and field selectors and qualified names, as a query string brings them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(s) = uc_api::LabelSelector::parse(text) {
        let _ = s.matches_value(Some(&serde_json::json!({"a": "b", "app": "web"})));
    }
    let _ = uc_api::FieldSelector::parse(text);
    let _ = uc_api::names::qualified_name_errors(text);
});
