//! A panic caught where it would otherwise end more than the work it happened in. As controller-runtime
//! recovers a reconciler's panic (and client-go's `HandleCrash` logs one), a panic in one reconcile or
//! one pass of a control loop becomes that reconcile's or that pass's error; the controller goes on.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;

/// A panic, caught: its message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Panicked(pub String);

/// Runs `f`; a panic in it becomes `Err` with the panic's message.
pub async fn unwound<F: Future>(f: F) -> Result<F::Output, Panicked> {
    AssertUnwindSafe(f).catch_unwind().await.map_err(|payload| Panicked(message(payload.as_ref())))
}

/// The message a panic carries (`panic!("...")` gives a `&str` or a `String`).
pub fn message(payload: &(dyn Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => (*s).to_string(),
        (_, Some(s)) => s.clone(),
        _ => "a panic without a message".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use futures::executor::block_on as run;

    use super::*;

    #[test]
    fn a_panic_is_an_error_with_its_message() {
        assert_eq!(run(unwound(async { 7 })), Ok(7));
        let formatted = run(unwound(async { panic!("index {} out of range", 3) }));
        assert_eq!(formatted, Err(Panicked("index 3 out of range".into())));
        let other = run(unwound(async { std::panic::panic_any(5u8) }));
        assert_eq!(other.unwrap_err().to_string(), "a panic without a message");
        assert_eq!(run(unwound(async { panic!("plain") })), Err(Panicked("plain".into())));
    }
}
