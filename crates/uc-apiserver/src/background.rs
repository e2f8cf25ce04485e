//! One step of the API server's background loops (ClusterRole aggregation, the certificate signer, the
//! APIService list): its error, or its panic, is logged and the loop goes on to the next change. Where
//! kube-controller-manager crashes on a panic (client-go's `HandleCrash` logs, then panics again) and its
//! supervisor starts it again, uc's control plane is one process that holds the API server too: only the
//! step is lost. A loop that ended with a panic would stop for everyone — the signer on one request made
//! to make it panic.

use std::fmt::Display;
use std::future::Future;

/// Runs one step, logging its error or its panic as `what`; whether it succeeded.
pub(crate) async fn step<E: Display>(what: impl Display, f: impl Future<Output = Result<(), E>>) -> bool {
    match uc_api::panics::unwound(f).await {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "{what}");
            false
        }
        Err(panicked) => {
            tracing::error!("{what} panicked: {panicked}; the next change tries again");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_step_that_fails_or_panics_is_a_failed_step() {
        assert!(step("ok", async { Ok::<(), std::fmt::Error>(()) }).await);
        assert!(!step("failing", async { Err(std::fmt::Error) }).await);
        assert!(!step("panicking", async { panic!("bug") as Result<(), std::fmt::Error> }).await);
    }
}
