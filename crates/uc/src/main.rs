//! The `uc` binary: the declarative universal Kubernetes operator.

mod allocator;
mod ansible_operator;
// Much of these two is for `uc up` (the built-in controllers it keeps, the catalog it serves).
#[cfg_attr(not(feature = "cluster"), allow(dead_code))]
mod builtins;
#[cfg_attr(not(feature = "cluster"), allow(dead_code))]
mod catalog;
mod chart_repo;
mod client;
mod doctor;
mod engine_args;
mod helm_lookup;
mod helm_operator;
mod hook_record;
mod hook_test;
mod init;
mod init_sdk;
mod log_lines;
mod package;
mod package_sdk;
#[cfg(feature = "cluster")]
mod pod_network;
mod rbac;
#[cfg(feature = "cluster")]
mod remembered_port;
mod sdk_operators;
mod sdk_project;
mod signal;
#[cfg(feature = "cluster")]
mod up;
mod user_error;

use client::client_for;
use signal::wait_for_signal;

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "uc", version, about = "uc: the declarative universal Kubernetes operator")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log lines as `text` (colour only on a terminal) or `json` (one object per line: timestamp,
    /// level, target, message and the fields). The level: $UC_LOG (default info).
    #[arg(long, global = true, default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
}

// Parsed once at start: the size of its largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
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
struct ShimArgs {
    /// The container's directory.
    #[arg(long)]
    dir: PathBuf,
    /// The run number.
    #[arg(long)]
    run: u32,
    /// Give the process the container's stdin FIFO.
    #[arg(long)]
    stdin: bool,
    /// The program and its arguments.
    #[arg(last = true, required = true)]
    argv: Vec<String>,
}

#[derive(clap::Args)]
struct InitArgs {
    /// The operator's name (lowercase letters, digits, '-'): its directory, controller and kind.
    name: String,
    /// The hook's language: js (in-process, from a ConfigMap), python, exec (shell and jq) or rust
    /// (exec hooks: the request on stdin, the answer on stdout).
    #[arg(long, alias = "lang", default_value = "js", value_parser = ["js", "python", "exec", "rust"])]
    hook: String,
    /// The project's type: uc (a UniversalController and a hook), or an Operator SDK project as
    /// `operator-sdk init --plugins helm|ansible` + `create api` lay it out.
    #[arg(long = "type", default_value = "uc", value_parser = ["uc", "helm", "ansible"])]
    project_type: String,
    /// `--type helm`: the chart to start from — a directory, a `.tgz`, `REPO/NAME` of a repository
    /// `helm repo add` configured, or `NAME` with `--helm-chart-repo` (default: `helm create`'s).
    #[arg(long)]
    helm_chart: Option<String>,
    /// `--type helm`: the repository of `--helm-chart NAME` (its URL).
    #[arg(long)]
    helm_chart_repo: Option<String>,
    /// `--type helm`: the chart's version in its repository (default: the newest release).
    #[arg(long)]
    helm_chart_version: Option<String>,
    /// `--type helm|ansible`: the custom resource's kind (default: from the name, `web-app` → `WebApp`).
    #[arg(long)]
    kind: Option<String>,
}

