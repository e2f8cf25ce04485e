//! The hook of one watch: the SDK's reconcile (`internal/ansible/controller/reconcile.go`) — status
//! `Running`, the run, a Warning Event per failed task, the status the run came to, the finalizer's
//! run on delete — with the dependents the proxy saw as the parent's related resources.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use kube::api::{Api, DynamicObject, PostParams};
use kube::discovery::ApiResource;
use serde_json::Value;
use uc_ansible::events::Outcome;
use uc_ansible::owner::{self, Owner};
use uc_ansible::watches::Watch;
use uc_ansible::{params, status};
use uc_api::hook::{CustomizeRequest, CustomizeResponse, RelatedResourceRule, SyncRequest, SyncResponse};
use uc_engine::hooks::HookError;
use uc_engine::hooks::native::{CustomizeFuture, NativeHook, SyncFuture};

use super::proxy::Proxy;
use super::run::Run;

/// What a watch's hook works with.
pub struct Context {
    pub client: kube::Client,
    pub parent: ApiResource,
    pub namespaced: bool,
    /// Whether the kind has a status subresource (the SDK writes status only through one).
    pub status_subresource: bool,
    pub watch: Watch,
    pub proxy: Arc<Proxy>,
    /// Where runs' input directories go.
    pub work: PathBuf,
    pub env: Vec<(String, String)>,
    /// Where runs are counted (`ansible_operator_reconcile_result`, `ansible_operator_reconciles`).
    pub metrics: super::proxy::Metrics,
}

/// The native hook (sync, finalize and customize) of one watch.
pub struct AnsibleHook(Arc<Context>);

impl AnsibleHook {
    pub fn hook(cx: Context) -> Arc<dyn NativeHook> {
        Arc::new(AnsibleHook(Arc::new(cx)))
    }
}

impl NativeHook for AnsibleHook {
    fn sync(&self, request: SyncRequest) -> SyncFuture {
        let cx = self.0.clone();
        Box::pin(async move { cx.reconcile(request).await })
    }

    fn customize(&self, request: CustomizeRequest) -> CustomizeFuture {
        let uid = request.parent.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string();
        let answer = CustomizeResponse { related_resources: self.0.related(&uid) };
        Box::pin(async move { Ok(answer) })
    }
}

/// `metav1.Now()` as JSON: RFC 3339 to the second.
fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn meta<'a>(o: &'a Value, field: &str) -> &'a str {
    o.pointer(&format!("/metadata/{field}")).and_then(Value::as_str).unwrap_or_default()
}

fn answer(resync: Option<f64>, finalized: Option<bool>) -> SyncResponse {
    SyncResponse { status: None, children: Vec::new(), resync_after_seconds: resync, finalized }
}

impl Context {
    fn api(&self, namespace: &str) -> Api<DynamicObject> {
        if self.namespaced {
            Api::namespaced_with(self.client.clone(), namespace, &self.parent)
        } else {
            Api::all_with(self.client.clone(), &self.parent)
        }
    }

    /// The related-resource rules: the dependents remembered for the parent, less blacklisted kinds
    /// and (unless the watch asks for them) cluster-scoped ones, by type and namespace.
    fn related(&self, uid: &str) -> Vec<RelatedResourceRule> {
        let mut by: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
        for d in self.proxy.dependents_of(uid) {
            if self.watch.blacklisted(&d.api_version, &d.kind)
                || (d.namespace.is_empty() && !self.watch.watch_cluster_scoped_resources)
            {
                continue;
            }
            by.entry((d.api_version, d.resource, d.namespace)).or_default().push(d.name);
        }
        by.into_iter()
            .map(|((api_version, resource, namespace), names)| RelatedResourceRule {
                api_version,
                resource,
                label_selector: None,
                namespace: Some(namespace),
                names: Some(names),
            })
            .collect()
    }

    /// The parent as stored now (`None`: gone).
    async fn fresh(&self, ns: &str, name: &str) -> Result<Option<Value>, HookError> {
        match self.api(ns).get_opt(name).await {
            Ok(o) => Ok(o.and_then(|o| serde_json::to_value(o).ok())),
            Err(e) => Err(HookError::Failed(format!("reading {name}: {e}"))),
        }
    }

    /// Writes the status `change` makes of the stored one (a few tries on conflicts).
    async fn write_status(
        &self,
        ns: &str,
        name: &str,
        change: impl Fn(Option<&Value>) -> Value,
    ) -> Result<(), HookError> {
        for _ in 0..5 {
            let Some(mut obj) = self.fresh(ns, name).await? else { return Ok(()) };
            let status = change(obj.get("status"));
            if obj.get("status") == Some(&status) {
                return Ok(());
            }
            obj["status"] = status;
            let body: DynamicObject = serde_json::from_value(obj).map_err(|e| HookError::Failed(e.to_string()))?;
            match self.api(ns).replace_status(name, &PostParams::default(), &body).await {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
                Err(e) => return Err(HookError::Failed(format!("writing the status of {name}: {e}"))),
            }
        }
        Err(HookError::Failed(format!("writing the status of {name}: it kept changing")))
    }

