//! The command line of `uc`: its commands and their arguments (clap).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::engine_args;
#[cfg(feature = "cluster")]
use crate::up;

#[derive(Parser)]
#[command(name = "uc", version, about = "uc: the declarative universal Kubernetes operator")]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
    /// Log lines as `text` (colour only on a terminal) or `json` (one object per line: timestamp,
    /// level, target, message and the fields). The level: $UC_LOG (default info).
    #[arg(long, global = true, default_value = "text", value_parser = ["text", "json"])]
    pub(crate) log_format: String,
}

// Parsed once at start: the size of its largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub(crate) enum Command {
    /// Start the embedded Kubernetes-compatible cluster on 127.0.0.1 with the engine, and write a kubeconfig.
    #[cfg(feature = "cluster")]
    Up(up::UpArgs),
    /// (`uc up` is not in this build.)
    #[cfg(not(feature = "cluster"))]
    #[command(hide = true, disable_help_flag = true)]
    Up {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run the universal controller engine against any cluster.
    Run(RunArgs),
    /// Check or repair the store of a data directory (`uc up --data-dir`, or its `store/`).
    #[cfg(feature = "cluster")]
    #[command(subcommand)]
    Store(StoreCommand),
    /// Save every object of a cluster's store to a file, or restore one as a new data directory's.
    #[cfg(feature = "cluster")]
    #[command(subcommand)]
    Snapshot(SnapshotCommand),
    /// Print the CRDs of uc's own resources (UniversalController, ControllerRevision) as YAML.
    Crds,
    /// Scaffold a working operator in a new directory NAME: CRD, UniversalController, a JavaScript hook,
    /// an example, a recorded request with its expected answer, a README.
    Init(InitArgs),
    /// Build an OLM bundle (manifests/ with a ClusterServiceVersion, CRDs and the controller;
    /// metadata/annotations.yaml) from an operator directory such as `uc init` makes, or an Operator SDK
    /// project (its `watches.yaml`: the chart or the roles travel in the bundle).
    Package {
        /// The operator's directory.
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// The bundle's version (semver).
        #[arg(long, default_value = "0.1.0")]
        version: String,
        /// The CSV this one replaces (default: none; `uc catalog add` puts it after the channel's head).
        #[arg(long)]
        replaces: Option<String>,
        /// Where to write the bundle (default DIR/bundle).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// File-based catalogs.
    #[command(subcommand)]
    Catalog(CatalogCommand),
    /// Hooks offline.
    #[command(subcommand)]
    Hook(HookCommand),
    /// Print the ClusterRole an engine needs for the UniversalControllers in FILES (YAML; directories:
    /// their *.yaml) or in the cluster (--from-cluster): its own rules and each controller's.
    Rbac(RbacArgs),
    /// Print uc's version and commit, and the API server's version when a cluster is reachable.
    Version {
        /// Only uc's own version.
        #[arg(long)]
        client: bool,
        /// Kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
    },
    /// Check this machine for what uc uses (kubectl, etcd, ZooKeeper, Java, Python, ports) and say what
    /// each missing piece disables; non-zero exit when `uc up` cannot run.
    Doctor {
        /// The data directory `uc up` would use.
        #[arg(long, default_value = ".uc")]
        data_dir: PathBuf,
    },
    /// Register a member cluster with a multi-cluster control plane (`uc up --control-plane`, or
    /// Karmada), as `karmadactl join` does in push mode: a credentials Secret and a `Cluster`.
    Join(JoinArgs),
    /// A tiny HTTP server (the allowlisted test image `uc/http-server`): answers every GET with a text.
    #[command(hide = true)]
    HttpServer(HttpServerArgs),
    /// The parent of one container's process (started by the node agent; outlives it).
    #[cfg(feature = "cluster")]
    #[command(hide = true)]
    Shim(ShimArgs),
}

#[cfg(feature = "cluster")]
#[derive(clap::Args)]
pub(crate) struct ShimArgs {
    /// The container's directory.
    #[arg(long)]
    pub(crate) dir: PathBuf,
    /// The run number.
    #[arg(long)]
    pub(crate) run: u32,
    /// Give the process the container's stdin FIFO.
    #[arg(long)]
    pub(crate) stdin: bool,
    /// The program and its arguments.
    #[arg(last = true, required = true)]
    pub(crate) argv: Vec<String>,
}

#[derive(clap::Args)]
pub(crate) struct InitArgs {
    /// The operator's name (lowercase letters, digits, '-'): its directory, controller and kind.
    pub(crate) name: String,
    /// The hook's language: js (in-process, from a ConfigMap), python, exec (shell and jq) or rust
    /// (exec hooks: the request on stdin, the answer on stdout).
    #[arg(long, alias = "lang", default_value = "js", value_parser = ["js", "python", "exec", "rust"])]
    pub(crate) hook: String,
    /// The project's type: uc (a UniversalController and a hook), or an Operator SDK project as
    /// `operator-sdk init --plugins helm|ansible` + `create api` lay it out.
    #[arg(long = "type", default_value = "uc", value_parser = ["uc", "helm", "ansible"])]
    pub(crate) project_type: String,
    /// `--type helm`: the chart to start from — a directory, a `.tgz`, `REPO/NAME` of a repository
    /// `helm repo add` configured, or `NAME` with `--helm-chart-repo` (default: `helm create`'s).
    #[arg(long)]
    pub(crate) helm_chart: Option<String>,
    /// `--type helm`: the repository of `--helm-chart NAME` (its URL).
    #[arg(long)]
    pub(crate) helm_chart_repo: Option<String>,
    /// `--type helm`: the chart's version in its repository (default: the newest release).
    #[arg(long)]
    pub(crate) helm_chart_version: Option<String>,
    /// `--type helm|ansible`: the custom resource's kind (default: from the name, `web-app` → `WebApp`).
    #[arg(long)]
    pub(crate) kind: Option<String>,
}

#[derive(Subcommand)]
pub(crate) enum HookCommand {
    /// Run the sync hook of DIR/controller.yaml (JavaScript, exec or webhook) against the recorded
    /// requests DIR/tests/<case>/request.json and compare with expected.json; non-zero exit on a
    /// difference.
    Test {
        /// The operator's directory.
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Write the answers as the expected ones.
        #[arg(long)]
        update: bool,
    },
    /// Show the hook calls a running engine recorded for a controller (annotate it
    /// universalcontroller.njuics.cn/record-hooks=<N> to keep its last N calls).
    Show {
        /// The controller's name.
        name: String,
        /// Print each request and answer in full.
        #[arg(long)]
        full: bool,
        #[command(flatten)]
        engine: EngineAddress,
    },
    /// Save a controller's recorded hook calls as `uc hook test` cases (DIR/tests/<case>/request.json
    /// and expected.json).
    Record {
        /// The controller's name.
        name: String,
        /// The operator's directory.
        #[arg(default_value = ".")]
        dir: PathBuf,
        #[command(flatten)]
        engine: EngineAddress,
    },
}

#[cfg(feature = "cluster")]
#[derive(Subcommand)]
pub(crate) enum StoreCommand {
    /// Read every record and say whether the store is intact, or where and how it is damaged (exit 1).
    Check {
        /// The data directory (or its `store/`).
        dir: PathBuf,
    },
    /// Keep the intact prefix of a damaged store: cut the damaged segment where its intact records end,
    /// remove later ones, and say what was dropped (`uc up` must not be running).
    Repair {
        /// The data directory (or its `store/`).
        dir: PathBuf,
    },
}

#[cfg(feature = "cluster")]
#[derive(Subcommand)]
pub(crate) enum SnapshotCommand {
    /// Write every object of the store (running or stopped) at its newest durable revision to FILE.
    Save {
        /// Where to write the snapshot.
        file: PathBuf,
        /// The data directory of `uc up` (or its `store/`).
        #[arg(long, default_value = ".uc")]
        data_dir: PathBuf,
    },
    /// Make FILE the store of DIR, a new data directory; `uc up --data-dir DIR` starts at its revision.
    Restore {
        /// A file `uc snapshot save` wrote.
        file: PathBuf,
        /// The new data directory.
        dir: PathBuf,
    },
}

/// The store directory of a data directory (or the store directory itself).
#[cfg(feature = "cluster")]
pub(crate) fn store_dir(dir: PathBuf) -> PathBuf {
    let inner = dir.join("store");
    if inner.is_dir() { inner } else { dir }
}

#[derive(Subcommand)]
pub(crate) enum CatalogCommand {
    /// Add a bundle directory to a file-based catalog directory (CATALOG/<package>/catalog.json), on a
    /// channel, after its head; serve it with a CatalogSource `address: file:///CATALOG`.
    Add {
        /// The bundle (manifests/ and metadata/).
        bundle: PathBuf,
        /// The catalog's directory.
        catalog: PathBuf,
        /// The channel (default: the bundle's first).
        #[arg(long)]
        channel: Option<String>,
    },
}

/// Where a running engine serves its metrics and recorded hook calls.
#[derive(clap::Args)]
pub(crate) struct EngineAddress {
    /// HOST:PORT of the engine's metrics endpoint (default: what `uc up` wrote in --data-dir).
    #[arg(long)]
    pub(crate) engine: Option<String>,
    /// The data directory of `uc up` (default: the directory of `$KUBECONFIG` when `uc up` wrote it,
    /// else `.uc`).
    #[arg(long)]
    pub(crate) data_dir: Option<PathBuf>,
    /// A bearer token allowed `get` on `/debug/hooks/*` (default: the token of the data directory's
    /// kubeconfig).
    #[arg(long)]
    pub(crate) token: Option<String>,
}

#[derive(clap::Args)]
pub(crate) struct RbacArgs {
    /// Files or directories holding UniversalController objects (other kinds are skipped).
    pub(crate) files: Vec<PathBuf>,
    /// Also the UniversalControllers of the cluster (--kubeconfig, $KUBECONFIG, ~/.kube/config).
    #[arg(long)]
    pub(crate) from_cluster: bool,
    /// Kubeconfig for --from-cluster.
    #[arg(long)]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// The ClusterRole's name.
    #[arg(long, default_value = "uc-engine")]
    pub(crate) name: String,
    /// Bind the role to this service account (NAMESPACE/NAME) with a ClusterRoleBinding.
    #[arg(long)]
    pub(crate) service_account: Option<String>,
    /// Only the controllers' rules, not the engine's own (for a role added to an engine's identity).
    #[arg(long)]
    pub(crate) no_engine_rules: bool,
    /// The engine runs with --no-metacontroller (no rules for Metacontroller's kinds).
    #[arg(long)]
    pub(crate) no_metacontroller: bool,
    /// Print only the rules (a YAML list, for a Helm chart or another role).
    #[arg(long)]
    pub(crate) rules_only: bool,
}

#[derive(clap::Args)]
pub(crate) struct JoinArgs {
    /// The member's name (the `Cluster` object's).
    pub(crate) name: String,
    /// Kubeconfig of the control plane (default: $KUBECONFIG, ~/.kube/config).
    #[arg(long)]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// Kubeconfig of the member cluster (its current context's server, CA and bearer token are used).
    #[arg(long)]
    pub(crate) cluster_kubeconfig: PathBuf,
}

#[derive(clap::Args)]
pub(crate) struct HttpServerArgs {
    /// Port to listen on, on $POD_IP (or 127.0.0.1).
    #[arg(long, default_value_t = 8080)]
    pub(crate) port: u16,
    /// The text answered.
    #[arg(long, default_value = "hello from uc")]
    pub(crate) text: String,
    /// Append a line to this file at start (to see that a volume keeps data across restarts).
    #[arg(long)]
    pub(crate) touch: Option<PathBuf>,
}

#[derive(clap::Args)]
pub(crate) struct RunArgs {
    /// Kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config, or in-cluster config).
    #[arg(long)]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// Address of /metrics, /healthz and /readyz.
    #[arg(long, default_value = "127.0.0.1:9090")]
    pub(crate) metrics_addr: std::net::SocketAddr,
    /// Workers per controller: parents reconciled at once.
    #[arg(long, default_value_t = uc_engine::manager::DEFAULT_WORKERS)]
    pub(crate) workers: usize,
    /// Threads of the async runtime that runs the watches and reconciles (default: half the CPUs this
    /// process may use, rounded up). A JavaScript hook's call leaves its thread while the script runs,
    /// so scripts add to these.
    #[arg(long, env = "UC_RUNTIME_THREADS", value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) runtime_threads: Option<u16>,
    /// Apply children client-side (a three-way merge with uc's last-applied annotation, like
    /// `kubectl apply`) instead of server-side apply (field manager `uc`, forced); clusters without
    /// server-side apply get client-side apply anyway.
    #[arg(long)]
    pub(crate) client_side_apply: bool,
    /// Neither serve nor run Metacontroller's CompositeControllers and DecoratorControllers (for a
    /// cluster where Metacontroller itself runs them).
    #[arg(long)]
    pub(crate) no_metacontroller: bool,
    /// Run the MultiClusterZooKeeper operator against a Karmada control plane (this kubeconfig's):
    /// installs its CRDs and controller, serves the ZookeeperCluster resource interpreter webhook and
    /// registers it.
    #[arg(long)]
    pub(crate) multicluster_zookeeper: bool,
    /// Address the interpreter webhook listens on.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub(crate) interpreter_webhook_addr: std::net::SocketAddr,
    /// URL Karmada reaches the interpreter webhook at (default: https://<its address>/interpret).
    #[arg(long)]
    pub(crate) interpreter_webhook_url: Option<String>,
    /// Serve the web console on this address (users log in with a token the cluster accepts).
    #[arg(long)]
    pub(crate) console: Option<std::net::SocketAddr>,
    /// Reconcile parents in these namespaces only (comma-separated; default: every namespace). The
    /// engine still watches cluster-wide; a controller's own target namespaces narrow this further.
    #[arg(long, value_delimiter = ',')]
    pub(crate) watch_namespaces: Vec<String>,
    /// The Operator SDK's Helm operators: a `watches.yaml` (group, version, kind, chart, …) whose
    /// charts are rendered in-process for each custom resource (docs/sdk-operators.md).
    #[arg(long)]
    pub(crate) watches_file: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) leader: engine_args::LeaderArgs,
    #[command(flatten)]
    pub(crate) client: engine_args::ClientArgs,
    #[command(flatten)]
    pub(crate) exec_hooks: engine_args::ExecHookArgs,
    #[command(flatten)]
    pub(crate) tenancy: engine_args::TenancyArgs,
}
