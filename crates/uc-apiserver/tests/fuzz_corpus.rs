//! Every input the fuzz campaign kept (`fuzz/corpus/`, docs/reliability.md) replayed on the stable
//! toolchain: what libFuzzer once found interesting stays free of panics on every build.

use std::path::PathBuf;

/// The inputs of one target's corpus; a corpus that has gone missing fails rather than passes.
fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target);
    let inputs: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    assert!(inputs.len() >= 100, "{}: only {} inputs", dir.display(), inputs.len());
    inputs
}

#[test]
fn request_bodies() {
    corpus("request_body").iter().for_each(|d| uc_apiserver::fuzzing::request_body(d));
}

#[test]
fn patches() {
    corpus("patches").iter().for_each(|d| uc_apiserver::fuzzing::patches(d));
}

#[test]
fn server_side_applies() {
    corpus("server_side_apply").iter().for_each(|d| uc_apiserver::fuzzing::server_side_apply(d));
}

#[test]
fn selectors() {
    corpus("selectors").iter().for_each(|d| uc_apiserver::fuzzing::selectors(d));
}

#[test]
fn store_records() {
    let dir = tempfile::tempdir().unwrap();
    corpus("store_records").iter().for_each(|d| uc_apiserver::fuzzing::store_records(&dir.path().join("store"), d));
}
