//! Any bytes as the store's newest log segment (`uc_apiserver::fuzzing::store_records`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("uc-fuzz-store-{}", std::process::id()));
    uc_apiserver::fuzzing::store_records(&dir, data);
});
