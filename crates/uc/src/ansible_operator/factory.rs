//! `native: {name: ansible, config: {project, watch}}`: the hook of an Ansible project a bundle carries
//! (`uc package` packs the project's roles and playbooks). A run executes the project's code on the
//! engine's machine, outside any sandbox, so such hooks are made only where the engine's operator
//! said exec hooks may run unconfined (`--exec-hooks-unconfined`) and `ansible-runner` may run
//! (`--exec-hooks`).

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use base64::Engine as _;
use serde::Deserialize as _;
use serde_json::Value;
use uc_api::GroupVersionKind;
use uc_engine::hooks::HookError;
use uc_engine::hooks::native::{NativeFactory, NativeHook, NativeRegistry};

use super::runtime::{self, Runtime};

/// A hook's config as `uc package` writes it: the packed project (base64) and the watch of it the hook
/// serves.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Config {
    pub project: String,
    pub watch: GroupVersionKind,
}

/// Directories of a project that are not its operator (the bundle, kustomize's config, tests, VCS).
const NOT_PACKED: [&str; 5] = ["bundle", "config", ".git", "molecule", "bin"];

/// Registers the `ansible` factory.
pub fn register_factory(natives: &mut NativeRegistry, runtime: Arc<Runtime>) {
    let factory: Arc<NativeFactory> = Arc::new(move |config: Value| {
        let runtime = runtime.clone();
        Box::pin(async move {
            runtime.hook_of_config(&config).await.map_err(|e| HookError::Config(format!("ansible hook: {e:#}")))
        })
    });
    natives.register_factory("ansible", factory);
}

/// The project in `dir` packed for a bundle: a gzipped tar of its files but `NOT_PACKED`.
pub fn pack(dir: &Path) -> anyhow::Result<Vec<u8>> {
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default()));
    tar.follow_symlinks(false);
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if NOT_PACKED.contains(&name.as_str()) {
            continue;
        }
        if path.is_dir() {
            tar.append_dir_all(&name, &path)?;
        } else {
            tar.append_path_with_name(&path, &name)?;
        }
    }
    Ok(tar.into_inner()?.finish()?)
}

/// Unpacks a packed project into `dir`: files and directories only, every path inside `dir`.
fn unpack(tgz: &[u8], dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tgz));
    for entry in archive.entries()? {
        let mut entry = entry?;
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            bail!("{}: only files and directories are unpacked", entry.path()?.display());
        }
        if !entry.unpack_in(dir)? {
            bail!("{}: outside the project", entry.path()?.display());
        }
    }
    Ok(())
}

impl Runtime {
    async fn hook_of_config(&self, config: &Value) -> anyhow::Result<Arc<dyn NativeHook>> {
        let config = Config::deserialize(config).context("config")?;
        if self.exec.sandboxed || !self.exec.programs.allows("ansible-runner") {
            bail!(
                "a bundle's Ansible project runs on the engine's machine outside any sandbox: the engine makes such hooks only with --exec-hooks-unconfined and ansible-runner allowed by --exec-hooks"
            );
        }
        if config.project.is_empty() {
            bail!("config.project is required");
        }
        let tgz = base64::engine::general_purpose::STANDARD.decode(&config.project).context("config.project")?;
        let digest = {
            use std::hash::{Hash as _, Hasher as _};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            tgz.hash(&mut h);
            format!("{:016x}", h.finish())
        };
        let dir = self.work.join("projects").join(digest);
        if !dir.join("watches.yaml").is_file() {
            unpack(&tgz, &dir).context("config.project")?;
        }
        let text = std::fs::read_to_string(dir.join("watches.yaml")).context("config.project has no watches.yaml")?;
        let GroupVersionKind { group, version, kind } = config.watch;
        let w = runtime::parse_watches(&dir, &text)?
            .into_iter()
            .find(|w| (&w.group, &w.version, &w.kind) == (&group, &version, &kind))
            .with_context(|| format!("config.watch: {group}/{version} {kind} is not in the project's watches.yaml"))?;
        runtime::check_runner().await?;
        Ok(self.hook(&dir, w).await?.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_packs_without_its_config_and_unpacks_inside_its_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("p");
        for (path, text) in
            [("watches.yaml", "- {}"), ("roles/r/tasks/main.yml", "---"), ("config/x.yaml", "x"), ("bundle/y", "y")]
        {
            std::fs::create_dir_all(project.join(path).parent().unwrap()).unwrap();
            std::fs::write(project.join(path), text).unwrap();
        }
        let out = tmp.path().join("out");
        unpack(&pack(&project).unwrap(), &out).unwrap();
        assert_eq!(std::fs::read_to_string(out.join("roles/r/tasks/main.yml")).unwrap(), "---");
        assert!(out.join("watches.yaml").is_file() && !out.join("config").exists() && !out.join("bundle").exists());
        // A crafted archive: a path out of the directory, a symbolic link.
        for (name, kind) in [("../escaped", tar::EntryType::Regular), ("link", tar::EntryType::Symlink)] {
            let mut b = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default()));
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(kind);
            h.set_size(0);
            let _ = h.set_path("placeholder");
            let bytes = h.as_mut_bytes();
            bytes[..100].fill(0);
            bytes[..name.len()].copy_from_slice(name.as_bytes());
            h.set_cksum();
            b.append(&h, std::io::empty()).unwrap();
            let tgz = b.into_inner().unwrap().finish().unwrap();
            assert!(unpack(&tgz, &tmp.path().join("evil")).is_err(), "{name}");
        }
        assert!(!tmp.path().join("escaped").exists());
    }
}
