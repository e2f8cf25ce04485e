//! Selectors, qualified names and quantities (`uc_apiserver::fuzzing::selectors`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| uc_apiserver::fuzzing::selectors(data));
