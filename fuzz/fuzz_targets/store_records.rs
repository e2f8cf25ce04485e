//! Any bytes as the store's newest log segment: `uc up`'s reading of them ends in a state or a refusal
//! naming damage, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("uc-fuzz-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("wal-00000000000000000001.log"), data).unwrap();
    let _ = uc_apiserver::wal::scan(&dir);
});