    async fn reconcile(self: Arc<Self>, request: SyncRequest) -> Result<SyncResponse, HookError> {
        let parent = request.parent.clone();
        let (ns, name, uid) = (meta(&parent, "namespace"), meta(&parent, "name"), meta(&parent, "uid"));
        let w = &self.watch;
        let finalizing = request.finalizing;
        let runnable = match (&w.finalizer, finalizing) {
            (Some(f), true) => f.run.clone().unwrap_or_else(|| w.run.clone()),
            (None, true) => return Ok(answer(None, Some(true))),
            (_, false) => w.run.clone(),
        };
        let manage = w.manage_status && self.status_subresource;
        if manage && !finalizing {
            self.write_status(ns, name, |s| status::running(s, &now())).await?;
        }
        let known = self.proxy.dependents_of(uid).len();
        let (dir, executed) = self.run(&parent, &runnable, finalizing).await;
        let (outcome, stdout) = match executed {
            Ok(r) => r,
            Err(e) => return Err(self.fail(ns, name, manage, &format!("Unable to run reconciliation: {e:#}")).await),
        };
        if outcome.stats.is_none() {
            let tail: Vec<&str> = stdout.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect();
            let message = format!("the run did not finish: {}", tail.join(" | "));
            return Err(self.fail(ns, name, manage, &message).await);
        }
        self.report_failed_tasks(&parent, &outcome).await;
        if self.fresh(ns, name).await?.is_none() {
            self.proxy.forget(uid);
            let _ = std::fs::remove_dir_all(&dir);
            return Ok(answer(None, None));
        }
        if manage {
            self.write_status(ns, name, |s| status::done(s, &outcome, &now())).await?;
        }
        if finalizing {
            return Ok(answer((!outcome.successful()).then_some(5.0), Some(outcome.successful())));
        }
        if !outcome.successful() {
            return Err(HookError::Failed(format!("the run failed: {}", outcome.failure_message())));
        }
        let asked = outcome.requeue_after.as_deref().and_then(uc_api::controller::go_seconds);
        let period = asked.or((w.reconcile_period > 0.0).then_some(w.reconcile_period));
        // A first sight of dependents: sync once more so they are watched from now on.
        let grew = w.watch_dependent_resources && self.proxy.dependents_of(uid).len() > known;
        Ok(answer(if grew { Some(period.map_or(1.0, |p| p.min(1.0))) } else { period }, None))
    }

    /// One run of `runnable` for `parent`, counted in the metrics; answers the run's directory too.
    async fn run(
        &self,
        parent: &Value,
        runnable: &uc_ansible::watches::Runnable,
        finalizing: bool,
    ) -> (PathBuf, anyhow::Result<(Outcome, String)>) {
        let w = &self.watch;
        let extra_vars = params::parameters(w, parent, finalizing);
        let kubeconfig = owner::kubeconfig(&self.proxy.url, &Owner::of(parent), &self.proxy.token);
        let (ns, name) = (meta(parent, "namespace"), meta(parent, "name"));
        let run = Run {
            dir: self.work.join(&w.group).join(&w.version).join(&w.kind).join(ns).join(name),
            ident: format!("{}", rand::random::<u64>()),
            extra_vars: &extra_vars,
            kubeconfig: &kubeconfig,
            env: self.env.clone(),
            max_artifacts: w.max_runner_artifacts,
            verbosity: w.ansible_verbosity,
        };
        let started = std::time::Instant::now();
        let executed = run.execute(runnable).await;
        let succeeded = executed.as_ref().is_ok_and(|(o, _)| o.stats.is_some() && o.successful());
        let gvk = uc_ansible::metrics::gvk_label(&self.parent.api_version, &self.parent.kind);
        self.metrics.lock().record_run(&gvk, succeeded, started.elapsed().as_secs_f64());
        (run.dir, executed)
    }

    /// Marks the parent failed (when the watch manages its status); answers the hook's error.
    async fn fail(&self, ns: &str, name: &str, manage: bool, message: &str) -> HookError {
        if manage && let Err(e) = self.write_status(ns, name, |s| status::error(s, message, &now())).await {
            tracing::warn!(parent = %name, error = %e, "marking the run failed");
        }
        HookError::Failed(message.to_string())
    }

    /// A Warning Event per failed task, on the parent.
    async fn report_failed_tasks(&self, parent: &Value, outcome: &Outcome) {
        if outcome.failed.is_empty() {
            return;
        }
        let recorder = uc_engine::events::Recorder::named(self.client.clone(), "ansible-operator");
        for f in &outcome.failed {
            let message = format!("task {:?} failed: {}", f.task, f.message);
            recorder.record(parent, "Warning", "TaskFailed", &message).await;
        }
    }
}
