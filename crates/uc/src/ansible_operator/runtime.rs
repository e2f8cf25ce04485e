//! What this process's Ansible hooks share, and how one is made for a watch of a project.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use uc_ansible::watches::{Paths, Watch};

use super::proxy::{self, Proxy};
use super::{collection, reconcile};

/// What this process's Ansible hooks share: the API proxy (started when a hook first needs it), the
/// playbooks' metrics, where runs and projects go, and the engine's policy for programs hooks run.
pub struct Runtime {
    pub(super) client: kube::Client,
    proxy: tokio::sync::OnceCell<Arc<Proxy>>,
    metrics: proxy::Metrics,
    pub(super) work: PathBuf,
    pub(super) exec: uc_engine::hooks::sandbox::ExecPolicy,
}

impl Runtime {
    /// The runtime of a process whose engine has this client and policy for exec hooks.
    pub fn new(client: kube::Client, exec: uc_engine::hooks::sandbox::ExecPolicy) -> Arc<Runtime> {
        Arc::new(Runtime {
            client,
            proxy: tokio::sync::OnceCell::new(),
            metrics: Default::default(),
            work: std::env::temp_dir().join(format!("uc-ansible-{}", std::process::id())),
            exec,
        })
    }

    /// The playbooks' metrics, for the engine's `/metrics`.
    pub fn collector(&self) -> Arc<dyn prometheus_client::collector::Collector> {
        Arc::new(proxy::PlaybookMetrics(self.metrics.clone()))
    }

    async fn proxy(&self) -> anyhow::Result<Arc<Proxy>> {
        let start = || Proxy::start(self.client.clone(), self.metrics.clone());
        self.proxy.get_or_try_init(start).await.cloned().context("starting the ansible proxy")
    }

    /// The environment every run of `project` gets: its roles first on the roles path, uc's
    /// `operator_sdk.util` last on the collections path (an installed one wins), the metrics address.
    async fn env(&self, project: &Path) -> anyhow::Result<(Arc<Proxy>, Vec<(String, String)>)> {
        let proxy = self.proxy().await?;
        let collections = collection::install(&self.work.join("collections"))?;
        let join = |first: String, rest: Option<String>| match rest.filter(|r| !r.is_empty()) {
            Some(r) => format!("{first}:{r}"),
            None => first,
        };
        let roles = join(project.join("roles").display().to_string(), std::env::var("ANSIBLE_ROLES_PATH").ok());
        let installed = std::env::var("ANSIBLE_COLLECTIONS_PATH")
            .unwrap_or_else(|_| "~/.ansible/collections:/usr/share/ansible/collections".to_string());
        let env = vec![
            ("ANSIBLE_ROLES_PATH".into(), roles),
            ("ANSIBLE_COLLECTIONS_PATH".into(), format!("{installed}:{}", collections.display())),
            ("UC_OSDK_METRICS_URL".into(), format!("{}{}", proxy.url, proxy::METRICS_PATH)),
            ("UC_OSDK_METRICS_TOKEN".into(), proxy.token.clone()),
            ("ANSIBLE_STDOUT_CALLBACK".into(), "default".into()),
        ];
        Ok((proxy, env))
    }

    /// The hook of one watch of the project in `project`, and the watched kind as served.
    pub(super) async fn hook(
        &self,
        project: &Path,
        w: Watch,
    ) -> anyhow::Result<(Arc<dyn uc_engine::hooks::native::NativeHook>, kube::api::ApiResource)> {
        let (proxy, env) = self.env(project).await?;
        let discovery =
            crate::sdk_project::served(&self.client, &[(w.group.clone(), w.version.clone(), w.kind.clone())]).await?;
        let gvk = kube::api::GroupVersionKind::gvk(&w.group, &w.version, &w.kind);
        let (parent, caps) = discovery.resolve_gvk(&gvk).context("served")?;
        let hook = reconcile::AnsibleHook::hook(reconcile::Context {
            client: self.client.clone(),
            parent: parent.clone(),
            namespaced: caps.scope == kube::discovery::Scope::Namespaced,
            status_subresource: caps.subresources.iter().any(|(ar, _)| ar.plural == "status"),
            watch: w,
            proxy,
            work: self.work.join("runner"),
            env,
            metrics: self.metrics.clone(),
        });
        Ok((hook, parent))
    }
}

/// The watches of the project in `dir` (roles and playbooks found as the SDK finds them).
pub fn parse_watches(dir: &Path, text: &str) -> anyhow::Result<Vec<Watch>> {
    let exists = |p: &Path| p.exists();
    let paths = Paths {
        dir,
        roles_path: std::env::var("ANSIBLE_ROLES_PATH")
            .map(|v| v.split(':').map(PathBuf::from).collect())
            .unwrap_or_default(),
        home: std::env::var_os("HOME").map(PathBuf::from),
        exists: &exists,
    };
    uc_ansible::watches::parse(text, &paths).map_err(anyhow::Error::msg)
}

/// `ansible-runner` answers, or why the operator cannot run.
pub async fn check_runner() -> anyhow::Result<()> {
    let runner = tokio::process::Command::new("ansible-runner").arg("--version").output().await;
    if !runner.is_ok_and(|o| o.status.success()) {
        anyhow::bail!(
            "ansible-runner is not installed: `pip install ansible-runner ansible` (ansible-core with kubernetes.core)"
        );
    }
    Ok(())
}
