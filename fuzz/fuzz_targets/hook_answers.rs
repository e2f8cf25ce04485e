//! A hook's answer, decoded, checked and planned (`uc_engine::fuzzing::hook_answer`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| uc_engine::fuzzing::hook_answer(data));
