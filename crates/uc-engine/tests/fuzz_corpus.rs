//! Every hook answer the fuzz campaign kept (`fuzz/corpus/hook_answers`, docs/reliability.md)
//! replayed on the stable toolchain: none panics on any build.

#[test]
fn hook_answers() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/hook_answers");
    let inputs: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    assert!(inputs.len() >= 100, "{}: only {} inputs", dir.display(), inputs.len());
    inputs.iter().for_each(|d| uc_engine::fuzzing::hook_answer(d));
}
