//! A server-side apply onto a live Deployment (`uc_apiserver::fuzzing::server_side_apply`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| uc_apiserver::fuzzing::server_side_apply(data));