#[derive(Subcommand)]
enum HookCommand {
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
enum StoreCommand {
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
enum SnapshotCommand {
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
fn store_dir(dir: PathBuf) -> PathBuf {
    let inner = dir.join("store");
    if inner.is_dir() { inner } else { dir }
}

#[derive(Subcommand)]
enum CatalogCommand {
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
struct EngineAddress {
    /// HOST:PORT of the engine's metrics endpoint (default: what `uc up` wrote in --data-dir).
    #[arg(long)]
    engine: Option<String>,
    /// The data directory of `uc up` (default: the directory of `$KUBECONFIG` when `uc up` wrote it,
    /// else `.uc`).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// A bearer token allowed `get` on `/debug/hooks/*` (default: the token of the data directory's
    /// kubeconfig).
    #[arg(long)]
    token: Option<String>,
}

#[derive(clap::Args)]
struct RbacArgs {
    /// Files or directories holding UniversalController objects (other kinds are skipped).
    files: Vec<PathBuf>,
    /// Also the UniversalControllers of the cluster (--kubeconfig, $KUBECONFIG, ~/.kube/config).
    #[arg(long)]
    from_cluster: bool,
    /// Kubeconfig for --from-cluster.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The ClusterRole's name.
    #[arg(long, default_value = "uc-engine")]
    name: String,
    /// Bind the role to this service account (NAMESPACE/NAME) with a ClusterRoleBinding.
    #[arg(long)]
    service_account: Option<String>,
    /// Only the controllers' rules, not the engine's own (for a role added to an engine's identity).
    #[arg(long)]
    no_engine_rules: bool,
    /// The engine runs with --no-metacontroller (no rules for Metacontroller's kinds).
    #[arg(long)]
    no_metacontroller: bool,
    /// Print only the rules (a YAML list, for a Helm chart or another role).
    #[arg(long)]
    rules_only: bool,
}

#[derive(clap::Args)]
struct JoinArgs {
    /// The member's name (the `Cluster` object's).
    name: String,
    /// Kubeconfig of the control plane (default: $KUBECONFIG, ~/.kube/config).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Kubeconfig of the member cluster (its current context's server, CA and bearer token are used).
    #[arg(long)]
    cluster_kubeconfig: PathBuf,
}

#[derive(clap::Args)]
struct HttpServerArgs {
    /// Port to listen on, on $POD_IP (or 127.0.0.1).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// The text answered.
    #[arg(long, default_value = "hello from uc")]
    text: String,
    /// Append a line to this file at start (to see that a volume keeps data across restarts).
    #[arg(long)]
    touch: Option<PathBuf>,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config, or in-cluster config).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Address of /metrics, /healthz and /readyz.
    #[arg(long, default_value = "127.0.0.1:9090")]
    metrics_addr: std::net::SocketAddr,
    /// Workers per controller: parents reconciled at once.
    #[arg(long, default_value_t = uc_engine::manager::DEFAULT_WORKERS)]
    workers: usize,
    /// Apply children client-side (a three-way merge with uc's last-applied annotation, like
    /// `kubectl apply`) instead of server-side apply (field manager `uc`, forced); clusters without
    /// server-side apply get client-side apply anyway.
    #[arg(long)]
    client_side_apply: bool,
    /// Neither serve nor run Metacontroller's CompositeControllers and DecoratorControllers (for a
    /// cluster where Metacontroller itself runs them).
    #[arg(long)]
    no_metacontroller: bool,
    /// Run the MultiClusterZooKeeper operator against a Karmada control plane (this kubeconfig's):
    /// installs its CRDs and controller, serves the ZookeeperCluster resource interpreter webhook and
    /// registers it.
    #[arg(long)]
    multicluster_zookeeper: bool,
    /// Address the interpreter webhook listens on.
    #[arg(long, default_value = "127.0.0.1:0")]
    interpreter_webhook_addr: std::net::SocketAddr,
    /// URL Karmada reaches the interpreter webhook at (default: https://<its address>/interpret).
    #[arg(long)]
    interpreter_webhook_url: Option<String>,
    /// Serve the web console on this address (users log in with a token the cluster accepts).
    #[arg(long)]
    console: Option<std::net::SocketAddr>,
    /// Reconcile parents in these namespaces only (comma-separated; default: every namespace). The
    /// engine still watches cluster-wide; a controller's own target namespaces narrow this further.
    #[arg(long, value_delimiter = ',')]
    watch_namespaces: Vec<String>,
    /// The Operator SDK's Helm operators: a `watches.yaml` (group, version, kind, chart, …) whose
    /// charts are rendered in-process for each custom resource (docs/sdk-operators.md).
    #[arg(long)]
    watches_file: Option<PathBuf>,
    #[command(flatten)]
    leader: engine_args::LeaderArgs,
    #[command(flatten)]
    client: engine_args::ClientArgs,
    #[command(flatten)]
    exec_hooks: engine_args::ExecHookArgs,
    #[command(flatten)]
    tenancy: engine_args::TenancyArgs,
}

fn main() {
    // A failure is said as its chain of causes, never with a backtrace: a user's mistake is no crash.
    if let Err(e) = run_command() {
        eprintln!("Error: {}", user_error::message(&e));
        std::process::exit(1);
    }
}

fn run_command() -> anyhow::Result<()> {
    let cli = Cli::parse();
    #[cfg(feature = "cluster")]
    if let Command::Shim(args) = cli.command {
        // No runtime, no logging: a shim lives as long as its container and stays small.
        let code = uc_node::container::shim::main(uc_node::container::shim::Args {
            dir: args.dir,
            run: args.run,
            stdin: args.stdin,
            argv: args.argv,
        });
        std::process::exit(code);
    }
    init_logging(&cli.log_format);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the runtime")?;
    let result = match cli.command {
        #[cfg(feature = "cluster")]
        Command::Up(args) => runtime.block_on(up::up(args)),
        #[cfg(not(feature = "cluster"))]
        Command::Up { .. } => Err(anyhow::anyhow!(
            "this uc is built without the embedded cluster (cargo feature `cluster`): `uc up` needs a default \
             build (`cargo install --path crates/uc --locked --target-dir target`); this one runs controllers \
             against a cluster (`uc run`)"
        )),
        Command::Run(args) => runtime.block_on(run(args)),
        Command::HttpServer(args) => runtime.block_on(http_server(args)),
        Command::Join(args) => runtime.block_on(join(args)),
        Command::Init(args) if args.project_type != "uc" => {
            let fetched = std::env::temp_dir().join(format!("uc-init-chart-{}.tgz", std::process::id()));
            let chart = match &args.helm_chart {
                Some(c) if args.helm_chart_repo.is_some() || !std::path::Path::new(c).exists() => {
                    let (repo, version) = (args.helm_chart_repo.as_deref(), args.helm_chart_version.as_deref());
                    let archive = runtime.block_on(chart_repo::fetch(c, repo, version))?;
                    std::fs::write(&fetched, archive).with_context(|| format!("writing {}", fetched.display()))?;
                    Some(fetched.clone())
                }
                Some(c) => Some(PathBuf::from(c)),
                None => None,
            };
            let sdk = match args.project_type.as_str() {
                "helm" => init_sdk::SdkType::Helm { chart },
                _ => init_sdk::SdkType::Ansible,
            };
            if !init::valid(&args.name) {
                anyhow::bail!("{:?}: a name is lowercase letters, digits and '-', starting with a letter", args.name);
            }
            let kind = args.kind.clone().unwrap_or_else(|| init::kind_of(&args.name));
            let written = init_sdk::write(&args.name, &kind, &sdk, std::path::Path::new(&args.name));
            let _ = std::fs::remove_file(&fetched);
            written.map(|()| {
                println!(
                    "{}: an Operator SDK {} project (kind {kind}); see {}/README.md",
                    args.name, args.project_type, args.name
                );
            })
        }
        Command::Init(args) => {
            let lang = init::Lang::parse(&args.hook).context("--hook: one of js, python, exec, rust")?;
            init::write(&args.name, lang, std::path::Path::new(&args.name)).map(|()| {
                println!("{}: an operator with a {} hook; see {}/README.md", args.name, args.hook, args.name);
            })
        }
        Command::Hook(HookCommand::Test { dir, update }) => match runtime.block_on(hook_test::run(&dir, update)) {
            Ok(true) => Ok(()),
            Ok(false) => std::process::exit(1),
            Err(e) => Err(e),
        },
        Command::Hook(HookCommand::Show { name, full, engine }) => runtime.block_on(async {
            let data_dir = hook_record::data_dir(engine.data_dir, std::env::var_os("KUBECONFIG"));
            let address = hook_record::engine_address(engine.engine, &data_dir)?;
            let token = hook_record::engine_token(engine.token, &data_dir);
            print!("{}", hook_record::show(&hook_record::records(&address, token.as_deref(), &name).await?, full));
            Ok(())
        }),
        Command::Hook(HookCommand::Record { name, dir, engine }) => runtime.block_on(async {
            let data_dir = hook_record::data_dir(engine.data_dir, std::env::var_os("KUBECONFIG"));
            let address = hook_record::engine_address(engine.engine, &data_dir)?;
            let token = hook_record::engine_token(engine.token, &data_dir);
            let cases = hook_record::save(&hook_record::records(&address, token.as_deref(), &name).await?, &dir)?;
            for c in &cases {
                println!("saved {}", c.display());
            }
            println!("{} case(s); run `uc hook test {}`", cases.len(), dir.display());
            Ok(())
        }),
        Command::Package { dir, version, replaces, out } => package::package(&dir, &version, replaces.as_deref(), out)
            .map(|b| println!("bundle written to {}", b.display())),
        Command::Catalog(CatalogCommand::Add { bundle, catalog, channel }) => {
            package::catalog_add(&bundle, &catalog, channel.as_deref()).map(|m| println!("added {m}"))
        }
        #[cfg(feature = "cluster")]
        Command::Shim(_) => Ok(()),
        Command::Rbac(args) => runtime.block_on(rbac_command(args)),
        #[cfg(feature = "cluster")]
        Command::Store(StoreCommand::Check { dir }) => match uc_apiserver::wal::check(&store_dir(dir)) {
            Ok(summary) => {
                println!("{summary}");
                Ok(())
            }
            Err(damage) => {
                eprintln!("{damage}");
                std::process::exit(1)
            }
        },
        #[cfg(feature = "cluster")]
        Command::Snapshot(SnapshotCommand::Save { file, data_dir }) => {
            let done = uc_apiserver::snapshot_file::save(&store_dir(data_dir), &file)?;
            println!("{done}");
            Ok(())
        }
        #[cfg(feature = "cluster")]
        Command::Snapshot(SnapshotCommand::Restore { file, dir }) => {
            let done = uc_apiserver::snapshot_file::restore(&file, &dir)?;
            println!("{done}");
            Ok(())
        }
        #[cfg(feature = "cluster")]
        Command::Store(StoreCommand::Repair { dir }) => {
            uc_apiserver::wal::repair(&store_dir(dir)).map(|done| println!("{done}")).map_err(anyhow::Error::from)
        }
        Command::Version { client, kubeconfig } => {
            println!("uc {} (commit {}, {})", env!("CARGO_PKG_VERSION"), env!("UC_GIT_COMMIT"), env!("UC_TARGET"));
            if !client {
                runtime.block_on(print_server_version(kubeconfig.as_deref()));
            }
            Ok(())
        }
        Command::Doctor { data_dir } => {
            let (text, ok) = doctor::report(&doctor::checks(&doctor::probe(&data_dir)));
            print!("{text}");
            if !ok {
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Crds => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            for crd in [uc_api::crds::universal_controller_crd(), uc_api::crds::controller_revision_crd()] {
                let yaml = serde_yaml::to_string(&crd).context("rendering YAML")?;
                // A closed pipe (`uc crds | head`) is not an error worth a panic.
                if writeln!(out, "---\n{yaml}").is_err() {
                    break;
                }
            }
            Ok(())
        }
    };
    // Tasks that wait on containers' locks must not hold the exit up.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    result
}

async fn rbac_command(args: RbacArgs) -> anyhow::Result<()> {
    let mut docs = Vec::new();
    for path in &args.files {
        let files = if path.is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("reading {}", path.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
                .collect();
            v.sort();
            v
        } else {
            vec![path.clone()]
        };
        for f in files {
            let text = std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
            for doc in serde_yaml::Deserializer::from_str(&text) {
                let v: serde_json::Value =
                    serde::Deserialize::deserialize(doc).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
                if !v.is_null() {
                    docs.push(v);
                }
            }
        }
    }
    if args.from_cluster {
        use kube::api::{Api, DynamicObject, ListParams};
        let client = client_for(args.kubeconfig.as_deref(), "uc-rbac").await?;
        let ar = crate::builtins::resource();
        let list = Api::<DynamicObject>::all_with(client, &ar)
            .list(&ListParams::default())
            .await
            .map_err(|e| anyhow::anyhow!("listing UniversalControllers: {}", uc_engine::dynamic::api_error(&e)))?;
        for o in list.items {
            let mut v = serde_json::to_value(o)?;
            v["kind"] = "UniversalController".into();
            docs.push(v);
        }
    }
    let controllers = rbac::controllers(&docs).map_err(anyhow::Error::msg)?;
    let sa = match &args.service_account {
        Some(s) => Some(s.split_once('/').context("--service-account: NAMESPACE/NAME")?),
        None => None,
    };
    if args.rules_only {
        print!("{}", rbac::rules_yaml(&controllers, !args.no_engine_rules, !args.no_metacontroller));
        return Ok(());
    }
    print!("{}", rbac::manifests(&args.name, &controllers, !args.no_engine_rules, !args.no_metacontroller, sa));
    Ok(())
}

/// The API server's version, or why there is none (no cluster is no error for `uc version`).
async fn print_server_version(kubeconfig: Option<&std::path::Path>) {
    if client::config_for(kubeconfig).await.is_err() {
        println!("server: no cluster configured (set KUBECONFIG or pass --kubeconfig)");
        return;
    }
    let answer = async {
        let client = client_for(kubeconfig, "uc-version").await?;
        let v = tokio::time::timeout(std::time::Duration::from_secs(5), client.apiserver_version())
            .await
            .context("no answer in 5 s")??;
        anyhow::Ok(format!("{} ({})", v.git_version, v.platform))
    };
    match answer.await {
        Ok(v) => println!("server: {v}"),
        Err(e) => {
            let why =
                e.downcast_ref::<kube::Error>().map(uc_engine::dynamic::api_error).unwrap_or_else(|| e.to_string());
            println!("server: not reachable ({why})")
        }
    }
}

/// Logs to stderr, as text (ANSI colour only on a terminal) or JSON lines.
fn init_logging(format: &str) {
    use std::io::IsTerminal;
    // kube's client warns of every connection the API server closes (on its shutdown, say); uc reports
    // the failures that matter itself, in its own words.
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("UC_LOG").unwrap_or_else(|_| "info,kube_client=off".into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    if format == "json" {
        builder.with_writer(std::io::stderr).json().flatten_event(true).with_current_span(false).init();
    } else {
        builder.with_writer(log_lines::Stderr).with_ansi(std::io::stderr().is_terminal()).init();
    }
}

async fn http_server(args: HttpServerArgs) -> anyhow::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ip = std::env::var("POD_IP").unwrap_or_else(|_| "127.0.0.1".into());
    if let Some(path) = &args.touch {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        writeln!(f, "started {}", std::env::var("POD_NAME").unwrap_or_default())?;
    }
    let listener = tokio::net::TcpListener::bind((ip.as_str(), args.port))
        .await
        .with_context(|| format!("binding {ip}:{}", args.port))?;
    println!("listening on {ip}:{}", args.port);
    loop {
        let (mut s, peer) = listener.accept().await?;
        let text = args.text.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            let n = s.read(&mut buf).await.unwrap_or(0);
            let line = String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or_default().to_string();
            println!("{peer} {line}");
            let path = line.split_whitespace().nth(1).unwrap_or("/");
            // GET /resolve/<name> answers the addresses the process resolves the name to.
            let body = match path.strip_prefix("/resolve/") {
                Some(name) => {
                    use std::net::ToSocketAddrs;
                    match (name, 0).to_socket_addrs() {
                        Ok(addrs) => format!("{}\n", addrs.map(|a| a.ip().to_string()).collect::<Vec<_>>().join(" ")),
                        Err(e) => format!("error: {e}\n"),
                    }
                }
                None => format!("{text}\n"),
            };
            let resp =
                format!("HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{body}", body.len());
            let _ = s.write_all(resp.as_bytes()).await;
        });
    }
}

async fn run(args: RunArgs) -> anyhow::Result<()> {
    let identity = engine_args::LeaderArgs::default_identity();
    let identity = args.leader.leader_election_identity.clone().unwrap_or(identity);
    let guard = uc_engine::guard::Guard::new(args.client.qps, args.client.burst);
    let client = client::guarded_client_for(args.kubeconfig.as_deref(), "uc-engine", &identity, &guard).await?;
    // Setup writes (CRDs, the controllers uc installs) and the lease go around the fence.
    let setup = client::replica_client_for(args.kubeconfig.as_deref(), "uc-engine", &identity).await?;
    let leader = args.leader.election(setup.clone(), identity)?;
    // The operators uc ships answer here too, for UniversalControllers that name their native hooks.
    let mut options = builtins::engine_options(
        &client,
        uc_engine::EngineOptions {
            workers: args.workers,
            metrics_addr: Some(args.metrics_addr),
            server_side_apply: !args.client_side_apply,
            metacontroller: !args.no_metacontroller,
            leader: Some(leader),
            guard: Some(guard),
            namespaces: {
                let set: std::collections::BTreeSet<String> =
                    args.watch_namespaces.iter().map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect();
                (!set.is_empty()).then_some(set)
            },
            exec_hooks: args.exec_hooks.policy(Vec::new()),
            default_service_account: args.tenancy.default_service_account.clone(),
            ..Default::default()
        },
    );
    if args.multicluster_zookeeper {
        let listen = uc_operators::multicluster::interpreter::Listen {
            addr: args.interpreter_webhook_addr,
            url: args.interpreter_webhook_url.clone(),
        };
        uc_operators::multicluster::register(&mut options.natives, client.clone(), listen);
    }
    let ansible = sdk_operators::register_factories(&mut options, &client);
    let helm_controllers = match &args.watches_file {
        Some(file) => sdk_operators::setup(&client, &setup, file, &mut options, &ansible).await?,
        None => Vec::new(),
    };
    let engine = uc_engine::Engine::start(client.clone(), options).await.context("starting the controller engine")?;
    if !helm_controllers.is_empty() {
        builtins::install_controllers(&setup, helm_controllers).await?;
    }
    if args.multicluster_zookeeper {
        for crd in uc_operators::multicluster::crds() {
            uc_engine::manager::install_crd(&setup, crd).await?;
        }
        builtins::install_controllers(&setup, uc_operators::multicluster::controllers()).await?;
    }
    tracing::info!(metrics = ?engine.metrics_addr, "engine running");
    let _console = match args.console {
        Some(addr) => {
            let cluster = client::config_for(args.kubeconfig.as_deref()).await?;
            let console = uc_console::start(uc_console::Options { addr, cluster, engine_metrics: engine.metrics_addr })
                .await
                .with_context(|| format!("starting the console on {addr}"))?;
            tracing::info!(url = %format!("http://{}/", console.addr), "console");
            Some(console)
        }
        None => None,
    };
    wait_for_signal().await;
    tracing::info!("stopping: reconciles under way finish, then the lease is released");
    engine.shutdown().await;
    Ok(())
}

async fn join(args: JoinArgs) -> anyhow::Result<()> {
    let member = kube::config::Kubeconfig::read_from(&args.cluster_kubeconfig)
        .with_context(|| format!("reading {}", args.cluster_kubeconfig.display()))?;
    let creds = uc_karmada::join::credentials(&member).map_err(anyhow::Error::msg)?;
    let (secret, cluster) = uc_karmada::join::objects(&args.name, &creds);
    let client = client_for(args.kubeconfig.as_deref(), "uc-join").await?;
    let kinds = uc_karmada::kinds::Kinds::default();
    let ns = serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                                "metadata": {"name": uc_karmada::join::SECRET_NAMESPACE}});
    for obj in [&ns, &secret, &cluster] {
        uc_karmada::objects::apply(&client, &kinds, obj).await.map_err(anyhow::Error::msg)?;
    }
    println!("cluster {} joined ({})", args.name, creds.endpoint);
    Ok(())
}
