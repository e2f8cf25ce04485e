//! The flags `uc run` shares with `uc up` for the engine's client and its leader election.

use std::time::Duration;

use anyhow::Context;

/// Leader election flags (client-go's names and defaults).
#[derive(clap::Args, Clone)]
pub struct LeaderArgs {
    /// Stand by until this replica holds the Lease, and reconcile only while it does (run several
    /// replicas with it). Without it, `uc run` refuses to start while another engine holds the lease.
    #[arg(long)]
    pub leader_elect: bool,
    /// The Lease's namespace (default: $POD_NAMESPACE, else kube-system).
    #[arg(long)]
    pub leader_election_namespace: Option<String>,
    /// The Lease's name: engines running the same controllers share it.
    #[arg(long, default_value = "uc-engine")]
    pub leader_election_id: String,
    /// This replica's name in the lease (default: $POD_NAME, else <hostname>_<pid>).
    #[arg(long)]
    pub leader_election_identity: Option<String>,
    /// How long the lease holds without renewal (a standby takes over after it).
    #[arg(long, default_value = "15s", value_parser = uc_api::controller::parse_duration)]
    pub lease_duration: Duration,
    /// How long the leader tries to renew before it stops reconciling (shorter than the lease).
    #[arg(long, default_value = "10s", value_parser = uc_api::controller::parse_duration)]
    pub renew_deadline: Duration,
    /// How often candidates try the lease and the leader renews it.
    #[arg(long, default_value = "2s", value_parser = uc_api::controller::parse_duration)]
    pub retry_period: Duration,
}

/// The engine client's flags.
#[derive(clap::Args, Clone)]
pub struct ClientArgs {
    /// Requests per second to the API server, sustained (client-go's --kube-api-qps; 0: no limit).
    #[arg(long, default_value_t = 0.0)]
    pub qps: f64,
    /// Requests allowed in a burst above --qps.
    #[arg(long, default_value_t = 100)]
    pub burst: u32,
}

/// Which programs may serve as exec hooks, and whether they run confined (docs/security.md).
#[derive(clap::Args, Clone)]
pub struct ExecHookArgs {
    /// Programs allowed as exec hooks: `*` (any), `none`, or a comma-separated list of names (any
    /// directory) and absolute paths.
    #[arg(long, default_value = "*")]
    pub exec_hooks: String,
    /// Run exec hooks without the sandbox (bubblewrap, an unprivileged user): only where uc itself
    /// runs confined, as in a pod.
    #[arg(long)]
    pub exec_hooks_unconfined: bool,
}

impl ExecHookArgs {
    /// The engine's policy; `hidden` are paths no hook may see (uc's data directory).
    pub fn policy(&self, hidden: Vec<std::path::PathBuf>) -> uc_engine::hooks::sandbox::ExecPolicy {
        uc_engine::hooks::sandbox::ExecPolicy {
            programs: uc_engine::hooks::sandbox::Programs::parse(&self.exec_hooks),
            sandboxed: !self.exec_hooks_unconfined,
            hidden,
        }
    }
}

/// Multi-tenant mode (docs/security.md).
#[derive(clap::Args, Clone)]
pub struct TenancyArgs {
    /// The service account (`NAMESPACE/NAME`) that controllers naming none act as: their children are
    /// written, and their hooks' sources and credentials read, with its rights only (Flux's
    /// `--default-service-account`). Without it such controllers act as the engine.
    #[arg(long, value_parser = uc_engine::acting::ServiceAccount::parse)]
    pub default_service_account: Option<uc_engine::acting::ServiceAccount>,
}

/// This machine's name.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

impl LeaderArgs {
    /// The election, with `identity` unless the flags name one; `wait` unless --leader-elect is off.
    pub fn election(
        &self,
        client: kube::Client,
        identity: String,
    ) -> anyhow::Result<uc_engine::leader::LeaderElection> {
        let namespace = self
            .leader_election_namespace
            .clone()
            .or_else(|| std::env::var("POD_NAMESPACE").ok().filter(|s| !s.is_empty()))
            .unwrap_or_else(|| "kube-system".into());
        let identity = self.leader_election_identity.clone().unwrap_or(identity);
        let mut e = uc_engine::leader::LeaderElection::new(
            client,
            &namespace,
            &self.leader_election_id,
            &identity,
            self.leader_elect,
        );
        e.lease_duration = self.lease_duration;
        e.renew_deadline = self.renew_deadline;
        e.retry_period = self.retry_period;
        e.validate().map_err(anyhow::Error::msg).context("leader election")?;
        Ok(e)
    }

    /// The identity of a `uc run` replica: $POD_NAME, else `<hostname>_<pid>`.
    pub fn default_identity() -> String {
        std::env::var("POD_NAME")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| format!("{}_{}", hostname(), std::process::id()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        leader: LeaderArgs,
    }

    #[test]
    fn the_lease_flags_take_durations_as_client_go_writes_them() {
        let f = Flags::try_parse_from([
            "uc",
            "--lease-duration",
            "1m30s",
            "--renew-deadline",
            "500ms",
            "--retry-period",
            "1.5",
        ])
        .expect("durations in Go's grammar and bare seconds");
        assert_eq!(f.leader.lease_duration, Duration::from_secs(90));
        assert_eq!(f.leader.renew_deadline, Duration::from_millis(500));
        assert_eq!(f.leader.retry_period, Duration::from_millis(1500));
        let defaults = Flags::try_parse_from(["uc"]).expect("the defaults parse");
        assert_eq!(defaults.leader.lease_duration, Duration::from_secs(15));
        for bad in ["soon", "3d", "-1s"] {
            assert!(Flags::try_parse_from(["uc", "--lease-duration", bad]).is_err(), "{bad}");
        }
    }
}
