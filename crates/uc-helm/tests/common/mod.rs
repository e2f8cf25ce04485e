//! What the conformance tests share.

/// Helm's error without its `Error: ` and the `--debug` advice after it.
pub fn helm_error(stderr: &str) -> &str {
    let e = stderr.strip_prefix("Error: ").unwrap_or(stderr);
    e.split("\n\nUse --debug flag").next().unwrap_or(e).trim_end()
}
