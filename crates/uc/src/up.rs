//! `uc up`: the embedded cluster on one machine — the API server, the controller engine with uc's
//! operators, the operator lifecycle manager with uc's catalog, the node agent — until a signal stops it.

use std::path::PathBuf;

use anyhow::Context;

use crate::catalog;
use crate::client::client_for;
use crate::signal::wait_for_signal;

#[derive(clap::Args)]
pub struct UpArgs {
    /// Directory for the database, credentials and kubeconfig.
    #[arg(long, default_value = ".uc")]
    data_dir: PathBuf,
    /// Port of the API server on 127.0.0.1 (0 picks a free port; the kubeconfig names it). Unset or 0,
    /// a data directory served before keeps the port it had (`<data-dir>/port`); unset on a new one, 6443.
    #[arg(long, env = "UC_PORT")]
    port: Option<u16>,
    /// Keep objects in memory only (nothing survives a restart).
    #[arg(long)]
    in_memory: bool,
    /// Most watch events kept for resuming watches; older resourceVersions get 410 Gone.
    #[arg(long, default_value_t = 100_000)]
    watch_cache_events: usize,
    /// Seconds of history kept for watches and lists at a past revision (kube-apiserver compacts every
    /// 5 minutes); older resourceVersions get 410 Gone.
    #[arg(long, default_value_t = 300)]
    history_seconds: u64,
    /// Most megabytes (as JSON) of history kept, whatever its age.
    #[arg(long, default_value_t = 256)]
    history_mb: usize,
    /// Port of the engine's /metrics, /healthz, /readyz on 127.0.0.1 (0 picks one; written to
    /// <data-dir>/metrics-address).
    #[arg(long, default_value_t = 0)]
    metrics_port: u16,
    /// Workers per controller: parents reconciled at once.
    #[arg(long, default_value_t = uc_engine::manager::DEFAULT_WORKERS)]
    workers: usize,
    /// Run only the API server, without the controller engine.
    #[arg(long)]
    no_engine: bool,
    /// Run no node agent: pods stay Pending.
    #[arg(long)]
    no_node: bool,
    /// Run none of the built-in workload controllers (those --disable-controllers lists), nor uc's
    /// operators.
    #[arg(long)]
    no_workload_controllers: bool,
    /// The Operator SDK's Helm operators: a `watches.yaml` whose charts are rendered in-process for each
    /// custom resource; the project's CRDs (`config/crd/bases/`) are installed (docs/sdk-operators.md).
    #[arg(long)]
    watches_file: Option<PathBuf>,
    /// Built-in controllers not to run (comma-separated). A built-in controller that is running and
    /// gets deleted is made again.
    #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(crate::builtins::NAMES))]
    disable_controllers: Vec<String>,
    /// Be a multi-cluster control plane with Karmada's API (Clusters, PropagationPolicy,
    /// OverridePolicy, ResourceBinding, Work, the MCS API): resource templates here are propagated to
    /// the member clusters registered with `uc join`. Like Karmada's control plane it runs no node
    /// and no workload controllers.
    #[arg(long)]
    control_plane: bool,
    /// The second octet of this cluster's pod addresses (10.N.0.0/16, or 127.N.0.0/16 when pods share
    /// the machine's network; default: chosen at random once per data directory, clear of the
    /// machine's routes). Clusters whose pods talk to each other need different ones.
    #[arg(long, env = "UC_POD_SUBNET", value_parser = clap::value_parser!(u8).range(1..=254))]
    pod_subnet: Option<u8>,
    /// The range pods' addresses come from, a /16 the cluster owns (default 10.N.0.0/16, N from
    /// --pod-subnet): pods take its low 240 /24s, Services its top /20. It must not overlap a route or
    /// address of the machine.
    #[arg(long, env = "UC_POD_CIDR", value_parser = crate::pod_network::parse_cidr)]
    pod_cidr: Option<uc_node::network::PodCidr>,
    /// Pods share the machine's network (addresses on loopback) instead of a network namespace each
    /// on the cluster's bridge.
    #[arg(long)]
    no_pod_network: bool,
    /// Apply children client-side (a three-way merge with uc's last-applied annotation, like
    /// `kubectl apply`) instead of server-side apply (field manager `uc`, forced); clusters without
    /// server-side apply get client-side apply anyway.
    #[arg(long)]
    client_side_apply: bool,
    /// Neither serve nor run Metacontroller's CompositeControllers and DecoratorControllers (for a
    /// cluster where Metacontroller itself runs them).
    #[arg(long)]
    no_metacontroller: bool,
    /// Serve no OLM API (operators.coreos.com: catalogs, Subscriptions, InstallPlans,
    /// ClusterServiceVersions, OperatorGroups) and no catalog of uc's operators (`olm/uc-operators`);
    /// `--operators` then installs their controllers directly.
    #[arg(long)]
    no_olm: bool,
    /// uc's operators installed on the first start (comma-separated, or `none`): Subscriptions in the
    /// `operators` namespace to the catalog `olm/uc-operators` — etcd, zookeeper, catset, tfjob,
    /// sample-controller. Deleting one's Subscription and CSV uninstalls it for good.
    #[arg(long, value_delimiter = ',', default_value = "etcd,zookeeper")]
    operators: Vec<String>,
    /// Port of the web console on 127.0.0.1 (0 picks one; written to <data-dir>/console-address).
    #[arg(long, default_value_t = 0)]
    console_port: u16,
    /// Serve no web console.
    #[arg(long)]
    no_console: bool,
    /// Append an audit log here: one audit.k8s.io/v1 Event (Metadata level) per request that writes.
    #[arg(long)]
    audit_log_path: Option<PathBuf>,
    /// How long a request's body may take to arrive before the API server answers 400 (like
    /// kube-apiserver's `--request-timeout`).
    #[arg(long, default_value = "60s", value_parser = uc_api::controller::parse_duration)]
    request_timeout: std::time::Duration,
    /// How long an Event lives after its last write (kube-apiserver's `--event-ttl`).
    #[arg(long, default_value = "1h", value_parser = uc_api::controller::parse_duration)]
    event_ttl: std::time::Duration,
    /// At most this many client connections open at once; one more is closed at once, so that no
    /// client can exhaust the process's file descriptors.
    #[arg(long, default_value_t = 4096)]
    max_connections: usize,
    /// Pod Security admission's levels for namespaces whose labels name none:
    /// `enforce=LEVEL[:VERSION],audit=...,warn=...` (levels privileged, baseline, restricted; modes
    /// left out are privileged). kube-system is always privileged.
    #[arg(long, default_value = "enforce=baseline,warn=restricted", value_parser = uc_apiserver::pod_security::Policy::parse)]
    pod_security_default: uc_apiserver::pod_security::Policy,
    /// Run pods' containers without their sandbox (bubblewrap namespaces, an unprivileged user):
    /// each sees the machine's processes and files as uc's user.
    #[arg(long)]
    no_pod_sandbox: bool,
    #[command(flatten)]
    exec_hooks: crate::engine_args::ExecHookArgs,
    #[command(flatten)]
    tenancy: crate::engine_args::TenancyArgs,
}

