//! The async runtime each command runs on.
//!
//! `uc up` — an API server, a node agent and the engine in one process — gets a worker thread per CPU,
//! tokio's default. `uc run` gets half of them (`--runtime-threads` to choose): a controller's
//! reconciles mostly wait on the API server and its hooks, and a JavaScript hook's usual call of tens of
//! microseconds is cheaper on the worker that makes it than handed to another, so a worker per CPU buys
//! no throughput; what each extra worker brings is hand-offs between threads, and on a machine whose
//! cores the controller shares, a wake-up that crosses CPUs costs several times one that does not
//! (docs/benchmarks.md, step 17: on two CPUs shared with `uc up`, one worker converged 10,000 parents
//! live 6 % sooner than two, a median over 13 alternating pairs; step 21, with step 20's calls on their
//! worker: 11–14 % sooner over 3 pairs, with a quarter less CPU in `uc run`).

use anyhow::Context;

use crate::cli::Command;

/// The runtime `command` runs on.
pub fn build(command: &Command) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Command::Run(args) = command {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        builder.worker_threads(args.runtime_threads.map_or_else(|| run_threads(cpus), usize::from));
    }
    builder.enable_all().build().context("starting the runtime")
}

/// `uc run`'s worker threads on `cpus` CPUs (its cgroup's quota included, as the standard library
/// counts them): half, rounded up.
fn run_threads(cpus: usize) -> usize {
    cpus.div_ceil(2).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_controller_takes_half_the_cpus_rounded_up() {
        assert_eq!(run_threads(1), 1);
        assert_eq!(run_threads(2), 1);
        assert_eq!(run_threads(3), 2);
        assert_eq!(run_threads(16), 8);
        assert_eq!(run_threads(0), 1, "at least one");
    }

    #[test]
    fn run_takes_the_threads_it_is_given() {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from(["uc", "run", "--runtime-threads", "3"]).unwrap();
        let runtime = build(&cli.command).unwrap();
        assert_eq!(runtime.metrics().num_workers(), 3);
        let refused = crate::cli::Cli::try_parse_from(["uc", "run", "--runtime-threads", "0"]);
        assert!(refused.is_err(), "zero threads is no runtime");
    }
}
