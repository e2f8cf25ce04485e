//! A failed command's error as a user reads it: one line, the chain of causes, the API server's answer
//! in its own words — never a backtrace (a user's mistake is no crash), never kube's Rust dump of a
//! Status.

/// An error's chain of causes on one line, an API server's answer in its own words (kube's Display of
/// one appends a Rust dump of the Status).
pub fn message(e: &anyhow::Error) -> String {
    let mut out: Vec<String> = Vec::new();
    for cause in e.chain() {
        let (said, last) = match cause.downcast_ref::<kube::Error>() {
            Some(k) => (uc_engine::dynamic::api_error(k), true),
            None => (cause.to_string(), false),
        };
        // A context that already quotes its cause (`...: {e}`) is not repeated.
        if !out.last().is_some_and(|before| before.ends_with(&said)) {
            out.push(said);
        }
        if last {
            break;
        }
    }
    out.join(": ").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_error_is_its_chain_on_one_line_with_the_servers_words() {
        let status =
            kube::core::Status { message: "nope".into(), reason: "Forbidden".into(), code: 403, ..Default::default() };
        let e = anyhow::Error::new(kube::Error::Api(Box::new(status))).context("listing pods");
        assert_eq!(message(&e), "listing pods: nope (403)");
        let e = anyhow::anyhow!("line one\nline two").context("reading x: line one\nline two");
        assert_eq!(message(&e), "reading x: line one line two");
        let e = anyhow::anyhow!("no such file").context("reading x");
        assert_eq!(message(&e), "reading x: no such file");
    }
}
