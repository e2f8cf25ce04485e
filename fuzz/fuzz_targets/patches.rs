//! Patch bodies applied to a Deployment (`uc_apiserver::fuzzing::patches`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| uc_apiserver::fuzzing::patches(data));
