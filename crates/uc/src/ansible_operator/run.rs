//! One Ansible run, as the SDK's runner makes it: an `ansible-runner` input directory per custom
//! resource (`env/extravars`, `env/envvars`, `inventory/hosts`, the run's kubeconfig), then
//! `ansible-runner run <dir> -p <playbook>` (or `--role <name> --roles-path <dir>`), and the job events
//! it leaves in `artifacts/<ident>/job_events/`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::{Map, Value};
use uc_ansible::events::{JobEvent, Outcome};
use uc_ansible::watches::Runnable;

/// What a run needs besides its playbook or role.
pub struct Run<'a> {
    /// The run's directory (`<work>/<group>/<version>/<kind>/<namespace>/<name>`).
    pub dir: PathBuf,
    pub ident: String,
    pub extra_vars: &'a Map<String, Value>,
    pub kubeconfig: &'a str,
    /// Environment beyond the kubeconfig (roles and collections paths, the metrics address).
    pub env: Vec<(String, String)>,
    pub max_artifacts: u32,
    pub verbosity: u32,
}

/// `ansible-runner`'s arguments for a playbook or a role.
pub fn arguments(runnable: &Runnable, dir: &Path, ident: &str, max_artifacts: u32, verbosity: u32) -> Vec<String> {
    let mut args = vec!["run".to_string(), dir.display().to_string()];
    args.extend(["--rotate-artifacts".to_string(), max_artifacts.to_string()]);
    match runnable {
        Runnable::Playbook(p) => args.extend(["-p".to_string(), p.display().to_string()]),
        Runnable::Role(r) => {
            let name = r.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let parent = r.parent().map(|p| p.display().to_string()).unwrap_or_default();
            args.extend(["--role".into(), name, "--roles-path".into(), parent, "--hosts".into(), "localhost".into()]);
        }
    }
    args.extend(["-i".to_string(), ident.to_string()]);
    if verbosity > 0 {
        args.push(format!("-{}", "v".repeat(verbosity.min(7) as usize)));
    }
    args
}

impl Run<'_> {
    /// Writes the input directory.
    fn prepare(&self) -> anyhow::Result<PathBuf> {
        for sub in ["env", "inventory", "project"] {
            std::fs::create_dir_all(self.dir.join(sub)).with_context(|| format!("creating {}", self.dir.display()))?;
        }
        let kubeconfig = self.dir.join("kubeconfig");
        write_private(&kubeconfig, self.kubeconfig.as_bytes())?;
        let mut env: Map<String, Value> = self.env.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str()))).collect();
        for k in ["K8S_AUTH_KUBECONFIG", "KUBECONFIG"] {
            env.insert(k.into(), Value::from(kubeconfig.display().to_string()));
        }
        write_private(&self.dir.join("env/envvars"), &serde_json::to_vec(&env)?)?;
        write_private(&self.dir.join("env/extravars"), &serde_json::to_vec(self.extra_vars)?)?;
        let hosts = "localhost ansible_connection=local ansible_python_interpreter={{ansible_playbook_python}}";
        std::fs::write(self.dir.join("inventory/hosts"), hosts)?;
        Ok(kubeconfig)
    }

    /// Runs `ansible-runner` to the end; answers the outcome and the run's stdout.
    pub async fn execute(&self, runnable: &Runnable) -> anyhow::Result<(Outcome, String)> {
        let kubeconfig = self.prepare()?;
        let args = arguments(runnable, &self.dir, &self.ident, self.max_artifacts, self.verbosity);
        let output = tokio::process::Command::new("ansible-runner")
            .args(&args)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("K8S_AUTH_KUBECONFIG", &kubeconfig)
            .env("KUBECONFIG", &kubeconfig)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output()
            .await
            .context("running ansible-runner (installed by `pip install ansible-runner ansible-core`?)")?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let events = read_events(&self.dir.join("artifacts").join(&self.ident).join("job_events"));
        Ok((uc_ansible::events::outcome(events), stdout))
    }
}

/// A file only its owner reads (the kubeconfig holds the proxy's token).
fn write_private(path: &Path, data: &[u8]) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(data)?;
    Ok(())
}

/// The job events a run left (each a JSON file); unreadable ones are skipped.
fn read_events(dir: &Path) -> Vec<JobEvent> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|b| serde_json::from_slice(&b).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdks_command_lines() {
        let dir = Path::new("/w/cache.example.com/v1alpha1/Memcached/ns/m");
        let p = arguments(&Runnable::Playbook("/op/playbooks/memcached.yml".into()), dir, "7", 20, 2);
        assert_eq!(
            p.join(" "),
            "run /w/cache.example.com/v1alpha1/Memcached/ns/m --rotate-artifacts 20 -p /op/playbooks/memcached.yml -i 7 -vv"
        );
        let r = arguments(&Runnable::Role("/op/roles/memfin".into()), dir, "8", 3, 0);
        assert_eq!(
            r[2..].join(" "),
            "--rotate-artifacts 3 --role memfin --roles-path /op/roles --hosts localhost -i 8"
        );
    }
}
