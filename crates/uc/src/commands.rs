//! The longer of `uc`'s commands that are not a subsystem of their own: an Operator SDK project from
//! `uc init --type helm|ansible`, a controller's recorded hook calls (`uc hook show|record`), and the
//! CRDs `uc run` needs (`uc crds`).

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::cli::{EngineAddress, InitArgs};
#[cfg(feature = "cluster")]
use crate::cli::{SnapshotCommand, StoreCommand, store_dir};
use crate::{chart_repo, doctor, hook_record, init, init_sdk};

/// `uc init --type helm|ansible`: an Operator SDK project (a Helm chart fetched from a repository or
/// read from a path).
pub(crate) fn init_sdk_project(runtime: &tokio::runtime::Runtime, args: &InitArgs) -> anyhow::Result<()> {
    let fetched = std::env::temp_dir().join(format!("uc-init-chart-{}.tgz", std::process::id()));
    let chart = match &args.helm_chart {
        Some(c) if args.helm_chart_repo.is_some() || !Path::new(c).exists() => {
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
    let written = init_sdk::write(&args.name, &kind, &sdk, Path::new(&args.name));
    let _ = std::fs::remove_file(&fetched);
    written?;
    println!("{}: an Operator SDK {} project (kind {kind}); see {}/README.md", args.name, args.project_type, args.name);
    Ok(())
}

/// The engine serving a controller's recorded hook calls: its address and token (from the flags, or
/// the data directory `$KUBECONFIG` lives in).
fn engine_of(engine: EngineAddress) -> anyhow::Result<(String, Option<String>)> {
    let data_dir = hook_record::data_dir(engine.data_dir, std::env::var_os("KUBECONFIG"));
    let address = hook_record::engine_address(engine.engine, &data_dir)?;
    Ok((address, hook_record::engine_token(engine.token, &data_dir)))
}

/// `uc hook show`: a controller's recorded hook calls.
pub(crate) async fn hook_show(name: &str, full: bool, engine: EngineAddress) -> anyhow::Result<()> {
    let (address, token) = engine_of(engine)?;
    print!("{}", hook_record::show(&hook_record::records(&address, token.as_deref(), name).await?, full));
    Ok(())
}

/// `uc hook record`: a controller's recorded hook calls saved as test cases.
pub(crate) async fn hook_record(name: &str, dir: &Path, engine: EngineAddress) -> anyhow::Result<()> {
    let (address, token) = engine_of(engine)?;
    let cases = hook_record::save(&hook_record::records(&address, token.as_deref(), name).await?, dir)?;
    for c in &cases {
        println!("saved {}", c.display());
    }
    println!("{} case(s); run `uc hook test {}`", cases.len(), dir.display());
    Ok(())
}

/// `uc crds`: the CRDs `uc run` needs, as YAML documents.
pub(crate) fn print_crds() -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for crd in [uc_api::crds::universal_controller_crd(), uc_api::crds::controller_revision_crd()] {
        let yaml = serde_yaml_ng::to_string(&crd).context("rendering YAML")?;
        // A closed pipe (`uc crds | head`) is not an error worth a panic.
        if writeln!(out, "---\n{yaml}").is_err() {
            break;
        }
    }
    Ok(())
}

/// `uc store check|repair`: the store's log checked (exit 1 on damage), or repaired.
#[cfg(feature = "cluster")]
pub(crate) fn store(cmd: StoreCommand) -> anyhow::Result<()> {
    match cmd {
        StoreCommand::Check { dir } => match uc_apiserver::wal::check(&store_dir(dir)) {
            Ok(summary) => {
                println!("{summary}");
                Ok(())
            }
            Err(damage) => {
                eprintln!("{damage}");
                std::process::exit(1)
            }
        },
        StoreCommand::Repair { dir } => {
            let done = uc_apiserver::wal::repair(&store_dir(dir))?;
            println!("{done}");
            Ok(())
        }
    }
}

/// `uc snapshot save|restore`: the store as one file, and back.
#[cfg(feature = "cluster")]
pub(crate) fn snapshot(cmd: SnapshotCommand) -> anyhow::Result<()> {
    let done = match cmd {
        SnapshotCommand::Save { file, data_dir } => uc_apiserver::snapshot_file::save(&store_dir(data_dir), &file)?,
        SnapshotCommand::Restore { file, dir } => uc_apiserver::snapshot_file::restore(&file, &dir)?,
    };
    println!("{done}");
    Ok(())
}

/// `uc doctor`: what this machine lets uc do (exit 1 when something required is missing).
pub(crate) fn doctor(data_dir: &Path) -> anyhow::Result<()> {
    let (text, ok) = doctor::report(&doctor::checks(&doctor::probe(data_dir)));
    print!("{text}");
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
