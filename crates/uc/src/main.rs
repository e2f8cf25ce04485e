//! The `uc` binary: the declarative universal Kubernetes operator.

mod allocator;
mod ansible_operator;
mod cli;
mod commands;
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
mod runtime;
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
use clap::Parser;
use cli::*;

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
    let runtime = runtime::build(&cli.command)?;
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
        Command::Init(args) if args.project_type != "uc" => commands::init_sdk_project(&runtime, &args),
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
        Command::Hook(HookCommand::Show { name, full, engine }) => {
            runtime.block_on(commands::hook_show(&name, full, engine))
        }
        Command::Hook(HookCommand::Record { name, dir, engine }) => {
            runtime.block_on(commands::hook_record(&name, &dir, engine))
        }
        Command::Package { dir, version, replaces, out } => package::package(&dir, &version, replaces.as_deref(), out)
            .map(|b| println!("bundle written to {}", b.display())),
        Command::Catalog(CatalogCommand::Add { bundle, catalog, channel }) => {
            package::catalog_add(&bundle, &catalog, channel.as_deref()).map(|m| println!("added {m}"))
        }
        #[cfg(feature = "cluster")]
        Command::Shim(_) => Ok(()),
        Command::Rbac(args) => runtime.block_on(rbac_command(args)),
        #[cfg(feature = "cluster")]
        Command::Store(cmd) => commands::store(cmd),
        #[cfg(feature = "cluster")]
        Command::Snapshot(cmd) => commands::snapshot(cmd),
        Command::Version { client, kubeconfig } => {
            println!("uc {} (commit {}, {})", env!("CARGO_PKG_VERSION"), env!("UC_GIT_COMMIT"), env!("UC_TARGET"));
            if !client {
                runtime.block_on(print_server_version(kubeconfig.as_deref()));
            }
            Ok(())
        }
        Command::Doctor { data_dir } => commands::doctor(&data_dir),
        Command::Crds => commands::print_crds(),
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
            for doc in serde_yaml_ng::Deserializer::from_str(&text) {
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
    let ns = k8s_openapi::api::core::v1::Namespace {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(uc_karmada::join::SECRET_NAMESPACE.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    for obj in [uc_api::meta::json_of(&ns), uc_api::meta::json_of(&secret), uc_api::meta::json_of(&cluster)] {
        uc_karmada::objects::apply(&client, &kinds, &obj).await.map_err(anyhow::Error::msg)?;
    }
    println!("cluster {} joined ({})", args.name, creds.endpoint);
    Ok(())
}