/// Whether this cluster runs uc's operators (a control plane and a cluster without workload
/// controllers do not).
fn installs_operators(args: &UpArgs) -> bool {
    !args.control_plane && !args.no_workload_controllers
}

/// The packages of `--operators`, checked against the catalog.
fn operators(args: &UpArgs) -> anyhow::Result<Vec<String>> {
    let names: Vec<String> = args.operators.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    if names.iter().any(|n| n == "none") {
        return Ok(Vec::new());
    }
    let known = catalog::packages();
    if let Some(unknown) = names.iter().find(|n| !known.contains(&n.as_str())) {
        anyhow::bail!("--operators: uc has no operator {unknown:?} (it has {})", known.join(", "));
    }
    Ok(names)
}

/// On the first start of a data directory (every start, in memory), subscribes to `--operators` and
/// waits for them to be installed; a later start leaves them as the user left them.
async fn subscribe_operators(
    args: &UpArgs,
    client: &kube::Client,
    catalog: &uc_olm::fbc::Catalog,
) -> anyhow::Result<()> {
    let marker = args.data_dir.join("operators-subscribed");
    if !args.in_memory && marker.exists() {
        return Ok(());
    }
    let subscriptions = operators(args)?
        .iter()
        .map(|p| {
            uc_olm::subscribe::subscription(
                catalog,
                catalog::NAME,
                uc_olm::GLOBAL_CATALOG_NAMESPACE,
                p,
                uc_olm::GLOBAL_OPERATORS_NAMESPACE,
            )
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow::anyhow!("--operators: {e}"))?;
    uc_olm::subscribe::create(client, &subscriptions)
        .await
        .map_err(|e| anyhow::anyhow!("subscribing to uc's operators: {e}"))?;
    std::fs::write(&marker, args.operators.join(",")).with_context(|| format!("writing {}", marker.display()))?;
    if let Err(waiting) =
        uc_olm::subscribe::wait_installed(client, &subscriptions, std::time::Duration::from_secs(60)).await
    {
        tracing::warn!(waiting = %waiting.join(", "), "uc's operators not installed yet; going on");
    }
    Ok(())
}

/// Holds `<data-dir>/uc.lock` for as long as `uc up` runs: one `uc up` per data directory (two
/// would start every container twice).
fn lock_data_dir(data_dir: &std::path::Path) -> anyhow::Result<std::fs::File> {
    std::fs::create_dir_all(data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
    let path = data_dir.join("uc.lock");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => {
            anyhow::bail!("another `uc up` is running on the data directory {}", data_dir.display())
        }
        Err(std::fs::TryLockError::Error(e)) => Err(e).with_context(|| format!("locking {}", path.display())),
    }
}

/// The API server's configuration for `uc up`.
fn server_config(
    args: &UpArgs,
    network: &uc_node::network::Network,
    kubelet_client: uc_apiserver::kubelet_tls::Identity,
) -> uc_apiserver::Config {
    let mut config = uc_apiserver::Config::new(&args.data_dir);
    config.pod_security = args.pod_security_default.clone();
    config.port = crate::remembered_port::resolve(&args.data_dir, args.port);
    config.service_cidr = Some(network.cidr().services());
    config.kubelet_client = Some(kubelet_client);
    config.audit_log_path = args.audit_log_path.clone();
    config.request_timeout = args.request_timeout;
    config.max_connections = args.max_connections;
    config.event_ttl = args.event_ttl;
    // Ready once everything below runs (the control plane's API served, the node registered).
    config.hold_readiness = true;
    config.durable = !args.in_memory;
    config.store.log_capacity = args.watch_cache_events.max(1);
    config.store.retention = std::time::Duration::from_secs(args.history_seconds);
    config.store.log_budget_bytes = args.history_mb.saturating_mul(1 << 20);
    config
}

/// The controller engine (leading by its lease), with the built-in, multi-cluster or uc's own
/// operators' controllers as `args` choose; and the task that keeps the built-in ones installed.
async fn start_engine(
    args: &UpArgs,
    kubeconfig: &std::path::Path,
) -> anyhow::Result<(Option<uc_engine::Engine>, Option<tokio::task::JoinHandle<()>>)> {
    let mut keep_builtins = None;
    let data_dir = std::fs::canonicalize(&args.data_dir).unwrap_or(args.data_dir.clone());
    // One `uc up` per data directory: a restarted one takes its own lease back at once.
    let identity = format!("uc-up@{}:{}", crate::engine_args::hostname(), data_dir.display());
    let guard = uc_engine::guard::Guard::new(0.0, 1);
    let client = crate::client::guarded_client_for(Some(kubeconfig), "uc-engine", &identity, &guard).await?;
    let setup = crate::client::replica_client_for(Some(kubeconfig), "uc-engine", &identity).await?;
    let mut leader =
        uc_engine::leader::LeaderElection::new(setup.clone(), "kube-system", "uc-engine", &identity, false);
    // One engine per cluster here (a restart takes its own lease back at once): renewed every 10 s,
    // like a node's lease, so an idle cluster writes little.
    leader.lease_duration = std::time::Duration::from_secs(60);
    leader.renew_deadline = std::time::Duration::from_secs(40);
    leader.retry_period = std::time::Duration::from_secs(10);
    let mut options = crate::builtins::engine_options(
        &client,
        uc_engine::EngineOptions {
            workers: args.workers,
            metrics_addr: Some(std::net::SocketAddr::from(([127, 0, 0, 1], args.metrics_port))),
            server_side_apply: !args.client_side_apply,
            metacontroller: !args.no_metacontroller,
            leader: Some(leader),
            guard: Some(guard),
            exec_hooks: args.exec_hooks.policy(vec![data_dir.clone()]),
            default_service_account: args.tenancy.default_service_account.clone(),
            ..Default::default()
        },
    );
    if args.control_plane {
        let listen = uc_operators::multicluster::interpreter::Listen::default();
        uc_operators::multicluster::register(&mut options.natives, client.clone(), listen);
    }
    let ansible = crate::sdk_operators::register_factories(&mut options, &client);
    let helm_controllers = match &args.watches_file {
        Some(file) => crate::sdk_operators::setup(&client, &setup, file, &mut options, &ansible).await?,
        None => Vec::new(),
    };
    let engine = uc_engine::Engine::start(client.clone(), options).await.context("starting the controller engine")?;
    crate::builtins::install_controllers(&setup, helm_controllers).await?;
    if args.control_plane {
        // The multi-cluster operators; the ZookeeperCluster is a resource template here,
        // propagated rather than run.
        for crd in uc_operators::multicluster::crds() {
            uc_engine::manager::install_crd(&setup, crd).await?;
        }
        crate::builtins::install_controllers(&setup, uc_operators::multicluster::controllers()).await?;
    } else if !args.no_workload_controllers {
        let builtins = crate::builtins::enabled(&args.disable_controllers);
        // Ones disabled now that an earlier start made are removed.
        crate::builtins::remove_disabled(&setup, &args.disable_controllers).await?;
        crate::builtins::install_controllers(&setup, builtins.clone()).await?;
        if !args.disable_controllers.iter().any(|d| d == "persistentvolumeclaim") {
            crate::builtins::ensure_storage_class(&setup).await?;
        }
        let keep = crate::builtins::keep(setup.clone(), builtins);
        // Finished Jobs past their `ttlSecondsAfterFinished` go, with the Job controller.
        keep_builtins = Some(if args.disable_controllers.iter().any(|d| d == "job") {
            tokio::spawn(keep)
        } else {
            let ttl = uc_operators::workloads::ttl_after_finished::run(client.clone());
            tokio::spawn(async move {
                tokio::join!(keep, ttl);
            })
        });
    }
    // Without OLM, uc's operators' CRDs and controllers are installed directly (on every start).
    if args.no_olm && installs_operators(args) {
        for package in operators(args)? {
            let (crds, controllers) = catalog::objects(&package)?;
            for crd in crds {
                uc_engine::manager::install_crd(&setup, crd).await?;
            }
            crate::builtins::install_controllers(&setup, controllers).await?;
        }
    }
    if let Some(addr) = engine.metrics_addr {
        std::fs::write(args.data_dir.join("metrics-address"), addr.to_string()).context("writing metrics-address")?;
        tracing::info!(%addr, "engine metrics");
    }
    Ok((Some(engine), keep_builtins))
}

/// The node agent: the shipped allowlist (and `node.json`'s), pods in the sandbox when it can, acting
/// as `system:node:<name>` (and scheduling with the cluster's credential).
async fn start_node(
    args: &UpArgs,
    kubeconfig: &std::path::Path,
    api: std::net::SocketAddr,
    network: uc_node::network::Network,
    sandbox: bool,
    node_identity: &uc_apiserver::kubelet_tls::Identity,
) -> anyhow::Result<uc_node::Node> {
    let exe = std::env::current_exe().context("locating the uc binary")?;
    let mut allowlist = uc_node::allowlist::Allowlist::shipped(exe.clone());
    let node_config = args.data_dir.join("node.json");
    if node_config.exists() {
        allowlist.extend_from_file(&node_config).context("reading the node config")?;
    }
    let data_dir = std::fs::canonicalize(&args.data_dir).unwrap_or(args.data_dir.clone());
    let options = uc_node::NodeOptions {
        allowlist,
        pods_dir: data_dir.join("pods"),
        hosts_dir: Some(data_dir.join("hosts")),
        network,
        volumes_dir: data_dir.join("volumes"),
        shim: exe,
        kubelet_callers: uc_node::server::Callers::Tls(
            uc_apiserver::kubelet_tls::server_config(node_identity).map_err(anyhow::Error::msg)?,
        ),
        // Pods reach the API server as pods do: through the `kubernetes` Service.
        api_server: Some(match network {
            uc_node::network::Network::Bridged(cidr) => std::net::SocketAddr::from((cidr.kubernetes(), 443)),
            uc_node::network::Network::Loopback(_) => api,
        }),
        sandbox,
        hidden: vec![data_dir.clone()],
        ..Default::default()
    };
    if !options.sandbox {
        tracing::warn!(
            "pods run without their sandbox ({}): a container sees the machine's processes and files as uc's user",
            if args.no_pod_sandbox { "--no-pod-sandbox" } else { "it needs root, bwrap and setpriv" }
        );
    }
    // The node acts as itself (`system:node:<name>`, limited by NodeRestriction); binding pods to it
    // is the scheduler's, with the cluster's credential.
    let user = format!("system:node:{}", options.name);
    let credential = uc_apiserver::tls::issue_client(&args.data_dir, &user, &["system:nodes"])
        .map_err(|e| anyhow::anyhow!("issuing the node's client certificate: {e}"))?;
    let node_kubeconfig = uc_apiserver::tls::write_certificate_kubeconfig(
        &args.data_dir,
        "node.kubeconfig",
        &format!("https://{api}"),
        (&credential.0, &credential.1),
    )?;
    let clients = uc_node::Clients {
        node: crate::client::local_client_for(&node_kubeconfig, "uc-node").await?,
        scheduler: crate::client::local_client_for(kubeconfig, "uc-scheduler").await?,
    };
    uc_node::start(clients, options).await.context("starting the node agent")
}

/// Stops in order: no new reconciles, those under way finish, the lease is released; then the pods
/// stop with their grace periods (nothing uc started is left running); then the API server.
async fn stop(
    keep_builtins: Option<tokio::task::JoinHandle<()>>,
    engine: Option<uc_engine::Engine>,
    control_plane: Option<uc_karmada::ControlPlane>,
    node: Option<uc_node::Node>,
    server: uc_apiserver::RunningServer,
) {
    if let Some(k) = keep_builtins {
        k.abort();
    }
    if let Some(e) = engine {
        tracing::info!("stopping the controllers: reconciles under way finish, then the lease is released");
        e.shutdown().await;
    }
    drop(control_plane);
    if let Some(n) = node {
        tracing::info!("stopping the pods, each with its grace period");
        n.shutdown().await;
    }
    tracing::info!("stopping the API server: the store is synced and closed");
    server.shutdown().await;
    tracing::info!("stopped");
}

pub async fn up(args: UpArgs) -> anyhow::Result<()> {
    let _lock = lock_data_dir(&args.data_dir)?;
    operators(&args)?;
    if let Some(n) = args.pod_subnet {
        crate::pod_network::keep_subnet(&args.data_dir, n)?;
    }
    let sandbox = !args.no_pod_sandbox && uc_node::sandbox::available();
    let network = crate::pod_network::choose(crate::pod_network::Choice {
        cidr: args.pod_cidr,
        subnet: args.pod_subnet,
        off: args.no_pod_network,
        sandbox,
        data_dir: &args.data_dir,
    })?;
    // The API server and the node know each other by certificates made for this run only.
    let (node_identity, kubelet_client) =
        uc_apiserver::kubelet_tls::generate().context("making the node's and the API server's certificates")?;
    let config = server_config(&args, &network, kubelet_client);
    let server = uc_apiserver::start(config)
        .await
        .with_context(|| format!("starting the API server in {}", args.data_dir.display()))?;
    let kubeconfig = std::fs::canonicalize(&server.kubeconfig).unwrap_or(server.kubeconfig.clone());
    crate::remembered_port::write(&args.data_dir, server.addr.port())
        .with_context(|| format!("keeping the port in {}", args.data_dir.display()))?;
    tracing::info!(address = %server.addr, "API server ready");
    let (engine, keep_builtins) = if args.no_engine { (None, None) } else { start_engine(&args, &kubeconfig).await? };
    let control_plane = if args.control_plane {
        let client = client_for(Some(&kubeconfig), "karmada-controller-manager").await?;
        let resolver = uc_engine::names::ClusterNames::start(client.clone()).resolver("default");
        let plane = uc_karmada::start(client, resolver).await.context("starting the multi-cluster control plane")?;
        tracing::info!("multi-cluster control plane running (Karmada's API)");
        Some(plane)
    } else {
        None
    };
    // The lifecycle manager installs controllers for the engine: none without it.
    let _lifecycle = if !args.no_olm && !args.control_plane && engine.is_some() {
        let client = client_for(Some(&kubeconfig), "olm-operator").await?;
        let resolver = uc_engine::names::ClusterNames::start(client.clone()).resolver("default");
        let builtin = catalog::builtin();
        let lifecycle = uc_olm::start(client.clone(), resolver, builtin.clone())
            .await
            .context("starting the operator lifecycle manager")?;
        tracing::info!("operator lifecycle manager running (OLM's API)");
        if installs_operators(&args) {
            subscribe_operators(&args, &client, &builtin[catalog::NAME].get()).await?;
        }
        Some(lifecycle)
    } else {
        None
    };
    let _console = if args.no_console {
        None
    } else {
        let cluster = crate::client::config_for(Some(&kubeconfig)).await?;
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], args.console_port));
        let engine_metrics = engine.as_ref().and_then(|e| e.metrics_addr);
        let console = uc_console::start(uc_console::Options { addr, cluster, engine_metrics })
            .await
            .with_context(|| format!("starting the console on {addr}"))?;
        let url = format!("http://{}/", console.addr);
        std::fs::write(args.data_dir.join("console-address"), console.addr.to_string())
            .context("writing console-address")?;
        tracing::info!(%url, "console (log in with the kubeconfig's token)");
        Some(console)
    };
    let node = if args.no_node || args.control_plane {
        None
    } else {
        Some(start_node(&args, &kubeconfig, server.addr, network, sandbox, &node_identity).await?)
    };
    server.mark_ready();
    println!("export KUBECONFIG={}", kubeconfig.display());
    wait_for_signal().await;
    tracing::info!("stopping");
    stop(keep_builtins, engine, control_plane, node, server).await;
    Ok(())
}
