//! The `uc` command line, without a cluster.

use std::process::Command;

#[test]
fn deploy_crds_match_the_generated_ones() {
    let out = Command::new(env!("CARGO_BIN_EXE_uc")).arg("crds").output().expect("uc crds runs");
    assert!(out.status.success());
    let generated = String::from_utf8(out.stdout).expect("utf-8");
    assert!(generated.contains("shortNames:\n    - uc\n    - uctl"));
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/crds.yaml"))
        .expect("deploy/crds.yaml");
    assert_eq!(committed, generated, "deploy/crds.yaml is stale: regenerate it with `uc crds > deploy/crds.yaml`");
}

#[test]
fn bad_arguments_are_reported_not_panicked() {
    let out = Command::new(env!("CARGO_BIN_EXE_uc")).args(["up", "--port", "seventy"]).output().expect("uc runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid value 'seventy'"));
}
