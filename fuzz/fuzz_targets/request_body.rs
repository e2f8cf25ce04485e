//! A request body as the API server reads it (`uc_apiserver::fuzzing::request_body`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| uc_apiserver::fuzzing::request_body(data));
